/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * read_ahead: a turn's request reads in one system call (see read_ahead.h). The ring is the
 * worker's own, made on its thread at the first turn with two reads to enter (entries for a
 * whole turn's events, so one enter takes them all) and kept until the worker's loop ends.
 * Sockets are non-blocking: a read with nothing to give completes at once with -EAGAIN, so
 * every read entered has completed when the enter returns and no read outlives its turn. A
 * ring the kernel refuses, or an enter that fails, is logged once and the worker reads
 * through plain calls from then on.
 */
#include "net/read_ahead.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "build-config.h"
#include "core/fault.h"
#include "core/log.h"
#include "net/conn.h"
#include "net/server.h"

#ifdef RIMECAST_READ_AHEAD
#include <liburing.h>

#define RING_ENTRIES 256 /* a turn's events at most (WORKER_EVENTS) */

/* Under valgrind: bytes the kernel wrote through the ring are defined (it sees no system call
 * that wrote them). Otherwise nothing. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define READ_DEFINED(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#endif
#endif
#ifndef READ_DEFINED
#define READ_DEFINED(p, n) ((void)(p), (void)(n))
#endif

static log_ratelimit_t refused_log;

static void ring_refused(worker_t *w, const char *what, int err)
{
    log_warn_limited(&refused_log, 60000, "worker %d: io_uring %s: %s; requests are read "
                     "one system call each", w->id, what, strerror(err));
    read_ahead_free(w);
    w->ring_state = -1;
}

static struct io_uring *ring_of(worker_t *w)
{
    if (w->ring_state == 0) {
        struct io_uring *r = calloc(1, sizeof(*r));
        int rc = -ENOMEM;
        if (r) /* the fault point stands for a kernel that refuses rings */
            rc = FAULT(FAULT_READ_AHEAD_RING) ? -EPERM : io_uring_queue_init(RING_ENTRIES, r, 0);
        if (rc < 0) {
            free(r);
            ring_refused(w, "setup", -rc);
            return NULL;
        }
        w->ring = r;
        w->ring_state = 1;
    }
    return w->ring_state > 0 ? w->ring : NULL;
}

void read_ahead_turn(worker_t *w, const struct epoll_event *ev, int n)
{
    if (n < 2 || w->ring_state < 0)
        return;
    int want = 0;
    for (int i = 0; i < n && want < 2; i++) {
        conn_t *c = conn_of_handler(ev[i].data.ptr);
        want += c && conn_may_read_ahead(c, ev[i].events);
    }
    struct io_uring *r = want < 2 ? NULL : ring_of(w);
    if (!r)
        return;
    unsigned entered = 0;
    for (int i = 0; i < n; i++) {
        conn_t *c = conn_of_handler(ev[i].data.ptr);
        char *buf;
        size_t room = c ? conn_ahead_room(c, ev[i].events, &buf) : 0;
        if (!room)
            continue;
        struct io_uring_sqe *sqe = io_uring_get_sqe(r);
        if (!sqe)
            break; /* cannot happen: as many entries as a turn's events */
        io_uring_prep_recv(sqe, c->fd, buf, room, 0);
        io_uring_sqe_set_data(sqe, c);
        entered++;
    }
    if (!entered)
        return;
    int rc;
    while ((rc = io_uring_submit_and_wait(r, entered)) == -EINTR)
        ;
    for (unsigned done = 0; rc >= 0 && done < entered;) {
        struct io_uring_cqe *cqe;
        rc = io_uring_wait_cqe(r, &cqe); /* completed already: no wait */
        if (rc == -EINTR)
            rc = 0;
        else if (rc == 0) {
            conn_t *c = io_uring_cqe_get_data(cqe);
            if (cqe->res > 0)
                READ_DEFINED(c->rbuf + c->rlen, (size_t)cqe->res);
            conn_ahead_done(c, cqe->res);
            io_uring_cqe_seen(r, cqe);
            done++;
        }
    }
    if (rc < 0) {
        /* the connections not reported read through their handlers, as without a ring */
        ring_refused(w, "enter", -rc);
        return;
    }
    atomic_fetch_add_explicit(&server.stats.reads_ahead, entered, memory_order_relaxed);
    atomic_fetch_add_explicit(&server.stats.read_ahead_enters, 1, memory_order_relaxed);
}

void read_ahead_free(worker_t *w)
{
    if (w->ring) {
        io_uring_queue_exit(w->ring);
        free(w->ring);
        w->ring = NULL;
    }
    w->ring_state = 0;
}

#else

void read_ahead_turn(worker_t *w, const struct epoll_event *ev, int n)
{
    (void)w, (void)ev, (void)n;
}

void read_ahead_free(worker_t *w)
{
    (void)w;
}

#endif
