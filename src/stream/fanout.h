/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fanout: the listener hot path's driver. Each worker keeps one subscription per mount with
 * the list of its listeners on it; a pass (the worker's pass hook, requested by the write-window
 * tick or, in low-latency mode, by the producer's wake-up) writes new data to them. A pass over
 * a big audience runs in slices and yields to the event loop in between.
 *
 * Worker thread only, except fanout_register() (start-up, before workers are created).
 */
#ifndef RIMECAST_FANOUT_H
#define RIMECAST_FANOUT_H

#include <stdint.h>

#include "core/list.h"

typedef struct mount mount_t;
typedef struct listener listener_t;
typedef struct worker worker_t;

/* All listeners of one worker on one mount. */
typedef struct fanout_sub {
    mount_t *mount;         /* owned reference */
    list_t listeners;       /* listener_t.link, newest first */
    int count;
    uint64_t seen_end;      /* mount head offset when the current/last pass started */
    uint64_t offered;       /* head at the pass before: what blocked listeners had a window for */
    list_t *resume;         /* link of the next listener of a pass in progress; &listeners
                             * when there is none left */
    int in_pass;
    uint64_t bytes_pending; /* bytes sent since the last flush into the mount's counter */
    struct fanout_sub *next;
} fanout_sub_t;

/* Registers the fan-out as a worker module (pass hook, write-window timer). */
void fanout_register(void);

/* The first of w's subscriptions (follow ->next), for walks over all of a worker's
 * listeners (fallback-override). Subscriptions created meanwhile are put at the front. */
fanout_sub_t *fanout_subs(worker_t *w);
/* The subscription of w to m, or NULL (admin commands walking a worker's listeners). */
fanout_sub_t *fanout_sub_find(worker_t *w, mount_t *m);
/* The subscription of w to m, created on first use. */
fanout_sub_t *fanout_sub_get(worker_t *w, mount_t *m);
void fanout_add_listener(worker_t *w, fanout_sub_t *s, listener_t *l);
/* Safe during a pass; an emptied subscription is freed by a later pass. */
void fanout_remove_listener(worker_t *w, fanout_sub_t *s, listener_t *l);

#endif
