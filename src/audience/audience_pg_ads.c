/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pg_ads: ad decisions in the PostgreSQL store and their figures (audience_ads.h):
 * table ads (schema version 7), partitioned by the UTC day a decision was asked as sessions
 * are by the day a session began (the same function makes both days' partitions, the same
 * retention drops them), one row per ad placed (seq 1, 2, ...) or one without an ad (seq 0),
 * unique by the record's id: a record written twice is there once. The figures are two
 * grouped statements in the database.
 */
#include "audience/audience_pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_ads.h"
#include "core/buf.h"
#include "core/utf8.h"

#define WRITE_MS 15000
#define FIGURES_MS 60000
#define ROW_PARAMS 18
#define ROWS_PER_STATEMENT 256

/* The day partitions: the function that makes a day's partition of sessions makes the ads'
 * too, and retention drops both (a decision is in the day it was asked); it returns the
 * sessions removed, as before. */
const char audience_pg_ads_migration[] =
    "CREATE TABLE ads ("
    " record_id uuid NOT NULL,"
    " seq smallint NOT NULL,"
    " server text COLLATE \"C\" NOT NULL,"
    " session_id bigint NOT NULL,"
    " mount text COLLATE \"C\" NOT NULL,"
    " hls smallint NOT NULL DEFAULT 0,"
    " asked_ms bigint NOT NULL,"
    " ended_ms bigint NOT NULL,"
    " outcome text COLLATE \"C\" NOT NULL,"
    " vast_code integer NOT NULL DEFAULT 0,"
    " break_ms bigint NOT NULL,"
    " ad_id text COLLATE \"C\","
    " creative_id text COLLATE \"C\","
    " title text COLLATE \"C\","
    " duration_ms bigint,"
    " delivered_ms bigint,"
    " events integer NOT NULL DEFAULT 0,"
    " reached text COLLATE \"C\","
    " PRIMARY KEY (record_id, seq, asked_ms)"
    ") PARTITION BY RANGE (asked_ms);"
    "CREATE TABLE ads_default PARTITION OF ads DEFAULT;"
    "CREATE INDEX ads_asked ON ads (asked_ms);"
    /* the net figures look each decision's session up among the invalid ones only */
    "CREATE INDEX sessions_invalid_conn ON sessions (conn_id) WHERE invalid <> '';"
    "CREATE OR REPLACE FUNCTION rimecast_day_partition(day bigint) RETURNS boolean"
    " LANGUAGE plpgsql AS $f$"
    " DECLARE suffix text := to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');"
    "  name text := 'sessions_' || suffix; aname text := 'ads_' || suffix;"
    " BEGIN"
    "  IF to_regclass(quote_ident(name)) IS NOT NULL AND to_regclass(quote_ident(aname))"
    "   IS NOT NULL THEN RETURN false; END IF;"
    "  PERFORM set_config('lock_timeout', '5s', true);"
    "  PERFORM pg_advisory_xact_lock(" AUDIENCE_PG_PARTITION_LOCK ");"
    "  IF to_regclass(quote_ident(name)) IS NULL THEN"
    "   EXECUTE format('CREATE TABLE %I PARTITION OF sessions FOR VALUES FROM (%s) TO (%s)',"
    "    name, day * 86400000, (day + 1) * 86400000);"
    "  END IF;"
    "  IF to_regclass(quote_ident(aname)) IS NULL THEN"
    "   EXECUTE format('CREATE TABLE %I PARTITION OF ads FOR VALUES FROM (%s) TO (%s)',"
    "    aname, day * 86400000, (day + 1) * 86400000);"
    "  END IF;"
    "  RETURN true;"
    " END $f$;"
    "CREATE OR REPLACE FUNCTION rimecast_drop_days_before(day bigint) RETURNS bigint"
    " LANGUAGE plpgsql AS $f$"
    " DECLARE part record; n bigint; total bigint := 0;"
    "  before text := to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');"
    " BEGIN"
    "  PERFORM set_config('lock_timeout', '5s', true);"
    "  PERFORM pg_advisory_xact_lock(" AUDIENCE_PG_PARTITION_LOCK ");"
    "  FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    "   WHERE (i.inhparent = 'sessions'::regclass AND c.relname ~ '^sessions_[0-9]{8}$'"
    "    AND c.relname < 'sessions_' || before)"
    "   OR (i.inhparent = 'ads'::regclass AND c.relname ~ '^ads_[0-9]{8}$'"
    "    AND c.relname < 'ads_' || before) LOOP"
    "   IF left(part.relname, 9) = 'sessions_' THEN"
    "    EXECUTE format('SELECT count(*) FROM %I', part.relname) INTO n;"
    "    total := total + n;"
    "   END IF;"
    "   EXECUTE format('DROP TABLE %I', part.relname);"
    "  END LOOP;"
    "  DELETE FROM ads_default WHERE asked_ms < day * 86400000;"
    "  DELETE FROM sessions_default WHERE start_ms < day * 86400000;"
    "  GET DIAGNOSTICS n = ROW_COUNT;"
    "  DELETE FROM session_hours WHERE hour < day * 24;"
    "  DELETE FROM figures_cache WHERE bucket_ms < day * 86400000;"
    "  RETURN total + n;"
    " END $f$;";

/* ---- writing ---- */

typedef struct params {
    const char *v[ROWS_PER_STATEMENT * ROW_PARAMS];
    char *owned[ROWS_PER_STATEMENT * ROW_PARAMS];
    size_t n;
    int oom;
} params_t;

static void put(params_t *ps, const char *text, char *owned)
{
    if (!owned && text && !utf8_valid(text, strlen(text))) /* a client's bytes: as ISO-8859-1 */
        text = owned = utf8_from_text(text, strlen(text), NULL);
    ps->oom |= text == NULL && owned != NULL;
    ps->v[ps->n] = text;
    ps->owned[ps->n++] = owned;
}

static void put_i64(params_t *ps, long long x)
{
    char *t = malloc(24);
    if (t)
        snprintf(t, 24, "%lld", x);
    ps->oom |= !t;
    ps->v[ps->n] = t;
    ps->owned[ps->n++] = t;
}

static void params_reset(params_t *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->owned[i]);
    ps->n = 0;
    ps->oom = 0;
}

static void put_row(params_t *ps, const audience_record_t *e, int seq)
{
    const ads_record_t *a = e->ad;
    const ads_record_ad_t *d = seq ? &a->ad[seq - 1] : NULL;
    char *uid = malloc(37);
    const uint8_t *u = e->uid;
    if (uid)
        snprintf(uid, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
                 u[12], u[13], u[14], u[15]);
    ps->oom |= !uid;
    ps->v[ps->n] = uid;
    ps->owned[ps->n++] = uid;
    put_i64(ps, seq);
    put(ps, e->server ? e->server : "", NULL);
    put_i64(ps, (long long)a->session);
    put(ps, a->mount, NULL);
    put_i64(ps, a->hls ? 1 : 0);
    put_i64(ps, a->asked_ms);
    put_i64(ps, a->ended_ms);
    put(ps, ads_outcome_name(a->outcome), NULL);
    put_i64(ps, a->vast_code);
    put_i64(ps, a->break_ms);
    put(ps, d ? d->ad_id : NULL, NULL);
    put(ps, d ? d->creative_id : NULL, NULL);
    put(ps, d ? d->title : NULL, NULL);
    if (d) {
        put_i64(ps, d->duration_ms);
        put_i64(ps, d->delivered_ms);
    } else {
        put(ps, NULL, NULL);
        put(ps, NULL, NULL);
    }
    put_i64(ps, d ? (long long)d->events : 0);
    put(ps, d ? ads_reached_name(d->events) : NULL, NULL);
}

/* One INSERT of the rows in ps (rows of them). 0 or -1. */
static int insert_rows(audience_db_t *db, params_t *ps, size_t rows)
{
    static const char *const types[ROW_PARAMS] = {
        "uuid", "smallint", "text", "bigint", "text", "smallint", "bigint", "bigint", "text",
        "integer", "bigint", "text", "text", "text", "bigint", "bigint", "integer", "text"};
    buf_t b = BUF_INIT;
    buf_append_str(&b, "INSERT INTO ads (record_id, seq, server, session_id, mount, hls, asked_ms,"
                       " ended_ms, outcome, vast_code, break_ms, ad_id, creative_id, title,"
                       " duration_ms, delivered_ms, events, reached) VALUES ");
    for (size_t i = 0; i < rows; i++) {
        buf_append_str(&b, i ? ",(" : "(");
        for (int k = 0; k < ROW_PARAMS; k++)
            buf_appendf(&b, "%s$%zu::%s", k ? "," : "", i * ROW_PARAMS + k + 1, types[k]);
        buf_append_char(&b, ')');
    }
    buf_append_str(&b, " ON CONFLICT DO NOTHING");
    size_t len;
    char *sql = buf_take(&b, &len);
    PGresult *r = sql && !ps->oom ? audience_pg_run(db, sql, (int)ps->n, ps->v, WRITE_MS) : NULL;
    free(sql);
    PQclear(r);
    return r ? 0 : -1;
}

int audience_pg_ads_write(audience_db_t *db, audience_record_t *const *v, size_t n)
{
    params_t *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return -1;
    size_t rows = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const ads_record_t *a = v[i]->ad;
        if (rows + (size_t)(a->n ? a->n : 1) > ROWS_PER_STATEMENT) {
            rc = insert_rows(db, ps, rows);
            params_reset(ps);
            rows = 0;
        }
        for (int seq = a->n ? 1 : 0; seq <= a->n; seq++, rows++)
            put_row(ps, v[i], seq);
    }
    if (rc == 0 && rows)
        rc = insert_rows(db, ps, rows);
    params_reset(ps);
    free(ps);
    return rc;
}

/* ---- the figures ---- */

/* The rows of the period that count ($1 from, $2 to, $3 step or 0, $4 mount or NULL, $5
 * server or NULL, $6 1 for gross): net leaves out the ads of sessions recorded invalid. */
#define ADS_WHERE                                                                              \
    " FROM ads a WHERE a.asked_ms >= $1::bigint AND a.asked_ms < $2::bigint"                  \
    " AND ($4::text IS NULL OR a.mount = $4::text)"                                           \
    " AND ($5::text IS NULL OR a.server = $5::text)"                                          \
    " AND ($6::int = 1 OR NOT EXISTS (SELECT 1 FROM sessions s WHERE s.conn_id = a.session_id" \
    " AND s.invalid <> '' AND s.mount = a.mount AND s.start_ms <= a.asked_ms"                 \
    " AND s.end_ms >= a.asked_ms AND s.server = a.server))"
#define ADS_BUCKET "CASE WHEN $3::bigint > 0 THEN a.asked_ms / $3::bigint ELSE 0 END"
#define HAS(bit) "count(*) FILTER (WHERE a.events & " bit " <> 0)"

static const char mounts_sql[] =
    "SELECT " ADS_BUCKET ", a.mount, count(*) FILTER (WHERE a.seq <= 1),"
    " count(*) FILTER (WHERE a.seq >= 1), " HAS("2") ", " HAS("1") ", " HAS("32") ","
    " coalesce(sum(a.delivered_ms), 0)" ADS_WHERE " GROUP BY 1, 2 ORDER BY 1, 2";

static const char creatives_sql[] =
    "SELECT " ADS_BUCKET ", a.creative_id, max(a.ad_id), max(a.title), " HAS("2") ", "
    HAS("1") ", " HAS("4") ", " HAS("8") ", " HAS("16") ", " HAS("32")
    ADS_WHERE " AND a.seq >= 1 GROUP BY 1, 2 ORDER BY 1, 2";

static uint64_t u64(PGresult *r, int row, int col)
{
    return strtoull(PQgetvalue(r, row, col), NULL, 10);
}

static const char *text_or_null(PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

void audience_pg_ads_figures(audience_db_t *db, audience_ads_query_t *q)
{
    audience_pg_t *p = db->impl;
    if (!p || !p->conn) {
        q->err = -EAGAIN;
        return;
    }
    char from[24], to[24], step[24];
    snprintf(from, sizeof(from), "%lld", (long long)q->from_ms);
    snprintf(to, sizeof(to), "%lld", (long long)q->to_ms);
    snprintf(step, sizeof(step), "%lld", (long long)q->step_ms);
    const char *params[] = {from, to, step, q->mount, q->server, q->gross ? "1" : "0"};
    PGresult *m = audience_pg_run(db, mounts_sql, 6, params, FIGURES_MS);
    PGresult *c = m ? audience_pg_run(db, creatives_sql, 6, params, FIGURES_MS) : NULL;
    int err = !m || !c ? (p->conn ? -EIO : -EAGAIN) : 0;
    for (int i = 0; !err && i < PQntuples(m); i++) {
        audience_ads_mount_t row = {.mount = PQgetvalue(m, i, 1), .requests = u64(m, i, 2),
                                    .fills = u64(m, i, 3), .impressions = u64(m, i, 4),
                                    .starts = u64(m, i, 5), .completes = u64(m, i, 6),
                                    .delivered_ms = u64(m, i, 7)};
        audience_ads_period(q, strtoll(PQgetvalue(m, i, 0), NULL, 10), &row.from_ms,
                            &row.to_ms);
        err = audience_ads_add_mount(q, &row);
    }
    for (int i = 0; !err && i < PQntuples(c); i++) {
        audience_ads_creative_t row = {
            .creative_id = (char *)text_or_null(c, i, 1), .ad_id = (char *)text_or_null(c, i, 2),
            .title = (char *)text_or_null(c, i, 3), .impressions = u64(c, i, 4),
            .starts = u64(c, i, 5), .q1 = u64(c, i, 6), .mid = u64(c, i, 7),
            .q3 = u64(c, i, 8), .completes = u64(c, i, 9)};
        audience_ads_period(q, strtoll(PQgetvalue(c, i, 0), NULL, 10), &row.from_ms,
                            &row.to_ms);
        err = audience_ads_add_creative(q, &row);
    }
    PQclear(m);
    PQclear(c);
    q->err = err ? err : audience_ads_add_totals(q);
}
