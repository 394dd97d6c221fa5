/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker_timers: what a worker's loop does by the clock. It owns the deadline heap (one
 * deadline per connection: header timeouts, lingering closes, listening limits; a due one runs
 * the connection's on_timeout, else closes it) and the periodic timers modules add (a timerfd
 * each, watched by the loop). It does not run the loop nor decide when to look: worker_loop.c
 * asks it for the next deadline and to expire what is due. Worker thread only, but for
 * worker_timer_add at start-up (module init, before the thread runs).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "net/conn.h"
#include "net/worker_internal.h"

/* ---- deadlines: a binary min-heap of connections by deadline ----
 * Deadlines of very different lengths coexist (a 2 s linger, a 15 s header timeout, an hour of
 * listening), so an ordered list would cost O(n) per insert; the heap costs O(log n). Each
 * connection knows its slot (heap_pos, 1-based; 0 = not in the heap).
 *
 * A connection's place is kept by heap_at, which may be earlier than its deadline: a keep-alive
 * connection moves its deadline later several times a request (read, parked, sent, read
 * again), and a deadline that moves later or is cleared does not move in the heap. When its
 * place comes due, a connection whose deadline is later takes its place again by it, one
 * cleared leaves the heap: a connection is sifted about once per timeout instead of on every
 * request. A deadline moved earlier is sifted up at once, so none runs late. */

static int deadline_before(const conn_t *a, const conn_t *b)
{
    return a->heap_at < b->heap_at;
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
    c->deadline_ms = deadline_ms;
    if (c->heap_pos) {
        if (deadline_ms < c->heap_at) { /* earlier: it takes its place now */
            c->heap_at = deadline_ms;
            heap_up(w, c->heap_pos);
        }
        return 0; /* later: its place is taken again when it comes due */
    }
    if (w->heap_len == w->heap_cap) {
        size_t ncap = w->heap_cap ? w->heap_cap * 2 : 256;
        conn_t **nh = realloc(w->heap, ncap * sizeof(*nh));
        if (!nh) {
            c->deadline_ms = 0;
            return -ENOMEM;
        }
        w->heap = nh;
        w->heap_cap = ncap;
    }
    c->heap_at = deadline_ms;
    w->heap[w->heap_len++] = c;
    c->heap_pos = w->heap_len;
    heap_up(w, w->heap_len);
    return 0;
}

void worker_timeout_clear(worker_t *w, conn_t *c)
{
    (void)w;
    c->deadline_ms = 0; /* its place in the heap is given up when it comes due */
}

void worker_timeout_remove(worker_t *w, conn_t *c)
{
    size_t pos = c->heap_pos;
    c->deadline_ms = 0;
    if (!pos)
        return;
    c->heap_pos = 0;
    conn_t *last = w->heap[--w->heap_len];
    if (pos > w->heap_len)
        return; /* it was the last one */
    heap_place(w, pos, last);
    heap_up(w, pos);
    heap_down(w, last->heap_pos);
}

void worker_deadlines_expire(worker_t *w, uint64_t now)
{
    while (w->heap_len && w->heap[0]->heap_at <= now) {
        conn_t *c = w->heap[0];
        if (c->deadline_ms > now) { /* moved later meanwhile: its place by its deadline */
            c->heap_at = c->deadline_ms;
            heap_down(w, 1);
            continue;
        }
        int due = c->deadline_ms != 0; /* else cleared meanwhile: it only leaves */
        worker_timeout_remove(w, c);
        if (!due)
            continue;
        if (c->ops->on_timeout)
            c->ops->on_timeout(c);
        else
            conn_close(c);
    }
}

int worker_deadline_next(const worker_t *w, uint64_t *at)
{
    if (!w->heap_len)
        return 0;
    *at = w->heap[0]->heap_at; /* the deadline, or earlier when it moved (a wake-up that
                                * only puts it in its place) */
    return 1;
}

void worker_deadlines_free(worker_t *w)
{
    free(w->heap);
    w->heap = NULL;
    w->heap_len = w->heap_cap = 0;
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

void worker_timers_free(worker_t *w)
{
    while (w->timers) {
        worker_timer_t *t = w->timers;
        w->timers = t->next;
        close(t->fd);
        free(t);
    }
}
