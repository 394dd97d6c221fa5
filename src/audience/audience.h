/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience: the audience figures a station sells, by the industry's (Triton Digital's)
 * definitions, per mount and for the server, for a period cut into hours or days:
 *   sessions            sessions that were listening at some time in the period
 *   qualified sessions  those of them that lasted at least <min-session>
 *   TLH                 hours listened in the period by qualified sessions
 *   ATSL                TLH / qualified sessions (hours)
 *   CUME                distinct listeners (listener keys, stream/session.h; a record without
 *                       one: address + user agent) among qualified sessions
 *   peak                the most sessions listening at once
 *   prerolls            prerolls (or intros) played to their end
 * and by Webcast Metrics' rules (a session counts from one minute in total, AUDIENCE_WM_MIN_MS):
 *   AS                  active sessions: those listening at some time in the period
 *   SS                  sessions started: those of them that began in the period
 *   AQH                 listeners of each clock quarter-hour wholly in the period that listened
 *                       five minutes of it, averaged over those quarter-hours
 *   AAS, TSL            TLH / hours in the period, TLH / CUME (made from the others)
 * with <resume-seconds>, a listener's sessions on a mount with pauses that short between them
 * are one chain: one session for the qualifying length, AS, SS and qualified sessions; and the
 * sessions per country (the session's, from GeoIP; "" unknown), made where the data
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
#define AUDIENCE_WM_MIN_MS 60000   /* Webcast Metrics: a session counts from one minute */
#define AUDIENCE_QH_MS 900000      /* a clock quarter-hour */
#define AUDIENCE_AQH_MIN_MS 300000 /* AQH: five minutes within the quarter-hour */
#define AUDIENCE_CHAIN_MS 3600000  /* pauses: a session's chain is followed this far before
                                    * and after a period (above <resume-seconds>' maximum) */
/* Webcast Metrics: a session lasts at most 24 hours. In every figure a record's end is taken
 * as at most this long after its start; the record itself is kept as it was. The SQL of both
 * stores spells it AUDIENCE_SESSION_CAP_SQL. */
#define AUDIENCE_SESSION_CAP_MS 86400000
#define AUDIENCE_SESSION_CAP_SQL "86400000"

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
    uint64_t active, started;  /* AS and SS: sessions of one minute or more in total, listening
                                * in the bucket / begun in it */
    uint64_t aqh_quarters;     /* the sum over the bucket's whole clock quarter-hours of the
                                * sessions with five minutes in each (AQH: / audience_quarters) */
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
    int resume_s;              /* <resume-seconds>: a session of the same listener key and mount
                                * that began at most this long after one ended continues it
                                * (its chain); 0: every session stands alone */
    int gross;                 /* 1: every session (gross traffic); 0: the valid ones only
                                * (net: a session whose record says why it is invalid, a bot's
                                * or a listener's over <max-concurrent-per-listener>, is in
                                * no figure) */
    /* answered */
    audience_row_t *rows;      /* bucket by bucket; in each, the server first, then mounts */
    size_t nrows;
    char **servers;            /* the servers with sessions in the period, whatever mount and
                                * server were asked, in byte order (audience_query_add_server;
                                * records without a name are this server's) */
    size_t nservers;
    int err;                   /* 0, -ENODEV (no database), -EAGAIN (the database cannot be
                                * reached now), -EIO (a query failed), -ENOMEM */
} audience_query_t;

/* The clock quarter-hours wholly inside [from, to). */
int64_t audience_quarters(int64_t from_ms, int64_t to_ms);
/* AQH counts a listener in a quarter-hour where it listened five minutes or more. Of the whole
 * quarter-hours of [from, to) that the session [start, end) touches, those between its first
 * and its last count for it alone (it listened them whole); its first and last (its edges, n
 * of them: 0 when it touches none, 1 when they are one) hold `ms` of its time each, summed
 * with the listener's other sessions' time in the same quarter-hour (quarter: its number
 * since 1970) before the five minutes are asked. 1 if it touches any, else 0. */
typedef struct audience_edges {
    int64_t whole;
    int n;
    int64_t quarter[2], ms[2];
} audience_edges_t;
int audience_quarter_edges(int64_t start_ms, int64_t end_ms, int64_t from_ms, int64_t to_ms,
                           audience_edges_t *e);

/* The figures made from a row's others: TSL (TLH / CUME, hours), AAS (TLH / hours in the
 * bucket) and AQH (aqh_quarters / the bucket's whole quarter-hours); each 0 without a
 * divisor. */
typedef struct audience_derived {
    double tsl_hours, aas, aqh;
} audience_derived_t;
audience_derived_t audience_row_derived(const audience_row_t *r);

/* Frees q's answer, mount and server. */
void audience_query_clear(audience_query_t *q);
/* Appends a copy of name to q->servers (the backends give them in order). 0 or -ENOMEM. */
int audience_query_add_server(audience_query_t *q, const char *name);

/* Counts an ended session for /metrics (any thread). */
void audience_count(const session_record_t *r);
/* Appends the counters' families to o (Prometheus text); label writes an escaped label
 * value. */
void audience_metrics(buf_t *o, void (*label)(buf_t *o, const char *value));

#endif
