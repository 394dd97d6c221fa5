/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sub: a worker's subscriptions, one per mount it has listeners on, each with the list of
 * those listeners. A listener joins and leaves through here (stream/listener.c); the write
 * pass that walks them is stream/fanout.c; admin commands and fallback-override walk them to
 * find a worker's listeners. Links only: the listeners themselves are not known here.
 *
 * Worker thread only: a worker's subscriptions are touched by that worker's thread.
 */
#ifndef RIMECAST_SUB_H
#define RIMECAST_SUB_H

#include <stdint.h>

#include "core/list.h"

typedef struct mount mount_t;
typedef struct worker worker_t;

/* All listeners of one worker on one mount. */
typedef struct sub {
    mount_t *mount;         /* owned reference */
    list_t listeners;       /* listener_t.link, newest first */
    int count;
    /* the write pass's state (stream/fanout.c) */
    uint64_t seen_end;      /* mount head offset when the current/last pass started */
    uint64_t offered;       /* head at the pass before: what blocked listeners had a window for */
    list_t *resume;         /* link of the next listener of a pass in progress; &listeners
                             * when there is none left */
    int in_pass;
    int continuing;         /* in_pass when the current round began */
    uint64_t bytes_pending; /* bytes sent since the last flush into the mount's counter */
    uint64_t adbreak_seen;  /* the mount's last ad break its listeners were asked for */
    struct sub *next; /* singly linked: new ones at the front, emptied ones unlinked by the
                       * walk of sub_gc, between passes */
} sub_t;

/* The first of w's subscriptions (follow ->next). Subscriptions created meanwhile are put at
 * the front. */
sub_t *sub_first(worker_t *w);
/* The subscription of w to m, or NULL. */
sub_t *sub_find(worker_t *w, mount_t *m);
/* The subscription of w to m, created on first use. */
sub_t *sub_get(worker_t *w, mount_t *m);
/* A listener (its list link) joins s, or leaves it; safe during a pass: an emptied
 * subscription is freed by sub_gc, never under a running pass. */
void sub_add(worker_t *w, sub_t *s, list_t *link);
void sub_remove(worker_t *w, sub_t *s, list_t *link);
/* Adds the bytes a pass sent to the mount's counter. */
void sub_flush_counters(sub_t *s);
/* Frees w's subscriptions that lost their last listener. */
void sub_gc(worker_t *w);
/* A worker starts with none. */
void sub_init(worker_t *w);

#endif
