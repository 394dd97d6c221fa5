/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience: the audience figures a station sells, by the industry's (Triton Digital's)
 * definitions, per mount and for the server, for a period cut into hours or days:
 *   sessions            sessions that were listening at some time in the period
 *   qualified sessions  those of them that lasted at least <min-session>
 *   TLH                 hours listened in the period by qualified sessions
 *   ATSL                TLH / qualified sessions (hours)
 *   CUME                distinct listeners (address + user agent) among qualified sessions
 *   peak                the most sessions listening at once
 *   prerolls            prerolls (or intros) played to their end
 * and the sessions per country (the session's, from GeoIP; "" unknown), made where the data
 * lives by the store's backend (audience_store_figures, on the store's thread), and the
 * counters of /metrics kept in memory since start-up (audience_count, called for each ended
 * session). Sessions still going
 * on count as far as they went, once they are qualified (stream/session.h session_live).
 * Does not render XML, JSON or CSV (admin/audience.c does).
 */
#ifndef RIMECAST_AUDIENCE_H
#define RIMECAST_AUDIENCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "stream/session.h"

#define AUDIENCE_MAX_BUCKETS 1500  /* two months of hours */

typedef struct audience_country {
    char cc[8];                /* ISO code, "" unknown */
    uint64_t sessions;
} audience_country_t;

typedef struct audience_row {
    char *mount;               /* "" for the server */
    int64_t from_ms, to_ms;    /* the bucket */
    uint64_t sessions, qualified, cume, peak;
    uint64_t listened_ms;      /* TLH in milliseconds */
    uint64_t prerolls;         /* prerolls (or intros) played to their end, of the sessions
                                * that began in the bucket */
    uint64_t in_progress;      /* of the sessions, those still going on (counted so far) */
    audience_country_t *countries; /* sessions per country, ncountries of them */
    size_t ncountries;
} audience_row_t;

typedef struct audience_query {
    /* asked */
    int64_t from_ms, to_ms;    /* the period [from, to) */
    int64_t step_ms;           /* 3600000 (hours), 86400000 (days), 0: the whole period */
    char *mount;               /* NULL: every mount and the server */
    char *server;              /* NULL: the sessions of every server sharing the store; else
                                * those of the server of that name (<server-name>) */
    int qualify_s;             /* <min-session> */
    int anonymize;             /* <anonymize-ip>: sessions going on count by their network */
    /* answered */
    audience_row_t *rows;      /* bucket by bucket; in each, the server first, then mounts */
    size_t nrows;
    int err;                   /* 0, -ENODEV (no database), -EAGAIN (the database cannot be
                                * reached now), -EIO (a query failed), -ENOMEM */
} audience_query_t;

/* Frees q's answer, mount and server. */
void audience_query_clear(audience_query_t *q);

/* Counts an ended session for /metrics (any thread). */
void audience_count(const session_record_t *r);
/* Appends the counters' families to o (Prometheus text); label writes an escaped label
 * value. */
void audience_metrics(buf_t *o, void (*label)(buf_t *o, const char *value));

#endif
