/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_store: the SQLite store of listener sessions and its thread (see audience_store.h).
 */
#include "stats/audience_store.h"

#include "stats/audience.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/config.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/server.h"
#include "stream/session.h"

/* Records alone wait up to STORE_LINGER_MS for more, or until STORE_BATCH wait, before the
 * thread writes them: a steady trickle of session ends (a hundred a second at 10 000 listeners)
 * then costs a few transactions a second instead of one (and its WAL pages) per record. */
#define STORE_LINGER_MS 250
#define STORE_BATCH 1024
/* With <retention-days>, records that ended before it are removed when the store opens and
 * every PRUNE_EVERY_MS, PRUNE_ROWS to a transaction and at most PRUNE_TURN of them in one go
 * (the rest a second later), so that new records never wait behind a large removal. */
#define PRUNE_EVERY_MS 3600000
#define PRUNE_ROWS 5000
#define PRUNE_TURN 200000

/* A record waiting for the thread: the session with its strings copied behind it. */
typedef struct stored {
    struct stored *next;
    session_record_t r;
    char text[];
} stored_t;

/* A query to run on the thread (audience_store_run). */
typedef struct job {
    struct job *next;
    void (*fn)(sqlite3 *db, void *arg);
    void *arg;
} job_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    stored_t *head, **tail;
    job_t *jobs, **jobs_tail;
    size_t len;
    int started, stop, reload;
    pthread_t thread;
    atomic_ullong written, dropped;
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .tail = &st.head,
       .jobs_tail = &st.jobs};

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
    TIME_COLUMNS ");"
    "CREATE INDEX IF NOT EXISTS sessions_mount_start ON sessions (mount, start_ms);"
    "CREATE INDEX IF NOT EXISTS sessions_start ON sessions (start_ms);";

/* A store made before the columns took their published names (address, agent; no preroll)
 * is brought to them once, in one transaction; one made before the published times (start,
 * end, seconds) gets them as computed columns, its rows kept as they are. */
static const char rename_sql[] =
    "BEGIN;"
    "ALTER TABLE sessions RENAME COLUMN address TO ip;"
    "ALTER TABLE sessions RENAME COLUMN agent TO user_agent;"
    "ALTER TABLE sessions ADD COLUMN preroll INTEGER NOT NULL DEFAULT 0;"
    "COMMIT;";
static const char times_sql[] =
    "BEGIN;"
    "ALTER TABLE sessions ADD COLUMN " TIME_COLUMN_START ";"
    "ALTER TABLE sessions ADD COLUMN " TIME_COLUMN_END ";"
    "ALTER TABLE sessions ADD COLUMN " TIME_COLUMN_SECONDS ";"
    "COMMIT;";

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
    return rc == SQLITE_OK ? upgrade_step(sql, "start, \"end\", seconds", times_sql, err) : rc;
}

static const char insert_sql[] =
    "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, user_agent,"
    " referer, user, country, ended, preroll) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)";

static void drop(uint64_t n, const char *why)
{
    static log_ratelimit_t rl;
    atomic_fetch_add(&st.dropped, n);
    log_warn_limited(&rl, 60000, "audience store: %llu session records dropped: %s",
                     (unsigned long long)n, why);
}

/* Copies *r (strings included) to the back of the queue; never blocks on SQLite. */
static void store_sink(const session_record_t *r)
{
    audience_count(r);
    const char *want = server_config()->audience_db;
    if (!want || strcmp(want, "none") == 0)
        return;
    const char *s[] = {r->mount, r->served, r->address, r->agent, r->referer, r->user,
                       r->country};
    size_t n = sizeof(s) / sizeof(s[0]), size = 0;
    for (size_t i = 0; i < n; i++)
        size += s[i] ? strlen(s[i]) + 1 : 0;
    stored_t *e = malloc(sizeof(*e) + size);
    if (!e) {
        drop(1, "out of memory");
        return;
    }
    e->next = NULL;
    e->r = *r;
    char *p = e->text;
    const char **d[] = {&e->r.mount, &e->r.served, &e->r.address, &e->r.agent, &e->r.referer,
                        &e->r.user, &e->r.country};
    for (size_t i = 0; i < n; i++) {
        if (!s[i])
            continue;
        size_t len = strlen(s[i]) + 1;
        memcpy(p, s[i], len);
        *d[i] = p;
        p += len;
    }
    pthread_mutex_lock(&st.lock);
    int full = st.len >= AUDIENCE_QUEUE_MAX;
    if (!full) {
        *st.tail = e;
        st.tail = &e->next;
        st.len++;
        if (st.len == 1 || st.len == STORE_BATCH) /* the thread waits for the first or lingers */
            pthread_cond_signal(&st.wake);
    }
    pthread_mutex_unlock(&st.lock);
    if (full) {
        free(e);
        drop(1, "the queue is full (the database is too slow)");
    }
}

/* The database file the config names now (malloc'd), or NULL for none. */
static char *wanted_path(void)
{
    const config_t *cfg = server_config();
    if (!cfg->audience_db || strcmp(cfg->audience_db, "none") == 0)
        return NULL;
    return config_path(cfg->logdir, cfg->audience_db);
}

typedef struct db {
    sqlite3 *sql;
    sqlite3_stmt *insert;
    char *path;
    int stale;  /* a write found it read-only: opened again before the next batch, as the file
                 * may have been made writable since (SQLite does not look again by itself) */
} db_t;

static void db_close(db_t *db)
{
    sqlite3_finalize(db->insert);
    if (db->sql)
        sqlite3_close(db->sql);
    free(db->path);
    *db = (db_t){0};
}

/* Opens (creating) the database at path; on failure db stays closed and the error log says
 * why. quiet: an opening again of the same file (stale), said only when it fails. */
static void db_open(db_t *db, char *path, int quiet)
{
    db->path = path;
    int rc = sqlite3_open_v2(path, &db->sql,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOFOLLOW,
                             NULL);
    char *err = NULL;
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db->sql, 2000);
        rc = sqlite3_exec(db->sql, schema, NULL, NULL, &err);
    }
    if (rc == SQLITE_OK)
        rc = upgrade(db->sql, &err);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db->sql, insert_sql, -1, &db->insert, NULL);
    if (rc != SQLITE_OK) {
        log_error("audience store: cannot use %s: %s; %s", path,
                  err ? err : db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc),
                  log_session_active() ? "sessions are recorded in the session log only"
                                       : "sessions are recorded nowhere (no session log either)");
        sqlite3_free(err);
        sqlite3_finalize(db->insert);
        sqlite3_close(db->sql);
        db->sql = NULL;
        db->insert = NULL;
        return;
    }
    if (!quiet)
        log_info("audience store: sessions are kept in %s", path);
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int insert(db_t *db, const session_record_t *r)
{
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
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
}

/* Writes a batch in one transaction and frees it. After an insert fails (the database locked
 * by another program past the busy timeout, read-only, a full disk), the rest of the batch is
 * not tried: each try could wait the busy timeout again. */
static void write_batch(db_t *db, stored_t *list)
{
    uint64_t n = 0, ok = 0;
    int open = db->sql && sqlite3_exec(db->sql, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
    int failed = !open;
    char why[200];
    snprintf(why, sizeof(why), "%s", db->sql ? sqlite3_errmsg(db->sql) : "no database");
    while (list) {
        stored_t *next = list->next;
        n++;
        if (!failed && insert(db, &list->r) == 0) {
            ok++;
        } else if (!failed) {
            failed = 1;
            snprintf(why, sizeof(why), "%s", sqlite3_errmsg(db->sql));
            db->stale = (sqlite3_errcode(db->sql) & 0xff) == SQLITE_READONLY;
        }
        free(list);
        list = next;
    }
    if (open && sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(why, sizeof(why), "%s", sqlite3_errmsg(db->sql));
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
        ok = 0;
    }
    atomic_fetch_add(&st.written, ok);
    if (ok < n)
        drop(n - ok, why);
}

/* Removes the records of sessions that ended more than <retention-days> ago (those that began
 * before it too, so that the index on start_ms finds them). The monotonic time of the next
 * pruning: PRUNE_EVERY_MS on, or a second on when there is more to remove. */
static uint64_t prune(db_t *db)
{
    int days = server_config()->retention_days;
    uint64_t now = loop_now_ms(); /* the clock st.wake runs on */
    if (!db->sql || days <= 0)
        return now + PRUNE_EVERY_MS;
    int64_t before = session_now_ms() - (int64_t)days * 86400000;
    sqlite3_stmt *del = NULL;
    if (sqlite3_prepare_v2(db->sql,
                           "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions"
                           " WHERE start_ms < ?1 AND end_ms < ?1 LIMIT ?2)",
                           -1, &del, NULL) != SQLITE_OK) {
        log_warn("audience store: cannot remove old records: %s", sqlite3_errmsg(db->sql));
        return now + PRUNE_EVERY_MS;
    }
    long long removed = 0;
    int more = 1, rc = SQLITE_DONE;
    while (more && removed < PRUNE_TURN) {
        sqlite3_reset(del);
        sqlite3_bind_int64(del, 1, before);
        sqlite3_bind_int(del, 2, PRUNE_ROWS);
        rc = sqlite3_step(del);
        if (rc != SQLITE_DONE)
            break;
        int n = sqlite3_changes(db->sql);
        removed += n;
        more = n == PRUNE_ROWS;
    }
    if (rc != SQLITE_DONE) {
        static log_ratelimit_t rl;
        log_warn_limited(&rl, 60000, "audience store: cannot remove old records: %s",
                         sqlite3_errmsg(db->sql));
    }
    sqlite3_finalize(del);
    if (removed)
        log_info("audience store: %lld session record%s removed (ended over %d day%s ago)",
                 removed, removed == 1 ? "" : "s", days, days == 1 ? "" : "s");
    return now + (more && rc == SQLITE_DONE ? 1000 : PRUNE_EVERY_MS);
}

static int same_path(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* With st.lock held: records alone wait until STORE_LINGER_MS after the first (st.wake runs on
 * CLOCK_MONOTONIC), STORE_BATCH of them, or anything else to do. */
static void linger(void)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += STORE_LINGER_MS * 1000000L;
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    while (st.len < STORE_BATCH && !st.jobs && !st.stop && !st.reload &&
           pthread_cond_timedwait(&st.wake, &st.lock, &until) != ETIMEDOUT)
        ;
}

static void *store_main(void *arg)
{
    (void)arg;
    db_t db = {0};
    int first = 1;
    uint64_t next_prune = 0;
    for (;;) {
        pthread_mutex_lock(&st.lock);
        while (!st.head && !st.jobs && !st.stop && !st.reload && !first) {
            if (loop_now_ms() >= next_prune)
                break;
            struct timespec until = {.tv_sec = (time_t)(next_prune / 1000),
                                     .tv_nsec = (long)(next_prune % 1000) * 1000000L};
            pthread_cond_timedwait(&st.wake, &st.lock, &until);
        }
        if (!first)
            linger();
        stored_t *list = st.head;
        st.head = NULL;
        st.tail = &st.head;
        job_t *jobs = st.jobs;
        st.jobs = NULL;
        st.jobs_tail = &st.jobs;
        st.len = 0;
        int stop = st.stop, check = st.reload || first;
        st.reload = first = 0;
        pthread_mutex_unlock(&st.lock);
        if (check) {
            char *want = wanted_path();
            if (same_path(want, db.path) && (db.sql || !want)) {
                free(want);
            } else {
                db_close(&db);
                if (want)
                    db_open(&db, want, 0);
            }
            next_prune = 0; /* a new store, or maybe a new <retention-days> */
        }
        if (list && db.stale && db.path) {
            char *again = strdup(db.path);
            db_close(&db);
            if (again)
                db_open(&db, again, 1);
        }
        if (list)
            write_batch(&db, list);
        if (loop_now_ms() >= next_prune)
            next_prune = prune(&db);
        while (jobs) {
            job_t *next = jobs->next;
            jobs->fn(db.sql, jobs->arg);
            free(jobs);
            jobs = next;
        }
        if (stop)
            break;
    }
    db_close(&db);
    return NULL;
}

int audience_store_start(void)
{
    pthread_condattr_t attr; /* the linger's deadline: not moved by a change of the clock */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_destroy(&st.wake);
    pthread_cond_init(&st.wake, &attr);
    pthread_condattr_destroy(&attr);
    int rc = pthread_create(&st.thread, NULL, store_main, NULL);
    if (rc != 0) {
        log_error("audience store: cannot start its thread: %s", strerror(rc));
        return -rc;
    }
    pthread_setname_np(st.thread, "audience");
    st.started = 1;
    session_set_sink(store_sink);
    return 0;
}

int audience_store_run(void (*fn)(sqlite3 *db, void *arg), void *arg)
{
    job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->fn = fn;
    j->arg = arg;
    pthread_mutex_lock(&st.lock);
    int running = st.started && !st.stop;
    if (running) {
        *st.jobs_tail = j;
        st.jobs_tail = &j->next;
        pthread_cond_signal(&st.wake);
    }
    pthread_mutex_unlock(&st.lock);
    if (!running) {
        free(j);
        return -ESHUTDOWN;
    }
    return 0;
}

void audience_store_reload(void)
{
    pthread_mutex_lock(&st.lock);
    st.reload = 1;
    pthread_cond_signal(&st.wake);
    pthread_mutex_unlock(&st.lock);
}

void audience_store_stop(void)
{
    if (!st.started)
        return;
    session_set_sink(NULL);
    pthread_mutex_lock(&st.lock);
    st.stop = 1;
    pthread_cond_signal(&st.wake);
    pthread_mutex_unlock(&st.lock);
    pthread_join(st.thread, NULL);
    st.started = 0;
}

const char *audience_store_schema(void)
{
    return schema;
}

uint64_t audience_store_written(void)
{
    return atomic_load(&st.written);
}

uint64_t audience_store_dropped(void)
{
    return atomic_load(&st.dropped);
}

void audience_store_metrics(buf_t *o)
{
    buf_appendf(o, "# HELP rimecast_audience_records_stored_total Session records written to "
                   "the audience store since start-up.\n"
                   "# TYPE rimecast_audience_records_stored_total counter\n"
                   "rimecast_audience_records_stored_total %llu\n"
                   "# HELP rimecast_audience_records_lost_total Session records the audience "
                   "store could not keep (queue full, database locked, read-only or full).\n"
                   "# TYPE rimecast_audience_records_lost_total counter\n"
                   "rimecast_audience_records_lost_total %llu\n",
                (unsigned long long)audience_store_written(),
                (unsigned long long)audience_store_dropped());
}
