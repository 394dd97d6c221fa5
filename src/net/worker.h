/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker: a thread with its own epoll loop, listen sockets (SO_REUSEPORT), connections,
 * timers and listener subscriptions.
 *
 * Every connection belongs to the worker that accepted it. Other threads talk to a worker only
 * through worker_post() (a mutex-protected message list plus an eventfd: cold path) and
 * worker_wake() (a coalesced eventfd write telling it that mounts have new data).
 * Listener fan-out: the worker keeps one subscription per mount with the list of its listeners
 * on it; each flush tick (write window) or wake it writes new data to them.
 */
#ifndef RIMECAST_WORKER_H
#define RIMECAST_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/loop.h"

typedef struct conn conn_t;
typedef struct mount mount_t;
struct worker;
typedef struct listener listener_t;

typedef struct worker_msg {
    void (*fn)(struct worker *w, void *arg);
    void *arg;
    struct worker_msg *next;
} worker_msg_t;

/* One listening socket of a worker. */
typedef struct worker_listen {
    loop_handler_t handler;
    struct worker *worker;
    int fd;
    int port;
    const char *shoutcast_mount; /* shoutcast-compat socket: its mount (config string) */
} worker_listen_t;

/* All listeners of one worker on one mount. */
typedef struct worker_sub {
    mount_t *mount;         /* owned reference */
    listener_t *listeners;  /* doubly linked via listener->prev/next */
    int count;
    uint64_t seen_end;      /* mount head offset when the current/last pass started */
    uint64_t offered;       /* head at the pass before: what blocked listeners had a window for */
    listener_t *resume;     /* next listener of a pass in progress, NULL when none */
    int in_pass;
    uint64_t bytes_pending; /* bytes sent since the last flush into the mount's counter */
    struct worker_sub *next;
} worker_sub_t;

typedef struct worker {
    int id;
    pthread_t thread;
    int epfd;
    int nlisten;
    struct worker_listen *listens;

    int evfd;
    loop_handler_t ev_handler;
    atomic_int wake_pending;
    pthread_mutex_t msg_lock;
    worker_msg_t *msgs;

    int tick_fd;              /* write-window flush timer, -1 in low-latency mode */
    loop_handler_t tick_handler;
    int housekeeping_fd;      /* 1 s: timeouts */
    loop_handler_t housekeeping_handler;

    conn_t *conns;            /* all connections */
    conn_t *timeouts_head, *timeouts_tail;
    conn_t *closed;           /* closed, to release after this iteration */
    worker_sub_t *subs;
    uint64_t next_conn_id;
    int pass_pending;         /* a write pass yielded to the loop and continues next iteration */
    int stopping;
} worker_t;

/* Creates worker id with its listen sockets (bound now, before privileges are dropped).
 * Returns NULL with a logged error. */
worker_t *worker_new(int id);
int worker_start(worker_t *w);
/* Asks the worker thread to stop and joins it. */
void worker_stop(worker_t *w);
/* Closes everything the stopped worker owns and frees it. */
void worker_free(worker_t *w);

/* Runs fn(w, arg) on worker w's thread soon. Thread-safe. 0 or -errno. */
int worker_post(worker_t *w, void (*fn)(worker_t *, void *), void *arg);
/* Runs fn(w, arg) on every worker, each on its own thread; when all have run, runs
 * done(self, arg) on worker `self`. For admin commands that touch listeners everywhere (cold
 * path). fn must synchronise its writes to arg (several workers run it in parallel).
 * 0 or -errno (then nothing runs). */
int worker_broadcast(worker_t *self, void (*fn)(worker_t *w, void *arg),
                     void (*done)(worker_t *self, void *arg), void *arg);
/* Closes connection `id` if this worker owns it. Worker thread only. 1 if found. */
int worker_close_conn(worker_t *w, uint64_t id);
/* Tells w that some mount it follows has new data (coalesced). Thread-safe. */
void worker_wake(worker_t *w);

/* Timeout list: conns ordered by deadline (callers append with monotonic deadlines). */
void worker_timeout_add(worker_t *w, conn_t *c, uint64_t deadline_ms);
void worker_timeout_remove(worker_t *w, conn_t *c);

/* Subscriptions (worker thread only). */
worker_sub_t *worker_sub_get(worker_t *w, mount_t *m);
void worker_sub_add_listener(worker_t *w, worker_sub_t *s, listener_t *l);
void worker_sub_remove_listener(worker_t *w, worker_sub_t *s, listener_t *l);

/* Global connection ids (unique across workers). */
uint64_t worker_next_conn_id(void);

#endif
