/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * worker_internal: what the three files of a worker call in each other: worker_timers.c
 * (deadlines, timers), worker_loop.c (the loop, modules, messages, accepting) and
 * worker_pool.c (creating, reloading, draining, stopping workers). Nothing else includes it;
 * the API of workers is worker.h.
 */
#ifndef RIMECAST_WORKER_INTERNAL_H
#define RIMECAST_WORKER_INTERNAL_H

#include <stdint.h>

#include "net/worker.h"

/* ---- worker_timers.c (worker thread) ---- */

/* Runs the deadlines due at now: each connection's on_timeout, else it is closed. */
void worker_deadlines_expire(worker_t *w, uint64_t now);
/* 1 with *at set to the earliest deadline when w has one, else 0. */
int worker_deadline_next(const worker_t *w, uint64_t *at);
/* Frees the deadline heap (its connections are gone) and the periodic timers. */
void worker_deadlines_free(worker_t *w);
void worker_timers_free(worker_t *w);

/* ---- worker_loop.c ---- */

/* Runs w's loop on the calling thread until w is stopped (0; also on an epoll error, logged)
 * or, draining, has nothing left (1: posts to it are refused from then on). */
int worker_loop_run(worker_t *w);
/* Loop handlers: a listen socket is readable; w's eventfd (messages, wake-ups). */
void worker_on_accept(loop_handler_t *h, uint32_t events);
void worker_on_wakeup(loop_handler_t *h, uint32_t events);
/* Holds one descriptor back (on /dev/null) for refusing clients when descriptors run out. */
void worker_open_reserve(worker_t *w);
/* Runs the messages waiting for w, in posting order. */
void worker_run_messages(worker_t *w);
/* Releases the connections closed in this turn. */
void worker_release_closed(worker_t *w);
/* The registered modules' hooks for w: init in order (-1, logged, at the first that fails;
 * the caller then runs fini), reload, fini in reverse order. */
int worker_modules_init(worker_t *w);
void worker_modules_reload(worker_t *w);
void worker_modules_fini(worker_t *w);

#endif
