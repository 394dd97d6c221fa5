/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_store: the store's queue and thread, whatever the backend (see audience_store.h).
 */
#include "audience/audience_store.h"
#include "audience/audience_export.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audience/audience_ads.h"
#include "audience/audience_backend.h"
#include "audience/audience_backlog.h"
#include "audience/audience_pgconn.h"
#include "audience/audience_record.h"
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
/* Batches of what waited (the spool, then memory) written in one turn at most, so that the
 * figures asked meanwhile wait a few seconds at most. */
#define STORE_TURN_BATCHES 8
/* With <retention-days>, records that ended before it are removed when the store opens and
 * every PRUNE_EVERY_MS (a second later while there is more). */
#define PRUNE_EVERY_MS 3600000

/* A query to run on the thread (audience_store_run). */
typedef struct job {
    struct job *next;
    void (*fn)(audience_db_t *db, void *arg);
    void *arg;
} job_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    audience_record_t *head, **tail;
    job_t *jobs, **jobs_tail;
    size_t len;
    int started, stop, reload;
    pthread_t thread;
    atomic_ullong written, dropped, spooled_total;
    atomic_ullong held, spooled; /* the thread's backlog after its last turn */
    atomic_int up;               /* 1: a database takes records now */
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .tail = &st.head,
       .jobs_tail = &st.jobs};

static void drop(uint64_t n, const char *why)
{
    static log_ratelimit_t rl;
    atomic_fetch_add(&st.dropped, n);
    log_warn_limited(&rl, 60000, "audience store: %llu session records dropped: %s",
                     (unsigned long long)n, why);
}

const char *audience_store_server_name(void)
{
    const config_t *cfg = server_config();
    return cfg->audience_server ? cfg->audience_server : cfg->hostname ? cfg->hostname : "";
}

static int store_wanted(void)
{
    const char *want = server_config()->audience_db;
    return want && strcmp(want, "none") != 0;
}

static void enqueue(audience_record_t *e);

/* Copies *r (strings included) to the back of the queue; never blocks on the database. */
static void store_sink(const session_record_t *r)
{
    audience_count(r);
    if (store_wanted())
        enqueue(audience_record_copy(r, audience_store_server_name()));
}

/* An ad decision's record (ads/ads_record.h), the same way. */
static void store_ad_sink(const ads_record_t *r)
{
    if (store_wanted())
        enqueue(audience_record_copy_ad(r, audience_store_server_name()));
}

static void enqueue(audience_record_t *e)
{
    if (!e) {
        drop(1, "out of memory");
        return;
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

/* The store the config names now: its backend and where it is (malloc'd), or NULL for none:
 * a libpq URI is a PostgreSQL database, anything else an SQLite file. */
static char *wanted(const audience_backend_t **be)
{
    const config_t *cfg = server_config();
    *be = &audience_sqlite_backend;
    if (!cfg->audience_db || strcmp(cfg->audience_db, "none") == 0)
        return NULL;
    if (audience_pg_is_uri(cfg->audience_db)) {
        *be = &audience_pg_backend;
        return strdup(cfg->audience_db);
    }
    return config_path(cfg->logdir, cfg->audience_db);
}

static void db_close(audience_db_t *db)
{
    if (db->be)
        db->be->close(db);
    free(db->where);
    free(db->shown);
    *db = (audience_db_t){0};
}

/* Opens the store at where (taken) with be; db->be stays NULL when that fails. */
static void db_open(audience_db_t *db, const audience_backend_t *be, char *where)
{
    db->where = where;
    db->shown = be == &audience_pg_backend ? audience_pg_shown(where) : strdup(where);
    if (!db->shown || be->open(db, 0) < 0)
        return;
    db->be = be;
}

static int same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Follows the config: the same store stays open (or is tried again when it failed), another
 * one replaces it. */
static void follow_config(audience_db_t *db)
{
    const audience_backend_t *be;
    char *want = wanted(&be);
    if (same_text(want, db->where) && (db->be || !want)) {
        free(want);
        return;
    }
    db_close(db);
    if (want)
        db_open(db, be, want);
}

/* What a turn's writing (or spilling) came to, in the counters. */
static void count(const audience_tally_t *t)
{
    atomic_fetch_add(&st.written, t->written);
    atomic_fetch_add(&st.spooled_total, t->spooled);
    if (t->lost)
        drop(t->lost, t->why);
}

/* The backlog's gauges for /metrics, and whether a database takes records now. */
static void publish(const audience_backlog_t *b, const audience_db_t *db)
{
    atomic_store(&st.held, audience_backlog_held(b));
    atomic_store(&st.spooled, audience_backlog_spooled(b));
    atomic_store(&st.up, db->be && (!db->be->ready || db->be->ready((audience_db_t *)db)));
}

/* Removes the records older than <retention-days>; the monotonic time of the next pruning:
 * PRUNE_EVERY_MS on, or a second on when there is more to remove. */
static uint64_t prune(audience_db_t *db)
{
    int days = server_config()->retention_days;
    uint64_t now = loop_now_ms(); /* the clock st.wake runs on */
    if (!db->be || days <= 0)
        return now + PRUNE_EVERY_MS;
    int more = 0;
    int64_t removed = db->be->prune(db, days, &more);
    if (removed > 0)
        log_info("audience store: %lld session record%s removed (%s over %d day%s ago)",
                 (long long)removed, removed == 1 ? "" : "s", db->be->pruned, days,
                 days == 1 ? "" : "s");
    return now + (more ? 1000 : PRUNE_EVERY_MS);
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

/* With st.lock held: waits for something to do or the monotonic time `until`. */
static void wait_work(uint64_t until)
{
    while (!st.head && !st.jobs && !st.stop && !st.reload) {
        if (loop_now_ms() >= until)
            break;
        struct timespec ts = {.tv_sec = (time_t)(until / 1000),
                              .tv_nsec = (long)(until % 1000) * 1000000L};
        pthread_cond_timedwait(&st.wake, &st.lock, &ts);
    }
}

/* One turn's records: behind what waits, then as much as the database takes now; what it
 * cannot take waits (in memory, then in the spool). */
static int write_waiting(audience_backlog_t *b, audience_db_t *db, audience_record_t *list,
                         int stop)
{
    audience_tally_t t = {0};
    long spool_max = server_config()->spool_size;
    audience_backlog_add(b, list);
    int more = audience_backlog_write(b, db->be ? db : NULL, STORE_BATCH,
                                      stop ? 1 << 30 : STORE_TURN_BATCHES, spool_max, &t);
    if (db->be)
        audience_backlog_spill(b, db, stop, spool_max, &t);
    if (stop && audience_backlog_held(b)) { /* neither written nor spooled */
        t.lost += audience_backlog_held(b);
        snprintf(t.why, sizeof(t.why), "the server stopped and they could not be kept");
    }
    count(&t);
    return more;
}

static void *store_main(void *arg)
{
    (void)arg;
    audience_db_t db = {0};
    audience_backlog_t backlog;
    audience_backlog_init(&backlog, server_config()->logdir);
    int first = 1, more = 0;
    uint64_t next_prune = 0, next_tick = 0, next_export = 0;
    for (;;) {
        pthread_mutex_lock(&st.lock);
        if (!first && !more) {
            uint64_t until = next_prune < next_tick || !next_tick ? next_prune : next_tick;
            wait_work(next_export < until ? next_export : until);
            linger();
        }
        audience_record_t *list = st.head;
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
            follow_config(&db);
            next_prune = 0; /* a new store, or maybe a new <retention-days> */
            next_export = 0; /* or a new <export-dir> */
        }
        if (db.be && db.be->tick)
            next_tick = db.be->tick(&db, loop_now_ms());
        more = write_waiting(&backlog, &db, list, stop);
        publish(&backlog, &db);
        if (loop_now_ms() >= next_prune)
            next_prune = prune(&db);
        if (loop_now_ms() >= next_export && !stop)
            next_export = audience_export_days(db.be && (!db.be->ready || db.be->ready(&db))
                                                   ? &db : NULL, audience_store_server_name());
        while (jobs) {
            job_t *next = jobs->next;
            jobs->fn(db.be ? &db : NULL, jobs->arg);
            free(jobs);
            jobs = next;
        }
        if (stop)
            break;
    }
    db_close(&db);
    audience_backlog_fini(&backlog);
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
    ads_set_record_sink(store_ad_sink);
    return 0;
}

int audience_store_run(void (*fn)(audience_db_t *db, void *arg), void *arg)
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

void audience_store_figures(audience_db_t *db, audience_query_t *q)
{
    if (!db) {
        q->err = -ENODEV;
        return;
    }
    db->be->figures(db, q);
}

void audience_store_top(audience_db_t *db, audience_top_t *t)
{
    if (!db) {
        t->err = -ENODEV;
        return;
    }
    db->be->top(db, t);
}

void audience_store_ads(audience_db_t *db, audience_ads_query_t *q)
{
    if (!db || !db->be->ads) {
        q->err = -ENODEV;
        return;
    }
    db->be->ads(db, q);
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
    ads_set_record_sink(NULL);
    pthread_mutex_lock(&st.lock);
    st.stop = 1;
    pthread_cond_signal(&st.wake);
    pthread_mutex_unlock(&st.lock);
    pthread_join(st.thread, NULL);
    st.started = 0;
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
    pthread_mutex_lock(&st.lock);
    unsigned long long queued = st.len + atomic_load(&st.held);
    pthread_mutex_unlock(&st.lock);
    buf_appendf(o, "# HELP rimecast_audience_records_written_total Session records written to "
                   "the audience store since start-up.\n"
                   "# TYPE rimecast_audience_records_written_total counter\n"
                   "rimecast_audience_records_written_total %llu\n"
                   "# HELP rimecast_audience_records_lost_total Session records the audience "
                   "store could not keep (queue full, database locked, read-only or full, the "
                   "spool full).\n"
                   "# TYPE rimecast_audience_records_lost_total counter\n"
                   "rimecast_audience_records_lost_total %llu\n"
                   "# HELP rimecast_audience_records_queued Session records waiting in memory "
                   "for the audience store.\n"
                   "# TYPE rimecast_audience_records_queued gauge\n"
                   "rimecast_audience_records_queued %llu\n"
                   "# HELP rimecast_audience_records_spooled Session records waiting in the "
                   "spool file for the audience store's database.\n"
                   "# TYPE rimecast_audience_records_spooled gauge\n"
                   "rimecast_audience_records_spooled %llu\n"
                   "# HELP rimecast_audience_records_spooled_total Session records put in the "
                   "spool file since start-up (the database was away).\n"
                   "# TYPE rimecast_audience_records_spooled_total counter\n"
                   "rimecast_audience_records_spooled_total %llu\n"
                   "# HELP rimecast_audience_database_up 1 when the audience store's database "
                   "takes records, else 0.\n"
                   "# TYPE rimecast_audience_database_up gauge\n"
                   "rimecast_audience_database_up %d\n",
                (unsigned long long)audience_store_written(),
                (unsigned long long)audience_store_dropped(), queued,
                (unsigned long long)atomic_load(&st.spooled),
                (unsigned long long)atomic_load(&st.spooled_total), atomic_load(&st.up));
}
