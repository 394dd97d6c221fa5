/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ll_floor: what a low-latency HLS player costs a server at the least, in system calls, beside
 * what a plain listener costs (writev_floor's one writev a chunk). N loopback connections; a
 * client thread sleeps in epoll_wait and reads whatever arrives, as players do. Once a second
 * the server thread replays one second of a pattern on every connection, and its CPU time for
 * just those calls is counted (the requests the clients would send are written for them
 * between the timed phases, outside the count):
 *   plain    writev of half a second of the stream, twice (the default write window)
 *   ll       per part: read the blocking reload, writev the playlist (head and text), read the
 *            part's request, then the part in `--part-writes` writevs (its chunks)
 * Nothing is parsed, looked up or allocated: the kernel's price of the calls and their bytes.
 * No epoll_wait on the server side (a server's loop turn is shared by many connections).
 * --uring (built with liburing): each phase's calls over all connections (the reads, the
 * writevs) are submitted to an io_uring and entered at once (io_uring_submit_and_wait, up to
 * the ring's 4 096 a call) instead of one system call each; the time counted is then the
 * process's minus the client thread's (work the ring hands to its own threads counts too).
 * Output: one "pattern=... us_per_player_s=... cpu_pct_per_1000=..." line per pattern.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_URING
#include <liburing.h>
#endif

static struct {
    int players, seconds, part_ms, part_writes, playlist, rate_bytes;
} opt = {.players = 1000, .seconds = 20, .part_ms = 1000, .part_writes = 2, .playlist = 1400,
         .rate_bytes = 16000};

static int *srv_fd, *cli_fd;
static volatile int stopping;
static int use_uring;
static clockid_t client_clock;

static double clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The server side's CPU time so far (us): its thread's, or with --uring the process's less
 * the client thread's. */
static double thread_cpu_us(void)
{
    if (use_uring)
        return clock_us(CLOCK_PROCESS_CPUTIME_ID) - clock_us(client_clock);
    return clock_us(CLOCK_THREAD_CPUTIME_ID);
}

#ifdef HAVE_URING
#define RING_ENTRIES 4096
static struct io_uring ring;
static struct iovec *ring_iov; /* two for each connection, alive until its writev completed */
static unsigned ring_queued;

/* Enters what is queued and waits for all of it; failures other than EAGAIN are reported. */
static void ring_flush(void)
{
    if (!ring_queued)
        return;
    int r = io_uring_submit_and_wait(&ring, ring_queued);
    if (r < 0)
        fprintf(stderr, "io_uring_submit_and_wait: %s\n", strerror(-r));
    unsigned head, seen = 0;
    struct io_uring_cqe *cqe;
    io_uring_for_each_cqe(&ring, head, cqe)
    {
        if (cqe->res < 0 && cqe->res != -EAGAIN)
            fprintf(stderr, "io_uring: %s\n", strerror(-cqe->res));
        seen++;
    }
    io_uring_cq_advance(&ring, seen);
    ring_queued = 0;
}

static struct io_uring_sqe *ring_sqe(void)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (!sqe) {
        ring_flush();
        sqe = io_uring_get_sqe(&ring);
    }
    ring_queued++;
    return sqe;
}

static int ring_init(void)
{
    struct io_uring_params p = {.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN |
                                         IORING_SETUP_SINGLE_ISSUER};
    ring_iov = calloc(2 * (size_t)opt.players, sizeof(struct iovec));
    if (!ring_iov || io_uring_queue_init_params(RING_ENTRIES, &ring, &p) < 0) {
        fprintf(stderr, "ll_floor: no io_uring\n");
        return -1;
    }
    return 0;
}
#endif

/* Reads what connection i's client sent (the request), into in. */
static void read_request(int i, char *in, size_t size)
{
#ifdef HAVE_URING
    if (use_uring) {
        io_uring_prep_read(ring_sqe(), srv_fd[i], in, (unsigned)size, 0);
        return;
    }
#endif
    if (read(srv_fd[i], in, size) < 0)
        perror("read");
}

/* The calls of one phase queued so far are made (--uring: entered at once). */
static void phase_end(void)
{
#ifdef HAVE_URING
    if (use_uring)
        ring_flush();
#endif
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The players: read everything that arrives, as a client blocked in epoll would. */
static void *clients(void *arg)
{
    int ep = *(int *)arg;
    static char sink[1 << 16];
    struct epoll_event ev[256];
    while (!stopping) {
        int n = epoll_wait(ep, ev, 256, 100);
        for (int i = 0; i < n; i++)
            while (read(ev[i].data.fd, sink, sizeof(sink)) > 0)
                ;
    }
    return NULL;
}

static int connect_pairs(int ep)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 4096) < 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &al) < 0)
        return -1;
    for (int i = 0; i < opt.players; i++) {
        cli_fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(cli_fd[i], (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS)
            return -1;
        if ((srv_fd[i] = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) < 0)
            return -1;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = cli_fd[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, cli_fd[i], &ev);
    }
    close(lfd);
    return 0;
}

/* Writes len bytes (from buf) to connection i in one writev of a head and a body, as a server
 * answers (--uring: queued for the phase's end). */
static void send_two(int i, const char *buf, size_t head, size_t len)
{
    int fd = srv_fd[i];
#ifdef HAVE_URING
    if (use_uring) {
        struct iovec *v = ring_iov + 2 * i;
        v[0] = (struct iovec){(void *)buf, head};
        v[1] = (struct iovec){(void *)(buf + head), len - head};
        io_uring_prep_writev(ring_sqe(), fd, v, 2, 0);
        return;
    }
#endif
    struct iovec iov[2] = {{(void *)buf, head}, {(void *)(buf + head), len - head}};
    if (writev(fd, iov, 2) < 0 && errno != EAGAIN)
        perror("writev");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One second of `pattern` on every connection: the server's CPU time for its calls (us). */
static double one_second(int ll, const char *data)
{
    static const char reload[150] = "GET /live.mp3/hls.m3u8?session=x&_HLS_msn=1&_HLS_part=1";
    static const char part[105] = "GET /live.mp3/hls/1.1.mp3";
    char in[4096];
    double spent = 0;
    if (!ll) {
        size_t half = (size_t)opt.rate_bytes / 2;
        for (int k = 0; k < 2; k++) {
            double t0 = thread_cpu_us();
            for (int i = 0; i < opt.players; i++)
                send_two(i, data, 0, half);
            phase_end();
            spent += thread_cpu_us() - t0;
        }
        return spent;
    }
    int parts = 1000 / opt.part_ms;
    size_t part_bytes = (size_t)opt.rate_bytes * (size_t)opt.part_ms / 1000;
    for (int p = 0; p < parts; p++) {
        for (int i = 0; i < opt.players; i++)
            if (write(cli_fd[i], reload, sizeof(reload)) < 0)
                perror("write");
        double t0 = thread_cpu_us();
        for (int i = 0; i < opt.players; i++) {
            read_request(i, in, sizeof(in));
            send_two(i, data, 200, 200 + (size_t)opt.playlist);
        }
        phase_end();
        spent += thread_cpu_us() - t0;
        for (int i = 0; i < opt.players; i++)
            if (write(cli_fd[i], part, sizeof(part)) < 0)
                perror("write");
        t0 = thread_cpu_us();
        for (int i = 0; i < opt.players; i++)
            read_request(i, in, sizeof(in));
        phase_end();
        spent += thread_cpu_us() - t0;
        for (int w = 0; w < opt.part_writes; w++) {
            t0 = thread_cpu_us();
            for (int i = 0; i < opt.players; i++)
                send_two(i, data, 8, part_bytes / (size_t)opt.part_writes + 8);
            phase_end();
            spent += thread_cpu_us() - t0;
        }
    }
    return spent;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"players", 1, 0, 'n'}, {"seconds", 1, 0, 's'}, {"part-ms", 1, 0, 'p'},
        {"part-writes", 1, 0, 'w'}, {"playlist-bytes", 1, 0, 'l'}, {"uring", 0, 0, 'u'},
        {0, 0, 0, 0}};
    for (int c; (c = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
        switch (c) {
        case 'n': opt.players = atoi(optarg); break;
        case 's': opt.seconds = atoi(optarg); break;
        case 'p': opt.part_ms = atoi(optarg); break;
        case 'w': opt.part_writes = atoi(optarg); break;
        case 'l': opt.playlist = atoi(optarg); break;
        case 'u': use_uring = 1; break;
        default:
            fprintf(stderr, "usage: ll_floor [--players N] [--seconds S] [--part-ms 1000|500]\n"
                            "                [--part-writes W] [--playlist-bytes B] [--uring]\n");
            return 2;
        }
    }
    if (opt.players < 1 || opt.seconds < 1 || opt.part_ms < 1 || opt.part_ms > 1000 ||
        opt.part_writes < 1 || opt.playlist < 1 || opt.playlist > 8000) {
        fprintf(stderr, "ll_floor: bad option\n");
        return 2;
    }
    srv_fd = calloc((size_t)opt.players, sizeof(int));
    cli_fd = calloc((size_t)opt.players, sizeof(int));
    char *data = calloc(1, (size_t)opt.rate_bytes + 8400);
    int ep = epoll_create1(0);
    pthread_t th;
#ifdef HAVE_URING
    if (use_uring && ring_init() < 0)
        return 1;
#else
    if (use_uring) {
        fprintf(stderr, "ll_floor: built without liburing: no --uring\n");
        return 2;
    }
#endif
    if (!srv_fd || !cli_fd || !data || ep < 0 || connect_pairs(ep) < 0 ||
        pthread_create(&th, NULL, clients, &ep) != 0 ||
        pthread_getcpuclockid(th, &client_clock) != 0) {
        perror("ll_floor");
        return 1;
    }
    static const char *const names[] = {"plain", "ll"};
    for (int ll = 0; ll < 2; ll++) {
        double spent = 0, next = now_s();
        double *each = calloc((size_t)opt.seconds, sizeof(double));
        if (!each) {
            perror("ll_floor");
            return 1;
        }
        for (int s = 0; s < opt.seconds; s++) {
            each[s] = one_second(ll, data);
            spent += each[s];
            next += 1.0;
            double left = next - now_s();
            if (left > 0)
                usleep((useconds_t)(left * 1e6));
        }
        double per = spent / opt.seconds / opt.players;
        qsort(each, (size_t)opt.seconds, sizeof(double), cmp_double);
        double med = (each[(opt.seconds - 1) / 2] + each[opt.seconds / 2]) / 2 / opt.players;
        printf("pattern=%s players=%d part_ms=%d part_writes=%d us_per_player_s=%.2f "
               "cpu_pct_per_1000=%.2f median_cpu_pct_per_1000=%.2f min_cpu_pct_per_1000=%.2f "
               "max_cpu_pct_per_1000=%.2f%s\n",
               names[ll], opt.players, ll ? opt.part_ms : 0, ll ? opt.part_writes : 0, per,
               per * 1000 / 1e4, med * 1000 / 1e4, each[0] / opt.players * 1000 / 1e4,
               each[opt.seconds - 1] / opt.players * 1000 / 1e4, use_uring ? " uring=1" : "");
        free(each);
        fflush(stdout);
    }
    stopping = 1;
    pthread_join(th, NULL);
    return 0;
}
