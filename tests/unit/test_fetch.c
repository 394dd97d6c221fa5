/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_fetch: the HTTP client thread against a tiny local server: an answer's headers, a
 * refused port, a server that never answers (timeout), the bound on parallel transfers, the
 * queue limit, and shutdown completing what is still pending; and the header helpers.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/fetch.h"
#include "testlib.h"

static int listen_port(int *fd_out, int backlog)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    bind(fd, (struct sockaddr *)&a, sizeof(a));
    listen(fd, backlog);
    getsockname(fd, (struct sockaddr *)&a, &len);
    *fd_out = fd;
    return ntohs(a.sin_port);
}

/* The server: each connection is answered after delay_ms (or never, if hang) by its own
 * thread; it counts the connections open at once. */
static int srv_fd, srv_delay_ms, srv_hang;
static atomic_int srv_open, srv_max_open, srv_total;

static void *serve_one(void *arg)
{
    int fd = (int)(long)arg;
    char buf[4096];
    int now = atomic_fetch_add(&srv_open, 1) + 1, max = atomic_load(&srv_max_open);
    while (now > max && !atomic_compare_exchange_weak(&srv_max_open, &max, now))
        ;
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    (void)n;
    int hang = srv_hang;
    if (hang) {
        while (recv(fd, buf, sizeof(buf), 0) > 0)
            ;
    } else {
        usleep((useconds_t)srv_delay_ms * 1000);
        /* counted out before answering: the client may start its next request at once */
        atomic_fetch_sub(&srv_open, 1);
        static const char ans[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
                                  "Icecast-Auth-User: 1\r\nX-Note:  spaced value  \r\n"
                                  "Connection: close\r\n\r\nok";
        if (send(fd, ans, sizeof(ans) - 1, MSG_NOSIGNAL) < 0)
            perror("send");
    }
    if (hang)
        atomic_fetch_sub(&srv_open, 1);
    atomic_fetch_add(&srv_total, 1);
    close(fd);
    return NULL;
}

static void *server_main(void *arg)
{
    for (;;) {
        int fd = accept(srv_fd, NULL, NULL);
        if (fd < 0)
            return NULL;
        pthread_t t;
        pthread_create(&t, NULL, serve_one, (void *)(long)fd);
        pthread_detach(t);
    }
}

typedef struct outcome {
    atomic_int done;
    int error;
    long status;
    int accepted;
    char note[64];
} outcome_t;

static void on_done(worker_t *w, const fetch_result_t *r, void *arg)
{
    outcome_t *o = arg;
    o->error = r->error;
    o->status = r->status;
    o->accepted = fetch_has_header_line(r, "icecast-auth-user: 1");
    if (!fetch_header(r, "x-note", o->note, sizeof(o->note)))
        o->note[0] = '\0';
    atomic_store(&o->done, 1);
}

static void wait_done(outcome_t *o, int n, int max_ms)
{
    for (int t = 0; t < max_ms; t += 10) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= atomic_load(&o[i].done);
        if (all)
            return;
        usleep(10000);
    }
}

static int submit(const char *url, outcome_t *o, unsigned timeout_ms)
{
    fetch_request_t rq = {.url = url, .body = "action=test&x=%2f", .timeout_ms = timeout_ms,
                          .done = on_done, .arg = o};
    return fetch_submit(&rq);
}

static void test_header_helpers(void)
{
    static const char h[] = "HTTP/1.1 200 OK\r\nicecast-auth-user:1\r\n"
                            "ICECAST-AUTH-MESSAGE:  go away \r\nx: a\r\nx: b\r\n\r\n";
    fetch_result_t r = {.headers = h, .headers_len = sizeof(h) - 1};
    char buf[16];
    CHECK(fetch_has_header_line(&r, "icecast-auth-user: 1"));
    CHECK(!fetch_has_header_line(&r, "icecast-auth-user: 2"));
    CHECK(!fetch_has_header_line(&r, "no-colon"));
    CHECK_STR(fetch_header(&r, "icecast-auth-message", buf, sizeof(buf)), "go away");
    CHECK_STR(fetch_header(&r, "X", buf, sizeof(buf)), "b");
    CHECK_STR(fetch_header(&r, "icecast-auth-message", buf, 4), "go ");
    CHECK(fetch_header(&r, "absent", buf, sizeof(buf)) == NULL);
}

int main(void)
{
    char url[128];
    pthread_t srv;
    test_header_helpers();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CHECK(fetch_start() == 0);
    int port = listen_port(&srv_fd, 128);
    pthread_create(&srv, NULL, server_main, NULL);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/auth", port);

    /* an answer */
    outcome_t one = {0};
    CHECK(submit(url, &one, 5000) == 0);
    wait_done(&one, 1, 5000);
    CHECK(atomic_load(&one.done) && one.error == 0 && one.status == 200 && one.accepted);
    CHECK_STR(one.note, "spaced value");

    /* a refused port */
    int dead_fd, dead_port = listen_port(&dead_fd, 1);
    close(dead_fd);
    char dead[128];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d/", dead_port);
    outcome_t refused = {0};
    CHECK(submit(dead, &refused, 5000) == 0);
    wait_done(&refused, 1, 5000);
    CHECK(atomic_load(&refused.done) && refused.error == -ECONNREFUSED);

    /* the pool bound: 40 slow requests, never more than FETCH_MAX_ACTIVE at the server */
    static outcome_t many[40];
    srv_delay_ms = 200;
    for (int i = 0; i < 40; i++)
        CHECK(submit(url, &many[i], 5000) == 0);
    wait_done(many, 40, 10000);
    int ok = 0;
    for (int i = 0; i < 40; i++)
        ok += atomic_load(&many[i].done) && many[i].error == 0 && many[i].accepted;
    CHECK(ok == 40);
    CHECK(atomic_load(&srv_max_open) <= FETCH_MAX_ACTIVE);
    CHECK(atomic_load(&srv_max_open) >= 2);
    fetch_counters_t fc;
    fetch_get_counters(&fc);
    CHECK(fc.max_active_seen <= FETCH_MAX_ACTIVE);

    /* a server that never answers: the timeout */
    srv_hang = 1;
    outcome_t slow = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(submit(url, &slow, 300) == 0);
    wait_done(&slow, 1, 5000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    CHECK(atomic_load(&slow.done) && slow.error == -ETIMEDOUT);
    CHECK(ms >= 250 && ms < 3000);

    /* the queue limit, then shutdown cancels everything still pending */
    static outcome_t pend[FETCH_MAX_QUEUED + FETCH_MAX_ACTIVE + 50];
    static int rcs[sizeof(pend) / sizeof(pend[0])];
    int accepted = 0, busy = 0;
    for (size_t i = 0; i < sizeof(pend) / sizeof(pend[0]); i++) {
        rcs[i] = submit(url, &pend[i], 60000);
        accepted += rcs[i] == 0;
        busy += rcs[i] == -EBUSY;
    }
    CHECK(busy > 0);
    CHECK(accepted >= FETCH_MAX_QUEUED);
    fetch_stop();
    int cancelled = 0;
    for (size_t i = 0; i < sizeof(pend) / sizeof(pend[0]); i++)
        cancelled += rcs[i] == 0 && atomic_load(&pend[i].done) && pend[i].error == -ECANCELED;
    CHECK(cancelled == accepted);
    outcome_t after = {0};
    CHECK(submit(url, &after, 1000) == -ESHUTDOWN);

    shutdown(srv_fd, SHUT_RDWR);
    close(srv_fd);
    pthread_join(srv, NULL);
    curl_global_cleanup();
    return testlib_done();
}
