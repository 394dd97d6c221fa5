/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sqlite: the SQLite backend of the audience store: opening (and upgrading) the
 * file, writing batches, removing old records (see audience_sqlite.h).
 */
#include "audience/audience_sqlite.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_ads.h"
#include "audience/audience_backend.h"
#include "audience/audience_export.h"
#include "core/log.h"
#include "stream/session.h"

/* With <retention-days>, records are removed PRUNE_ROWS to a transaction and at most
 * PRUNE_TURN of them in one go (the rest a second later), so that new records never wait
 * behind a large removal. */
#define PRUNE_ROWS 5000
#define PRUNE_TURN 200000

/* The published times, in Unix seconds (to the millisecond), computed from the stored
 * milliseconds that the indexes and the figures use: "end" is quoted, END being a keyword. */
#define TIME_COLUMN_START "start REAL GENERATED ALWAYS AS (start_ms / 1000.0) VIRTUAL"
#define TIME_COLUMN_END "\"end\" REAL GENERATED ALWAYS AS (end_ms / 1000.0) VIRTUAL"
#define TIME_COLUMN_SECONDS "seconds REAL GENERATED ALWAYS AS ((end_ms - start_ms) / 1000.0) VIRTUAL"
#define TIME_COLUMNS " " TIME_COLUMN_START ", " TIME_COLUMN_END ", " TIME_COLUMN_SECONDS

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=NORMAL;"
    "CREATE TABLE IF NOT EXISTS sessions ("
    " id INTEGER PRIMARY KEY,"
    " conn_id INTEGER NOT NULL,"
    " mount TEXT NOT NULL,"
    " served TEXT NOT NULL,"
    " start_ms INTEGER NOT NULL,"
    " end_ms INTEGER NOT NULL,"
    " bytes INTEGER NOT NULL,"
    " ip TEXT NOT NULL,"
    " user_agent TEXT,"
    " referer TEXT,"
    " user TEXT,"
    " country TEXT,"
    " ended TEXT NOT NULL,"
    " preroll INTEGER NOT NULL DEFAULT 0,"
    " server TEXT,"
    " listener_key TEXT,"
    " invalid TEXT NOT NULL DEFAULT '',"
    " hls INTEGER NOT NULL DEFAULT 0,"
    TIME_COLUMNS ");"
    "CREATE INDEX IF NOT EXISTS sessions_mount_start ON sessions (mount, start_ms);"
    "CREATE INDEX IF NOT EXISTS sessions_start ON sessions (start_ms);";

/* A store made before the columns took their published names (address, agent; no preroll)
 * is brought to them once, in one transaction; one made before the published times (start,
 * end, seconds) gets them as computed columns, one made before records carried the server's
 * name gets the column (empty in the rows it has: they are this server's), its rows kept as
 * they are. */
static const char rename_sql[] =
    "BEGIN;"
    "ALTER TABLE sessions RENAME COLUMN address TO ip;"
    "ALTER TABLE sessions RENAME COLUMN agent TO user_agent;"
    "ALTER TABLE sessions ADD COLUMN preroll INTEGER NOT NULL DEFAULT 0;"
    "COMMIT;";
static const char server_sql[] =
    "ALTER TABLE sessions ADD COLUMN server TEXT;";
/* one made before records carried the listener key gets the column (NULL in the rows it
 * has: the figures count those by address and agent) */
static const char key_sql[] =
    "ALTER TABLE sessions ADD COLUMN listener_key TEXT;";
/* one made before invalid traffic was told apart gets the reason and the kind ('' and 0 in
 * the rows it has: valid, streams) */
static const char invalid_sql[] =
    "BEGIN;"
    "ALTER TABLE sessions ADD COLUMN invalid TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE sessions ADD COLUMN hls INTEGER NOT NULL DEFAULT 0;"
    "COMMIT;";
static const char times_sql[] =
    "BEGIN;"
    "ALTER TABLE sessions ADD COLUMN " TIME_COLUMN_START ";"
    "ALTER TABLE sessions ADD COLUMN " TIME_COLUMN_END ";"
    "ALTER TABLE sessions ADD COLUMN " TIME_COLUMN_SECONDS ";"
    "COMMIT;";

static const char insert_sql[] =
    "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, user_agent,"
    " referer, user, country, ended, preroll, server, listener_key, invalid, hls)"
    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

typedef struct sqlite_db {
    sqlite3 *sql;
    sqlite3_stmt *insert;
    sqlite3_stmt *insert_ad; /* an ad decision's rows (audience_sqlite_ads.c) */
    int stale;  /* a write found it read-only: opened again before the next batch, as the file
                 * may have been made writable since (SQLite does not look again by itself) */
} sqlite_db_t;

const char *audience_sqlite_schema(void)
{
    return schema;
}

/* Whether the sessions table has these columns. */
static int has_columns(sqlite3 *sql, const char *columns)
{
    char q[128];
    snprintf(q, sizeof(q), "SELECT %s FROM sessions", columns);
    sqlite3_stmt *probe = NULL;
    int has = sqlite3_prepare_v2(sql, q, -1, &probe, NULL) == SQLITE_OK;
    sqlite3_finalize(probe);
    return has;
}

/* Runs one step of the upgrade, or rolls it back. */
static int upgrade_step(sqlite3 *sql, const char *columns, const char *step, char **err)
{
    if (has_columns(sql, columns))
        return SQLITE_OK;
    int rc = sqlite3_exec(sql, step, NULL, NULL, err);
    if (rc != SQLITE_OK)
        sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    else
        log_info("audience store: the sessions table has its published columns now (%s)",
                 columns);
    return rc;
}

/* 0 when the table has the columns of this schema (upgraded if it had the old ones). */
static int upgrade(sqlite3 *sql, char **err)
{
    int rc = upgrade_step(sql, "ip, user_agent, preroll", rename_sql, err);
    rc = rc == SQLITE_OK ? upgrade_step(sql, "start, \"end\", seconds", times_sql, err) : rc;
    rc = rc == SQLITE_OK ? upgrade_step(sql, "server", server_sql, err) : rc;
    rc = rc == SQLITE_OK ? upgrade_step(sql, "listener_key", key_sql, err) : rc;
    return rc == SQLITE_OK ? upgrade_step(sql, "invalid, hls", invalid_sql, err) : rc;
}

static void sqlite_close(audience_db_t *db)
{
    sqlite_db_t *s = db->impl;
    if (!s)
        return;
    sqlite3_finalize(s->insert);
    sqlite3_finalize(s->insert_ad);
    if (s->sql)
        sqlite3_close(s->sql);
    free(s);
    db->impl = NULL;
}

/* Opens (creating) the database file; on failure the error log says why. */
static int sqlite_open(audience_db_t *db, int quiet)
{
    sqlite_db_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    db->impl = s;
    int rc = sqlite3_open_v2(db->where, &s->sql,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                             NULL);
    char *err = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(s->sql, 2000);
        rc = sqlite3_exec(s->sql, schema, NULL, NULL, &err);
    }
    if (rc == SQLITE_OK)
        rc = upgrade(s->sql, &err);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(s->sql, audience_sqlite_ads_schema(), NULL, NULL, &err);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(s->sql, insert_sql, -1, &s->insert, NULL);
    if (rc == SQLITE_OK)
        rc = audience_sqlite_ads_prepare(s->sql, &s->insert_ad);
    if (rc != SQLITE_OK) {
        log_error("audience store: cannot use %s: %s; %s", db->shown,
                  err ? err : s->sql ? sqlite3_errmsg(s->sql) : sqlite3_errstr(rc),
                  log_session_active() ? "sessions are recorded in the session log only"
                                       : "sessions are recorded nowhere (no session log either)");
        sqlite3_free(err);
        sqlite_close(db);
        return -EIO;
    }
    if (!quiet)
        log_info("audience store: sessions are kept in %s", db->shown);
    return 0;
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int insert(sqlite_db_t *db, const audience_record_t *e)
{
    const session_record_t *r = &e->r;
    sqlite3_stmt *s = db->insert;
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, (sqlite3_int64)r->id);
    bind_text(s, 2, r->mount);
    bind_text(s, 3, r->served ? r->served : r->mount);
    sqlite3_bind_int64(s, 4, r->start_ms);
    sqlite3_bind_int64(s, 5, r->end_ms);
    sqlite3_bind_int64(s, 6, (sqlite3_int64)r->bytes);
    bind_text(s, 7, r->address);
    bind_text(s, 8, r->agent);
    bind_text(s, 9, r->referer);
    bind_text(s, 10, r->user);
    bind_text(s, 11, r->country);
    bind_text(s, 12, session_end_name(r->end));
    sqlite3_bind_int(s, 13, r->preroll ? 1 : 0);
    bind_text(s, 14, e->server);
    bind_text(s, 15, r->key);
    bind_text(s, 16, r->invalid ? r->invalid : "");
    sqlite3_bind_int(s, 17, r->hls ? 1 : 0);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
}

/* A file a write found read-only is opened again before the next batch. */
static void reopen_if_stale(audience_db_t *db)
{
    sqlite_db_t *s = db->impl;
    if (s && s->stale) {
        sqlite_close(db);
        sqlite_open(db, 1);
    }
}

/* Writes a batch in one transaction. After an insert fails (the database locked by another
 * program past the busy timeout, read-only, a full disk), the rest of the batch is not tried:
 * each try could wait the busy timeout again. */
static audience_write_t sqlite_write(audience_db_t *db, audience_record_t *const *v, size_t n,
                                     size_t *written, char *why, size_t cap)
{
    reopen_if_stale(db);
    sqlite_db_t *s = db->impl;
    size_t ok = 0;
    int open = s && sqlite3_exec(s->sql, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    snprintf(why, cap, "%s", s ? sqlite3_errmsg(s->sql) : "no database");
    for (size_t i = 0; open && i < n; i++) {
        if ((v[i]->ad ? audience_sqlite_ads_insert(s->insert_ad, v[i]) : insert(s, v[i])) < 0) {
            snprintf(why, cap, "%s", sqlite3_errmsg(s->sql));
            s->stale = (sqlite3_errcode(s->sql) & 0xff) == SQLITE_READONLY;
            break;
        }
        ok++;
    }
    if (open && sqlite3_exec(s->sql, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(why, cap, "%s", sqlite3_errmsg(s->sql));
        sqlite3_exec(s->sql, "ROLLBACK", NULL, NULL, NULL);
        ok = 0;
    }
    *written = ok;
    return AUDIENCE_WRITE_DONE;
}

/* Removes the records of sessions that ended more than days ago (those that began before it
 * too, so that the index on start_ms finds them). */
static int64_t sqlite_prune(audience_db_t *db, int days, int *more)
{
    sqlite_db_t *s = db->impl;
    *more = 0;
    if (!s)
        return 0;
    int64_t before = session_now_ms() - (int64_t)days * 86400000;
    sqlite3_stmt *del = NULL;
    if (sqlite3_prepare_v2(s->sql,
                           "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions"
                           " WHERE start_ms < ?1 AND end_ms < ?1 LIMIT ?2)",
                           -1, &del, NULL) != SQLITE_OK) {
        log_warn("audience store: cannot remove old records: %s", sqlite3_errmsg(s->sql));
        return -1;
    }
    int64_t removed = 0;
    int again = 1, rc = SQLITE_DONE;
    while (again && removed < PRUNE_TURN) {
        sqlite3_reset(del);
        sqlite3_bind_int64(del, 1, before);
        sqlite3_bind_int(del, 2, PRUNE_ROWS);
        rc = sqlite3_step(del);
        if (rc != SQLITE_DONE)
            break;
        int k = sqlite3_changes(s->sql);
        removed += k;
        again = k == PRUNE_ROWS;
    }
    if (rc != SQLITE_DONE) {
        static log_ratelimit_t rl;
        log_warn_limited(&rl, 60000, "audience store: cannot remove old records: %s",
                         sqlite3_errmsg(s->sql));
    }
    sqlite3_finalize(del);
    *more = again && rc == SQLITE_DONE;
    if (rc == SQLITE_DONE) /* the ad decisions asked before then (not counted: the log says
                            * how many sessions) */
        audience_sqlite_ads_prune(s->sql, before);
    return removed;
}

static void sqlite_figures(audience_db_t *db, audience_query_t *q)
{
    sqlite_db_t *s = db->impl;
    audience_sqlite_figures(s ? s->sql : NULL, q);
}

static void sqlite_top(audience_db_t *db, audience_top_t *t)
{
    sqlite_db_t *s = db->impl;
    audience_sqlite_top(s ? s->sql : NULL, t);
}

static void sqlite_sessions(audience_db_t *db, audience_export_t *x)
{
    sqlite_db_t *s = db->impl;
    audience_sqlite_sessions(s ? s->sql : NULL, x);
}

static void sqlite_ads(audience_db_t *db, audience_ads_query_t *q)
{
    sqlite_db_t *s = db->impl;
    audience_sqlite_ads_figures(s ? s->sql : NULL, q);
}

const audience_backend_t audience_sqlite_backend = {
    .name = "SQLite",
    .pruned = "ended",
    .open = sqlite_open,
    .close = sqlite_close,
    .write = sqlite_write,
    .prune = sqlite_prune,
    .figures = sqlite_figures,
    .top = sqlite_top,
    .sessions = sqlite_sessions,
    .ads = sqlite_ads,
};
