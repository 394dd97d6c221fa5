/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker: one thread, one epoll loop (see worker.h): accepting, connection events, deadlines,
 * timers, messages, and the registered modules' pass hooks.
 */
#include "net/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/log.h"
#include "net/conn.h"
#include "net/listen.h"
#include "net/server.h"

#define WORKER_EVENTS 256

static atomic_ullong conn_ids = 1;

uint64_t worker_next_conn_id(void)
{
    return atomic_fetch_add_explicit(&conn_ids, 1, memory_order_relaxed);
}

/* ---- deadlines: a binary min-heap of connections by deadline ----
 * Deadlines of very different lengths coexist (a 2 s linger, a 15 s header timeout, an hour of
 * listening), so an ordered list would cost O(n) per insert; the heap costs O(log n). Each
 * connection knows its slot (heap_pos, 1-based; 0 = not in the heap). */

static int deadline_before(const conn_t *a, const conn_t *b)
{
    return a->deadline_ms < b->deadline_ms;
}

static void heap_place(worker_t *w, size_t pos, conn_t *c)
{
    w->heap[pos - 1] = c;
    c->heap_pos = pos;
}

static void heap_up(worker_t *w, size_t pos)
{
    conn_t *c = w->heap[pos - 1];
    while (pos > 1 && deadline_before(c, w->heap[pos / 2 - 1])) {
        heap_place(w, pos, w->heap[pos / 2 - 1]);
        pos /= 2;
    }
    heap_place(w, pos, c);
}

static void heap_down(worker_t *w, size_t pos)
{
    conn_t *c = w->heap[pos - 1];
    for (;;) {
        size_t child = pos * 2;
        if (child > w->heap_len)
            break;
        if (child < w->heap_len && deadline_before(w->heap[child], w->heap[child - 1]))
            child++;
        if (!deadline_before(w->heap[child - 1], c))
            break;
        heap_place(w, pos, w->heap[child - 1]);
        pos = child;
    }
    heap_place(w, pos, c);
}

int worker_timeout_add(worker_t *w, conn_t *c, uint64_t deadline_ms)
{
    worker_timeout_remove(w, c);
    if (w->heap_len == w->heap_cap) {
        size_t ncap = w->heap_cap ? w->heap_cap * 2 : 256;
        conn_t **nh = realloc(w->heap, ncap * sizeof(*nh));
        if (!nh)
            return -ENOMEM;
        w->heap = nh;
        w->heap_cap = ncap;
    }
    c->deadline_ms = deadline_ms;
    w->heap[w->heap_len++] = c;
    c->heap_pos = w->heap_len;
    heap_up(w, w->heap_len);
    return 0;
}

void worker_timeout_remove(worker_t *w, conn_t *c)
{
    size_t pos = c->heap_pos;
    if (!pos)
        return;
    c->heap_pos = 0;
    c->deadline_ms = 0;
    conn_t *last = w->heap[--w->heap_len];
    if (pos > w->heap_len)
        return; /* it was the last one */
    heap_place(w, pos, last);
    heap_up(w, pos);
    heap_down(w, last->heap_pos);
}

static void expire_timeouts(worker_t *w, uint64_t now)
{
    while (w->heap_len && w->heap[0]->deadline_ms <= now) {
        conn_t *c = w->heap[0];
        worker_timeout_remove(w, c);
        if (c->ops->on_timeout)
            c->ops->on_timeout(c);
        else
            conn_close(c);
    }
}

/* ---- modules ---- */

#define WORKER_MAX_MODULES 8

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

static void run_pass(worker_t *w)
{
    w->pass_requested = 0;
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->pass)
            modules[i]->pass(w);
}

/* ---- timers ---- */

static void on_timer(loop_handler_t *h, uint32_t events)
{
    worker_timer_t *t = (worker_timer_t *)h;
    uint64_t v;
    if (read(t->fd, &v, sizeof(v)) < 0)
        return;
    t->fn(t->worker, t->arg);
}

static int timer_open(worker_t *w, worker_timer_t *t, unsigned period_ms)
{
    t->worker = w;
    t->handler.on_event = on_timer;
    t->fd = loop_timerfd(period_ms);
    if (t->fd < 0)
        return t->fd;
    return loop_add(w->epfd, t->fd, EPOLLIN, &t->handler);
}

int worker_timer_add(worker_t *w, unsigned period_ms, void (*fn)(worker_t *w, void *arg),
                     void *arg)
{
    worker_timer_t *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->fn = fn;
    t->arg = arg;
    int rc = timer_open(w, t, period_ms);
    if (rc < 0) {
        if (t->fd >= 0)
            close(t->fd);
        free(t);
        return rc;
    }
    t->next = w->timers;
    w->timers = t;
    return 0;
}

int worker_timer_period(worker_t *w, void (*fn)(worker_t *w, void *arg), unsigned period_ms)
{
    for (worker_timer_t *t = w->timers; t; t = t->next)
        if (t->fn == fn)
            return loop_timerfd_set(t->fd, period_ms);
    return -ENOENT;
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
    m->next = w->msgs;
    w->msgs = m;
    pthread_mutex_unlock(&w->msg_lock);
    uint64_t one = 1;
    if (write(w->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        return -errno;
    return 0;
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

conn_t *worker_find_conn(worker_t *w, uint64_t id)
{
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

void worker_wake(worker_t *w)
{
    if (atomic_exchange_explicit(&w->wake_pending, 1, memory_order_acq_rel))
        return;
    uint64_t one = 1;
    if (write(w->evfd, &one, sizeof(one)) < 0) {
        /* counter saturated: a wake-up is pending anyway */
    }
}

static void run_messages(worker_t *w)
{
    pthread_mutex_lock(&w->msg_lock);
    worker_msg_t *m = w->msgs;
    w->msgs = NULL;
    pthread_mutex_unlock(&w->msg_lock);
    /* the list is newest first: reverse to run in posting order */
    worker_msg_t *rev = NULL;
    while (m) {
        worker_msg_t *n = m->next;
        m->next = rev;
        rev = m;
        m = n;
    }
    while (rev) {
        worker_msg_t *n = rev->next;
        rev->fn(w, rev->arg);
        free(rev);
        rev = n;
    }
}

static void on_eventfd(loop_handler_t *h, uint32_t events)
{
    worker_t *w = (worker_t *)((char *)h - offsetof(worker_t, ev_handler));
    uint64_t v;
    if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        log_warn("eventfd read: %s", strerror(errno));
    atomic_store_explicit(&w->wake_pending, 0, memory_order_release);
    run_messages(w);
    w->pass_requested = 1;
}

/* ---- connections ---- */

/* ---- accepting, and running out of descriptors ---- */

#define ACCEPT_PAUSE_MS 200
#define ACCEPT_REFUSE_BATCH 64
#define ACCEPT_LOG_INTERVAL_MS 10000

static log_ratelimit_t accept_limit_log;

static void watch_listeners(worker_t *w, uint32_t events)
{
    for (int i = 0; i < w->nlisten; i++) {
        struct epoll_event ev = {.events = events, .data.ptr = &w->listens[i]->handler};
        epoll_ctl(w->epfd, EPOLL_CTL_MOD, w->listens[i]->fd, &ev);
    }
}

static void open_reserve(worker_t *w)
{
    if (w->reserve_fd < 0)
        w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* accept() failed with EMFILE/ENFILE. Waiting clients would hang in the backlog and the
 * listen socket would stay readable, so: close the reserve descriptor to accept-and-close
 * them (they see a prompt close), stop watching the listen sockets for a moment (the loop
 * re-arms them, see worker_main), count the refusals and log once in a while. */
/* Descriptors are process-wide: the slot a worker frees by closing its reserve could be taken
 * by another worker's accept before its own accept-and-close runs, leaving it no reserve and
 * its waiting clients hanging. So once any worker ran short, every worker accepts under one
 * lock until an accept succeeds again (cold path: only while descriptors are short). */
static pthread_mutex_t short_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int fds_short;

static void accept_exhausted(worker_t *w, worker_listen_t *ls, int err)
{
    unsigned refused = 0;
    open_reserve(w); /* lost earlier (taken while we had none): try again */
    while (w->reserve_fd >= 0 && refused < ACCEPT_REFUSE_BATCH) {
        close(w->reserve_fd);
        w->reserve_fd = -1;
        int fd = accept4(ls->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            close(fd);
            refused++;
        }
        open_reserve(w);
        if (fd < 0)
            break;
    }
    atomic_fetch_add(&server.stats.connections_refused, refused);
    log_warn_limited(&accept_limit_log, ACCEPT_LOG_INTERVAL_MS,
                     "accept: %s (open-file limit reached): %u waiting clients refused, "
                     "not accepting for %d ms", strerror(err), refused, ACCEPT_PAUSE_MS);
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
    uint64_t next = w->accept_resume_ms;
    if (w->heap_len && (!next || w->heap[0]->deadline_ms < next))
        next = w->heap[0]->deadline_ms;
    if (!next)
        return -1;
    uint64_t now = loop_now_ms();
    if (now >= next)
        return 0;
    return next - now > 60000 ? 60000 : (int)(next - now);
}

static void run_deadlines(worker_t *w)
{
    if (!w->heap_len && !w->accept_resume_ms)
        return;
    uint64_t now = loop_now_ms();
    expire_timeouts(w, now);
    if (w->accept_resume_ms && now >= w->accept_resume_ms) {
        w->accept_resume_ms = 0;
        watch_listeners(w, EPOLLIN);
    }
}

static void on_accept(loop_handler_t *h, uint32_t events)
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

static void release_closed(worker_t *w)
{
    while (!list_empty(&w->closed)) {
        conn_t *c = list_first_entry(&w->closed, conn_t, link);
        list_remove(&c->link);
        conn_release(c);
    }
}

static int drained(worker_t *w);
static void worker_end_drained(worker_t *w);

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

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    struct epoll_event ev[WORKER_EVENTS];
    char name[16];
    snprintf(name, sizeof(name), "worker-%d", w->id); /* ps -L, /proc/PID/task/TID/comm */
    pthread_setname_np(pthread_self(), name);
    while (!w->stopping) {
        int n = epoll_wait(w->epfd, ev, WORKER_EVENTS, loop_wait_ms(w));
        if (n < 0 && errno != EINTR) {
            log_error("epoll_wait: %s", strerror(errno));
            break;
        }
        uint64_t turn_start = loop_now_us();
        for (int i = 0; i < n; i++) {
            loop_handler_t *h = ev[i].data.ptr;
            h->on_event(h, ev[i].events);
        }
        if (w->read_again)
            conn_run_read_again(w);
        run_deadlines(w);
        if (w->pass_requested)
            run_pass(w);
        release_closed(w);
        turn_done(loop_now_us() - turn_start);
        if (w->draining && !w->stopping && drained(w)) {
            worker_end_drained(w);
            return NULL;
        }
    }
    return NULL;
}

/* ---- lifecycle ---- */

static int same_address(const listen_conf_t *a, const listen_conf_t *b)
{
    return a->port == b->port && !a->bind_address == !b->bind_address &&
           (!a->bind_address || strcmp(a->bind_address, b->bind_address) == 0);
}

/* Every worker's listen array changes under this lock (cold: start-up, reloads, draining),
 * so that a worker joining late can borrow another's socket (listen_borrow). */
static pthread_mutex_t listens_lock = PTHREAD_MUTEX_INITIALIZER;
static uid_t start_euid;  /* who opened the start-up sockets */

/* A worker started (or started again) by a reload after privileges were dropped cannot open
 * its own socket on an address the start-up sockets hold: SO_REUSEPORT groups take sockets of
 * one user only, and a port below 1024 needs privileges. It shares another worker's socket
 * instead (a duplicate descriptor: both loops accept from one queue). -1 if none has it. */
static int listen_borrow(worker_t *self, const listen_conf_t *lc)
{
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++) {
        worker_t *w = server.workers[i];
        if (!w || w == self)
            continue;
        for (int j = 0; j < w->nlisten; j++)
            if (w->listens[j] && w->listens[j]->fd >= 0 &&
                same_address(w->listens[j]->conf, lc))
                return fcntl(w->listens[j]->fd, F_DUPFD_CLOEXEC, 0);
    }
    return -1;
}

static worker_listen_t *listen_add(worker_t *w, const listen_conf_t *lc, int joining)
{
    worker_listen_t *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return NULL;
    ls->fd = joining && geteuid() != start_euid ? listen_borrow(w, lc) : -1;
    if (ls->fd < 0)
        ls->fd = listen_open(lc);
    ls->worker = w;
    ls->conf = lc;
    ls->handler.on_event = on_accept;
    if (ls->fd < 0 || loop_add(w->epfd, ls->fd, w->accept_resume_ms ? 0 : EPOLLIN,
                               &ls->handler) < 0) {
        if (ls->fd >= 0)
            close(ls->fd);
        free(ls);
        return NULL;
    }
    return ls;
}

/* Closes a listen socket; its memory stays until the worker is freed: an event for it may
 * still be in this loop iteration. */
static void listen_retire(worker_t *w, worker_listen_t *ls)
{
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, ls->fd, NULL);
    close(ls->fd);
    ls->fd = -1;
    ls->next_closed = w->listens_closed;
    w->listens_closed = ls;
}

/* Makes w's listen sockets those of cfg: a socket whose address is still configured is kept
 * (with the new settings), others are closed, new addresses opened. A closed socket's memory
 * stays until the worker is freed: an event for it may still be in this loop iteration. */
static int sync_listeners_locked(worker_t *w, const config_t *cfg, int at_start, int joining);

/* joining: w starts accepting after start-up (added by a reload, or no longer draining). */
static int sync_listeners(worker_t *w, const config_t *cfg, int at_start, int joining)
{
    pthread_mutex_lock(&listens_lock);
    if (at_start && !atomic_load(&server.nslots))
        start_euid = geteuid();
    int rc = sync_listeners_locked(w, cfg, at_start, joining);
    pthread_mutex_unlock(&listens_lock);
    return rc;
}

static int sync_listeners_locked(worker_t *w, const config_t *cfg, int at_start, int joining)
{
    int n = 0, rc = 0;
    for (const listen_conf_t *lc = cfg->listen; lc; lc = lc->next)
        n++;
    worker_listen_t **next = calloc((size_t)n + 1, sizeof(*next));
    if (!next)
        return -ENOMEM;
    int kept = 0;
    for (const listen_conf_t *lc = cfg->listen; lc; lc = lc->next) {
        worker_listen_t *ls = NULL;
        for (int i = 0; i < w->nlisten && !ls; i++)
            if (w->listens[i] && same_address(w->listens[i]->conf, lc)) {
                ls = w->listens[i];
                w->listens[i] = NULL;
                ls->conf = lc;
            }
        if (!ls && !at_start && w->id == 0)
            log_info("opening port %d on every worker", lc->port);
        if (!ls && !(ls = listen_add(w, lc, joining))) {
            rc = -EADDRNOTAVAIL;
            if (at_start)
                break;
            log_error("worker %d: port %d not opened (a port below 1024 needs a restart once "
                      "privileges are dropped)", w->id, lc->port);
            continue;
        }
        next[kept++] = ls;
    }
    for (int i = 0; i < w->nlisten; i++) {
        worker_listen_t *ls = w->listens[i];
        if (!ls)
            continue;
        if (!at_start && w->id == 0)
            log_info("closing port %d on every worker (its connections stay)", ls->conf->port);
        listen_retire(w, ls);
    }
    free(w->listens);
    w->listens = next;
    w->nlisten = kept;
    return rc;
}

/* ---- reload ---- */

static void reload_msg(worker_t *w, void *arg)
{
    if (!w->draining)
        sync_listeners(w, server_config(), 0, 0);
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->reload)
            modules[i]->reload(w);
}

void worker_reload_all(void)
{
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++)
        if (server.workers[i])
            worker_post(server.workers[i], reload_msg, NULL);
}

/* Frees what the worker's loop owns (listen sockets, timers, epoll, reserve descriptor,
 * deadline heap); the shell (id, eventfd, message lock) stays. */
static void loop_teardown(worker_t *w)
{
    pthread_mutex_lock(&listens_lock);
    for (int i = 0; i < w->nlisten; i++) {
        close(w->listens[i]->fd);
        free(w->listens[i]);
    }
    free(w->listens);
    w->listens = NULL;
    w->nlisten = 0;
    pthread_mutex_unlock(&listens_lock);
    while (w->listens_closed) {
        worker_listen_t *ls = w->listens_closed;
        w->listens_closed = ls->next_closed;
        free(ls);
    }
    while (w->timers) {
        worker_timer_t *t = w->timers;
        w->timers = t->next;
        close(t->fd);
        free(t);
    }
    if (w->epfd >= 0)
        close(w->epfd);
    w->epfd = -1;
    if (w->reserve_fd >= 0)
        close(w->reserve_fd);
    w->reserve_fd = -1;
    free(w->heap);
    w->heap = NULL;
    w->heap_len = w->heap_cap = 0;
}

static void shell_free(worker_t *w)
{
    if (w->evfd >= 0)
        close(w->evfd);
    pthread_mutex_destroy(&w->msg_lock);
    free(w);
}

static void modules_fini(worker_t *w)
{
    for (int i = nmodules - 1; i >= 0; i--)
        if (modules[i]->fini)
            modules[i]->fini(w);
}

/* The loop of a worker (new, or a drained one starting again): epoll, listen sockets of the
 * current config, the eventfd watched, modules' per-worker state. 0 or -1, logged. */
static int loop_setup(worker_t *w, int at_start)
{
    const config_t *cfg = server_config();
    w->draining = w->stopping = 0;
    w->accept_resume_ms = 0;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0)
        goto fail;
    if (sync_listeners(w, cfg, at_start, !at_start) < 0 && (at_start || !w->nlisten))
        goto fail;
    w->ev_handler.on_event = on_eventfd;
    if (loop_add(w->epfd, w->evfd, EPOLLIN, &w->ev_handler) < 0)
        goto fail;
    open_reserve(w);
    for (int i = 0; i < nmodules; i++) {
        if (modules[i]->init && modules[i]->init(w) < 0) {
            log_error("worker %d: %s failed to start", w->id, modules[i]->name);
            goto fail_modules;
        }
    }
    return 0;
fail_modules:
    modules_fini(w);
fail:
    log_error("worker %d: start-up failed", w->id);
    loop_teardown(w);
    return -1;
}

worker_t *worker_new(int id)
{
    worker_t *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->id = id;
    w->epfd = w->reserve_fd = -1;
    list_init(&w->conns);
    list_init(&w->closed);
    pthread_mutex_init(&w->msg_lock, NULL);
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->evfd < 0 || loop_setup(w, !atomic_load(&server.running)) < 0) {
        if (w->evfd < 0)
            log_error("worker %d: eventfd: %s", id, strerror(errno));
        shell_free(w);
        return NULL;
    }
    w->accepting = 1;
    server.workers[id] = w;
    return w;
}

int worker_start(worker_t *w)
{
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    if (!rc)
        w->thread_live = 1;
    return rc ? -rc : 0;
}

static void stop_msg(worker_t *w, void *arg)
{
    w->stopping = 1;
}

/* Waits for a drained worker's thread (it is detached) to be done with its worker_t. */
static void wait_ended(worker_t *w)
{
    while (!atomic_load_explicit(&w->ended, memory_order_acquire)) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL); /* the thread is past its last message: a moment at most */
    }
    w->thread_live = 0;
}

void worker_stop(worker_t *w)
{
    if (!w->thread_live)
        return;
    if (worker_post(w, stop_msg, NULL) == -ESHUTDOWN) {
        wait_ended(w);
        return;
    }
    pthread_join(w->thread, NULL);
    w->thread_live = 0;
}

void worker_free(worker_t *w)
{
    if (!w->gone) {
        while (!list_empty(&w->conns))
            conn_close(list_first_entry(&w->conns, conn_t, link));
        release_closed(w);
        run_messages(w);
        modules_fini(w);
        loop_teardown(w);
    }
    server.workers[w->id] = NULL;
    shell_free(w);
}

/* ---- draining (fewer <workers> after a reload) ---- */

static void drain_msg(worker_t *w, void *arg)
{
    if (w->draining)
        return;
    w->draining = 1;
    /* take what already waits in the backlogs: closing a SO_REUSEPORT socket resets its
     * queued connections (the other workers' sockets get the new ones from now) */
    for (int i = 0; i < w->nlisten; i++)
        if (!w->accept_resume_ms)
            on_accept(&w->listens[i]->handler, EPOLLIN);
    pthread_mutex_lock(&listens_lock);
    for (int i = 0; i < w->nlisten; i++)
        listen_retire(w, w->listens[i]);
    free(w->listens);
    w->listens = NULL;
    w->nlisten = 0;
    pthread_mutex_unlock(&listens_lock);
    int n = 0;
    conn_t *c;
    list_foreach(c, &w->conns, conn_t, link)
        n++;
    log_info("worker %d: draining (no longer accepting; %d connection%s to finish)", w->id, n,
             n == 1 ? "" : "s");
}

static void undrain_msg(worker_t *w, void *arg)
{
    if (!w->draining)
        return;
    w->draining = 0;
    sync_listeners(w, server_config(), 0, 1);
    log_info("worker %d: accepting again", w->id);
}

/* A draining worker with nothing left: no connection, no busy module, no message waiting.
 * Then it refuses further posts (under the lock a poster takes) and may end. */
static int drained(worker_t *w)
{
    if (!list_empty(&w->conns) || !list_empty(&w->closed) || w->read_again)
        return 0;
    for (int i = 0; i < nmodules; i++)
        if (modules[i]->busy && modules[i]->busy(w))
            return 0;
    pthread_mutex_lock(&w->msg_lock);
    int idle = !w->msgs;
    if (idle)
        w->gone = 1;
    pthread_mutex_unlock(&w->msg_lock);
    return idle;
}

static void worker_end_drained(worker_t *w)
{
    modules_fini(w);
    loop_teardown(w);
    atomic_fetch_sub(&server.stats.workers_draining, 1);
    log_info("worker %d: drained, its thread ends", w->id);
    pthread_detach(pthread_self());
    atomic_store_explicit(&w->ended, 1, memory_order_release); /* the last touch of w */
}

/* Starts a drained worker whose thread has ended again, in the same slot. */
static int revive(worker_t *w)
{
    wait_ended(w);
    if (loop_setup(w, 0) < 0)
        return -1;
    atomic_store(&w->ended, 0);
    if (worker_start(w) < 0) {
        log_error("worker %d: cannot start its thread", w->id);
        modules_fini(w);
        loop_teardown(w);
        atomic_store(&w->ended, 1);
        return -1;
    }
    /* posts were refused until now; the thread does not end while not draining */
    pthread_mutex_lock(&w->msg_lock);
    w->gone = 0;
    pthread_mutex_unlock(&w->msg_lock);
    return 0;
}

/* Makes slot i an accepting worker. 0 or -1 (logged). */
static int make_accepting(int i)
{
    worker_t *w = server.workers[i];
    if (!w) {
        if (!(w = worker_new(i)))
            return -1;
        if (worker_start(w) < 0) {
            log_error("worker %d: cannot start its thread", i);
            worker_free(w);
            return -1;
        }
        if (atomic_load(&server.nslots) < i + 1)
            atomic_store_explicit(&server.nslots, i + 1, memory_order_release);
        log_info("worker %d: started", i);
        return 0;
    }
    if (w->accepting)
        return 0;
    int rc = worker_post(w, undrain_msg, NULL);
    if (rc == -ESHUTDOWN) {
        if (revive(w) < 0)
            return -1;
        log_info("worker %d: started again", i);
    } else if (rc < 0) {
        return -1;
    } else {
        atomic_fetch_sub(&server.stats.workers_draining, 1);
    }
    w->accepting = 1;
    return 0;
}

int worker_set_count(int n)
{
    if (n < 1)
        n = 1;
    if (n > SERVER_MAX_WORKERS)
        n = SERVER_MAX_WORKERS;
    int have = atomic_load(&server.nworkers);
    if (n == have)
        return n;
    log_info("<workers>: %d -> %d", have, n);
    /* fewer: the count drops first, so nothing hands new work to those being drained */
    if (n < have)
        atomic_store(&server.nworkers, n);
    int slots = atomic_load(&server.nslots);
    for (int i = n; i < slots; i++) {
        worker_t *w = server.workers[i];
        if (!w || !w->accepting)
            continue;
        /* counted first: a worker with nothing to serve may end (and uncount) at once */
        atomic_fetch_add(&server.stats.workers_draining, 1);
        if (worker_post(w, drain_msg, NULL) == 0)
            w->accepting = 0;
        else
            atomic_fetch_sub(&server.stats.workers_draining, 1);
    }
    int ok = n < have ? n : have;
    for (int i = have; i < n; i++) {
        if (make_accepting(i) < 0)
            break;
        ok = i + 1;
        atomic_store(&server.nworkers, ok);
    }
    return ok;
}
