/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience: the figures by SQL over the session store, and the /metrics counters (see
 * audience.h).
 */
#include "stats/audience.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "net/server.h"

/* ---- figures ---- */

/* One statement for a bucket: grouped by mount, or (?5 = 1) all mounts as the server "", and
 * with ?6 = 1 by country too ("" unknown). A session is in [?1, ?2) if it overlaps it; ?3 is
 * the qualifying length in ms; ?4 a mount or NULL for all. Peak: at each session's start
 * (clipped to the bucket), the sessions of its group then listening. */
static const char figures_sql[] =
    "SELECT CASE WHEN ?5 THEN '' ELSE a.mount END AS g,"
    " CASE WHEN ?6 THEN IFNULL(a.country, '') END AS cc, COUNT(*),"
    " TOTAL(a.end_ms - a.start_ms >= ?3),"
    " TOTAL(CASE WHEN a.end_ms - a.start_ms >= ?3"
    "  THEN MIN(a.end_ms, ?2) - MAX(a.start_ms, ?1) ELSE 0 END),"
    " COUNT(DISTINCT CASE WHEN a.end_ms - a.start_ms >= ?3"
    "  THEN a.address || char(10) || IFNULL(a.agent, '') END),"
    " MAX((SELECT COUNT(*) FROM sessions b WHERE (?5 OR b.mount = a.mount)"
    "  AND (?4 IS NULL OR b.mount = ?4)"
    "  AND (NOT ?6 OR IFNULL(b.country, '') = IFNULL(a.country, ''))"
    "  AND b.start_ms <= MAX(a.start_ms, ?1) AND b.end_ms > MAX(a.start_ms, ?1)))"
    " FROM sessions a WHERE a.start_ms < ?2 AND a.end_ms > ?1"
    " AND (?4 IS NULL OR a.mount = ?4) GROUP BY g, cc ORDER BY g, cc";

static int add_row(audience_query_t *q, size_t *cap, sqlite3_stmt *s, int64_t from, int64_t to)
{
    if (q->nrows == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        audience_row_t *n = realloc(q->rows, ncap * sizeof(*n));
        if (!n)
            return -ENOMEM;
        q->rows = n;
        *cap = ncap;
    }
    const char *mount = (const char *)sqlite3_column_text(s, 0);
    const char *cc = (const char *)sqlite3_column_text(s, 1);
    audience_row_t *r = &q->rows[q->nrows];
    *r = (audience_row_t){
        .mount = strdup(mount ? mount : ""), .from_ms = from, .to_ms = to,
        .country = q->by_country ? strdup(cc ? cc : "") : NULL,
        .sessions = (uint64_t)sqlite3_column_int64(s, 2),
        .qualified = (uint64_t)sqlite3_column_double(s, 3),
        .listened_ms = (uint64_t)sqlite3_column_double(s, 4),
        .cume = (uint64_t)sqlite3_column_int64(s, 5),
        .peak = (uint64_t)sqlite3_column_int64(s, 6),
    };
    if (!r->mount || (q->by_country && !r->country)) {
        free(r->mount);
        free(r->country);
        return -ENOMEM;
    }
    q->nrows++;
    return 0;
}

/* The rows of one bucket: the server's (even when nobody listened), then each mount's. */
static int bucket(audience_query_t *q, size_t *cap, sqlite3_stmt *s, int64_t from, int64_t to)
{
    for (int server_row = 1; server_row >= 0; server_row--) {
        if (server_row && q->mount)
            continue;
        sqlite3_reset(s);
        sqlite3_bind_int64(s, 1, from);
        sqlite3_bind_int64(s, 2, to);
        sqlite3_bind_int64(s, 3, (sqlite3_int64)q->qualify_s * 1000);
        if (q->mount)
            sqlite3_bind_text(s, 4, q->mount, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, 4);
        sqlite3_bind_int(s, 5, server_row);
        sqlite3_bind_int(s, 6, q->by_country);
        int rc, rows = 0;
        while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
            if (add_row(q, cap, s, from, to) < 0)
                return -ENOMEM;
            rows++;
        }
        if (rc != SQLITE_DONE)
            return -EIO;
        if (server_row && rows == 0) {
            /* an empty bucket still has its server row, all zero */
            sqlite3_stmt *z = NULL;
            if (sqlite3_prepare_v2(sqlite3_db_handle(s), "SELECT '','',0,0,0,0,0", -1, &z,
                                   NULL) != SQLITE_OK || sqlite3_step(z) != SQLITE_ROW ||
                add_row(q, cap, z, from, to) < 0) {
                sqlite3_finalize(z);
                return -EIO;
            }
            sqlite3_finalize(z);
        }
    }
    return 0;
}

void audience_figures(sqlite3 *db, audience_query_t *q)
{
    q->err = db ? 0 : -ENODEV;
    if (!db)
        return;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, figures_sql, -1, &s, NULL) != SQLITE_OK) {
        q->err = -EIO;
        return;
    }
    size_t cap = 0;
    int64_t from = q->from_ms;
    while (from < q->to_ms && q->err == 0) {
        /* buckets end at whole hours or days (UTC) */
        int64_t to = q->step_ms ? (from / q->step_ms + 1) * q->step_ms : q->to_ms;
        if (to > q->to_ms)
            to = q->to_ms;
        q->err = bucket(q, &cap, s, from, to);
        from = to;
    }
    sqlite3_finalize(s);
}

void audience_query_clear(audience_query_t *q)
{
    for (size_t i = 0; i < q->nrows; i++) {
        free(q->rows[i].mount);
        free(q->rows[i].country);
    }
    free(q->rows);
    free(q->mount);
    q->rows = NULL;
    q->nrows = 0;
    q->mount = NULL;
}

/* ---- counters for /metrics ---- */

#define AUDIENCE_MAX_COUNTED 1024  /* mounts counted at most (names from the config or sources) */

typedef struct counted {
    char *mount;
    uint64_t sessions, qualified, listened_ms;
} counted_t;

static struct {
    pthread_mutex_t lock;
    counted_t *v;
    size_t n, cap;
} counters = {.lock = PTHREAD_MUTEX_INITIALIZER};

static counted_t *counted_find(const char *mount)
{
    for (size_t i = 0; i < counters.n; i++)
        if (strcmp(counters.v[i].mount, mount) == 0)
            return &counters.v[i];
    if (counters.n == AUDIENCE_MAX_COUNTED)
        return NULL;
    if (counters.n == counters.cap) {
        size_t ncap = counters.cap ? counters.cap * 2 : 16;
        counted_t *n = realloc(counters.v, ncap * sizeof(*n));
        if (!n)
            return NULL;
        counters.v = n;
        counters.cap = ncap;
    }
    char *name = strdup(mount);
    if (!name)
        return NULL;
    counters.v[counters.n] = (counted_t){.mount = name};
    return &counters.v[counters.n++];
}

void audience_count(const session_record_t *r)
{
    int64_t ms = r->end_ms > r->start_ms ? r->end_ms - r->start_ms : 0;
    int qualified = ms >= (int64_t)server_config()->qualified_seconds * 1000;
    pthread_mutex_lock(&counters.lock);
    counted_t *c = counted_find(r->mount ? r->mount : "");
    if (c) {
        c->sessions++;
        if (qualified) {
            c->qualified++;
            c->listened_ms += (uint64_t)ms;
        }
    }
    pthread_mutex_unlock(&counters.lock);
}

void audience_metrics(buf_t *o, void (*label)(buf_t *o, const char *value))
{
    static const struct {
        const char *name, *help;
        size_t off;
        int ms;
    } families[] = {
        {"rimecast_audience_sessions_total", "Listener sessions ended since start-up.",
         offsetof(counted_t, sessions), 0},
        {"rimecast_audience_qualified_sessions_total",
         "Listener sessions ended since start-up that lasted at least "
         "qualified-session-seconds.", offsetof(counted_t, qualified), 0},
        {"rimecast_audience_listening_seconds_total",
         "Seconds listened in qualified sessions ended since start-up (TLH in seconds).",
         offsetof(counted_t, listened_ms), 1},
    };
    pthread_mutex_lock(&counters.lock);
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        buf_appendf(o, "# HELP %s %s\n# TYPE %s counter\n", families[f].name, families[f].help,
                    families[f].name);
        for (size_t i = 0; i < counters.n; i++) {
            uint64_t v = *(const uint64_t *)((const char *)&counters.v[i] + families[f].off);
            buf_appendf(o, "%s{mount=\"", families[f].name);
            label(o, counters.v[i].mount);
            if (families[f].ms)
                buf_appendf(o, "\"} %llu.%03u\n", (unsigned long long)(v / 1000),
                            (unsigned)(v % 1000));
            else
                buf_appendf(o, "\"} %llu\n", (unsigned long long)v);
        }
    }
    pthread_mutex_unlock(&counters.lock);
}
