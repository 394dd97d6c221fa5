/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker: a thread with its own epoll loop, listen sockets (SO_REUSEPORT), connections,
 * deadlines and timers. It knows connections, not protocols: what an accepted socket becomes
 * is the accept hook's business, and roles above add per-worker work through modules.
 *
 * Every connection belongs to the worker that accepted (or opened) it. Other threads talk to a
 * worker only through worker_post() (a mutex-protected message list plus an eventfd: cold
 * path) and worker_wake() (a coalesced eventfd write that requests a pass).
 * The loop's phases: wait for events; run each event's handler (accept, connection I/O,
 * messages, timers, deadlines); run the modules' pass hooks if a pass was requested; destroy
 * the connections closed during this iteration.
 * Implemented in three files: worker_loop.c (the loop, modules, messages, accepting),
 * worker_timers.c (deadlines, periodic timers) and worker_pool.c (creating, starting,
 * reloading, draining, stopping workers).
 */
#ifndef RIMECAST_WORKER_H
#define RIMECAST_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "core/list.h"
#include "core/loop.h"

typedef struct conn conn_t;
typedef struct listen_conf listen_conf_t;
struct worker;

typedef struct worker_msg {
    void (*fn)(struct worker *w, void *arg);
    void *arg;
    list_t link; /* in worker_t.msgs */
} worker_msg_t;

/* One listening socket of a worker. */
typedef struct worker_listen {
    loop_handler_t handler;
    struct worker *worker;
    int fd;                       /* -1 once closed by a reload */
    const listen_conf_t *conf;
    struct worker_listen *next_closed;
} worker_listen_t;

/* A periodic timer on a worker's loop (timerfd). */
typedef struct worker_timer {
    loop_handler_t handler;
    struct worker *worker;
    int fd;
    void (*fn)(struct worker *w, void *arg);
    void *arg;
    struct worker_timer *next; /* singly linked: added at start-up, freed with the worker */
} worker_timer_t;

typedef struct worker {
    int id;
    pthread_t thread;
    int epfd;
    int nlisten;
    struct worker_listen **listens;
    struct worker_listen *listens_closed; /* closed on reload; freed with the worker */

    int evfd;
    loop_handler_t ev_handler;
    atomic_int wake_pending;
    pthread_mutex_t msg_lock;
    list_t msgs;              /* worker_msg_t.link, oldest first; under msg_lock */

    worker_timer_t *timers;

    list_t conns;             /* live connections (conn_t.link), newest first */
    /* The same connections by id (worker_loop.c): open addressing, linear probing, a power of
     * two slots at most half full; conn_index_short when it could not grow and missed one. */
    conn_t **conn_index;
    size_t conn_index_cap, conn_index_len;
    int conn_index_short;
    conn_t **heap;            /* deadlines: min-heap by conn->deadline_ms */
    size_t heap_len, heap_cap;
    list_t closed;            /* closed (conn_t.link), to release after this iteration */
    conn_t *read_again;       /* to report readable again after the events (conn_read_again) */
    int pass_requested;       /* run the pass hooks before sleeping again */
    int gather;               /* the event being handled may wait for more (worker_gather) */
    uint64_t turn_start_us;   /* when the last turn began */
    /* Out of descriptors: the listen sockets are unwatched until accept_resume_ms (0 when
     * accepting), and reserve_fd is given up to take waiting clients off the backlog. */
    uint64_t accept_resume_ms;
    int reserve_fd;
    int stopping;
    /* Beyond <workers> after a reload: no listen socket; the thread ends (and frees what it
     * owns) once it has no connection left and no module is busy. Worker thread only. */
    int draining;
    int gone;                 /* thread ending: posts are refused. Under msg_lock */
    atomic_int ended;         /* set last by a drained thread (detached): the slot is free */
    int accepting;            /* main thread's view: told to accept (not draining) */
    int thread_live;          /* main thread: started and neither joined nor ended */
    void *ring;               /* the io_uring of its reads ahead (net/read_ahead.h) */
    int ring_state;           /* 0 none yet, 1 made, -1 refused: no read ahead */
} worker_t;

/* What a module (a role above net, e.g. the listener fan-out) adds to every worker. All hooks
 * run on the worker's thread; any may be NULL. */
typedef struct worker_module {
    const char *name;
    /* When the worker is created (before its thread starts): set up per-worker state and
     * timers. 0 or -errno (the worker then fails to start). */
    int (*init)(worker_t *w);
    /* A pass was requested (worker_wake, worker_request_pass). */
    void (*pass)(worker_t *w);
    /* After the worker stopped and its connections were closed and released. */
    void (*fini)(worker_t *w);
    /* The config was reloaded (server_config() is the new one): on the worker's thread. */
    void (*reload)(worker_t *w);
    /* A draining worker asks before it ends: non-zero while the module still has work on it
     * that no connection stands for (a relay waiting to reconnect). Worker thread. */
    int (*busy)(worker_t *w);
} worker_module_t;

/* Registers a module for every worker created afterwards (at start-up, before workers). */
void worker_register(const worker_module_t *m);

/* What an accepted socket becomes: the hook owns fd from here (it closes it on failure). */
typedef void (*worker_accept_fn)(worker_t *w, int fd, const char *ip, const listen_conf_t *lc);
void worker_set_accept(worker_accept_fn fn);

/* Creates worker id with its listen sockets (bound now, before privileges are dropped).
 * Returns NULL with a logged error. */
worker_t *worker_new(int id);
int worker_start(worker_t *w);
/* An upgrade: a listen socket the process before handed over (fd, its address). Workers
 * created afterwards take these in place of opening their own (a duplicate when there are more
 * workers than sockets); worker_inherit_done, once the workers exist, gives the sockets left
 * over to workers in turn (their backlogs are kept) or closes those of addresses no longer
 * configured. Main thread, before the workers run. 0 or -ENOMEM. */
int worker_inherit_listen(int fd, int port, const char *bind_address);
void worker_inherit_done(void);
/* Asks the worker thread to stop and joins it. */
void worker_stop(worker_t *w);
/* Closes everything the stopped worker owns and frees it. */
void worker_free(worker_t *w);

/* A reload changed <workers> (main thread, after worker_reload_all): makes workers 0..n-1
 * accept (new workers are created and started, draining ones take their listen sockets
 * back, stopped ones start again) and drains those from n up: each closes its listen sockets
 * at once (after accepting what is already waiting), serves its connections until they end,
 * then its thread ends and frees its loop, timers and module state. Returns the number of
 * accepting workers (fewer than n if a new one failed to start). */
int worker_set_count(int n);

/* Adds a periodic timer: fn(w, arg) every period_ms on w's thread until the worker is freed.
 * At start-up (module init) or on the worker's thread. 0 or -errno. */
int worker_timer_add(worker_t *w, unsigned period_ms, void (*fn)(worker_t *w, void *arg),
                     void *arg);

/* Changes the period of w's timer that runs fn (0 stops it until set again). Worker thread
 * only. 0, or -ENOENT when w has no such timer. */
int worker_timer_period(worker_t *w, void (*fn)(worker_t *w, void *arg), unsigned period_ms);

/* After a reload, on every worker: opens the listen sockets the new config adds, closes those
 * it no longer has (connections accepted on them stay), keeps the others, then runs the
 * modules' reload hooks. From the main thread; returns without waiting. */
void worker_reload_all(void);

/* Runs fn(w, arg) on worker w's thread soon. Thread-safe. 0 or -errno (-ESHUTDOWN: w is a
 * drained worker whose thread has ended; nothing of it is left to act on). */
int worker_post(worker_t *w, void (*fn)(worker_t *, void *), void *arg);
/* Messages for several workers gathered and posted as one per worker (worker_batch_post): a
 * thread waking many connections at once (a window's part close wakes a thousand players)
 * makes one allocation and takes each worker's message lock once, not once per connection.
 * Each worker runs its messages in the order they were added. Zeroed before use. */
#define WORKER_BATCH_WORKERS 16
typedef struct worker_batch {
    struct {
        worker_t *w;
        struct worker_batch_msg *m; /* NULL until the first message for w */
    } to[WORKER_BATCH_WORKERS];
    int n;
} worker_batch_t;
/* Adds fn(w, arg) to b (posted at once with worker_post when b has no room for another worker
 * or no memory): 0 or -errno as worker_post. */
int worker_batch_add(worker_batch_t *b, worker_t *w, void (*fn)(worker_t *, void *), void *arg);
/* Posts what b gathered (b is empty after): the number of messages whose worker was gone. */
int worker_batch_post(worker_batch_t *b);
/* Runs fn(w, arg) on every worker, each on its own thread; when all have run, runs
 * done(self, arg) on worker `self`. For admin commands that touch connections everywhere (cold
 * path). fn must synchronise its writes to arg (several workers run it in parallel).
 * 0 or -errno (then nothing runs). */
int worker_broadcast(worker_t *self, void (*fn)(worker_t *w, void *arg),
                     void (*done)(worker_t *self, void *arg), void *arg);
/* Closes connection `id` if this worker owns it. Worker thread only. 1 if found. */
int worker_close_conn(worker_t *w, uint64_t id);
/* Finds a live connection of this worker by id (worker thread only), or NULL. */
conn_t *worker_find_conn(worker_t *w, uint64_t id);
/* The index worker_find_conn looks in: conn_init adds a connection (by its id, set before),
 * conn_close takes it out; worker_unindex_all frees it with the worker. Worker thread only. */
void worker_index_conn(worker_t *w, conn_t *c);
void worker_unindex_conn(worker_t *w, const conn_t *c);
void worker_unindex_all(worker_t *w);
/* Requests a pass on w from any thread (coalesced). */
void worker_wake(worker_t *w);
/* Requests a pass at the end of this loop iteration (worker thread only); the loop does not
 * sleep until it ran. */
void worker_request_pass(worker_t *w);
/* Says that the event being handled is one of many small requests that come close together
 * and that the next of them may wait WORKER_GATHER_US for its answer (an HLS player's reload
 * or part): when a turn handled at most WORKER_GATHER_EVENTS events, all of that kind, and
 * began within WORKER_GATHER_DENSE_US of the previous one, the worker waits WORKER_GATHER_US
 * before it looks for events again, and finds several at once instead of sleeping and waking
 * for each. A message or a wake-up for the worker (worker_post, worker_wake) ends the wait at
 * once. Worker thread only; a turn with any other event does not wait. */
void worker_gather(worker_t *w);
#define WORKER_GATHER_US 500
#define WORKER_GATHER_EVENTS 4
#define WORKER_GATHER_DENSE_US 1000

/* Deadlines (use conn_set_deadline): sets or moves c's deadline (0 or -ENOMEM: c then has
 * none); clears it (its place in the heap given up later, when it comes due); takes c out of
 * the heap at once (a connection closed or forgotten). */
int worker_timeout_add(worker_t *w, conn_t *c, uint64_t deadline_ms);
void worker_timeout_clear(worker_t *w, conn_t *c);
void worker_timeout_remove(worker_t *w, conn_t *c);

/* Global connection ids (unique across workers). */
uint64_t worker_next_conn_id(void);
/* Ids from now on are above id (an upgrade: connections carried keep theirs). */
void worker_conn_ids_above(uint64_t id);

#endif
