/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pg_export: the sessions that ended in a period, a chunk at a time, from the
 * PostgreSQL store (audience_export.h): by start and record id after the cursor, found as the
 * figures find a bucket's (those that began in it or in the hour before, those over an hour
 * long through the partial index on end_ms).
 */
#include "audience/audience_pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_export.h"

#define EXPORT_MS 60000        /* a chunk within this, or the connection is cut */

/* $1, $2: the period; $3 a mount or NULL; $4 a server or NULL; $5 the chunk; $6, $7 the cursor
 * (start, record id). */
static const char sessions_sql[] =
    "SELECT start_ms, record_id::text, end_ms, bytes, mount, server, listener_key, ip,"
    " user_agent, country, ended, invalid, hls FROM ("
    " SELECT * FROM sessions WHERE start_ms >= $1::bigint - 3600000 AND start_ms < $2"
    "  AND end_ms >= $1 AND end_ms < $2"
    " UNION ALL SELECT * FROM sessions WHERE start_ms < $1::bigint - 3600000"
    "  AND end_ms - start_ms > 3600000 AND end_ms >= $1 AND end_ms < $2) s"
    " WHERE (start_ms, record_id) > ($6::bigint, $7::uuid)"
    " AND ($3::text IS NULL OR mount = $3) AND ($4::text IS NULL OR server = $4)"
    " ORDER BY start_ms, record_id LIMIT $5";

static const char *text(const PGresult *r, int i, int k)
{
    return PQgetisnull(r, i, k) ? NULL : PQgetvalue(r, i, k);
}

void audience_pg_sessions(audience_db_t *db, audience_export_t *x)
{
    audience_pg_t *p = db->impl;
    if (!p->conn) {
        x->err = -EAGAIN;
        return;
    }
    if (x->longest_ms < 0) { /* the first chunk: from the beginning */
        x->longest_ms = 0;
        x->after_start_ms = INT64_MIN + 1;
        snprintf(x->after_id, sizeof(x->after_id), "00000000-0000-0000-0000-000000000000");
    }
    char from[24], to[24], limit[16], after[24];
    snprintf(from, sizeof(from), "%lld", (long long)x->from_ms);
    snprintf(to, sizeof(to), "%lld", (long long)x->to_ms);
    snprintf(limit, sizeof(limit), "%d", AUDIENCE_EXPORT_CHUNK);
    snprintf(after, sizeof(after), "%lld", (long long)x->after_start_ms);
    const char *params[] = {from, to, x->mount, x->server, limit, after, x->after_id};
    PGresult *r = audience_pg_run(db, sessions_sql, 7, params, EXPORT_MS);
    if (!r) {
        x->err = p->conn ? -EIO : -EAGAIN;
        return;
    }
    int n = PQntuples(r);
    for (int i = 0; i < n; i++) {
        audience_session_row_t row = {
            .start_ms = strtoll(PQgetvalue(r, i, 0), NULL, 10),
            .end_ms = strtoll(PQgetvalue(r, i, 2), NULL, 10),
            .bytes = strtoull(PQgetvalue(r, i, 3), NULL, 10), .mount = text(r, i, 4),
            .server = text(r, i, 5), .key = text(r, i, 6), .ip = text(r, i, 7),
            .agent = text(r, i, 8), .country = text(r, i, 9), .ended = text(r, i, 10),
            .invalid = text(r, i, 11), .hls = atoi(PQgetvalue(r, i, 12))};
        audience_export_line(&x->out, x->format, &row);
        x->after_start_ms = row.start_ms;
        snprintf(x->after_id, sizeof(x->after_id), "%s", PQgetvalue(r, i, 1));
    }
    x->rows = (size_t)n;
    x->more = n == AUDIENCE_EXPORT_CHUNK;
    PQclear(r);
}
