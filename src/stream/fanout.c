/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fanout: the write pass over a worker's subscriptions (see fanout.h; the subscriptions
 * themselves are stream/sub.h).
 *
 * Per subscription, if the mount's head moved, every listener not blocked on a full socket gets
 * one flush; blocked ones only get a lag check. The subscription lists are per worker, touched
 * only by that worker's thread.
 */
#include "stream/fanout.h"

#include <stdlib.h>

#include "conf/config.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/sub.h"

#define SUB_SLICE 256 /* listener writes per mount before the loop gets a turn */

/* Asks for the first 128 bytes at p, which may straddle three cache lines. A macro: a function
 * made of prefetches alone looks free of effects to the compiler, which drops its calls. */
#define PREFETCH_HEAD(p)                                                                           \
    do {                                                                                           \
        __builtin_prefetch((const char *)(p));                                                     \
        __builtin_prefetch((const char *)(p) + 64);                                                \
        __builtin_prefetch((const char *)(p) + 127);                                               \
    } while (0)

/* A pass meets each listener's state every few hundred ms, out of the caches by then: the next
 * listener's connection and the one after's listener are asked for while this one is written
 * (a system call of microseconds), so that neither waits on memory when its turn comes. The
 * next listener was asked for one turn ago; reading its links now is cheap. */
#define PREFETCH_AFTER(s, l)                                                                       \
    do {                                                                                           \
        const list_t *n1_ = (l)->link.next;                                                        \
        if (n1_ != &(s)->listeners) {                                                              \
            const listener_t *next_ = container_of(n1_, listener_t, link);                         \
            PREFETCH_HEAD(next_->conn);                                                            \
            if (next_->link.next != &(s)->listeners)                                               \
                PREFETCH_HEAD(container_of(next_->link.next, listener_t, link));                   \
        }                                                                                          \
    } while (0)

/* Writes to up to SUB_SLICE listeners of s, starting or continuing a pass over them.
 * Returns 1 if the pass is not finished. */
static int fanout_slice(worker_t *w, sub_t *s)
{
    if (!s->in_pass) {
        if (atomic_load_explicit(&s->mount->adbreak_id, memory_order_relaxed) != s->adbreak_seen)
            adbreak_sub_begin(w, s); /* a break began: its listeners' ads are asked for */
        int ended = atomic_load_explicit(&s->mount->ended, memory_order_acquire);
        uint64_t head = mount_head_end(s->mount);
        if (head == s->seen_end && !ended)
            return 0;
        s->offered = s->seen_end;
        s->seen_end = head;
        s->resume = s->listeners.next;
        s->in_pass = 1;
    }
    for (int n = 0; s->resume != &s->listeners && n < SUB_SLICE; n++) {
        listener_t *l = container_of(s->resume, listener_t, link);
        s->resume = l->link.next; /* kept valid by sub_remove if l leaves */
        PREFETCH_AFTER(s, l);
        if (l->conn->closing)
            continue;
        if (l->blocked)
            listener_check_lag(l, s->offered);
        else
            listener_flush(l);
    }
    if (s->resume != &s->listeners)
        return 1;
    s->in_pass = 0;
    sub_flush_counters(s);
    return 0;
}

/* One round over every subscription: a slice of each mount's pass. A pass over a big audience
 * spans several loop iterations, so sources are read and small mounts served in between and
 * their latency does not grow with another mount's audience. Listeners that move (fallback)
 * join another subscription, which this round may or may not reach: either is fine. */
static void fanout_pass(worker_t *w)
{
    sub_gc(w);
    int more = 0;
    /* Passes that start now first, then slices of those under way: a new block of a small mount
     * is written before, not after, a slice of a big audience's pass. */
    for (sub_t *s = sub_first(w); s; s = s->next)
        s->continuing = s->in_pass;
    for (sub_t *s = sub_first(w); s; s = s->next)
        if (!s->continuing)
            more |= fanout_slice(w, s);
    for (sub_t *s = sub_first(w); s; s = s->next)
        if (s->continuing)
            more |= fanout_slice(w, s);
    if (more)
        worker_request_pass(w);
}

static void on_tick(worker_t *w, void *arg)
{
    worker_request_pass(w);
}

/* The write-window timer exists on every worker, stopped at window 0 (then each publish wakes
 * the workers, see mount_publish), so that a reload can change the window either way. */
static int fanout_init(worker_t *w)
{
    int window = server_config()->write_window_ms;
    sub_init(w);
    return worker_timer_add(w, window > 0 ? (unsigned)window : 0, on_tick, NULL);
}

static void fanout_reload(worker_t *w)
{
    int window = server_config()->write_window_ms;
    worker_timer_period(w, on_tick, window > 0 ? (unsigned)window : 0);
    if (window == 0)
        worker_request_pass(w); /* what the timer would have written */
}

static void fanout_fini(worker_t *w)
{
    sub_gc(w);
}

static const worker_module_t fanout_module = {
    .name = "fanout",
    .init = fanout_init,
    .pass = fanout_pass,
    .fini = fanout_fini,
    .reload = fanout_reload,
};

void fanout_register(void)
{
    worker_register(&fanout_module);
}
