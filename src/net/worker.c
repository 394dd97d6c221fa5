/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker: one thread, one epoll loop (see worker.h).
 *
 * The loop's phases: wait for events; run each event's handler (accept, connection I/O,
 * messages and wake-ups, timers); release connections closed during this iteration.
 * Listener fan-out happens in sub_pass(): per subscription, if the mount's head moved, every
 * listener not blocked on a full socket gets one flush; blocked ones only get a lag check. A pass
 * runs in slices, with the event loop turning in between.
 */
#include "net/worker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/log.h"
#include "net/conn.h"
#include "net/listen.h"
#include "server.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/source.h"

#define WORKER_EVENTS 256

static atomic_ullong conn_ids = 1;

uint64_t worker_next_conn_id(void)
{
    return atomic_fetch_add_explicit(&conn_ids, 1, memory_order_relaxed);
}

/* ---- timeouts ---- */

void worker_timeout_add(worker_t *w, conn_t *c, uint64_t deadline_ms)
{
    c->deadline_ms = deadline_ms;
    /* deadlines of one kind grow monotonically; insert from the tail to keep the order */
    conn_t *at = w->timeouts_tail;
    while (at && at->deadline_ms > deadline_ms)
        at = at->tprev;
    c->tprev = at;
    c->tnext = at ? at->tnext : w->timeouts_head;
    if (c->tnext)
        c->tnext->tprev = c;
    else
        w->timeouts_tail = c;
    if (at)
        at->tnext = c;
    else
        w->timeouts_head = c;
}

void worker_timeout_remove(worker_t *w, conn_t *c)
{
    if (!c->deadline_ms)
        return;
    if (c->tprev)
        c->tprev->tnext = c->tnext;
    else
        w->timeouts_head = c->tnext;
    if (c->tnext)
        c->tnext->tprev = c->tprev;
    else
        w->timeouts_tail = c->tprev;
    c->tprev = c->tnext = NULL;
    c->deadline_ms = 0;
}

static void expire_timeouts(worker_t *w, uint64_t now)
{
    while (w->timeouts_head && w->timeouts_head->deadline_ms <= now) {
        conn_t *c = w->timeouts_head;
        worker_timeout_remove(w, c);
        if (c->ops == &conn_reading_ops && c->rlen == 0 && c->requests > 0) {
            conn_close(c); /* an idle keep-alive connection: nothing to answer */
        } else if (c->ops == &conn_reading_ops) {
            log_info("client %s: request head not complete within header-timeout", c->ip);
            c->log_method = strdup("-");
            conn_send_error(c, 408, "Request Timeout");
        } else {
            conn_close(c);
        }
    }
}

/* ---- subscriptions ---- */

worker_sub_t *worker_sub_get(worker_t *w, mount_t *m)
{
    for (worker_sub_t *s = w->subs; s; s = s->next)
        if (s->mount == m)
            return s;
    worker_sub_t *s = calloc(1, sizeof(*s));
    if (!s)
        abort(); /* a few bytes per mount per worker; nothing sensible to do without them */
    s->mount = mount_ref(m);
    s->seen_end = mount_head_end(m);
    s->next = w->subs;
    w->subs = s;
    return s;
}

void worker_sub_add_listener(worker_t *w, worker_sub_t *s, listener_t *l)
{
    l->prev = NULL;
    l->next = s->listeners;
    if (s->listeners)
        s->listeners->prev = l;
    s->listeners = l;
    s->count++;
    atomic_fetch_add(&s->mount->worker_listeners[w->id], 1);
}

static void sub_flush_counters(worker_sub_t *s)
{
    if (s->bytes_pending) {
        atomic_fetch_add_explicit(&s->mount->bytes_sent, s->bytes_pending, memory_order_relaxed);
        s->bytes_pending = 0;
    }
}

void worker_sub_remove_listener(worker_t *w, worker_sub_t *s, listener_t *l)
{
    if (s->resume == l)
        s->resume = l->next;
    if (l->prev)
        l->prev->next = l->next;
    else
        s->listeners = l->next;
    if (l->next)
        l->next->prev = l->prev;
    s->count--;
    atomic_fetch_sub(&s->mount->worker_listeners[w->id], 1);
    /* an empty subscription is freed by the next pass (sub_gc), never under a running one */
}

/* Frees subscriptions that lost their last listener. */
static void sub_gc(worker_t *w)
{
    for (worker_sub_t **pp = &w->subs; *pp;) {
        worker_sub_t *s = *pp;
        if (s->count > 0) {
            pp = &s->next;
            continue;
        }
        *pp = s->next;
        sub_flush_counters(s);
        mount_unref(s->mount);
        free(s);
    }
}

#define SUB_SLICE 256 /* listener writes per mount before the loop gets a turn */

/* Writes to up to SUB_SLICE listeners of s, starting or continuing a pass over them.
 * Returns 1 if the pass is not finished. */
static int sub_slice(worker_t *w, worker_sub_t *s)
{
    if (!s->in_pass) {
        int ended = atomic_load_explicit(&s->mount->ended, memory_order_acquire);
        uint64_t head = mount_head_end(s->mount);
        if (head == s->seen_end && !ended)
            return 0;
        s->offered = s->seen_end;
        s->seen_end = head;
        s->resume = s->listeners;
        s->in_pass = 1;
    }
    for (int n = 0; s->resume && n < SUB_SLICE; n++) {
        listener_t *l = s->resume;
        s->resume = l->next; /* kept valid by worker_sub_remove_listener if l leaves */
        if (l->conn->closing)
            continue;
        if (l->blocked)
            listener_check_lag(l, s->offered);
        else
            listener_flush(l);
    }
    if (s->resume)
        return 1;
    s->in_pass = 0;
    sub_flush_counters(s);
    return 0;
}

/* One round over every subscription: a slice of each mount's pass. A pass over a big audience
 * spans several loop iterations, so sources are read and small mounts served in between and
 * their latency does not grow with another mount's audience. Listeners that move (fallback)
 * join another subscription, which this round may or may not reach: either is fine. */
static void sub_pass(worker_t *w)
{
    sub_gc(w);
    int more = 0;
    for (worker_sub_t *s = w->subs; s; s = s->next)
        more |= sub_slice(w, s);
    w->pass_pending = more;
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

static void broadcast_run(worker_t *w, void *arg)
{
    broadcast_t *b = arg;
    b->fn(w, b->arg);
    if (atomic_fetch_sub(&b->pending, 1) == 1 && worker_post(b->self, broadcast_done, b) < 0) {
        /* out of memory: run the completion here rather than leak the request */
        broadcast_done(w, b);
    }
}

int worker_broadcast(worker_t *self, void (*fn)(worker_t *w, void *arg),
                     void (*done)(worker_t *self, void *arg), void *arg)
{
    broadcast_t *b = calloc(1, sizeof(*b));
    if (!b)
        return -ENOMEM;
    *b = (broadcast_t){fn, done, arg, self, 0};
    int n = 0;
    for (int i = 0; i < server.nworkers; i++)
        if (server.workers[i])
            n++;
    atomic_store(&b->pending, n);
    for (int i = 0; i < server.nworkers; i++)
        if (server.workers[i] && worker_post(server.workers[i], broadcast_run, b) < 0)
            broadcast_run(server.workers[i], b); /* keeps the count right; rare */
    return 0;
}

int worker_close_conn(worker_t *w, uint64_t id)
{
    for (conn_t *c = w->conns; c; c = c->next) {
        if (c->id == id) {
            conn_close(c);
            return 1;
        }
    }
    return 0;
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
    sub_pass(w);
}

static void on_tick(loop_handler_t *h, uint32_t events)
{
    worker_t *w = (worker_t *)((char *)h - offsetof(worker_t, tick_handler));
    uint64_t v;
    if (read(w->tick_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return;
    sub_pass(w);
}

static void on_housekeeping(loop_handler_t *h, uint32_t events)
{
    worker_t *w = (worker_t *)((char *)h - offsetof(worker_t, housekeeping_handler));
    uint64_t v;
    if (read(w->housekeeping_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return;
    uint64_t now = loop_now_ms();
    expire_timeouts(w, now);
    source_check_timeouts(w, now);
}

/* ---- connections ---- */

static void on_conn_event(loop_handler_t *h, uint32_t events)
{
    conn_t *c = (conn_t *)h;
    if (c->closing)
        return;
    if (events & (EPOLLIN | EPOLLRDHUP)) {
        if (c->ops->on_readable)
            c->ops->on_readable(c);
        if (c->closing)
            return;
    }
    if ((events & EPOLLOUT) && c->ops->on_writable) {
        c->ops->on_writable(c);
        if (c->closing)
            return;
    }
    if (events & (EPOLLERR | EPOLLHUP)) {
        if (c->ops->on_hangup)
            c->ops->on_hangup(c);
        else
            conn_close(c);
    }
}

static void on_accept(loop_handler_t *h, uint32_t events)
{
    worker_listen_t *ls = (worker_listen_t *)h;
    worker_t *w = ls->worker;
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(ls->fd, (struct sockaddr *)&ss, &sl,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE)
                log_warn("accept: %s (open-file limit reached)", strerror(errno));
            return;
        }
        char ip[64];
        listen_format_addr(&ss, ip, sizeof(ip));
        conn_t *c = conn_new(w, fd, ip, ls->port, ls->shoutcast_mount);
        if (!c) {
            close(fd);
            continue;
        }
        c->handler.on_event = on_conn_event;
        if (loop_add(w->epfd, fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &c->handler) < 0) {
            conn_close(c);
            continue;
        }
        int limit = server_config()->clients;
        if (atomic_load(&server.stats.clients) > limit) {
            c->log_method = strdup("-");
            conn_send_error(c, 403, "Forbidden: connection limit reached");
        }
    }
}

static void release_closed(worker_t *w)
{
    while (w->closed) {
        conn_t *c = w->closed;
        w->closed = c->next;
        conn_release(c);
    }
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    struct epoll_event ev[WORKER_EVENTS];
    while (!w->stopping) {
        int n = epoll_wait(w->epfd, ev, WORKER_EVENTS, w->pass_pending ? 0 : -1);
        if (n < 0 && errno != EINTR) {
            log_error("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            loop_handler_t *h = ev[i].data.ptr;
            h->on_event(h, ev[i].events);
        }
        if (w->pass_pending)
            sub_pass(w);
        release_closed(w);
    }
    return NULL;
}

/* ---- lifecycle ---- */

static int open_listeners(worker_t *w, const config_t *cfg)
{
    int n = 0;
    for (const listen_conf_t *lc = cfg->listen; lc; lc = lc->next)
        n++;
    w->listens = calloc((size_t)n, sizeof(*w->listens));
    if (!w->listens)
        return -ENOMEM;
    for (const listen_conf_t *lc = cfg->listen; lc; lc = lc->next) {
        int fd = listen_open(lc);
        if (fd < 0)
            return fd;
        worker_listen_t *ls = &w->listens[w->nlisten++];
        ls->fd = fd;
        ls->worker = w;
        ls->port = lc->port;
        ls->shoutcast_mount =
            lc->shoutcast_compat ? (lc->shoutcast_mount ? lc->shoutcast_mount : cfg->shoutcast_mount)
                                 : NULL;
        ls->handler.on_event = on_accept;
        if (loop_add(w->epfd, fd, EPOLLIN, &ls->handler) < 0)
            return -errno;
    }
    return 0;
}

static void close_fds(worker_t *w)
{
    for (int i = 0; i < w->nlisten; i++)
        close(w->listens[i].fd);
    free(w->listens);
    if (w->epfd >= 0)
        close(w->epfd);
    if (w->evfd >= 0)
        close(w->evfd);
    if (w->tick_fd >= 0)
        close(w->tick_fd);
    if (w->housekeeping_fd >= 0)
        close(w->housekeeping_fd);
    pthread_mutex_destroy(&w->msg_lock);
}

worker_t *worker_new(int id)
{
    const config_t *cfg = server_config();
    worker_t *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->id = id;
    w->tick_fd = w->housekeeping_fd = w->evfd = -1;
    pthread_mutex_init(&w->msg_lock, NULL);
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (w->epfd < 0 || w->evfd < 0)
        goto fail;
    server.workers[id] = w; /* on_accept finds its worker through this table */
    if (open_listeners(w, cfg) < 0)
        goto fail;
    w->ev_handler.on_event = on_eventfd;
    if (loop_add(w->epfd, w->evfd, EPOLLIN, &w->ev_handler) < 0)
        goto fail;
    w->housekeeping_fd = loop_timerfd(1000);
    w->housekeeping_handler.on_event = on_housekeeping;
    if (w->housekeeping_fd < 0 ||
        loop_add(w->epfd, w->housekeeping_fd, EPOLLIN, &w->housekeeping_handler) < 0)
        goto fail;
    if (cfg->write_window_ms > 0) {
        w->tick_fd = loop_timerfd((unsigned)cfg->write_window_ms);
        w->tick_handler.on_event = on_tick;
        if (w->tick_fd < 0 || loop_add(w->epfd, w->tick_fd, EPOLLIN, &w->tick_handler) < 0)
            goto fail;
    }
    return w;
fail:
    log_error("worker %d: start-up failed", id);
    server.workers[id] = NULL;
    close_fds(w);
    free(w);
    return NULL;
}

int worker_start(worker_t *w)
{
    int rc = pthread_create(&w->thread, NULL, worker_main, w);
    return rc ? -rc : 0;
}

static void stop_msg(worker_t *w, void *arg)
{
    w->stopping = 1;
}

void worker_stop(worker_t *w)
{
    worker_post(w, stop_msg, NULL);
    pthread_join(w->thread, NULL);
}

void worker_free(worker_t *w)
{
    while (w->conns)
        conn_close(w->conns);
    release_closed(w);
    run_messages(w);
    sub_gc(w);
    server.workers[w->id] = NULL;
    close_fds(w);
    free(w);
}
