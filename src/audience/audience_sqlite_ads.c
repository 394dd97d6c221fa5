/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sqlite_ads: ad decisions in the SQLite store and their figures (audience_ads.h):
 * table ads, one row per ad placed (seq 1, 2, ...) or one row without an ad (seq 0) for a
 * decision that placed none, keyed by the record's id and seq; the figures by two grouped
 * queries over the period's rows through the index on asked_ms.
 */
#include "audience/audience_sqlite.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "audience/audience_ads.h"

static const char ads_schema[] =
    "CREATE TABLE IF NOT EXISTS ads ("
    " record_id TEXT NOT NULL,"
    " seq INTEGER NOT NULL,"
    " server TEXT,"
    " session_id INTEGER NOT NULL,"
    " mount TEXT NOT NULL,"
    " hls INTEGER NOT NULL DEFAULT 0,"
    " asked_ms INTEGER NOT NULL,"
    " ended_ms INTEGER NOT NULL,"
    " outcome TEXT NOT NULL,"
    " vast_code INTEGER NOT NULL DEFAULT 0,"
    " break_ms INTEGER NOT NULL,"
    " ad_id TEXT,"
    " creative_id TEXT,"
    " title TEXT,"
    " duration_ms INTEGER,"
    " delivered_ms INTEGER,"
    " events INTEGER NOT NULL DEFAULT 0,"
    " reached TEXT,"
    " PRIMARY KEY (record_id, seq));"
    "CREATE INDEX IF NOT EXISTS ads_asked ON ads (asked_ms);"
    /* the net figures look each decision's session up among the invalid ones only: a small
     * index (invalid sessions are few), kept up by their inserts alone */
    "CREATE INDEX IF NOT EXISTS sessions_invalid_conn ON sessions (conn_id) WHERE invalid != '';";

static const char insert_sql[] =
    "INSERT OR IGNORE INTO ads (record_id, seq, server, session_id, mount, hls, asked_ms,"
    " ended_ms, outcome, vast_code, break_ms, ad_id, creative_id, title, duration_ms,"
    " delivered_ms, events, reached) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

const char *audience_sqlite_ads_schema(void)
{
    return ads_schema;
}

int audience_sqlite_ads_prepare(sqlite3 *db, sqlite3_stmt **insert)
{
    return sqlite3_prepare_v2(db, insert_sql, -1, insert, NULL);
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

int audience_sqlite_ads_insert(sqlite3_stmt *s, const audience_record_t *e)
{
    const ads_record_t *a = e->ad;
    char uid[33];
    for (int i = 0; i < 16; i++)
        snprintf(uid + 2 * i, 3, "%02x", e->uid[i]);
    for (int seq = a->n ? 1 : 0; seq <= a->n; seq++) {
        const ads_record_ad_t *d = seq ? &a->ad[seq - 1] : NULL;
        sqlite3_reset(s);
        sqlite3_clear_bindings(s);
        bind_text(s, 1, uid);
        sqlite3_bind_int(s, 2, seq);
        bind_text(s, 3, e->server);
        sqlite3_bind_int64(s, 4, (sqlite3_int64)a->session);
        bind_text(s, 5, a->mount);
        sqlite3_bind_int(s, 6, a->hls ? 1 : 0);
        sqlite3_bind_int64(s, 7, a->asked_ms);
        sqlite3_bind_int64(s, 8, a->ended_ms);
        bind_text(s, 9, ads_outcome_name(a->outcome));
        sqlite3_bind_int(s, 10, a->vast_code);
        sqlite3_bind_int64(s, 11, a->break_ms);
        if (d) {
            bind_text(s, 12, d->ad_id);
            bind_text(s, 13, d->creative_id);
            bind_text(s, 14, d->title);
            sqlite3_bind_int64(s, 15, d->duration_ms);
            sqlite3_bind_int64(s, 16, d->delivered_ms);
            sqlite3_bind_int(s, 17, (int)d->events);
            bind_text(s, 18, ads_reached_name(d->events));
        } else {
            sqlite3_bind_int(s, 17, 0); /* NOT NULL: a row without an ad fired nothing */
        }
        if (sqlite3_step(s) != SQLITE_DONE)
            return -EIO;
    }
    return 0;
}

int64_t audience_sqlite_ads_prune(sqlite3 *db, int64_t before_ms)
{
    sqlite3_stmt *del = NULL;
    if (sqlite3_prepare_v2(db, "DELETE FROM ads WHERE asked_ms < ?", -1, &del, NULL) !=
        SQLITE_OK)
        return -1;
    sqlite3_bind_int64(del, 1, before_ms);
    int rc = sqlite3_step(del);
    sqlite3_finalize(del);
    return rc == SQLITE_DONE ? sqlite3_changes(db) : -1;
}

/* The rows of the period that count: asked in [from, to), of the mount and server asked, and
 * (net) not of a session recorded invalid, looked up by its id in the index of invalid
 * sessions (INDEXED BY: the (mount, start_ms) index would scan every session of the mount
 * begun before). ?1 from, ?2 to, ?3 step (0: one period), ?4 mount (NULL all), ?5 server
 * (NULL all), ?6 1 for gross. */
#define ADS_WHERE                                                                              \
    " FROM ads a WHERE a.asked_ms >= ?1 AND a.asked_ms < ?2"                                  \
    " AND (?4 IS NULL OR a.mount = ?4) AND (?5 IS NULL OR a.server = ?5)"                     \
    " AND (?6 OR NOT EXISTS (SELECT 1 FROM sessions s INDEXED BY sessions_invalid_conn"       \
    " WHERE s.conn_id = a.session_id AND s.invalid != '' AND s.mount = a.mount"               \
    " AND s.start_ms <= a.asked_ms AND s.end_ms >= a.asked_ms AND s.server IS a.server))"
#define ADS_BUCKET " CASE WHEN ?3 > 0 THEN a.asked_ms / ?3 ELSE 0 END AS b"

static const char mounts_sql[] =
    "SELECT" ADS_BUCKET ", a.mount, SUM(a.seq <= 1), SUM(a.seq >= 1),"
    " SUM((a.events & 2) != 0), SUM((a.events & 1) != 0), SUM((a.events & 32) != 0),"
    " SUM(COALESCE(a.delivered_ms, 0))" ADS_WHERE
    " GROUP BY b, a.mount ORDER BY b, a.mount";

static const char creatives_sql[] =
    "SELECT" ADS_BUCKET ", a.creative_id, MAX(a.ad_id), MAX(a.title),"
    " SUM((a.events & 2) != 0), SUM((a.events & 1) != 0), SUM((a.events & 4) != 0),"
    " SUM((a.events & 8) != 0), SUM((a.events & 16) != 0), SUM((a.events & 32) != 0)"
    ADS_WHERE " AND a.seq >= 1 GROUP BY b, a.creative_id ORDER BY b, a.creative_id";

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql, const audience_ads_query_t *q)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        return NULL;
    sqlite3_bind_int64(s, 1, q->from_ms);
    sqlite3_bind_int64(s, 2, q->to_ms);
    sqlite3_bind_int64(s, 3, q->step_ms);
    bind_text(s, 4, q->mount);
    bind_text(s, 5, q->server);
    sqlite3_bind_int(s, 6, q->gross ? 1 : 0);
    return s;
}

static uint64_t u64(sqlite3_stmt *s, int i)
{
    sqlite3_int64 v = sqlite3_column_int64(s, i);
    return v > 0 ? (uint64_t)v : 0;
}

static int read_mounts(sqlite3 *db, audience_ads_query_t *q)
{
    sqlite3_stmt *s = prepare(db, mounts_sql, q);
    int rc = s ? SQLITE_ROW : SQLITE_ERROR;
    while (s && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        audience_ads_mount_t m = {.mount = (char *)sqlite3_column_text(s, 1),
                                  .requests = u64(s, 2), .fills = u64(s, 3),
                                  .impressions = u64(s, 4), .starts = u64(s, 5),
                                  .completes = u64(s, 6), .delivered_ms = u64(s, 7)};
        audience_ads_period(q, sqlite3_column_int64(s, 0), &m.from_ms, &m.to_ms);
        if (audience_ads_add_mount(q, &m) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

static int read_creatives(sqlite3 *db, audience_ads_query_t *q)
{
    sqlite3_stmt *s = prepare(db, creatives_sql, q);
    int rc = s ? SQLITE_ROW : SQLITE_ERROR;
    while (s && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        audience_ads_creative_t c = {.creative_id = (char *)sqlite3_column_text(s, 1),
                                     .ad_id = (char *)sqlite3_column_text(s, 2),
                                     .title = (char *)sqlite3_column_text(s, 3),
                                     .impressions = u64(s, 4), .starts = u64(s, 5),
                                     .q1 = u64(s, 6), .mid = u64(s, 7), .q3 = u64(s, 8),
                                     .completes = u64(s, 9)};
        audience_ads_period(q, sqlite3_column_int64(s, 0), &c.from_ms, &c.to_ms);
        if (audience_ads_add_creative(q, &c) < 0) {
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
}

void audience_sqlite_ads_figures(sqlite3 *db, audience_ads_query_t *q)
{
    if (!db) {
        q->err = -ENODEV;
        return;
    }
    int rc = read_mounts(db, q);
    if (rc == 0)
        rc = read_creatives(db, q);
    if (rc == 0)
        rc = audience_ads_add_totals(q);
    q->err = rc;
}
