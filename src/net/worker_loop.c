/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker_loop: a worker's epoll loop, read as its phases (worker_loop_run: wait; each event's
 * handler; connections readable again; deadlines and the end of an accept pause; the modules'
 * pass hooks; release of the connections closed in this turn), and what the phases run: the
 * registered modules and their hooks, messages and wake-ups from other threads (worker_post,
 * worker_broadcast, worker_wake: a list under a mutex and an eventfd), accepting, and refusing
 * waiting clients promptly when descriptors run out; the short wait that gathers the requests
 * of many players arriving close together into one turn (worker_gather), whose reads are
 * then entered at once (read_ahead.h). It does not create, reload or drain workers
 * (worker_pool.c) nor keep deadlines and timers (worker_timers.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "net/conn.h"
#include "net/listen.h"
#include "net/read_ahead.h"
#include "net/server.h"
#include "net/worker_internal.h"

#define WORKER_EVENTS 256

static atomic_ullong conn_ids = 1;

uint64_t worker_next_conn_id(void)
{
    return atomic_fetch_add_explicit(&conn_ids, 1, memory_order_relaxed);
}

void worker_conn_ids_above(uint64_t id)
{
    unsigned long long cur = atomic_load(&conn_ids);
    while (cur <= id && !atomic_compare_exchange_weak(&conn_ids, &cur, id + 1))
        ;
}

/* ---- modules ---- */

#define WORKER_MAX_MODULES 16

static const worker_module_t *modules[WORKER_MAX_MODULES];
static int nmodules;
static worker_accept_fn accept_hook;

void worker_register(const worker_module_t *m)
{
    for (int i = 0; i < nmodules; i++)
        if (modules[i] == m)
            return;
    if (nmodules == WORKER_MAX_MODULES)
        abort(); /* a programming error: raise WORKER_MAX_MODULES */
    modules[nmodules++] = m;
}

void worker_set_accept(worker_accept_fn fn)
{
    accept_hook = fn;
}

void worker_request_pass(worker_t *w)
{
    w->pass_requested = 1;
}

void worker_gather(worker_t *w)
{
    w->gather = 1;
}

static void run_pass(worker_t *w)
{
    w->pass_requested = 0;
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->pass)
            modules[i]->pass(w);
}

int worker_modules_init(worker_t *w)
{
    for (int i = 0; i < nmodules; i++) {
        if (modules[i]->init && modules[i]->init(w) < 0) {
            log_error("worker %d: %s failed to start", w->id, modules[i]->name);
            return -1;
        }
    }
    return 0;
}

void worker_modules_reload(worker_t *w)
{
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->reload)
            modules[i]->reload(w);
}

void worker_modules_fini(worker_t *w)
{
    for (int i = nmodules - 1; i >= 0; i--)
        if (modules[i]->fini)
            modules[i]->fini(w);
}

/* 1 while a module still has work on w that no connection stands for. */
static int modules_busy(worker_t *w)
{
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->busy && modules[i]->busy(w))
            return 1;
    return 0;
}

/* ---- messages and wake-ups ---- */

int worker_post(worker_t *w, void (*fn)(worker_t *, void *), void *arg)
{
    worker_msg_t *m = malloc(sizeof(*m));
    if (!m)
        return -ENOMEM;
    m->fn = fn;
    m->arg = arg;
    pthread_mutex_lock(&w->msg_lock);
    if (w->gone) {
        pthread_mutex_unlock(&w->msg_lock);
        free(m);
        return -ESHUTDOWN;
    }
    /* One eventfd write per batch: messages already waiting were signalled by the post that
     * found the list empty, and the worker reads the eventfd before it takes the list, so
     * what it has not taken yet it will (a window's part close posts to a thousand waiters). */
    int signal = list_empty(&w->msgs);
    list_insert_tail(&w->msgs, &m->link);
    pthread_mutex_unlock(&w->msg_lock);
    uint64_t one = 1;
    if (signal && write(w->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        return -errno;
    return 0;
}

/* The messages of a batch for one worker: run in order by batch_run, then freed. */
typedef struct worker_batch_msg {
    size_t n, cap;
    struct {
        void (*fn)(worker_t *, void *);
        void *arg;
    } item[];
} worker_batch_msg_t;

static void batch_run(worker_t *w, void *arg)
{
    worker_batch_msg_t *m = arg;
    for (size_t i = 0; i < m->n; i++)
        m->item[i].fn(w, m->item[i].arg);
    free(m);
}

int worker_batch_add(worker_batch_t *b, worker_t *w, void (*fn)(worker_t *, void *), void *arg)
{
    int i = 0;
    while (i < b->n && b->to[i].w != w)
        i++;
    if (i == b->n && b->n == WORKER_BATCH_WORKERS)
        return worker_post(w, fn, arg);
    worker_batch_msg_t *m = i < b->n ? b->to[i].m : NULL;
    if (!m || m->n == m->cap) {
        size_t cap = m ? 2 * m->cap : 16;
        worker_batch_msg_t *grown = realloc(m, sizeof(*m) + cap * sizeof(m->item[0]));
        if (!grown)
            return worker_post(w, fn, arg);
        if (!m)
            grown->n = 0;
        grown->cap = cap;
        m = grown;
        if (i == b->n)
            b->to[b->n++].w = w;
        b->to[i].m = m;
    }
    m->item[m->n].fn = fn;
    m->item[m->n++].arg = arg;
    return 0;
}

int worker_batch_post(worker_batch_t *b)
{
    int gone = 0;
    for (int i = 0; i < b->n; i++) {
        worker_batch_msg_t *m = b->to[i].m;
        if (worker_post(b->to[i].w, batch_run, m) < 0) {
            gone += (int)m->n;
            free(m);
        }
    }
    b->n = 0;
    return gone;
}

typedef struct broadcast {
    void (*fn)(worker_t *w, void *arg);
    void (*done)(worker_t *self, void *arg);
    void *arg;
    worker_t *self;
    atomic_int pending;
} broadcast_t;

static void broadcast_done(worker_t *w, void *arg)
{
    broadcast_t *b = arg;
    b->done(w, b->arg);
    free(b);
}

static void broadcast_count(worker_t *w, broadcast_t *b)
{
    if (atomic_fetch_sub(&b->pending, 1) == 1 && worker_post(b->self, broadcast_done, b) < 0) {
        /* out of memory: run the completion here rather than leak the request */
        broadcast_done(w, b);
    }
}

static void broadcast_run(worker_t *w, void *arg)
{
    broadcast_t *b = arg;
    b->fn(w, b->arg);
    broadcast_count(w, b);
}

int worker_broadcast(worker_t *self, void (*fn)(worker_t *w, void *arg),
                     void (*done)(worker_t *self, void *arg), void *arg)
{
    broadcast_t *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    *b = (broadcast_t){fn, done, arg, self, 0};
    int n = 0, slots = atomic_load(&server.nslots); /* draining workers have clients too */
    for (int i = 0; i < slots; i++)
        if (server.workers[i])
            n++;
    atomic_store(&b->pending, n);
    for (int i = 0; i < slots; i++) {
        worker_t *w = server.workers[i];
        if (!w)
            continue;
        int rc = worker_post(w, broadcast_run, b);
        if (rc == -ESHUTDOWN)
            broadcast_count(self, b); /* a drained worker: nothing of it to visit */
        else if (rc < 0)
            broadcast_run(w, b); /* keeps the count right; rare */
    }
    return 0;
}

/* ---- live connections by id: every wake-up posted for a connection looks one up ---- */

#define CONN_INDEX_MIN 64

static size_t index_slot(const worker_t *w, uint64_t id)
{
    return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 32) & (w->conn_index_cap - 1);
}

static void index_put(worker_t *w, conn_t *c)
{
    size_t i = index_slot(w, c->id);
    while (w->conn_index[i])
        i = (i + 1) & (w->conn_index_cap - 1);
    w->conn_index[i] = c;
    w->conn_index_len++;
}

/* Doubles the table (at least CONN_INDEX_MIN slots): 0, or -1 out of memory (the old one kept). */
static int index_grow(worker_t *w)
{
    size_t cap = w->conn_index_cap ? w->conn_index_cap * 2 : CONN_INDEX_MIN;
    conn_t **old = w->conn_index, **fresh = calloc(cap, sizeof(*fresh));
    size_t old_cap = w->conn_index_cap;
    if (!fresh)
        return -1;
    w->conn_index = fresh;
    w->conn_index_cap = cap;
    w->conn_index_len = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i])
            index_put(w, old[i]);
    free(old);
    return 0;
}

void worker_index_conn(worker_t *w, conn_t *c)
{
    if ((w->conn_index_len + 1) * 2 > w->conn_index_cap && index_grow(w) < 0 &&
        w->conn_index_len + 1 >= w->conn_index_cap) {
        w->conn_index_short = 1; /* found by walking the list until the worker ends */
        return;
    }
    index_put(w, c);
}

void worker_unindex_conn(worker_t *w, const conn_t *c)
{
    if (!w->conn_index_cap)
        return;
    size_t mask = w->conn_index_cap - 1, i = index_slot(w, c->id);
    while (w->conn_index[i] && w->conn_index[i] != c)
        i = (i + 1) & mask;
    if (!w->conn_index[i])
        return; /* not indexed (the table was short) */
    w->conn_index[i] = NULL;
    w->conn_index_len--;
    /* backward shift: move up the entries of the run after i that may no longer be reached */
    for (size_t j = (i + 1) & mask; w->conn_index[j]; j = (j + 1) & mask) {
        size_t home = index_slot(w, w->conn_index[j]->id);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            w->conn_index[i] = w->conn_index[j];
            w->conn_index[j] = NULL;
            i = j;
        }
    }
}

void worker_unindex_all(worker_t *w)
{
    free(w->conn_index);
    w->conn_index = NULL;
    w->conn_index_cap = w->conn_index_len = 0;
}

conn_t *worker_find_conn(worker_t *w, uint64_t id)
{
    if (w->conn_index_cap) {
        size_t mask = w->conn_index_cap - 1;
        for (size_t i = index_slot(w, id); w->conn_index[i]; i = (i + 1) & mask)
            if (w->conn_index[i]->id == id)
                return w->conn_index[i];
    }
    if (!w->conn_index_short)
        return NULL;
    conn_t *c;
    list_foreach(c, &w->conns, conn_t, link)
        if (c->id == id)
            return c;
    return NULL;
}

int worker_close_conn(worker_t *w, uint64_t id)
{
    conn_t *c = worker_find_conn(w, id);
    if (c)
        conn_close(c);
    return c != NULL;
}

/* The worker whose loop runs on this thread (NULL elsewhere): a wake-up it asks of itself is a
 * pass request, run at the end of the turn it is in, with no eventfd write and no extra turn. */
static __thread worker_t *loop_self;

void worker_wake(worker_t *w)
{
    if (w == loop_self) {
        w->pass_requested = 1;
        return;
    }
    if (atomic_exchange_explicit(&w->wake_pending, 1, memory_order_acq_rel))
        return;
    uint64_t one = 1;
    if (write(w->evfd, &one, sizeof(one)) < 0) {
        /* counter saturated: a wake-up is pending anyway */
    }
}

void worker_run_messages(worker_t *w)
{
    list_t batch; /* in posting order; what the messages post meanwhile waits for the next turn */
    pthread_mutex_lock(&w->msg_lock);
    list_take_all(&batch, &w->msgs);
    pthread_mutex_unlock(&w->msg_lock);
    while (!list_empty(&batch)) {
        worker_msg_t *m = container_of(batch.next, worker_msg_t, link);
        list_remove(&m->link);
        m->fn(w, m->arg);
        free(m);
    }
}

void worker_on_wakeup(loop_handler_t *h, uint32_t events)
{
    worker_t *w = (worker_t *)((char *)h - offsetof(worker_t, ev_handler));
    uint64_t v;
    if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        log_warn("eventfd read: %s", strerror(errno));
    atomic_store_explicit(&w->wake_pending, 0, memory_order_release);
    worker_run_messages(w);
    w->pass_requested = 1;
}

/* ---- accepting, and running out of descriptors ---- */

#define ACCEPT_PAUSE_MS 200
#define ACCEPT_REFUSE_BATCH 1024 /* refusals in one turn at most (about 5 ms) */
#define ACCEPT_LOG_INTERVAL_MS 10000

static log_ratelimit_t accept_limit_log;

static void watch_listeners(worker_t *w, uint32_t events)
{
    for (int i = 0; i < w->nlisten; i++) {
        struct epoll_event ev = {.events = events, .data.ptr = &w->listens[i]->handler};
        epoll_ctl(w->epfd, EPOLL_CTL_MOD, w->listens[i]->fd, &ev);
    }
}

void worker_open_reserve(worker_t *w)
{
    if (w->reserve_fd < 0)
        w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* accept() failed with EMFILE/ENFILE. Waiting clients would hang in the backlog and the
 * listen socket would stay readable, so: close the reserve descriptor to accept-and-close
 * them (they see a prompt close), stop watching the listen sockets for a moment (the loop
 * re-arms them, see worker_loop_run), count the refusals and log once in a while. */
/* Descriptors are process-wide: the slot a worker frees by closing its reserve could be taken
 * by another worker's accept before its own accept-and-close runs, leaving it no reserve and
 * its waiting clients hanging. So once any worker ran short, every worker accepts under one
 * lock until an accept succeeds again (cold path: only while descriptors are short). */
static pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int fds_short;

static void accept_exhausted(worker_t *w, worker_listen_t *ls, int err)
{
    unsigned refused = 0;
    worker_open_reserve(w); /* lost earlier (taken while we had none): try again */
    if (w->reserve_fd >= 0) {
        /* The whole backlog is refused at once through the one freed slot: a flood of
         * thousands is turned away in a turn, not at a batch a pause. Another thread may
         * take the slot meanwhile: then accept fails again and the rest waits a pause. */
        close(w->reserve_fd);
        w->reserve_fd = -1;
        while (refused < ACCEPT_REFUSE_BATCH) {
            int fd = accept4(ls->fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0) {
                if (errno == EINTR || errno == ECONNABORTED)
                    continue;
                break;
            }
            close(fd);
            refused++;
        }
        worker_open_reserve(w);
    }
    atomic_fetch_add(&server.stats.connections_refused, refused);
    int more = refused == ACCEPT_REFUSE_BATCH;
    log_warn_limited(&accept_limit_log, ACCEPT_LOG_INTERVAL_MS,
                     "accept: %s (open-file limit reached): %u waiting clients refused, "
                     "not accepting for %d ms", strerror(err), refused,
                     more ? 0 : ACCEPT_PAUSE_MS); /* 0: more are refused next turn */
    if (more)
        return; /* the level-triggered listen socket comes back next turn */
    if (!w->accept_resume_ms)
        watch_listeners(w, 0);
    w->accept_resume_ms = loop_now_ms() + ACCEPT_PAUSE_MS;
}

/* epoll_wait timeout: until the next connection deadline or the end of an accept pause, so
 * deadlines are kept to the millisecond. A worker with neither reads no clock. */
static int loop_wait_ms(worker_t *w)
{
    if (w->pass_requested || w->read_again)
        return 0;
    uint64_t next = w->accept_resume_ms, deadline;
    if (worker_deadline_next(w, &deadline) && (!next || deadline < next))
        next = deadline;
    if (!next)
        return -1;
    uint64_t now = loop_now_ms();
    if (now >= next)
        return 0;
    return next - now > 60000 ? 60000 : (int)(next - now);
}

static void run_deadlines(worker_t *w)
{
    uint64_t deadline;
    if (!worker_deadline_next(w, &deadline) && !w->accept_resume_ms)
        return;
    uint64_t now = loop_now_ms();
    worker_deadlines_expire(w, now);
    if (w->accept_resume_ms && now >= w->accept_resume_ms) {
        w->accept_resume_ms = 0;
        watch_listeners(w, EPOLLIN);
    }
}

void worker_on_accept(loop_handler_t *h, uint32_t events)
{
    worker_listen_t *ls = (worker_listen_t *)h;
    worker_t *w = ls->worker;
    while (!w->accept_resume_ms && ls->fd >= 0) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int locked = atomic_load_explicit(&fds_short, memory_order_relaxed);
        if (locked)
            pthread_mutex_lock(&short_lock);
        int fd = accept4(ls->fd, (struct sockaddr *)&ss, &sl,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        int err = errno;
        if (fd < 0 && (err == EMFILE || err == ENFILE)) {
            if (!locked)
                pthread_mutex_lock(&short_lock);
            atomic_store(&fds_short, 1);
            accept_exhausted(w, ls, err);
            pthread_mutex_unlock(&short_lock);
            return;
        }
        if (fd >= 0 && locked)
            atomic_store(&fds_short, 0); /* descriptors are free again */
        if (locked)
            pthread_mutex_unlock(&short_lock);
        if (fd < 0) {
            if (err == EINTR || err == ECONNABORTED)
                continue;
            return;
        }
        char ip[64];
        listen_format_addr(&ss, ip, sizeof(ip));
        if (accept_hook)
            accept_hook(w, fd, ip, ls->conf);
        else
            close(fd);
    }
}

void worker_release_closed(worker_t *w)
{
    while (!list_empty(&w->closed)) {
        conn_t *c = list_first_entry(&w->closed, conn_t, link);
        list_remove(&c->link);
        conn_release(c);
    }
}

/* ---- the loop ---- */

/* A draining worker with nothing left: no connection, no busy module, no message waiting.
 * Then it refuses further posts (under the lock a poster takes) and may end. */
static int drained(worker_t *w)
{
    if (!list_empty(&w->conns) || !list_empty(&w->closed) || w->read_again)
        return 0;
    if (modules_busy(w))
        return 0;
    pthread_mutex_lock(&w->msg_lock);
    int idle = list_empty(&w->msgs);
    if (idle)
        w->gone = 1;
    pthread_mutex_unlock(&w->msg_lock);
    return idle;
}

/* Accounts one turn of a loop that took `us` microseconds (see server_stats_t). */
static void turn_done(uint64_t us)
{
    static const unsigned over_ms[] = SERVER_SLOW_TURN_MS;
    unsigned long long max = atomic_load_explicit(&server.stats.turn_max_us, memory_order_relaxed);
    while (us > max && !atomic_compare_exchange_weak_explicit(&server.stats.turn_max_us, &max, us,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed))
        ;
    for (size_t i = 0; i < sizeof(over_ms) / sizeof(over_ms[0]) && us > over_ms[i] * 1000ull; i++)
        atomic_fetch_add_explicit(&server.stats.slow_turns[i], 1, memory_order_relaxed);
}

/* 1 if the turn that began at turn_start and handled n events may wait for more before the
 * next (worker_gather): a few events, each of a kind that may, close behind the turn before,
 * and nothing left to do at once. */
static int gather_next(worker_t *w, int n, int all_gather, uint64_t turn_start)
{
    int dense = turn_start - w->turn_start_us < WORKER_GATHER_DENSE_US;
    w->turn_start_us = turn_start;
    return n <= WORKER_GATHER_EVENTS && all_gather && dense && !w->pass_requested &&
           !w->read_again;
}

/* The wait before looking for events again: what comes meanwhile is handled in one turn. It
 * watches w's eventfd only, so a message or a wake-up (a part's waiters, a fan-out pass) ends
 * it at once; requests on the connections wait for its end. */
static void gather_wait(worker_t *w)
{
    struct timespec ts = {0, WORKER_GATHER_US * 1000L};
    struct pollfd p = {.fd = w->evfd, .events = POLLIN};
    ppoll(&p, 1, &ts, NULL);
}

int worker_loop_run(worker_t *w)
{
    struct epoll_event ev[WORKER_EVENTS];
    int gather = 0;
    loop_self = w;
    while (!w->stopping) {
        if (gather)
            gather_wait(w);
        int n = epoll_wait(w->epfd, ev, WORKER_EVENTS, loop_wait_ms(w));
        if (n < 0 && errno != EINTR) {
            log_error("epoll_wait: %s", strerror(errno));
            break;
        }
        uint64_t turn_start = loop_now_us();
        read_ahead_turn(w, ev, n);
        int all_gather = n > 0; /* every event of the turn said worker_gather */
        for (int i = 0; i < n; i++) {
            loop_handler_t *h = ev[i].data.ptr;
            w->gather = 0;
            h->on_event(h, ev[i].events);
            all_gather &= w->gather;
        }
        if (w->read_again)
            conn_run_read_again(w);
        run_deadlines(w);
        gather = gather_next(w, n, all_gather, turn_start);
        if (w->pass_requested)
            run_pass(w);
        worker_release_closed(w);
        turn_done(loop_now_us() - turn_start);
        if (w->draining && !w->stopping && drained(w))
            return 1;
    }
    return 0;
}
