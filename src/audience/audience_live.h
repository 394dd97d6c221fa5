/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_live: the sessions going on now, as the audience figures count them: only the
 * qualified ones (a session that may still end short is not one yet), each with its end now
 * and its address as the store keeps it. Copied under the list's lock (which the workers'
 * joins and leaves wait for) into an array the store's thread then gives its backend (the
 * SQLite store's temp.live table, the PostgreSQL store's live_sessions rows). Store thread.
 */
#ifndef RIMECAST_AUDIENCE_LIVE_H
#define RIMECAST_AUDIENCE_LIVE_H

#include <stddef.h>

#include "core/cidr.h"
#include "stream/session.h"

typedef struct audience_live_row {
    session_record_t r;        /* mount and agent point to mount and agent below; address and
                                * country are NULL: read ip and cc */
    char ip[CIDR_SHOWN_MAX];   /* as stored: with anonymize, its network */
    char cc[8];                /* "" unknown */
    char key[SESSION_KEY_LEN + 1]; /* the listener key */
    const char *invalid;       /* "" valid, or why not (a static string) */
    char *mount, *agent;
} audience_live_row_t;

typedef struct audience_live {
    audience_live_row_t *v;
    size_t n, cap;
} audience_live_t;             /* zeroed: empty */

/* Fills l with the sessions going on that lasted qualify_s seconds, their addresses as the
 * store keeps them (anonymize: their network). 0 or -ENOMEM (l holds what was copied). */
int audience_live_copy(audience_live_t *l, int qualify_s, int anonymize);
/* Frees what l holds and empties it. */
void audience_live_free(audience_live_t *l);

#endif
