/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sqlite_top: top user agents and referrers by SQL over the SQLite store (see
 * audience_top.h, audience_sqlite.h).
 */
#include "audience/audience_sqlite.h"

#include "audience/audience_store.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ?1, ?2: the period; ?3 the qualifying length in ms; ?4 a mount or NULL for all; ?5 1 to
 * group by referrer; ?6 the limit; ?9 1 for the valid sessions only (net). The longest session bounds the search on start_ms from
 * below, as for the figures; the total of every group comes before the limit cuts them. A
 * record counts up to 24 hours after its start (AUDIENCE_SESSION_CAP_MS).
 * The first %s: the column of user agents; the second: for one server, SERVER_SQL. */
static const char top_sql[] =
    "SELECT CASE WHEN ?5 THEN referer ELSE %s END AS k, COUNT(*),"
    " TOTAL(end_ms - start_ms >= ?3),"
    " TOTAL(CASE WHEN end_ms - start_ms >= ?3"
    "  THEN MIN(end_ms, start_ms + " AUDIENCE_SESSION_CAP_SQL ", ?2) - MAX(start_ms, ?1)"
    "  ELSE 0 END),"
    " SUM(COUNT(*)) OVER ()"
    " FROM sessions WHERE start_ms >= ?1 - (SELECT IFNULL(MAX(end_ms - start_ms), 0)"
    "  FROM sessions) AND start_ms < ?2"
    " AND MIN(end_ms, start_ms + " AUDIENCE_SESSION_CAP_SQL ") > ?1 AND (?4 IS NULL OR mount = ?4)%s"
    " AND (?9 = 0 OR invalid = '')"
    " GROUP BY k ORDER BY COUNT(*) DESC, k LIMIT ?6";
/* ?7 the server asked for, ?8 this one's name (that of records written before they had one) */
#define SERVER_SQL " AND IFNULL(server, ?8) = ?7"

/* The store's column of user agents: user_agent, or agent in the first stores' schema. */
static const char *agent_column(sqlite3 *db)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT user_agent FROM sessions LIMIT 0", -1, &s, NULL);
    sqlite3_finalize(s);
    return rc == SQLITE_OK ? "user_agent" : "agent";
}

static int add_entry(audience_top_t *t, sqlite3_stmt *s)
{
    audience_top_entry_t *n = realloc(t->entries, (t->n + 1) * sizeof(*n));
    if (!n)
        return -ENOMEM;
    t->entries = n;
    const char *name = (const char *)sqlite3_column_text(s, 0);
    audience_top_entry_t *e = &t->entries[t->n];
    *e = (audience_top_entry_t){
        .name = name ? strdup(name) : NULL,
        .sessions = (uint64_t)sqlite3_column_int64(s, 1),
        .qualified = (uint64_t)sqlite3_column_double(s, 2),
        .listened_ms = (uint64_t)sqlite3_column_double(s, 3),
    };
    if (name && !e->name)
        return -ENOMEM;
    t->sessions = (uint64_t)sqlite3_column_int64(s, 4);
    t->n++;
    return 0;
}

void audience_sqlite_top(sqlite3 *db, audience_top_t *t)
{
    t->err = db ? 0 : -ENODEV;
    sqlite3_stmt *s = NULL;
    if (!db)
        return;
    char sql[sizeof(top_sql) + sizeof(SERVER_SQL) + 16];
    snprintf(sql, sizeof(sql), top_sql, agent_column(db), t->server ? SERVER_SQL : "");
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        t->err = -EIO;
        return;
    }
    sqlite3_bind_int64(s, 1, t->from_ms);
    sqlite3_bind_int64(s, 2, t->to_ms);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)t->qualify_s * 1000);
    if (t->mount)
        sqlite3_bind_text(s, 4, t->mount, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int(s, 5, t->by_referer);
    sqlite3_bind_int(s, 6, t->limit);
    sqlite3_bind_int(s, 9, !t->gross);
    if (t->server) {
        sqlite3_bind_text(s, 7, t->server, -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 8, audience_store_server_name(), -1, SQLITE_TRANSIENT);
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW && t->err == 0)
        t->err = add_entry(t, s);
    if (t->err == 0 && rc != SQLITE_DONE)
        t->err = -EIO;
    sqlite3_finalize(s);
}
