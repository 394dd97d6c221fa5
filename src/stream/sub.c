/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sub: per-worker subscriptions (see sub.h): a list per worker, touched only by its thread.
 */
#include "stream/sub.h"

#include <stdlib.h>

#include "net/server.h"
#include "net/worker.h"
#include "stream/mount.h"

static sub_t *subs[SERVER_MAX_WORKERS];

void sub_init(worker_t *w)
{
    subs[w->id] = NULL;
}

sub_t *sub_first(worker_t *w)
{
    return subs[w->id];
}

sub_t *sub_find(worker_t *w, mount_t *m)
{
    for (sub_t *s = subs[w->id]; s; s = s->next)
        if (s->mount == m)
            return s;
    return NULL;
}

sub_t *sub_get(worker_t *w, mount_t *m)
{
    sub_t *s = sub_find(w, m);
    if (s)
        return s;
    s = calloc(1, sizeof(*s));
    if (!s)
        abort(); /* a few bytes per mount per worker; nothing sensible to do without them */
    s->mount = mount_ref(m);
    s->seen_end = mount_head_end(m);
    s->adbreak_seen = atomic_load(&m->adbreak_id); /* a break that began before it is not its */
    list_init(&s->listeners);
    s->resume = &s->listeners;
    s->next = subs[w->id];
    subs[w->id] = s;
    return s;
}

void sub_add(worker_t *w, sub_t *s, list_t *link)
{
    list_insert_head(&s->listeners, link);
    if (s->count++ == 0)
        atomic_fetch_or(&s->mount->listening_workers, (uint64_t)1 << w->id);
}

void sub_flush_counters(sub_t *s)
{
    if (s->bytes_pending) {
        atomic_fetch_add_explicit(&s->mount->bytes_sent, s->bytes_pending, memory_order_relaxed);
        s->bytes_pending = 0;
    }
}

void sub_remove(worker_t *w, sub_t *s, list_t *link)
{
    if (s->resume == link)
        s->resume = link->next;
    list_remove(link);
    if (--s->count == 0)
        atomic_fetch_and(&s->mount->listening_workers, ~((uint64_t)1 << w->id));
    /* an empty subscription is freed by the next pass (sub_gc), never under a running one */
}

void sub_gc(worker_t *w)
{
    for (sub_t **pp = &subs[w->id]; *pp;) {
        sub_t *s = *pp;
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
