/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_deadlines: connection deadlines on a real worker loop: 2 000 connections with random
 * deadlines, some moved (earlier, later, later again as a keep-alive connection does on each
 * request), some cleared and some cleared then set again, must time out in deadline order,
 * each once and never before its deadline, and the cleared ones never.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/loop.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "testlib.h"

#define N 2000

typedef struct probe {
    conn_t conn;
    int index;
    int fired;
    uint64_t deadline; /* the one it must fire at, 0 = never */
    uint64_t fired_at;
} probe_t;

static probe_t probes[N];
static int order[N];
static atomic_int nfired;
static atomic_int setup_done;
static int peer_fds[N];

static void on_timeout(conn_t *c)
{
    probe_t *p = (probe_t *)c;
    p->fired++;
    p->fired_at = loop_now_ms();
    order[atomic_fetch_add(&nfired, 1)] = p->index;
    conn_close(c);
}

static const conn_ops_t probe_ops = {.name = "probe", .on_timeout = on_timeout};

static void setup(worker_t *w, void *arg)
{
    srand(7);
    for (int i = 0; i < N; i++) {
        int sv[2];
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv);
        peer_fds[i] = sv[1];
        probe_t *p = &probes[i];
        p->index = i;
        conn_init(&p->conn, w, sv[0], "test", 0, NULL);
        p->conn.ops = &probe_ops;
        conn_set_deadline(&p->conn, 100 + (uint64_t)(rand() % 1500));
    }
    for (int i = 0; i < N; i++) {
        probe_t *p = &probes[i];
        if (i % 7 == 0) {
            conn_set_deadline(&p->conn, 0); /* cleared: never fires */
        } else if (i % 5 == 0) {
            conn_set_deadline(&p->conn, 50 + (uint64_t)(rand() % 2000)); /* moved */
        } else if (i % 3 == 0) { /* moved later and later: its place in the heap stays */
            for (int k = 1; k <= 4; k++)
                conn_set_deadline(&p->conn, p->conn.deadline_ms - loop_now_ms() + 100 * k);
        } else if (i % 11 == 0) { /* cleared, then set again, later or earlier */
            conn_set_deadline(&p->conn, 0);
            conn_set_deadline(&p->conn, 20 + (uint64_t)(rand() % 2000));
        }
        p->deadline = p->conn.deadline_ms;
    }
    atomic_store(&setup_done, 1);
}

int main(void)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    bind(lfd, (struct sockaddr *)&a, sizeof(a));
    getsockname(lfd, (struct sockaddr *)&a, &len);
    close(lfd);
    char xml[256], err[256];
    int xlen = snprintf(xml, sizeof(xml),
                        "<icecast><listen-socket><port>%d</port><bind-address>127.0.0.1"
                        "</bind-address></listen-socket></icecast>", ntohs(a.sin_port));
    config_t *cfg = NULL;
    if (config_load_buffer(xml, (size_t)xlen, "t.xml", &cfg, err, sizeof(err), NULL) != 0) {
        fprintf(stderr, "config: %s\n", err);
        return 1;
    }
    server_set_config(cfg);
    worker_t *w = worker_new(0);
    CHECK(w != NULL);
    if (!w)
        return 1;
    server.nworkers = 1;
    CHECK(worker_start(w) == 0);
    CHECK(worker_post(w, setup, NULL) == 0);
    int expect = 0;
    for (int i = 0; i < N; i++)
        expect += i % 7 != 0;
    for (int i = 0; i < 600 && atomic_load(&nfired) < expect; i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(atomic_load(&setup_done));
    CHECK(atomic_load(&nfired) == expect);
    int in_order = 1, once = 1, cleared_quiet = 1, not_early = 1;
    for (int i = 1; i < atomic_load(&nfired); i++)
        if (probes[order[i]].deadline < probes[order[i - 1]].deadline)
            in_order = 0;
    for (int i = 0; i < N; i++) {
        if (i % 7 == 0 && probes[i].fired)
            cleared_quiet = 0;
        if (i % 7 != 0 && probes[i].fired != 1)
            once = 0;
        if (probes[i].fired && probes[i].fired_at < probes[i].deadline)
            not_early = 0;
    }
    CHECK(in_order);
    CHECK(once);
    CHECK(cleared_quiet);
    CHECK(not_early);
    worker_stop(w);
    worker_free(w);
    for (int i = 0; i < N; i++)
        close(peer_fds[i]);
    server_free_configs();
    return testlib_done();
}
