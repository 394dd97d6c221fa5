/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker_pool: the workers as a set, driven from the main thread (start-up, reloads,
 * shutdown): a worker's creation with its loop (epoll, eventfd, listen sockets, modules'
 * state) and its teardown, its thread started and stopped, a reload applied on every worker
 * (listen sockets opened, kept or closed; the modules' reload hooks), and their number
 * (<workers>): the surplus ones drain until their connections end, new or drained ones start
 * (again). What a worker's thread runs is worker_loop.c; deadlines and timers are
 * worker_timers.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/hugeheap.h"
#include "core/log.h"
#include "net/conn.h"
#include "net/listen.h"
#include "net/read_ahead.h"
#include "net/server.h"
#include "net/worker_internal.h"

/* ---- listen sockets ---- */

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

/* Listen sockets the process before handed over (an upgrade), taken at start-up in place of
 * opening new ones (main thread, before the workers run). */
typedef struct inherited_listen {
    int fd;
    listen_conf_t addr; /* port and bind_address (owned) only */
    int taken;
} inherited_listen_t;
static inherited_listen_t *inherited;
static int ninherited;

int worker_inherit_listen(int fd, int port, const char *bind_address)
{
    inherited_listen_t *v = realloc(inherited, (size_t)(ninherited + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    inherited = v;
    inherited_listen_t *in = &inherited[ninherited];
    memset(in, 0, sizeof(*in));
    in->fd = fd;
    in->addr.port = port;
    if (bind_address && !(in->addr.bind_address = strdup(bind_address)))
        return -ENOMEM;
    ninherited++;
    return 0;
}

/* An inherited socket for lc: one not yet taken, else a duplicate of one (more workers now
 * than before); -1 when none has lc's address. */
static int listen_inherited(const listen_conf_t *lc)
{
    int shared = -1;
    for (int i = 0; i < ninherited; i++) {
        if (!same_address(&inherited[i].addr, lc))
            continue;
        if (!inherited[i].taken) {
            inherited[i].taken = 1;
            return inherited[i].fd;
        }
        shared = i;
    }
    return shared < 0 ? -1 : fcntl(inherited[shared].fd, F_DUPFD_CLOEXEC, 0);
}

static worker_listen_t *listen_add(worker_t *w, const listen_conf_t *lc, int joining)
{
    worker_listen_t *ls = calloc(1, sizeof(*ls));
    if (!ls)
        return NULL;
    ls->fd = joining && geteuid() != start_euid ? listen_borrow(w, lc) : -1;
    if (ls->fd < 0 && ninherited)
        ls->fd = listen_inherited(lc);
    if (ls->fd < 0)
        ls->fd = listen_open(lc);
    ls->worker = w;
    ls->conf = lc;
    ls->handler.on_event = worker_on_accept;
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

void worker_inherit_done(void)
{
    int n = atomic_load(&server.nworkers), next = 0;
    pthread_mutex_lock(&listens_lock);
    for (int i = 0; i < ninherited; i++) {
        inherited_listen_t *in = &inherited[i];
        const listen_conf_t *lc = NULL;
        for (const listen_conf_t *x = server_config()->listen; x && !in->taken; x = x->next)
            if (same_address(x, &in->addr))
                lc = x;
        worker_t *w = lc && n > 0 ? server.workers[next++ % n] : NULL;
        worker_listen_t **v = w ? realloc(w->listens, (size_t)(w->nlisten + 1) * sizeof(*v)) : NULL;
        worker_listen_t *ls = v ? calloc(1, sizeof(*ls)) : NULL;
        if (v)
            w->listens = v;
        /* an address still configured: one more socket for a worker (its backlog is kept);
         * one no longer configured is closed, as a reload would */
        if (ls) {
            *ls = (worker_listen_t){.worker = w, .fd = in->fd, .conf = lc};
            ls->handler.on_event = worker_on_accept;
            if (loop_add(w->epfd, ls->fd, EPOLLIN, &ls->handler) == 0) {
                w->listens[w->nlisten++] = ls;
                in->taken = 1;
            } else {
                free(ls);
            }
        }
        if (!in->taken)
            close(in->fd);
        free(in->addr.bind_address);
    }
    pthread_mutex_unlock(&listens_lock);
    free(inherited);
    inherited = NULL;
    ninherited = 0;
}

/* ---- reload ---- */

static void reload_msg(worker_t *w, void *arg)
{
    if (!w->draining)
        sync_listeners(w, server_config(), 0, 0);
    worker_modules_reload(w);
}

void worker_reload_all(void)
{
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++)
        if (server.workers[i])
            worker_post(server.workers[i], reload_msg, NULL);
}

/* ---- a worker's life: its loop set up and torn down, its thread started and stopped ---- */

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
    worker_timers_free(w);
    if (w->epfd >= 0)
        close(w->epfd);
    w->epfd = -1;
    if (w->reserve_fd >= 0)
        close(w->reserve_fd);
    w->reserve_fd = -1;
    worker_deadlines_free(w);
    worker_unindex_all(w);
    read_ahead_free(w);
}

static void shell_free(worker_t *w)
{
    if (w->evfd >= 0)
        close(w->evfd);
    pthread_mutex_destroy(&w->msg_lock);
    free(w);
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
    w->ev_handler.on_event = worker_on_wakeup;
    if (loop_add(w->epfd, w->evfd, EPOLLIN, &w->ev_handler) < 0)
        goto fail;
    worker_open_reserve(w);
    if (worker_modules_init(w) < 0)
        goto fail_modules;
    return 0;
fail_modules:
    worker_modules_fini(w);
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
    list_init(&w->msgs);
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

static void worker_end_drained(worker_t *w);

/* A worker's thread: its loop until it is stopped, or until it drained (then it frees what
 * its loop owned and ends on its own). */
static void *worker_thread(void *arg)
{
    worker_t *w = arg;
    char name[16];
    snprintf(name, sizeof(name), "worker-%d", w->id); /* ps -L, /proc/PID/task/TID/comm */
    pthread_setname_np(pthread_self(), name);
    hugeheap_thread(); /* its connections' state on huge pages */
    if (worker_loop_run(w))
        worker_end_drained(w);
    return NULL;
}

int worker_start(worker_t *w)
{
    int rc = pthread_create(&w->thread, NULL, worker_thread, w);
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
        worker_release_closed(w);
        worker_run_messages(w);
        worker_modules_fini(w);
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
            worker_on_accept(&w->listens[i]->handler, EPOLLIN);
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

static void worker_end_drained(worker_t *w)
{
    worker_modules_fini(w);
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
        worker_modules_fini(w);
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
