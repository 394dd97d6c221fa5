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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/cidr.h"
#include "net/server.h"

/* ---- figures ---- */

/* The sessions going on now are copied into a temporary table for each query (with the
 * addresses as the store keeps them); the figures read the stored and the live ones as one.
 * Only those already qualified count: a session that may still end short is not one yet. */
static const char live_sql[] =
    "CREATE TEMP TABLE IF NOT EXISTS live (mount TEXT NOT NULL, start_ms INTEGER NOT NULL,"
    " end_ms INTEGER NOT NULL, ip TEXT NOT NULL, user_agent TEXT, country TEXT,"
    " preroll INTEGER NOT NULL);"
    "DELETE FROM temp.live;";
static const char live_insert_sql[] =
    "INSERT INTO temp.live VALUES (?,?,?,?,?,?,?)";

/* The sessions of a bucket [?1, ?2): those that overlap it. ?6 is the longest session in the
 * store, so that the index on start_ms bounds the search from below too; ?4 a mount or NULL
 * for all. */
#define IN_BUCKET                                                                              \
    " FROM (SELECT mount, start_ms, end_ms, ip, user_agent, country, preroll, 0 AS now"        \
    "  FROM sessions UNION ALL SELECT mount, start_ms, end_ms, ip, user_agent, country,"       \
    "  preroll, 1 FROM temp.live)"                                                             \
    " WHERE start_ms >= ?1 - ?6 AND start_ms < ?2 AND end_ms > ?1"                              \
    " AND (?4 IS NULL OR mount = ?4)"
/* Groups: by mount, or (?5 = 1) all mounts as the server "". ?3 is the qualifying length in
 * ms. */
#define GROUP "SELECT CASE WHEN ?5 THEN '' ELSE mount END AS g,"

static const char figures_sql[] =
    GROUP " COUNT(*), TOTAL(end_ms - start_ms >= ?3),"
    " TOTAL(CASE WHEN end_ms - start_ms >= ?3 THEN MIN(end_ms, ?2) - MAX(start_ms, ?1)"
    "  ELSE 0 END),"
    " COUNT(DISTINCT CASE WHEN end_ms - start_ms >= ?3"
    "  THEN ip || char(10) || IFNULL(user_agent, '') END),"
    " TOTAL(preroll AND start_ms >= ?1), TOTAL(now)"
    IN_BUCKET " GROUP BY g ORDER BY g";

/* The same sessions, group by group, clipped to the bucket: for the peak. */
static const char spans_sql[] = GROUP " MAX(start_ms, ?1), MIN(end_ms, ?2)" IN_BUCKET " ORDER BY g";

/* Sessions per country ("" unknown). */
static const char countries_sql[] =
    GROUP " IFNULL(country, ''), COUNT(*)" IN_BUCKET " GROUP BY g, 2 ORDER BY g, 2";

static const char longest_sql[] =
    "SELECT MAX(IFNULL((SELECT MAX(end_ms - start_ms) FROM sessions), 0),"
    " IFNULL((SELECT MAX(end_ms - start_ms) FROM temp.live), 0))";

/* The sessions going on, copied under the list's lock (which joins and leaves on the workers
 * wait for) and written to SQLite after it is released. */
typedef struct live_row {
    session_record_t r;
    char ip[CIDR_SHOWN_MAX];
    char cc[8];
    char *mount, *agent;
} live_row_t;

typedef struct live_copy {
    live_row_t *v;
    size_t n, cap;
    int64_t qualify_ms;
    int truncate;
    int err;
} live_copy_t;

static void copy_live(const session_record_t *r, void *arg)
{
    live_copy_t *lc = arg;
    if (lc->err || r->end_ms - r->start_ms < lc->qualify_ms)
        return;
    if (lc->n == lc->cap) {
        size_t ncap = lc->cap ? lc->cap * 2 : 64;
        live_row_t *v = realloc(lc->v, ncap * sizeof(*v));
        if (!v) {
            lc->err = -ENOMEM;
            return;
        }
        lc->v = v;
        lc->cap = ncap;
    }
    live_row_t *e = &lc->v[lc->n];
    *e = (live_row_t){.r = *r, .mount = strdup(r->mount ? r->mount : ""),
                      .agent = r->agent ? strdup(r->agent) : NULL};
    session_address(r->address, lc->truncate, e->ip, sizeof(e->ip));
    snprintf(e->cc, sizeof(e->cc), "%s", r->country ? r->country : "");
    lc->n++;
    if (!e->mount || (r->agent && !e->agent))
        lc->err = -ENOMEM;
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int insert_live(sqlite3_stmt *s, const live_row_t *e)
{
    sqlite3_reset(s);
    bind_text_or_null(s, 1, e->mount);
    sqlite3_bind_int64(s, 2, e->r.start_ms);
    sqlite3_bind_int64(s, 3, e->r.end_ms);
    bind_text_or_null(s, 4, e->ip);
    bind_text_or_null(s, 5, e->agent);
    bind_text_or_null(s, 6, e->cc[0] ? e->cc : NULL);
    sqlite3_bind_int(s, 7, e->r.preroll);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
}

/* Fills temp.live with the qualified sessions going on now. */
static int snapshot_live(sqlite3 *db, const audience_query_t *q)
{
    live_copy_t lc = {.qualify_ms = (int64_t)q->qualify_s * 1000, .truncate = q->anonymize};
    sqlite3_stmt *ins = NULL;
    session_live_each(copy_live, &lc);
    int err = lc.err;
    if (!err && (sqlite3_exec(db, live_sql, NULL, NULL, NULL) != SQLITE_OK ||
                 sqlite3_prepare_v2(db, live_insert_sql, -1, &ins, NULL) != SQLITE_OK))
        err = -EIO;
    for (size_t i = 0; i < lc.n; i++) {
        if (!err)
            err = insert_live(ins, &lc.v[i]);
        free(lc.v[i].mount);
        free(lc.v[i].agent);
    }
    free(lc.v);
    sqlite3_finalize(ins);
    return err;
}

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
    audience_row_t *r = &q->rows[q->nrows];
    *r = (audience_row_t){
        .mount = strdup(mount ? mount : ""), .from_ms = from, .to_ms = to,
        .sessions = (uint64_t)sqlite3_column_int64(s, 1),
        .qualified = (uint64_t)sqlite3_column_double(s, 2),
        .listened_ms = (uint64_t)sqlite3_column_double(s, 3),
        .cume = (uint64_t)sqlite3_column_int64(s, 4),
        .prerolls = (uint64_t)sqlite3_column_double(s, 5),
        .in_progress = (uint64_t)sqlite3_column_double(s, 6),
    };
    if (!r->mount)
        return -ENOMEM;
    q->nrows++;
    return 0;
}

static void bind_bucket(sqlite3_stmt *s, const audience_query_t *q, int64_t from, int64_t to,
                        int server_row, int64_t longest)
{
    sqlite3_reset(s);
    sqlite3_bind_int64(s, 1, from);
    sqlite3_bind_int64(s, 2, to);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)q->qualify_s * 1000);
    if (q->mount)
        sqlite3_bind_text(s, 4, q->mount, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, 4);
    sqlite3_bind_int(s, 5, server_row);
    sqlite3_bind_int64(s, 6, longest);
}

static int cmp_ms(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The most of n spans [start, end) that overlap at one time (an end at t comes before a start
 * at t: they do not overlap). Sorts both arrays. */
static uint64_t most_at_once(int64_t *start, int64_t *end, size_t n)
{
    qsort(start, n, sizeof(*start), cmp_ms);
    qsort(end, n, sizeof(*end), cmp_ms);
    uint64_t most = 0;
    for (size_t i = 0, j = 0; i < n; i++) {
        while (j < n && end[j] <= start[i])
            j++;
        if (i + 1 - j > most)
            most = i + 1 - j;
    }
    return most;
}

/* The row of group g among rows[first, nrows), or NULL. */
static audience_row_t *row_of(audience_query_t *q, size_t first, const char *g)
{
    for (size_t i = first; i < q->nrows; i++)
        if (strcmp(q->rows[i].mount, g) == 0)
            return &q->rows[i];
    return NULL;
}

/* The peaks of the rows a bucket's grouping added from `first` on. */
static int peaks(audience_query_t *q, size_t first, sqlite3_stmt *s)
{
    size_t n = 0, cap = 0;
    int64_t *start = NULL, *end = NULL;
    char g[1024] = "";
    int rc, err = 0;
    while (err == 0) {
        rc = sqlite3_step(s);
        const char *rg = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
        rg = rg ? rg : "";
        if (n && (rc != SQLITE_ROW || strcmp(rg, g) != 0)) {
            audience_row_t *r = row_of(q, first, g);
            if (r)
                r->peak = most_at_once(start, end, n);
            n = 0;
        }
        if (rc != SQLITE_ROW)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            int64_t *ns = realloc(start, cap * sizeof(*ns));
            if (ns)
                start = ns;
            int64_t *ne = ns ? realloc(end, cap * sizeof(*ne)) : NULL;
            if (ne)
                end = ne;
            if (!ns || !ne) {
                err = -ENOMEM;
                break;
            }
        }
        snprintf(g, sizeof(g), "%s", rg);
        start[n] = sqlite3_column_int64(s, 1);
        end[n++] = sqlite3_column_int64(s, 2);
    }
    free(start);
    free(end);
    return err ? err : rc == SQLITE_DONE ? 0 : -EIO;
}

/* The sessions per country of the rows a bucket's grouping added from `first` on. */
static int countries(audience_query_t *q, size_t first, sqlite3_stmt *s)
{
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *g = (const char *)sqlite3_column_text(s, 0);
        const char *cc = (const char *)sqlite3_column_text(s, 1);
        audience_row_t *r = row_of(q, first, g ? g : "");
        if (!r)
            continue;
        audience_country_t *v = realloc(r->countries, (r->ncountries + 1) * sizeof(*v));
        if (!v)
            return -ENOMEM;
        r->countries = v;
        v = &v[r->ncountries++];
        snprintf(v->cc, sizeof(v->cc), "%s", cc ? cc : "");
        v->sessions = (uint64_t)sqlite3_column_int64(s, 2);
    }
    return rc == SQLITE_DONE ? 0 : -EIO;
}

/* An empty bucket still has its server row, all zero. */
static int add_empty_row(audience_query_t *q, size_t *cap, sqlite3 *db, int64_t from, int64_t to)
{
    sqlite3_stmt *z = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT '',0,0,0,0,0,0", -1, &z, NULL) == SQLITE_OK &&
                     sqlite3_step(z) == SQLITE_ROW
                 ? add_row(q, cap, z, from, to)
                 : -EIO;
    sqlite3_finalize(z);
    return rc;
}

typedef struct statements {
    sqlite3_stmt *fig, *spans, *countries;
} statements_t;

/* The rows of one bucket: the server's (even when nobody listened), then each mount's. */
static int bucket(audience_query_t *q, size_t *cap, const statements_t *st, int64_t from,
                  int64_t to, int64_t longest)
{
    for (int server_row = 1; server_row >= 0; server_row--) {
        if (server_row && q->mount)
            continue;
        size_t first = q->nrows;
        bind_bucket(st->fig, q, from, to, server_row, longest);
        int rc;
        while ((rc = sqlite3_step(st->fig)) == SQLITE_ROW)
            if (add_row(q, cap, st->fig, from, to) < 0)
                return -ENOMEM;
        if (rc != SQLITE_DONE)
            return -EIO;
        if (server_row && q->nrows == first) {
            if (add_empty_row(q, cap, sqlite3_db_handle(st->fig), from, to) < 0)
                return -EIO;
            continue;
        }
        bind_bucket(st->spans, q, from, to, server_row, longest);
        if ((rc = peaks(q, first, st->spans)) < 0)
            return rc;
        bind_bucket(st->countries, q, from, to, server_row, longest);
        if ((rc = countries(q, first, st->countries)) < 0)
            return rc;
    }
    return 0;
}

void audience_figures(sqlite3 *db, audience_query_t *q)
{
    q->err = db ? 0 : -ENODEV;
    if (!db)
        return;
    statements_t st = {0};
    sqlite3_stmt *longest = NULL;
    int64_t most = 0;
    if (snapshot_live(db, q) < 0 ||
        sqlite3_prepare_v2(db, figures_sql, -1, &st.fig, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, spans_sql, -1, &st.spans, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, countries_sql, -1, &st.countries, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, longest_sql, -1, &longest, NULL) != SQLITE_OK ||
        sqlite3_step(longest) != SQLITE_ROW) {
        q->err = -EIO;
    } else {
        most = sqlite3_column_int64(longest, 0);
    }
    size_t cap = 0;
    int64_t from = q->from_ms;
    while (from < q->to_ms && q->err == 0) {
        /* buckets end at whole hours or days (UTC) */
        int64_t to = q->step_ms ? (from / q->step_ms + 1) * q->step_ms : q->to_ms;
        if (to > q->to_ms)
            to = q->to_ms;
        q->err = bucket(q, &cap, &st, from, to, most);
        from = to;
    }
    sqlite3_finalize(st.fig);
    sqlite3_finalize(st.spans);
    sqlite3_finalize(st.countries);
    sqlite3_finalize(longest);
    sqlite3_exec(db, "DELETE FROM temp.live", NULL, NULL, NULL);
}

void audience_query_clear(audience_query_t *q)
{
    for (size_t i = 0; i < q->nrows; i++) {
        free(q->rows[i].mount);
        free(q->rows[i].countries);
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
         "min-session.", offsetof(counted_t, qualified), 0},
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
