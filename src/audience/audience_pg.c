/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pg: the PostgreSQL backend: connecting, the schema and its migrations, the day
 * partitions, writing batches, retention and the sessions going on (see audience_pg.h).
 */
#include "audience/audience_pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_live.h"
#include "audience/audience_store.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/utf8.h"
#include "net/server.h"
#include "stream/session.h"

#define CONNECT_MS 5000        /* a connection made within this, or tried again later */
#define BACKOFF_MAX_MS 5000    /* tries to reach the database: 1 s, 2 s, 4 s, then every 5 s */
#define WRITE_MS 15000         /* a batch written within this, or the connection is cut */
#define SCHEMA_MS 30000
#define PARTITIONS_AHEAD 7     /* days of partitions made ahead (and the day before today) */
#define PARTITIONS_EVERY_MS 3600000
/* The figures of the last AHEAD_DAYS whole days are made ahead (those not kept yet, or
 * changed since) AHEAD_AFTER_MS after connecting and every AHEAD_EVERY_MS, by one server of
 * the network at a time: the first ask of the month by day then reads them. */
#define AHEAD_DAYS 31
#define AHEAD_AFTER_MS 10000
#define AHEAD_EVERY_MS 600000
#define AHEAD_LOCK "7236120938"
#define BATCH_TRIES 3          /* a batch that fails (not for being away) is tried this often,
                                * then record by record: those that fail alone are lost */

/* ---- the schema ----
 * Version 1 made it; version 2 keeps the figures of Webcast Metrics (AS, SS, AQH) in the
 * cache too; version 3 has the listener key; version 4 why a session is invalid traffic and
 * whether it was an HLS one; version 5 forgets the figures kept (AQH per listener); version
 * 6 makes again the figures kept before a session counted 24 hours at most; version 7 has
 * the ad decisions (table ads). A server finding an older version brings it up to its own
 * in one transaction, under an advisory lock (servers starting together wait for each
 * other); a newer one (a later binary on another server) is used as it is. Text columns
 * compare bytes (COLLATE "C"): the order of mounts and countries is the SQLite store's. */
#define SCHEMA_LOCK "7236120936"   /* pg_advisory_xact_lock keys of this store */
#define PARTITION_LOCK AUDIENCE_PG_PARTITION_LOCK

static const char schema_begin_sql[] =
    "BEGIN;"
    "SELECT pg_advisory_xact_lock(" SCHEMA_LOCK ");"
    "CREATE TABLE IF NOT EXISTS rimecast_schema (version integer PRIMARY KEY,"
    " applied timestamptz NOT NULL DEFAULT now());"
    "SELECT coalesce(max(version), 0) FROM rimecast_schema;";

static const char *const migrations[] = {
    /* 1: sessions (partitioned by day of start_ms), the published view, what the figures'
     * cache follows (a version per hour, bumped by every record written over it), the
     * sessions going on of each server, the cache, and the partitioning functions */
    "CREATE TABLE sessions ("
    " record_id uuid NOT NULL,"
    " server text COLLATE \"C\" NOT NULL,"
    " conn_id bigint NOT NULL,"
    " mount text COLLATE \"C\" NOT NULL,"
    " served text COLLATE \"C\" NOT NULL,"
    " start_ms bigint NOT NULL,"
    " end_ms bigint NOT NULL,"
    " bytes bigint NOT NULL,"
    " ip text COLLATE \"C\" NOT NULL,"
    " user_agent text COLLATE \"C\","
    " referer text COLLATE \"C\","
    " \"user\" text COLLATE \"C\","
    " country text COLLATE \"C\","
    " ended text NOT NULL,"
    " preroll smallint NOT NULL DEFAULT 0,"
    " PRIMARY KEY (record_id, start_ms)"
    ") PARTITION BY RANGE (start_ms);"
    "CREATE TABLE sessions_default PARTITION OF sessions DEFAULT;"
    "CREATE INDEX sessions_start ON sessions (start_ms);"
    "CREATE INDEX sessions_mount_start ON sessions (mount, start_ms);"
    "CREATE INDEX sessions_long_end ON sessions (end_ms) WHERE end_ms - start_ms > 3600000;"
    "CREATE VIEW session_records AS SELECT record_id, server, conn_id, mount, served,"
    " start_ms / 1000.0 AS start, end_ms / 1000.0 AS \"end\","
    " (end_ms - start_ms) / 1000.0 AS seconds, bytes, ip, user_agent, referer, \"user\","
    " country, ended, preroll FROM sessions;"
    "CREATE SEQUENCE session_version;"
    "CREATE TABLE session_hours (hour bigint PRIMARY KEY, version bigint NOT NULL,"
    " longest_ms bigint NOT NULL DEFAULT 0);"
    "CREATE UNLOGGED TABLE live_sessions (server text COLLATE \"C\" NOT NULL,"
    " conn_id bigint NOT NULL, mount text COLLATE \"C\" NOT NULL, start_ms bigint NOT NULL,"
    " end_ms bigint NOT NULL, ip text COLLATE \"C\" NOT NULL, user_agent text COLLATE \"C\","
    " country text COLLATE \"C\", preroll smallint NOT NULL DEFAULT 0);"
    "CREATE INDEX live_sessions_server ON live_sessions (server);"
    "CREATE TABLE figures_cache (scope text COLLATE \"C\" NOT NULL,"
    " qualify_ms bigint NOT NULL, step_ms bigint NOT NULL, bucket_ms bigint NOT NULL,"
    " fingerprint numeric NOT NULL, mount text COLLATE \"C\" NOT NULL,"
    " sessions bigint NOT NULL, qualified bigint NOT NULL, listened_ms bigint NOT NULL,"
    " prerolls bigint NOT NULL, cume bigint NOT NULL, peak bigint NOT NULL,"
    " countries text NOT NULL,"
    " PRIMARY KEY (scope, qualify_ms, step_ms, bucket_ms, fingerprint, mount));"
    "CREATE FUNCTION rimecast_day_partition(day bigint) RETURNS boolean LANGUAGE plpgsql AS $f$"
    " DECLARE name text := 'sessions_' ||"
    "  to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD');"
    " BEGIN"
    "  IF to_regclass(quote_ident(name)) IS NOT NULL THEN RETURN false; END IF;"
    "  PERFORM set_config('lock_timeout', '5s', true);"
    "  PERFORM pg_advisory_xact_lock(" PARTITION_LOCK ");"
    "  IF to_regclass(quote_ident(name)) IS NOT NULL THEN RETURN false; END IF;"
    "  EXECUTE format('CREATE TABLE %I PARTITION OF sessions FOR VALUES FROM (%s) TO (%s)',"
    "   name, day * 86400000, (day + 1) * 86400000);"
    "  RETURN true;"
    " END $f$;"
    "CREATE FUNCTION rimecast_drop_days_before(day bigint) RETURNS bigint LANGUAGE plpgsql"
    " AS $f$"
    " DECLARE part record; n bigint; total bigint := 0;"
    " BEGIN"
    "  PERFORM set_config('lock_timeout', '5s', true);"
    "  PERFORM pg_advisory_xact_lock(" PARTITION_LOCK ");"
    "  FOR part IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    "   WHERE i.inhparent = 'sessions'::regclass AND c.relname ~ '^sessions_[0-9]{8}$'"
    "   AND c.relname < 'sessions_' ||"
    "    to_char(to_timestamp(day * 86400) AT TIME ZONE 'UTC', 'YYYYMMDD') LOOP"
    "   EXECUTE format('SELECT count(*) FROM %I', part.relname) INTO n;"
    "   EXECUTE format('DROP TABLE %I', part.relname);"
    "   total := total + n;"
    "  END LOOP;"
    "  DELETE FROM sessions_default WHERE start_ms < day * 86400000;"
    "  GET DIAGNOSTICS n = ROW_COUNT;"
    "  DELETE FROM session_hours WHERE hour < day * 24;"
    "  DELETE FROM figures_cache WHERE bucket_ms < day * 86400000;"
    "  RETURN total + n;"
    " END $f$;",
    /* 2: the figures by Webcast Metrics' rules (AS, SS, AQH) kept beside the others; rows
     * kept without them (NULL: by a server before this version) are made again */
    "ALTER TABLE figures_cache ADD COLUMN active bigint, ADD COLUMN started bigint,"
    " ADD COLUMN aqh_quarters bigint;",
    /* 3: the listener key of each session (CUME, pauses), going on too; the records before
     * have none (the figures count them by address and agent); the figures kept before are
     * not read again (their scope did not name <resume-seconds>) */
    "ALTER TABLE sessions ADD COLUMN listener_key text COLLATE \"C\";"
    "ALTER TABLE live_sessions ADD COLUMN listener_key text COLLATE \"C\";"
    "CREATE OR REPLACE VIEW session_records AS SELECT record_id, server, conn_id, mount, served,"
    " start_ms / 1000.0 AS start, end_ms / 1000.0 AS \"end\","
    " (end_ms - start_ms) / 1000.0 AS seconds, bytes, ip, user_agent, referer, \"user\","
    " country, ended, preroll, listener_key FROM sessions;",
    /* 4: why a session is invalid traffic ('' valid) and whether it was HLS, going on too; the
     * records before are valid streams, so the figures kept before are the net ones still */
    "ALTER TABLE sessions ADD COLUMN invalid text COLLATE \"C\" NOT NULL DEFAULT '',"
    " ADD COLUMN hls smallint NOT NULL DEFAULT 0;"
    "ALTER TABLE live_sessions ADD COLUMN invalid text COLLATE \"C\" NOT NULL DEFAULT '';"
    "CREATE OR REPLACE VIEW session_records AS SELECT record_id, server, conn_id, mount, served,"
    " start_ms / 1000.0 AS start, end_ms / 1000.0 AS \"end\","
    " (end_ms - start_ms) / 1000.0 AS seconds, bytes, ip, user_agent, referer, \"user\","
    " country, ended, preroll, listener_key, invalid, hls FROM sessions;",
    /* 5: AQH sums a listener's time in a quarter-hour over its sessions: the figures kept
     * before counted each session alone, and are made again */
    "DELETE FROM figures_cache;",
    /* 6: a session counts at most 24 hours in the figures (AUDIENCE_SESSION_CAP_MS): the
     * figures kept before counted longer ones whole, and are made again */
    "DELETE FROM figures_cache;",
    /* 7: listeners' ad decisions (audience_pg_ads.c), partitioned and dropped by day with
     * the sessions */
    audience_pg_ads_migration,
};

#define SCHEMA_VERSION ((int)(sizeof(migrations) / sizeof(migrations[0])))

/* ---- connection ---- */

static void drop_connection(audience_db_t *db)
{
    audience_pg_t *p = db->impl;
    if (p->conn)
        PQfinish(p->conn);
    p->conn = NULL;
    p->retry_at = 0; /* one try at once, then the back-off */
    p->backoff_ms = 0;
}

/* Says once, until it answers again, that the database cannot be used. */
static void say_away(audience_db_t *db, const char *what)
{
    audience_pg_t *p = db->impl;
    if (p->away_said)
        return;
    p->away_said = 1;
    log_error("audience store: %s %s: %s; records wait in memory, then in the spool, and are "
              "written once it answers", what, db->shown, p->err.why);
}

PGresult *audience_pg_run(audience_db_t *db, const char *sql, int n,
                          const char *const *params, int timeout_ms)
{
    audience_pg_t *p = db->impl;
    if (!p->conn) {
        snprintf(p->err.why, sizeof(p->err.why), "not connected");
        p->err.gone = 1;
        return NULL;
    }
    PGresult *r = audience_pg_exec(p->conn, sql, n, params, timeout_ms, &p->err);
    if (!r && p->err.gone) {
        say_away(db, "lost the connection to");
        drop_connection(db);
        p->err.gone = 1;
    }
    return r;
}

/* Brings the schema to SCHEMA_VERSION. 0 or -1 (p->err says why). */
static int migrate(audience_db_t *db)
{
    audience_pg_t *p = db->impl;
    PGresult *r = audience_pg_run(db, schema_begin_sql, 0, NULL, SCHEMA_MS);
    if (!r)
        return -1;
    int have = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    for (int v = have + 1; v <= SCHEMA_VERSION; v++) {
        char mark[80];
        snprintf(mark, sizeof(mark), "INSERT INTO rimecast_schema (version) VALUES (%d)", v);
        PGresult *m = audience_pg_run(db, migrations[v - 1], 0, NULL, SCHEMA_MS);
        PGresult *k = m ? audience_pg_run(db, mark, 0, NULL, SCHEMA_MS) : NULL;
        PQclear(m);
        PQclear(k);
        if (!k) {
            audience_pg_err_t failed = p->err;
            if (p->conn)
                PQclear(audience_pg_run(db, "ROLLBACK", 0, NULL, SCHEMA_MS));
            p->err = failed;
            return -1;
        }
        log_info("audience store: %s has the schema of version %d now", db->shown, v);
    }
    r = audience_pg_run(db, "COMMIT", 0, NULL, SCHEMA_MS);
    PQclear(r);
    if (r && have > SCHEMA_VERSION)
        log_warn("audience store: %s has a schema of version %d, newer than this server's "
                 "(%d): used as it is", db->shown, have, SCHEMA_VERSION);
    return r ? 0 : -1;
}

/* The partitions from the day before today to PARTITIONS_AHEAD days on. */
static void make_partitions(audience_db_t *db)
{
    audience_pg_t *p = db->impl;
    int64_t today = session_now_ms() / AUDIENCE_PG_DAY_MS;
    for (int64_t d = today - 1; d <= today + PARTITIONS_AHEAD && p->conn; d++) {
        char day[24];
        snprintf(day, sizeof(day), "%lld", (long long)d);
        const char *params[] = {day};
        PGresult *r = audience_pg_run(db, "SELECT rimecast_day_partition($1)", 1, params,
                                      SCHEMA_MS);
        if (!r) {
            static log_ratelimit_t rl;
            log_warn_limited(&rl, 3600000, "audience store: cannot make the partition of "
                             "day %lld of %s: %s (its records go to sessions_default)",
                             (long long)d, db->shown, p->err.why);
            return;
        }
        PQclear(r);
    }
}

/* One try to connect (and bring the schema up to date); the back-off doubles on failure. */
static void try_connect(audience_db_t *db, uint64_t now)
{
    audience_pg_t *p = db->impl;
    p->conn = audience_pg_connect(db->where, CONNECT_MS, &p->err);
    if (!p->conn) {
        say_away(db, "cannot connect to");
    } else if (migrate(db) < 0) {
        say_away(db, "cannot set up the schema in");
        drop_connection(db);
    }
    if (!p->conn) {
        p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : 1000;
        if (p->backoff_ms > BACKOFF_MAX_MS)
            p->backoff_ms = BACKOFF_MAX_MS;
        p->retry_at = loop_now_ms() + (uint64_t)p->backoff_ms;
        return;
    }
    int again = p->reached;
    p->reached = 1;
    p->away_said = 0;
    p->backoff_ms = 0;
    p->next_partitions = p->next_live = now;
    p->next_ahead = now + AHEAD_AFTER_MS;
    if (again)
        log_info("audience store: %s answers again", db->shown);
    else
        log_info("audience store: sessions are kept in %s (PostgreSQL %d, as server \"%s\")",
                 db->shown, PQserverVersion(p->conn) / 10000, audience_store_server_name());
}

static int pg_open(audience_db_t *db, int quiet)
{
    (void)quiet;
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(db->where, &err);
    if (!opts) {
        log_error("audience store: cannot use %s: %s", db->shown,
                  err ? "the URI is malformed" : "out of memory");
        PQfreemem(err);
        return -EINVAL;
    }
    PQconninfoFree(opts);
    audience_pg_t *p = calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    db->impl = p;
    try_connect(db, loop_now_ms());
    return 0;
}

static void pg_close(audience_db_t *db)
{
    audience_pg_t *p = db->impl;
    if (!p)
        return;
    if (p->conn) { /* its sessions going on are not going on anywhere any more */
        const char *params[] = {audience_store_server_name()};
        PQclear(audience_pg_run(db, "DELETE FROM live_sessions WHERE server = $1", 1, params,
                                WRITE_MS));
    }
    if (p->conn)
        PQfinish(p->conn);
    audience_query_clear(&p->ahead);
    audience_pg_memo_free(p);
    free(p);
    db->impl = NULL;
}

/* ---- writing ---- */

/* The texts of a statement's parameters, those made here freed with it. */
typedef struct params {
    const char **v;
    char **owned;
    size_t n, cap;
} params_t;

static int param(params_t *ps, const char *text, char *owned)
{
    if (ps->n == ps->cap) {
        size_t ncap = ps->cap ? ps->cap * 2 : 256;
        const char **v = realloc(ps->v, ncap * sizeof(*v));
        char **o = v ? realloc(ps->owned, ncap * sizeof(*o)) : NULL;
        if (v)
            ps->v = v;
        if (!o) {
            free(owned);
            return -ENOMEM;
        }
        ps->owned = o;
        ps->cap = ncap;
    }
    ps->v[ps->n] = text;
    ps->owned[ps->n++] = owned;
    return 0;
}

/* Text as PostgreSQL takes it: valid UTF-8 (a client's bytes that are not become
 * ISO-8859-1's characters, as the admin pages show them); NULL stays NULL. */
static int param_text(params_t *ps, const char *s)
{
    if (!s || utf8_valid(s, strlen(s)))
        return param(ps, s, NULL);
    char *u = utf8_from_text(s, strlen(s), NULL);
    return u ? param(ps, u, u) : -ENOMEM;
}

static int param_i64(params_t *ps, int64_t x)
{
    char *t = malloc(24);
    if (!t)
        return -ENOMEM;
    snprintf(t, 24, "%lld", (long long)x);
    return param(ps, t, t);
}

static void params_free(params_t *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        free(ps->owned[i]);
    free(ps->v);
    free(ps->owned);
    *ps = (params_t){0};
}

static int record_params(params_t *ps, const audience_record_t *e)
{
    const session_record_t *r = &e->r;
    char *uid = malloc(37);
    if (!uid)
        return -ENOMEM;
    const uint8_t *u = e->uid;
    snprintf(uid, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
             u[13], u[14], u[15]);
    int err = param(ps, uid, uid);
    err = err ? err : param_text(ps, e->server ? e->server : "");
    err = err ? err : param_i64(ps, (int64_t)r->id);
    err = err ? err : param_text(ps, r->mount ? r->mount : "");
    err = err ? err : param_text(ps, r->served ? r->served : r->mount ? r->mount : "");
    err = err ? err : param_i64(ps, r->start_ms);
    err = err ? err : param_i64(ps, r->end_ms);
    err = err ? err : param_i64(ps, (int64_t)r->bytes);
    err = err ? err : param_text(ps, r->address ? r->address : "");
    err = err ? err : param_text(ps, r->agent);
    err = err ? err : param_text(ps, r->referer);
    err = err ? err : param_text(ps, r->user);
    err = err ? err : param_text(ps, r->country);
    err = err ? err : param_text(ps, session_end_name(r->end));
    err = err ? err : param(ps, r->preroll ? "1" : "0", NULL);
    err = err ? err : param_text(ps, r->key);
    err = err ? err : param_text(ps, r->invalid ? r->invalid : "");
    err = err ? err : param(ps, r->hls ? "1" : "0", NULL);
    return err;
}

#define RECORD_PARAMS 18

/* One statement: the records (those already there skipped: their ids are unique), and the
 * version of every hour they cover bumped (the figures' cache follows it), hours in order so
 * that two servers' batches never wait on each other in a ring. */
static int batch_sql(buf_t *b, size_t n)
{
    static const char *const types[RECORD_PARAMS] = {
        "uuid", "text", "bigint", "text", "text", "bigint", "bigint", "bigint",
        "text", "text", "text", "text", "text", "text", "smallint", "text", "text", "smallint"};
    buf_append_str(b, "WITH v (record_id, server, conn_id, mount, served, start_ms, end_ms, bytes,"
                      " ip, user_agent, referer, \"user\", country, ended, preroll, listener_key,"
                      " invalid, hls) AS (VALUES ");
    for (size_t i = 0; i < n; i++) {
        buf_append_str(b, i ? ",(" : "(");
        for (int k = 0; k < RECORD_PARAMS; k++)
            buf_appendf(b, "%s$%zu::%s", k ? "," : "", i * RECORD_PARAMS + k + 1, types[k]);
        buf_append_str(b, ")");
    }
    return buf_append_str(
        b, "), ins AS (INSERT INTO sessions SELECT * FROM v ON CONFLICT DO NOTHING"
           " RETURNING start_ms, end_ms),"
           " hours AS (INSERT INTO session_hours (hour, version, longest_ms)"
           " SELECT h, nextval('session_version'), max(CASE WHEN h = start_ms / 3600000"
           " THEN greatest(end_ms - start_ms, 0) ELSE 0 END)"
           " FROM ins, generate_series(start_ms / 3600000,"
           " greatest(end_ms - 1, start_ms) / 3600000) AS h GROUP BY h ORDER BY h"
           " ON CONFLICT (hour) DO UPDATE SET version = excluded.version,"
           " longest_ms = greatest(session_hours.longest_ms, excluded.longest_ms))"
           " SELECT count(*) FROM ins");
}

/* Writes v[0..n) in one statement. 0, or -1 (p->err says why). */
static int write_some(audience_db_t *db, audience_record_t *const *v, size_t n)
{
    audience_pg_t *p = db->impl;
    params_t ps = {0};
    buf_t sql = BUF_INIT;
    int err = batch_sql(&sql, n);
    for (size_t i = 0; !err && i < n; i++)
        err = record_params(&ps, v[i]);
    size_t len;
    char *text = buf_take(&sql, &len);
    PGresult *r = NULL;
    if (err || !text)
        snprintf(p->err.why, sizeof(p->err.why), "out of memory");
    else
        r = audience_pg_run(db, text, (int)ps.n, ps.v, WRITE_MS);
    free(text);
    params_free(&ps);
    PQclear(r);
    return r ? 0 : -1;
}

/* Whether a failed statement may succeed when tried again (a deadlock, a serialization
 * failure, a lock not had in time, a query cancelled). */
static int transient(const char *state)
{
    return strncmp(state, "40", 2) == 0 || strcmp(state, "55P03") == 0 ||
           strcmp(state, "57014") == 0;
}

static audience_write_t write_sessions(audience_db_t *db, audience_record_t *const *v,
                                       size_t n, size_t *written, char *why, size_t cap);

/* The sessions' records, then the ad decisions' (audience_pg_ads.c). A batch the database
 * takes in part and then not is written again whole: every record is there once. */
static audience_write_t pg_write(audience_db_t *db, audience_record_t *const *v, size_t n,
                                 size_t *written, char *why, size_t cap)
{
    audience_pg_t *p = db->impl;
    size_t nads = 0;
    for (size_t i = 0; i < n; i++)
        nads += v[i]->ad != NULL;
    if (!nads)
        return write_sessions(db, v, n, written, why, cap);
    audience_record_t **ads = malloc(n * sizeof(*ads)), **sessions = ads + nads;
    if (!ads) {
        snprintf(why, cap, "out of memory");
        *written = 0;
        return AUDIENCE_WRITE_DONE;
    }
    size_t na = 0, ns = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i]->ad)
            ads[na++] = v[i];
        else
            sessions[ns++] = v[i];
    }
    size_t done = 0;
    audience_write_t w = ns ? write_sessions(db, sessions, ns, &done, why, cap)
                            : AUDIENCE_WRITE_DONE;
    if (w == AUDIENCE_WRITE_DONE) {
        if (p->conn && audience_pg_ads_write(db, ads, na) == 0) {
            done += na;
        } else {
            snprintf(why, cap, "%s", p->err.why);
            if (!p->conn || transient(p->err.state))
                w = AUDIENCE_WRITE_AWAY; /* all again: those written are there once */
        }
    }
    free(ads);
    *written = done;
    return w;
}

static audience_write_t write_sessions(audience_db_t *db, audience_record_t *const *v,
                                       size_t n, size_t *written, char *why, size_t cap)
{
    audience_pg_t *p = db->impl;
    *written = 0;
    if (!p->conn || write_some(db, v, n) < 0) {
        snprintf(why, cap, "%s", p->err.why);
        if (!p->conn) /* away: kept, and written once it answers */
            return AUDIENCE_WRITE_AWAY;
        if (transient(p->err.state) || ++p->tries < BATCH_TRIES)
            return AUDIENCE_WRITE_AWAY; /* tried again in a moment */
        /* a batch that keeps failing: record by record, those that fail alone are lost */
        for (size_t i = 0; i < n && p->conn; i++)
            *written += write_some(db, &v[i], 1) == 0;
        p->tries = 0;
        if (!p->conn)
            return AUDIENCE_WRITE_AWAY;
        log_warn("audience store: %zu of %zu records could not be written to %s: %s",
                 n - *written, n, db->shown, why);
        return AUDIENCE_WRITE_DONE;
    }
    p->tries = 0;
    *written = n;
    return AUDIENCE_WRITE_DONE;
}

/* ---- retention ---- */

static int64_t pg_prune(audience_db_t *db, int days, int *more)
{
    audience_pg_t *p = db->impl;
    *more = 0;
    if (!p->conn)
        return 0;
    char day[24];
    snprintf(day, sizeof(day), "%lld",
             (long long)((session_now_ms() - (int64_t)days * AUDIENCE_PG_DAY_MS) /
                         AUDIENCE_PG_DAY_MS));
    const char *params[] = {day};
    PGresult *r = audience_pg_run(db, "SELECT rimecast_drop_days_before($1)", 1, params,
                                  SCHEMA_MS);
    if (!r) {
        static log_ratelimit_t rl;
        log_warn_limited(&rl, 60000, "audience store: cannot remove old records: %s",
                         p->err.why);
        return -1;
    }
    int64_t removed = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return removed;
}

/* ---- the sessions going on ---- */

#define LIVE_PARAMS 11
#define LIVE_CHUNK 5000        /* rows to a statement (PostgreSQL takes 65535 parameters) */

static int live_chunk(audience_db_t *db, const audience_live_row_t *v, size_t n,
                      const char *name)
{
    params_t ps = {0};
    buf_t sql = BUF_INIT;
    buf_append_str(&sql, "INSERT INTO live_sessions (server, conn_id, mount, start_ms, end_ms,"
                         " ip, user_agent, country, preroll, listener_key, invalid) VALUES ");
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        size_t k = i * LIVE_PARAMS;
        buf_appendf(&sql, "%s($%zu,$%zu::bigint,$%zu,$%zu::bigint,$%zu::bigint,$%zu,$%zu,$%zu,"
                          "$%zu::smallint,$%zu,$%zu)", i ? "," : "", k + 1, k + 2, k + 3, k + 4,
                    k + 5, k + 6, k + 7, k + 8, k + 9, k + 10, k + 11);
        err = param_text(&ps, name);
        err = err ? err : param_i64(&ps, (int64_t)v[i].r.id);
        err = err ? err : param_text(&ps, v[i].mount);
        err = err ? err : param_i64(&ps, v[i].r.start_ms);
        err = err ? err : param_i64(&ps, v[i].r.end_ms);
        err = err ? err : param_text(&ps, v[i].ip);
        err = err ? err : param_text(&ps, v[i].agent);
        err = err ? err : param_text(&ps, v[i].cc[0] ? v[i].cc : NULL);
        err = err ? err : param(&ps, v[i].r.preroll ? "1" : "0", NULL);
        err = err ? err : param_text(&ps, v[i].key[0] ? v[i].key : NULL);
        err = err ? err : param_text(&ps, v[i].invalid);
    }
    size_t len;
    char *text = buf_take(&sql, &len);
    PGresult *r = !err && text ? audience_pg_run(db, text, (int)ps.n, ps.v, WRITE_MS) : NULL;
    free(text);
    params_free(&ps);
    PQclear(r);
    return r ? 0 : -1;
}

int audience_pg_publish_live(audience_db_t *db, int qualify_s, int anonymize)
{
    audience_pg_t *p = db->impl;
    audience_live_t l = {0};
    const char *name = audience_store_server_name();
    const char *params[] = {name};
    int err = audience_live_copy(&l, qualify_s, anonymize) < 0 ? -1 : 0;
    PGresult *r = err ? NULL : audience_pg_run(db, "BEGIN", 0, NULL, WRITE_MS);
    PQclear(r);
    err = r ? 0 : -1;
    r = err ? NULL
            : audience_pg_run(db, "DELETE FROM live_sessions WHERE server = $1", 1, params,
                              WRITE_MS);
    PQclear(r);
    err = r ? 0 : -1;
    for (size_t i = 0; !err && i < l.n; i += LIVE_CHUNK)
        err = live_chunk(db, l.v + i, l.n - i < LIVE_CHUNK ? l.n - i : LIVE_CHUNK, name);
    if (p->conn) {
        r = audience_pg_run(db, err ? "ROLLBACK" : "COMMIT", 0, NULL, WRITE_MS);
        err = r && !err ? 0 : -1;
        PQclear(r);
    }
    audience_live_free(&l);
    return err;
}

/* ---- figures made ahead ---- */

/* The figures of the last AHEAD_DAYS whole days of one scope (name: one server; NULL: the
 * network) made where they are not kept (or changed since); with servers, the servers of the
 * period read into it. The days made. */
static int make_ahead(audience_db_t *db, const char *name, audience_query_t *servers)
{
    const config_t *cfg = server_config();
    int64_t today = session_now_ms() / AUDIENCE_PG_DAY_MS * AUDIENCE_PG_DAY_MS;
    audience_query_t q = {.from_ms = today - AHEAD_DAYS * AUDIENCE_PG_DAY_MS, .to_ms = today,
                          .step_ms = AUDIENCE_PG_DAY_MS, .qualify_s = cfg->qualified_seconds,
                          .anonymize = cfg->address_truncation, .resume_s = cfg->resume_seconds};
    if (name && !(q.server = strdup(name)))
        return 0;
    int made = audience_pg_make_figures(db, &q, servers != NULL);
    if (servers && q.err == 0) {
        servers->servers = q.servers, servers->nservers = q.nservers;
        q.servers = NULL, q.nservers = 0;
    }
    audience_query_clear(&q);
    return made;
}

/* One turn of making the last days' figures ahead: the network's, then each server's when the
 * store holds more than one (server= asks, the charts page's split by server), one server a
 * turn so that the records and asks waiting are served between turns: a first ask reads
 * them. 1 while turns remain. */
static int figures_ahead(audience_db_t *db)
{
    audience_pg_t *p = db->impl;
    PGresult *r = audience_pg_run(db, "SELECT pg_try_advisory_lock(" AHEAD_LOCK ")", 0, NULL,
                                  WRITE_MS);
    int mine = r && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    PQclear(r);
    if (mine && !p->ahead.nservers) {
        p->ahead_t0 = loop_now_ms();
        p->ahead_made = make_ahead(db, NULL, &p->ahead);
        p->ahead_next = p->ahead.nservers > 1 ? 0 : p->ahead.nservers;
    } else if (mine) {
        p->ahead_theirs += make_ahead(db, p->ahead.servers[p->ahead_next++], NULL);
    }
    if (mine)
        PQclear(audience_pg_run(db, "SELECT pg_advisory_unlock(" AHEAD_LOCK ")", 0, NULL,
                                WRITE_MS));
    if (mine && p->conn && p->ahead_next < p->ahead.nservers)
        return 1;
    if (mine && (p->ahead_made || p->ahead_theirs))
        log_info("audience store: the figures of %d day%s and %d of single servers made ahead "
                 "in %.1f s", p->ahead_made, p->ahead_made == 1 ? "" : "s", p->ahead_theirs,
                 (double)(loop_now_ms() - p->ahead_t0) / 1000);
    audience_query_clear(&p->ahead);
    p->ahead.nservers = p->ahead_next = 0;
    p->ahead_made = p->ahead_theirs = 0;
    return 0;
}

/* ---- the thread's turn ---- */

static uint64_t pg_tick(audience_db_t *db, uint64_t now)
{
    audience_pg_t *p = db->impl;
    if (!p->conn && now >= p->retry_at)
        try_connect(db, now);
    if (!p->conn)
        return p->retry_at;
    if (now >= p->next_partitions) {
        make_partitions(db);
        p->next_partitions = now + PARTITIONS_EVERY_MS;
    }
    if (p->conn && now >= p->next_live) {
        const config_t *cfg = server_config();
        audience_pg_publish_live(db, cfg->qualified_seconds, cfg->address_truncation);
        p->next_live = now + AUDIENCE_PG_LIVE_EVERY_MS;
    }
    if (p->conn && now >= p->next_ahead) /* the next turn at once, or in a while */
        p->next_ahead = loop_now_ms() + (figures_ahead(db) ? 0 : AHEAD_EVERY_MS);
    if (!p->conn)
        return p->retry_at;
    uint64_t next = p->next_live < p->next_partitions ? p->next_live : p->next_partitions;
    next = p->next_ahead < next ? p->next_ahead : next;
    return p->tries ? now + 1000 /* a batch to try again */ : next;
}

static int pg_ready(audience_db_t *db)
{
    audience_pg_t *p = db->impl;
    return p->conn != NULL;
}

const audience_backend_t audience_pg_backend = {
    .name = "PostgreSQL",
    .pruned = "began on days that ended",
    .open = pg_open,
    .close = pg_close,
    .write = pg_write,
    .prune = pg_prune,
    .figures = audience_pg_figures,
    .top = audience_pg_top,
    .sessions = audience_pg_sessions,
    .ads = audience_pg_ads_figures,
    .tick = pg_tick,
    .ready = pg_ready,
};
