/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_internal: what the three files of the old process's side call in each other:
 * upgrade.c (the new binary started, the workers parked, the steps of the hand-over),
 * upgrade_save.c (the state written as records and sent) and upgrade_drain.c (the TLS
 * listeners kept after the hand-over, their local feeds, the drain). Main thread, workers
 * parked, unless said otherwise. Nothing else includes it; the API is upgrade.h, which it does
 * not include.
 */
#ifndef RIMECAST_UPGRADE_INTERNAL_H
#define RIMECAST_UPGRADE_INTERNAL_H

#include "core/buf.h"
#include "stream/handover.h"

typedef struct block block_t;
typedef struct conn conn_t;
typedef struct mount mount_t;
typedef struct upgrade_pidfile upgrade_pidfile_t;

/* ---- upgrade.c ---- */

/* The workers parked for the hand-over go on. */
void upgrade_unpark_workers(void);

/* ---- upgrade_save.c ---- */

typedef struct fdlist {
    int *v;
    int n, cap;
} fdlist_t;

/* A mount being carried, and the oldest block one of its carried listeners is on. */
typedef struct carried {
    mount_t *m;
    const block_t *from;
} carried_t;

/* The state as it is written: zeroed by the caller, freed by upgrade_state_free. */
typedef struct state {
    buf_t head, metas, mounts, conns;
    handover_metas_t t;
    fdlist_t fds;
    carried_t *mv;
    int nm;
    int sources, listeners, others, left; /* connections carried, and those that stay */
    int tls;                              /* of those that stay: TLS ones */
    conn_t **cv;                          /* the connections carried: forgotten once taken */
    int nc, ccap;
} state_t;

/* Writes into s the listening sockets, the pidfile pf (if any), the mounts to carry, their
 * sources and plain listeners and the other connections that can go, the feeds' tokens. A
 * part without memory says so in its buf_t's error. */
void upgrade_state_write(state_t *s, const upgrade_pidfile_t *pf);
/* Sends the descriptors, then the bytes of the parts in order, then the end. 0 or -errno. */
int upgrade_state_send(int sock, state_t *s);
void upgrade_state_free(state_t *s);

/* ---- upgrade_drain.c ---- */

/* Finds where the new process listens in plain HTTP to feed TLS listeners from (only when
 * <upgrade-drain> keeps them): before the state is written. */
void upgrade_feeds_prepare(void);
/* m, a carried mount with a TLS listener here, gets a local feed and its token (once), when
 * there is a place to feed it from. */
void upgrade_feed_add(mount_t *m);
/* The feeds' tokens as records of the state. */
void upgrade_feeds_save(buf_t *out);
/* The feeds forgotten (started, or this process serves on). */
void upgrade_feeds_free(void);
/* The TLS listeners here. */
int upgrade_tls_listeners(void);
/* Once the new process took over: all but the TLS listeners let go, their feeds started (see
 * upgrade_drain.c). */
void upgrade_keep_tls_listeners(state_t *s);

#endif
