/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * resolve: host name lookups for outbound connections (relays, the master server), off the
 * workers: a lookup blocks, so one small thread does them in turn and posts each answer back
 * to the worker that asked (worker_post). Numeric addresses need no lookup (resolve_numeric).
 *
 * Lifecycle: the thread starts with the first request; resolve_shutdown() (before the workers
 * stop) ends it, and requests still queued or under way then never answer.
 */
#ifndef RIMECAST_RESOLVE_H
#define RIMECAST_RESOLVE_H

#include <stddef.h>

typedef struct worker worker_t;

/* The answer, on worker w's thread: ip is a numeric address (IPv4 preferred), or NULL if the
 * name does not resolve. */
typedef void (*resolve_done_fn)(worker_t *w, void *arg, const char *ip);

/* 1 if host is a numeric IPv4 or IPv6 address (no lookup needed). */
int resolve_numeric(const char *host);
/* Looks host up on the resolver thread and calls done(w, arg, ip) on w's thread. 0 if under
 * way, or -errno (nothing will be called). */
int resolve_start(worker_t *w, const char *host, resolve_done_fn done, void *arg);
/* Stops the resolver thread (at shutdown, before the workers stop). */
void resolve_shutdown(void);

#endif
