/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_connect: outbound connections on a real worker loop: connecting to a listening socket
 * and sending through the transport, a refused port, a non-numeric host, and the deadline
 * (a listener whose accept queue is full drops our SYN, so only the deadline can end it).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/loop.h"
#include "net/conn.h"
#include "net/connect.h"
#include "net/server.h"
#include "net/worker.h"
#include "testlib.h"

typedef struct probe {
    conn_t conn;
    const char *host;
    int port;
    unsigned timeout_ms;
    int start_rc;
    atomic_int done;      /* 1 once done ran */
    atomic_int err;       /* its err */
    atomic_int destroyed; /* 1 once destroy ran */
} probe_t;

static void on_destroy(conn_t *c)
{
    atomic_store(&((probe_t *)c)->destroyed, 1);
}

static void on_done(conn_t *c, int err)
{
    probe_t *p = (probe_t *)c;
    atomic_store(&p->err, err);
    if (err == 0) {
        static const char hello[] = "hello over the transport";
        conn_send(c, hello, sizeof(hello) - 1, conn_linger_close);
    }
    atomic_store(&p->done, 1);
}

static void start_probe(worker_t *w, void *arg)
{
    probe_t *p = arg;
    p->start_rc = connect_start(&p->conn, w, p->host, p->port, p->timeout_ms, on_done, on_destroy);
    if (p->start_rc < 0)
        atomic_store(&p->done, 1);
}

/* Waits (bounded) until flag is set. */
static int wait_flag(atomic_int *flag, int ms)
{
    for (int i = 0; i < ms / 5; i++) {
        if (atomic_load(flag))
            return 1;
        struct timespec ts = {0, 5 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return atomic_load(flag);
}

static int listen_local(int backlog, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, backlog) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0)
        return -1;
    *port = ntohs(a.sin_port);
    return fd;
}

static worker_t *w;

static void run_probe(probe_t *p, int wait_ms)
{
    CHECK(worker_post(w, start_probe, p) == 0);
    CHECK(wait_flag(&p->done, wait_ms));
}

static void test_connects_and_sends(void)
{
    int port, lfd = listen_local(8, &port);
    CHECK(lfd >= 0);
    probe_t *p = calloc(1, sizeof(*p));
    *p = (probe_t){.host = "127.0.0.1", .port = port, .timeout_ms = 2000};
    run_probe(p, 3000);
    CHECK(p->start_rc == 0);
    CHECK(atomic_load(&p->err) == 0);
    int fd = accept(lfd, NULL, NULL);
    CHECK(fd >= 0);
    char buf[64] = {0};
    size_t got = 0;
    while (got < 24) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    CHECK_STR(buf, "hello over the transport");
    close(fd); /* the lingering connection sees EOF and closes */
    CHECK(wait_flag(&p->destroyed, 3000));
    close(lfd);
    free(p);
}

static void test_refused(void)
{
    int port, lfd = listen_local(1, &port);
    close(lfd); /* nothing listens there now */
    probe_t *p = calloc(1, sizeof(*p));
    *p = (probe_t){.host = "127.0.0.1", .port = port, .timeout_ms = 2000};
    run_probe(p, 3000);
    CHECK(p->start_rc == 0);
    CHECK(atomic_load(&p->err) == -ECONNREFUSED);
    CHECK(wait_flag(&p->destroyed, 3000));
    free(p);
}

static void test_bad_host(void)
{
    probe_t *p = calloc(1, sizeof(*p));
    *p = (probe_t){.host = "localhost", .port = 80, .timeout_ms = 100};
    run_probe(p, 3000);
    CHECK(p->start_rc == -EINVAL);
    CHECK(!atomic_load(&p->destroyed));
    free(p);
}

static void test_deadline(void)
{
    int port, lfd = listen_local(0, &port);
    /* fill the accept queue: further SYNs are dropped */
    int fillers[2];
    for (int i = 0; i < 2; i++) {
        fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        connect(fillers[i], (struct sockaddr *)&a, sizeof(a));
    }
    struct timespec ts = {0, 100 * 1000000L};
    nanosleep(&ts, NULL); /* let the fillers' handshakes complete or be dropped */
    probe_t *p = calloc(1, sizeof(*p));
    *p = (probe_t){.host = "127.0.0.1", .port = port, .timeout_ms = 500};
    uint64_t t0 = loop_now_ms();
    run_probe(p, 4000);
    uint64_t took = loop_now_ms() - t0;
    CHECK(atomic_load(&p->err) == -ETIMEDOUT);
    CHECK(took >= 500 && took < 3000);
    CHECK(wait_flag(&p->destroyed, 3000));
    for (int i = 0; i < 2; i++)
        close(fillers[i]);
    close(lfd);
    free(p);
}

int main(void)
{
    /* the worker needs a listen socket of its own: a free loopback port */
    int port, probe_fd = listen_local(1, &port);
    close(probe_fd);
    char xml[256], err[256];
    int len = snprintf(xml, sizeof(xml),
                       "<icecast><listen-socket><port>%d</port><bind-address>127.0.0.1"
                       "</bind-address></listen-socket></icecast>", port);
    config_t *cfg = NULL;
    if (config_load_buffer(xml, (size_t)len, "t.xml", &cfg, err, sizeof(err), NULL) != 0) {
        fprintf(stderr, "config: %s\n", err);
        return 1;
    }
    server_set_config(cfg);
    w = worker_new(0);
    CHECK(w != NULL);
    if (!w)
        return 1;
    server.nworkers = 1;
    CHECK(worker_start(w) == 0);
    RUN(test_connects_and_sends);
    RUN(test_refused);
    RUN(test_bad_host);
    RUN(test_deadline);
    worker_stop(w);
    worker_free(w);
    server_free_configs();
    return testlib_done();
}
