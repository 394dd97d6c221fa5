/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * resolve: the lookup thread (see resolve.h). Requests wait in a list under one lock (cold
 * path: a few lookups per reconnect); the thread runs getaddrinfo() with no lock held.
 */
#include "net/resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/str.h"
#include "net/worker.h"

typedef struct request {
    worker_t *worker;
    char *host;
    resolve_done_fn done;
    void *arg;
    char ip[INET6_ADDRSTRLEN];
    int found;
    struct request *next; /* singly linked FIFO with a tail pointer: taken from the front only */
} request_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static request_t *queue_head, *queue_tail;
static pthread_t thread;
static int running, stopping;

int resolve_numeric(const char *host)
{
    unsigned char addr[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

static void request_free(request_t *r)
{
    free(r->host);
    free(r);
}

static void deliver(worker_t *w, void *arg)
{
    request_t *r = arg;
    r->done(w, r->arg, r->found ? r->ip : NULL);
    request_free(r);
}

/* First IPv4 address, else the first address of any family. */
static void lookup(request_t *r)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL, *pick = NULL;
    if (getaddrinfo(r->host, NULL, &hints, &res) != 0)
        return;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
        if (!pick && a->ai_family == AF_INET6)
            pick = a;
    }
    if (pick) {
        const void *addr = pick->ai_family == AF_INET
                               ? (const void *)&((struct sockaddr_in *)pick->ai_addr)->sin_addr
                               : (const void *)&((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr;
        r->found = inet_ntop(pick->ai_family, addr, r->ip, sizeof(r->ip)) != NULL;
    }
    freeaddrinfo(res);
}

static void *resolver_main(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&lock);
    for (;;) {
        while (!queue_head && !stopping)
            pthread_cond_wait(&cond, &lock);
        if (stopping)
            break;
        request_t *r = queue_head;
        queue_head = r->next;
        if (!queue_head)
            queue_tail = NULL;
        pthread_mutex_unlock(&lock);
        lookup(r);
        pthread_mutex_lock(&lock);
        /* checked under the lock: once resolve_shutdown() set it, no worker is posted to */
        if (stopping || worker_post(r->worker, deliver, r) < 0)
            request_free(r);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

int resolve_start(worker_t *w, const char *host, resolve_done_fn done, void *arg)
{
    request_t *r = calloc(1, sizeof(*r));
    if (!r || !(r->host = str_dup(host))) {
        free(r);
        return -ENOMEM;
    }
    r->worker = w;
    r->done = done;
    r->arg = arg;
    pthread_mutex_lock(&lock);
    if (stopping) {
        pthread_mutex_unlock(&lock);
        request_free(r);
        return -ESHUTDOWN;
    }
    if (!running) {
        int rc = pthread_create(&thread, NULL, resolver_main, NULL);
        if (rc) {
            pthread_mutex_unlock(&lock);
            request_free(r);
            return -rc;
        }
        running = 1;
    }
    if (queue_tail)
        queue_tail->next = r;
    else
        queue_head = r;
    queue_tail = r;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return 0;
}

void resolve_shutdown(void)
{
    pthread_mutex_lock(&lock);
    stopping = 1;
    pthread_cond_signal(&cond);
    int joined = running;
    pthread_mutex_unlock(&lock);
    if (joined)
        pthread_join(thread, NULL);
    while (queue_head) {
        request_t *r = queue_head;
        queue_head = r->next;
        request_free(r);
    }
    queue_tail = NULL;
}
