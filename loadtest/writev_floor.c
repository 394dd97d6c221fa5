/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * writev_floor: the theoretical floor a broadcast server is compared with. It accepts any number
 * of HTTP clients (any GET), answers 200 once, and then every chunk interval writes the same
 * chunk (chunk size and rate of the stream) to every client with one writev() each. No queue, no
 * parsing, no allocation per write: its CPU per 1000 listeners is the kernel's price of the bytes.
 * A client that cannot take a whole chunk loses the rest of it (counted as "short").
 * One thread, one epoll loop. Status once a second on stdout: "key=value" pairs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

#define MAX_IOV 16

static struct {
    int port, chunk, iov, backlog;
    double bitrate_kbps, duration;
    const char *bind;
} opt = { .port = 18100, .chunk = 4096, .iov = 1, .backlog = 4096, .bitrate_kbps = 128,
          .bind = "127.0.0.1" };

static struct {
    int ep, lfd;
    int *fds;           /* streaming clients, compact array */
    unsigned n, cap;
    uint64_t writes, bytes, shorts, closed, accepted;
    unsigned char *chunk;
} g;

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int listen_open(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)opt.port) };
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (inet_pton(AF_INET, opt.bind, &a.sin_addr) != 1 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(fd, opt.backlog) < 0)
        goto fail;
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, fd, &ev) < 0)
        goto fail;
    return fd;
fail:
    close(fd);
    return -errno;
}

/* Accepted sockets get the request read once (headers are small) and the response header. */
static void accept_all(void)
{
    static const char resp[] = "HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nServer: writev_floor\r\n"
                               "Cache-Control: no-cache\r\n\r\n";
    char req[4096];
    for (;;) {
        int one = 1, fd = accept4(g.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        g.accepted++;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        /* the request may not be here yet; the floor does not care what it says */
        if (read(fd, req, sizeof(req)) == 0 || write(fd, resp, sizeof(resp) - 1) < 0) {
            close(fd);
            continue;
        }
        if (g.n == g.cap) {
            g.cap = g.cap ? 2 * g.cap : 1024;
            g.fds = realloc(g.fds, g.cap * sizeof(*g.fds));
        }
        g.fds[g.n++] = fd;
    }
}

static void write_all(void)
{
    struct iovec iov[MAX_IOV];
    size_t part = (size_t)opt.chunk / (size_t)opt.iov;
    for (int i = 0; i < opt.iov; i++) {
        iov[i].iov_base = g.chunk + (size_t)i * part;
        iov[i].iov_len = i == opt.iov - 1 ? (size_t)opt.chunk - (size_t)i * part : part;
    }
    for (unsigned i = 0; i < g.n;) {
        ssize_t w = writev(g.fds[i], iov, opt.iov);
        g.writes++;
        if (w < 0 && errno != EAGAIN) {
            close(g.fds[i]);
            g.fds[i] = g.fds[--g.n];
            g.closed++;
            continue;
        }
        if (w > 0)
            g.bytes += (uint64_t)w;
        if (w < opt.chunk)
            g.shorts++;
        i++;
    }
}

static void status(double t, double *cpu_prev, double *t_prev)
{
    double cpu = cpu_seconds();
    printf("t=%.3f listeners=%u accepted=%llu writes=%llu bytes=%llu short=%llu closed=%llu "
           "cpu_pct=%.2f\n", t, g.n, (unsigned long long)g.accepted, (unsigned long long)g.writes,
           (unsigned long long)g.bytes, (unsigned long long)g.shorts, (unsigned long long)g.closed,
           100 * (cpu - *cpu_prev) / (t - *t_prev));
    fflush(stdout);
    *cpu_prev = cpu;
    *t_prev = t;
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"port", 1, 0, 'p'}, {"bind", 1, 0, 'a'}, {"chunk", 1, 0, 'c'}, {"iov", 1, 0, 'i'},
        {"bitrate", 1, 0, 'b'}, {"duration", 1, 0, 'd'}, {"backlog", 1, 0, 'l'}, {0, 0, 0, 0}};
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
        default:
            fputs("usage: writev_floor [--port 18100] [--bind 127.0.0.1] [--bitrate 128] [--chunk 4096]\n"
                  "                    [--iov 1..16] [--duration SEC] [--backlog 4096]\n", stderr);
            exit(2);
        }
    }
    if (opt.chunk < 16 || opt.iov < 1 || opt.iov > MAX_IOV || opt.bitrate_kbps <= 0) {
        fputs("writev_floor: bad --chunk/--iov/--bitrate\n", stderr);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    struct rlimit rl;
    struct epoll_event evs[64];
    parse_args(argc, argv);
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    g.chunk = malloc((size_t)opt.chunk);
    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (!g.chunk || g.ep < 0 || (g.lfd = listen_open()) < 0) {
        fprintf(stderr, "writev_floor: cannot listen on %s:%d: %s\n", opt.bind, opt.port, strerror(errno));
        return 1;
    }
    memset(g.chunk, 0x55, (size_t)opt.chunk);
    double interval = opt.chunk / (opt.bitrate_kbps * 1000 / 8);
    double t0 = now_s(), next_chunk = interval, next_status = 1, cpu_prev = cpu_seconds(), t_prev = 0;
    while (!stopping && (opt.duration <= 0 || now_s() - t0 < opt.duration)) {
        double t = now_s() - t0, next = next_chunk < next_status ? next_chunk : next_status;
        int ms = next > t ? (int)((next - t) * 1000) + 1 : 0;
        int n = epoll_wait(g.ep, evs, 64, ms);
        if (n > 0)
            accept_all();
        t = now_s() - t0;
        if (t >= next_chunk) {
            write_all();
            next_chunk += interval;
        }
        if (t >= next_status) {
            status(t, &cpu_prev, &t_prev);
            next_status += 1;
        }
    }
    for (unsigned i = 0; i < g.n; i++)
        close(g.fds[i]);
    return 0;
}
