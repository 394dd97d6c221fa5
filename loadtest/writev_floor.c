/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * writev_floor: the theoretical floor a broadcast server is compared with. It accepts any number
 * of HTTP clients (any GET), answers 200 once, and then every chunk interval writes the same
 * chunk (chunk size and rate of the stream) to every client with one writev() each. No queue, no
 * parsing, no allocation per write: its CPU per 1000 listeners is the kernel's price of the bytes.
 * A client that cannot take a whole chunk loses the rest of it (counted as "short").
 *
 * One epoll loop a thread (--threads N, default 1): each thread has a listening socket of its
 * own on the port (SO_REUSEPORT, so the kernel spreads the clients as it spreads a server's
 * workers'), its own clients, and writes them at the same ticks as the others.
 * --marker: each pass's chunk opens with the swarm's latency marker (8-byte magic, the pass's
 * start on CLOCK_MONOTONIC), so `swarm --time-listeners` times the floor's arrivals as it times a
 * server's (compare.sh's floor-ll with --timed): the least delay a block can reach every client
 * with, one writev each.
 * --uring (built with liburing): a pass's writevs are queued to an io_uring and entered
 * RING_ENTRIES at a time (one io_uring_enter each), as a server whose loop sits on a ring would
 * write. Sockets are non-blocking, so each writev completes (or fails with EAGAIN) within the
 * enter, as the plain call would.
 *
 * Status once a second on stdout: "key=value" pairs over all threads, with the wall time of the
 * second's passes (pass_ms: mean over threads and passes; pass_ms_max: the longest), the time the
 * last client of a pass waits, and each thread's clients (by_thread=A/B/...).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "probe_marker.h"

#ifdef HAVE_URING
#include <liburing.h>
#define RING_ENTRIES 256
#endif

#define MAX_IOV 16
#define MAX_THREADS 64

static struct {
    int port, chunk, iov, backlog, uring, threads, marker;
    double bitrate_kbps, duration;
    const char *bind;
} opt = { .port = 18100, .chunk = 4096, .iov = 1, .backlog = 4096, .threads = 1,
          .bitrate_kbps = 128, .bind = "127.0.0.1" };

/* Counters a thread adds to and the status line reads (relaxed atomics: figures, not order). */
typedef struct {
    uint64_t writes, bytes, shorts, closed, accepted, listeners;
    uint64_t pass_ns_sum, pass_ns_max, passes; /* since the last status line */
} counters_t;

typedef struct {
    pthread_t tid;
    int ep, lfd;
    int *fds; /* streaming clients, compact array */
    unsigned n, cap;
    int closed_in_pass; /* a slot of fds is marked closed (-1) */
    unsigned char *chunk; /* the thread's own: the marker is written into it each pass */
#ifdef HAVE_URING
    struct io_uring ring;
#endif
    counters_t c;
} floor_thread_t;

static floor_thread_t th[MAX_THREADS];
static double t0;
static volatile sig_atomic_t stopping;

#define ADD(t, f, v) __atomic_fetch_add(&(t)->c.f, (v), __ATOMIC_RELAXED)
#define SET(t, f, v) __atomic_store_n(&(t)->c.f, (v), __ATOMIC_RELAXED)
#define TAKE(t, f) __atomic_exchange_n(&(t)->c.f, 0, __ATOMIC_RELAXED)
#define GET(t, f) __atomic_load_n(&(t)->c.f, __ATOMIC_RELAXED)

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double now_s(void)
{
    return (double)now_ns() / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int listen_open(floor_thread_t *t)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (opt.threads > 1)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (inet_pton(AF_INET, opt.bind, &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(fd, opt.backlog) < 0)
        goto fail;
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    if (epoll_ctl(t->ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -errno;
}

/* Accepted sockets get the request read once (headers are small) and the response header. */
static void accept_all(floor_thread_t *t)
{
    static const char resp[] = "HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nServer: writev_floor\r\n"
                               "Cache-Control: no-cache\r\n\r\n";
    char req[4096];
    for (;;) {
        int one = 1, fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        ADD(t, accepted, 1);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        /* the request may not be here yet; the floor does not care what it says */
        if (read(fd, req, sizeof(req)) == 0 || write(fd, resp, sizeof(resp) - 1) < 0) {
            close(fd);
            continue;
        }
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 1024;
            t->fds = realloc(t->fds, t->cap * sizeof(*t->fds));
            if (!t->fds) {
                fputs("writev_floor: out of memory\n", stderr);
                exit(1);
            }
        }
        t->fds[t->n++] = fd;
        SET(t, listeners, t->n);
    }
}

/* What a writev to client i returned. A client the write failed on is closed and its slot
 * marked; the pass drops the marked slots once it is over (drop_closed), so that no client
 * moves while a pass (or a ring's batch) is under way. */
static void wrote(floor_thread_t *t, unsigned i, ssize_t w, int err)
{
    ADD(t, writes, 1);
    if (w < 0 && err != EAGAIN) {
        close(t->fds[i]);
        t->fds[i] = -1;
        t->closed_in_pass = 1;
        ADD(t, closed, 1);
        return;
    }
    if (w > 0)
        ADD(t, bytes, (uint64_t)w);
    if (w < opt.chunk)
        ADD(t, shorts, 1);
}

static void drop_closed(floor_thread_t *t)
{
    if (!t->closed_in_pass)
        return;
    t->closed_in_pass = 0;
    unsigned kept = 0;
    for (unsigned i = 0; i < t->n; i++)
        if (t->fds[i] >= 0)
            t->fds[kept++] = t->fds[i];
    t->n = kept;
    SET(t, listeners, t->n);
}

#ifdef HAVE_URING
/* The pass through the ring: RING_ENTRIES writevs queued, entered at once, their results read
 * by slot. */
static void write_all_ring(floor_thread_t *t, const struct iovec *iov)
{
    for (unsigned i = 0; i < t->n; i += RING_ENTRIES) {
        unsigned batch = t->n - i < RING_ENTRIES ? t->n - i : RING_ENTRIES;
        for (unsigned k = 0; k < batch; k++) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&t->ring);
            io_uring_prep_writev(sqe, t->fds[i + k], iov, (unsigned)opt.iov, 0);
            io_uring_sqe_set_data64(sqe, i + k);
        }
        int r = io_uring_submit_and_wait(&t->ring, batch);
        if (r < 0) {
            fprintf(stderr, "writev_floor: io_uring_submit_and_wait: %s\n", strerror(-r));
            exit(1);
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&t->ring, head, cqe) {
            wrote(t, (unsigned)io_uring_cqe_get_data64(cqe), cqe->res < 0 ? -1 : cqe->res,
                  cqe->res < 0 ? -cqe->res : 0);
            seen++;
        }
        io_uring_cq_advance(&t->ring, seen);
    }
}
#endif

static void write_all(floor_thread_t *t)
{
    struct iovec iov[MAX_IOV];
    size_t part = (size_t)opt.chunk / (size_t)opt.iov;
    for (int i = 0; i < opt.iov; i++) {
        iov[i].iov_base = t->chunk + (size_t)i * part;
        iov[i].iov_len = i == opt.iov - 1 ? (size_t)opt.chunk - (size_t)i * part : part;
    }
    uint64_t start = now_ns();
    if (opt.marker)
        memcpy(t->chunk + 8, &start, sizeof(start));
#ifdef HAVE_URING
    if (opt.uring)
        write_all_ring(t, iov);
    else
#endif
        for (unsigned i = 0; i < t->n; i++) {
            ssize_t w = writev(t->fds[i], iov, opt.iov);
            wrote(t, i, w, w < 0 ? errno : 0);
        }
    drop_closed(t);
    uint64_t dt = now_ns() - start;
    ADD(t, pass_ns_sum, dt);
    ADD(t, passes, 1);
    if (dt > GET(t, pass_ns_max))
        SET(t, pass_ns_max, dt);
}

static void *thread_main(void *arg)
{
    floor_thread_t *t = arg;
    struct epoll_event evs[64];
    double interval = opt.chunk / (opt.bitrate_kbps * 1000 / 8), next_chunk = interval;
    while (!stopping && (opt.duration <= 0 || now_s() - t0 < opt.duration)) {
        double now = now_s() - t0;
        int ms = next_chunk > now ? (int)((next_chunk - now) * 1000) + 1 : 0;
        if (ms > 200) /* stopping is looked at a few times a second */
            ms = 200;
        if (epoll_wait(t->ep, evs, 64, ms) > 0)
            accept_all(t);
        if (now_s() - t0 >= next_chunk) {
            write_all(t);
            next_chunk += interval;
        }
    }
    return NULL;
}

static void status(double t, double *cpu_prev, double *t_prev)
{
    counters_t s = {0};
    char spread[MAX_THREADS * 12] = "";
    size_t at = 0;
    for (int i = 0; i < opt.threads; i++) {
        floor_thread_t *f = &th[i];
        at += (size_t)snprintf(spread + at, sizeof(spread) - at, "%s%llu", i ? "/" : "",
                               (unsigned long long)GET(f, listeners));
        s.listeners += GET(f, listeners);
        s.accepted += GET(f, accepted);
        s.writes += GET(f, writes);
        s.bytes += GET(f, bytes);
        s.shorts += GET(f, shorts);
        s.closed += GET(f, closed);
        s.pass_ns_sum += TAKE(f, pass_ns_sum);
        s.passes += TAKE(f, passes);
        uint64_t m = TAKE(f, pass_ns_max);
        s.pass_ns_max = m > s.pass_ns_max ? m : s.pass_ns_max;
    }
    double cpu = cpu_seconds();
    printf("t=%.3f listeners=%llu accepted=%llu writes=%llu bytes=%llu short=%llu closed=%llu "
           "cpu_pct=%.2f pass_ms=%.2f pass_ms_max=%.2f threads=%d by_thread=%s%s\n", t,
           (unsigned long long)s.listeners, (unsigned long long)s.accepted,
           (unsigned long long)s.writes, (unsigned long long)s.bytes, (unsigned long long)s.shorts,
           (unsigned long long)s.closed, 100 * (cpu - *cpu_prev) / (t - *t_prev),
           s.passes ? (double)s.pass_ns_sum / (double)s.passes / 1e6 : 0, (double)s.pass_ns_max / 1e6,
           opt.threads, spread, opt.uring ? " uring=1" : "");
    fflush(stdout);
    *cpu_prev = cpu;
    *t_prev = t;
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"port", 1, 0, 'p'}, {"bind", 1, 0, 'a'}, {"chunk", 1, 0, 'c'}, {"iov", 1, 0, 'i'},
        {"bitrate", 1, 0, 'b'}, {"duration", 1, 0, 'd'}, {"backlog", 1, 0, 'l'}, {"uring", 0, 0, 'u'},
        {"threads", 1, 0, 't'}, {"marker", 0, 0, 'm'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'p': opt.port = atoi(optarg); break;
        case 'a': opt.bind = optarg; break;
        case 'c': opt.chunk = atoi(optarg); break;
        case 'i': opt.iov = atoi(optarg); break;
        case 'b': opt.bitrate_kbps = atof(optarg); break;
        case 'd': opt.duration = atof(optarg); break;
        case 'l': opt.backlog = atoi(optarg); break;
        case 'u': opt.uring = 1; break;
        case 't': opt.threads = atoi(optarg); break;
        case 'm': opt.marker = 1; break;
        default:
            fputs("usage: writev_floor [--port 18100] [--bind 127.0.0.1] [--bitrate 128] [--chunk 4096]\n"
                  "                    [--iov 1..16] [--duration SEC] [--backlog 4096] [--threads N]\n"
                  "                    [--marker] [--uring]\n", stderr);
            exit(2);
        }
    }
    if (opt.chunk < 16 || opt.iov < 1 || opt.iov > MAX_IOV || opt.bitrate_kbps <= 0 ||
        opt.threads < 1 || opt.threads > MAX_THREADS || (opt.marker && opt.chunk / opt.iov < MARKER_LEN)) {
        fputs("writev_floor: bad --chunk/--iov/--bitrate/--threads\n", stderr);
        exit(2);
    }
#ifndef HAVE_URING
    if (opt.uring) {
        fputs("writev_floor: built without liburing: no --uring\n", stderr);
        exit(2);
    }
#endif
}

int main(int argc, char **argv)
{
    struct rlimit rl;
    parse_args(argc, argv);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = { .sa_handler = on_signal }; /* no SA_RESTART: the sleep ends at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    for (int i = 0; i < opt.threads; i++) {
        floor_thread_t *t = &th[i];
        t->chunk = malloc((size_t)opt.chunk);
        t->ep = epoll_create1(EPOLL_CLOEXEC);
        if (!t->chunk || t->ep < 0 || (t->lfd = listen_open(t)) < 0) {
            fprintf(stderr, "writev_floor: cannot listen on %s:%d: %s\n", opt.bind, opt.port,
                    strerror(t->lfd < 0 ? -t->lfd : errno));
            return 1;
        }
        memset(t->chunk, 0x55, (size_t)opt.chunk);
        if (opt.marker)
            memcpy(t->chunk, PROBE_MAGIC, 8);
#ifdef HAVE_URING
        int r = opt.uring ? io_uring_queue_init(RING_ENTRIES, &t->ring, 0) : 0;
        if (r < 0) {
            fprintf(stderr, "writev_floor: no io_uring: %s\n", strerror(-r));
            return 1;
        }
#endif
    }
    t0 = now_s();
    for (int i = 0; i < opt.threads; i++)
        if (pthread_create(&th[i].tid, NULL, thread_main, &th[i]) != 0) {
            fputs("writev_floor: cannot start a thread\n", stderr);
            return 1;
        }
    double cpu_prev = cpu_seconds(), t_prev = 0;
    for (double next_status = 1; !stopping && (opt.duration <= 0 || now_s() - t0 < opt.duration);
         next_status += 1) {
        double wait = next_status - (now_s() - t0);
        if (wait > 0) {
            struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
            nanosleep(&ts, NULL);
        }
        if (!stopping)
            status(now_s() - t0, &cpu_prev, &t_prev);
    }
    stopping = 1;
    for (int i = 0; i < opt.threads; i++) {
        pthread_join(th[i].tid, NULL);
        for (unsigned k = 0; k < th[i].n; k++)
            close(th[i].fds[k]);
    }
    return 0;
}
