/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_worker_batch: messages gathered with worker_batch_add for two running workers and
 * posted with worker_batch_post run each once, on the worker they were added for, in the order
 * they were added (the batch grows past its first allocation), and nothing runs before the
 * post; a batch for more workers than it holds posts the rest one by one.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "net/server.h"
#include "net/worker.h"
#include "testlib.h"

#define N 1000

static worker_t *workers[2];
static atomic_int ran[N];
static atomic_int wrong_worker, out_of_order, total;
static int last_seen[2] = {-1, -1};

static void record(worker_t *w, void *arg)
{
    int i = (int)(intptr_t)arg;
    int k = i % 2;
    if (w != workers[k])
        atomic_fetch_add(&wrong_worker, 1);
    if (i <= last_seen[k]) /* each worker's thread only touches its own slot */
        atomic_fetch_add(&out_of_order, 1);
    last_seen[k] = i;
    atomic_fetch_add(&ran[i], 1);
    atomic_fetch_add(&total, 1);
}

static void wait_total(int want)
{
    for (int t = 0; t < 500 && atomic_load(&total) < want; t++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

int main(void)
{
    /* a free port for the workers' listen socket (they accept nothing here) */
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
    server.nworkers = 2;
    for (int k = 0; k < 2; k++) {
        workers[k] = worker_new(k);
        CHECK(workers[k] != NULL);
        if (!workers[k])
            return testlib_done();
        CHECK(worker_start(workers[k]) == 0);
    }
    worker_batch_t b = {.n = 0};
    for (int i = 0; i < N; i++)
        CHECK(worker_batch_add(&b, workers[i % 2], record, (void *)(intptr_t)i) == 0);
    CHECK(b.n == 2);
    struct timespec ts = {0, 50 * 1000000L};
    nanosleep(&ts, NULL);
    CHECK(atomic_load(&total) == 0); /* nothing is posted before worker_batch_post */
    CHECK(worker_batch_post(&b) == 0);
    CHECK(b.n == 0);
    wait_total(N);
    CHECK(atomic_load(&total) == N);
    int once = 1;
    for (int i = 0; i < N; i++)
        once &= atomic_load(&ran[i]) == 1;
    CHECK(once);
    CHECK(atomic_load(&wrong_worker) == 0);
    CHECK(atomic_load(&out_of_order) == 0);
    /* no room for a seventeenth worker: its message is posted on its own, at once */
    worker_batch_t full = {.n = WORKER_BATCH_WORKERS};
    for (int k = 0; k < WORKER_BATCH_WORKERS; k++)
        full.to[k].w = (worker_t *)&full.to[k]; /* stand-ins, never posted to */
    CHECK(worker_batch_add(&full, workers[0], record, (void *)(intptr_t)0) == 0);
    wait_total(N + 1);
    CHECK(atomic_load(&total) == N + 1);
    CHECK(full.to[0].m == NULL);
    for (int k = 0; k < 2; k++) {
        worker_stop(workers[k]);
        worker_free(workers[k]);
    }
    server_free_configs();
    return testlib_done();
}
