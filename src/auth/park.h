/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * park: a client waiting for the verdict on its credentials while someone else works it out
 * (the auth server, through the HTTP client thread; a password hash, on the verifier thread).
 *
 * A parked connection gets ops that keep it waiting and a deadline, and holds nothing else
 * (no mount reference, no session): it may be closed at any time. The verdict comes back on
 * the connection's worker, which looks the connection up by id: only a connection that is
 * still parked is handed back, so a client that left, or was answered by the deadline, is
 * simply not found and the verdict is dropped.
 */
#ifndef RIMECAST_PARK_H
#define RIMECAST_PARK_H

#include <stdint.h>

typedef struct conn conn_t;
typedef struct worker worker_t;

typedef enum {
    AUTH_PARK_LISTENER, /* its input is read and dropped (a hang-up is noticed) */
    AUTH_PARK_SOURCE,   /* its input stays in the socket: stream data, read once let in */
} auth_park_kind_t;

/* Parks c (worker thread) for at most timeout_ms: past that it is answered 403 "authentication
 * timed out" (logged). A safety net: whoever decides answers well before. */
void auth_park(conn_t *c, auth_park_kind_t kind, unsigned timeout_ms);

/* On worker w: connection id if it is still parked, its deadline cleared (the caller answers
 * it or gives it other ops); NULL if it left or was answered meanwhile. */
conn_t *auth_park_take(worker_t *w, uint64_t id);

#endif
