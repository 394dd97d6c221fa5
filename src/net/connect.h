/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * connect: outbound connections (relays, URL authentication, directory servers) on a worker's
 * loop: a non-blocking connect with a deadline, then the caller's ops take over. Addresses are
 * numeric (no name lookup here: a lookup blocks, so it belongs off the workers).
 *
 * Lifecycle: the caller allocates its struct with a conn_t (zeroed), calls connect_start() on
 * the worker's thread, and hears back exactly once through done(c, err): err 0 means
 * connected (install your ops and go on), a negative errno means it failed (-ETIMEDOUT for
 * the deadline); after a failure the connection is already closed and destroy will run.
 * done may run before connect_start() returns (a failure to watch the socket).
 */
#ifndef RIMECAST_CONNECT_H
#define RIMECAST_CONNECT_H

#include <stdint.h>

typedef struct conn conn_t;
typedef struct worker worker_t;

/* Starts connecting c to host:port (numeric IPv4 or IPv6) from worker w within timeout_ms.
 * destroy frees c after it is closed. 0 if under way (done will be called), or -errno
 * (nothing was set up; c is untouched and not closed). */
int connect_start(conn_t *c, worker_t *w, const char *host, int port, unsigned timeout_ms,
                  void (*done)(conn_t *c, int err), void (*destroy)(conn_t *c));

/* The same from a given local address (numeric, same family as host; NULL = any). */
int connect_start_from(conn_t *c, worker_t *w, const char *local, const char *host, int port,
                       unsigned timeout_ms, void (*done)(conn_t *c, int err),
                       void (*destroy)(conn_t *c));

#endif
