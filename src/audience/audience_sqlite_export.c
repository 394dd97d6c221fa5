/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sqlite_export: the sessions that ended in a period, a chunk at a time, from the
 * SQLite store (audience_export.h): by start and id after the cursor, through the index on
 * start_ms (a session that ended in the period began at most the longest session's length
 * before it).
 */
#include "audience/audience_sqlite.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "audience/audience_export.h"
#include "audience/audience_store.h"

/* ?1, ?2: the period; ?3 the longest session; ?4 a mount or NULL; ?5 a server or NULL; ?6
 * this server's name (of records without one); ?7, ?8 the cursor (start, id); ?9 the chunk. */
static const char sessions_sql[] =
    "SELECT id, start_ms, end_ms, bytes, mount, IFNULL(server, ?6), listener_key, ip,"
    " user_agent, country, ended, invalid, hls FROM sessions"
    " WHERE start_ms >= MAX(?1 - ?3, ?7) AND start_ms < ?2 AND end_ms >= ?1 AND end_ms < ?2"
    " AND (start_ms, id) > (?7, ?8)"
    " AND (?4 IS NULL OR mount = ?4) AND (?5 IS NULL OR IFNULL(server, ?6) = ?5)"
    " ORDER BY start_ms, id LIMIT ?9";

static const char *text(sqlite3_stmt *s, int i)
{
    return (const char *)sqlite3_column_text(s, i);
}

void audience_sqlite_sessions(sqlite3 *db, audience_export_t *x)
{
    if (!db) {
        x->err = -ENODEV;
        return;
    }
    sqlite3_stmt *s = NULL;
    if (x->longest_ms < 0) {
        x->longest_ms = 0;
        if (sqlite3_prepare_v2(db, "SELECT IFNULL(MAX(end_ms - start_ms), 0) FROM sessions", -1,
                               &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
            x->longest_ms = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
        x->after_start_ms = x->from_ms - x->longest_ms - 1;
        snprintf(x->after_id, sizeof(x->after_id), "-1");
    }
    if (sqlite3_prepare_v2(db, sessions_sql, -1, &s, NULL) != SQLITE_OK) {
        x->err = -EIO;
        return;
    }
    sqlite3_bind_int64(s, 1, x->from_ms);
    sqlite3_bind_int64(s, 2, x->to_ms);
    sqlite3_bind_int64(s, 3, x->longest_ms);
    if (x->mount)
        sqlite3_bind_text(s, 4, x->mount, -1, SQLITE_STATIC);
    if (x->server)
        sqlite3_bind_text(s, 5, x->server, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 6, audience_store_server_name(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 7, x->after_start_ms);
    sqlite3_bind_int64(s, 8, strtoll(x->after_id, NULL, 10));
    sqlite3_bind_int(s, 9, AUDIENCE_EXPORT_CHUNK);
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        audience_session_row_t r = {
            .start_ms = sqlite3_column_int64(s, 1), .end_ms = sqlite3_column_int64(s, 2),
            .bytes = (uint64_t)sqlite3_column_int64(s, 3), .mount = text(s, 4),
            .server = text(s, 5), .key = text(s, 6), .ip = text(s, 7), .agent = text(s, 8),
            .country = text(s, 9), .ended = text(s, 10), .invalid = text(s, 11),
            .hls = sqlite3_column_int(s, 12)};
        audience_export_line(&x->out, x->format, &r);
        x->after_start_ms = r.start_ms;
        snprintf(x->after_id, sizeof(x->after_id), "%lld", (long long)sqlite3_column_int64(s, 0));
        x->rows++;
    }
    if (rc != SQLITE_DONE)
        x->err = -EIO;
    x->more = !x->err && x->rows == AUDIENCE_EXPORT_CHUNK;
    sqlite3_finalize(s);
}
