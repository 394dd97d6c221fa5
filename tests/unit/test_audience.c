/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience: the audience figures by their definitions on a store in memory: sessions and
 * qualified sessions of a bucket are those listening in it, TLH is the qualified time inside
 * the bucket (a session over an hour's end is split), CUME counts address + agent pairs of
 * qualified sessions, peak the most sessions at once, prerolls those played through of the
 * sessions that began in it; the server line sums the mounts; mount= and sessions per
 * country; sessions going on count once qualified; and the address truncation of the
 * privacy setting. And the figures of every bucket, made in one pass, against a brute force
 * straight from those definitions on random sessions (seconds to days long, some going on,
 * several mounts and countries, listeners coming back) by hour, by day and whole, for every
 * mount or one. Webcast Metrics' figures (AS, SS, AQH, TSL, AAS) on the worked example of
 * docs/AUDIENCE.md and in the brute force.
 */
#include "audience/audience.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/cidr.h"
#include "net/server.h"
#include "audience/audience_sqlite.h"
#include "testlib.h"

#define MIN 60000LL
#define HOUR 3600000LL
#define DAY (24 * HOUR)

static sqlite3 *store(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    /* mount, address, agent, country, start, end (ms); qualifying at 60 s */
    static const char rows[] =
        "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, user_agent,"
        " country, ended, preroll) VALUES"
        " (1, '/a', '/a', 3000000, 3900000, 1, 'A', 'x', 'DE', 'client_left', 1)," /* 15 min */
        " (2, '/a', '/a', 100000, 130000, 1, 'A', 'x', 'DE', 'client_left', 0),"   /* 30 s */
        " (3, '/a', '/a', 200000, 400000, 1, 'B', 'y', NULL, 'kicked', 1),"       /* 200 s */
        " (4, '/b', '/b', 300000, 3700000, 1, 'A', 'x', 'DE', 'client_left', 0)," /* 3400 s */
        " (5, '/a', '/a', 3800000, 3850000, 1, 'A', 'x', 'FR', 'client_left', 1)";/* 50 s */
    CHECK(sqlite3_exec(db, rows, NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static const audience_row_t *row(const audience_query_t *q, int64_t from, const char *mount)
{
    for (size_t i = 0; i < q->nrows; i++)
        if (q->rows[i].from_ms == from && strcmp(q->rows[i].mount, mount) == 0)
            return &q->rows[i];
    return NULL;
}

/* The sessions of country cc ("" unknown) in r, 0 if none. */
static uint64_t of_country(const audience_row_t *r, const char *cc)
{
    for (size_t i = 0; r && i < r->ncountries; i++)
        if (strcmp(r->countries[i].cc, cc) == 0)
            return r->countries[i].sessions;
    return 0;
}

#define CHECK_ROW(r, s, qs, ms, c, p)                                                          \
    do {                                                                                       \
        CHECK((r) != NULL);                                                                    \
        if (r) {                                                                               \
            CHECK((r)->sessions == (s) && (r)->qualified == (qs));                             \
            CHECK((r)->listened_ms == (ms) && (r)->cume == (c) && (r)->peak == (p));           \
        }                                                                                      \
    } while (0)

static void hours_split_sessions_that_span_them(void)
{
    sqlite3 *db = store();
    audience_query_t q = {.from_ms = 0, .to_ms = 2 * HOUR, .step_ms = HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0);
    CHECK(q.nrows == 6);
    CHECK(q.nrows && q.rows[0].mount[0] == '\0'); /* the server first */
    CHECK_ROW(row(&q, 0, "/a"), 3, 2, 600000 + 200000, 2, 1);
    CHECK_ROW(row(&q, 0, "/b"), 1, 1, 3300000, 1, 1);
    CHECK_ROW(row(&q, 0, ""), 4, 3, 4100000, 2, 2);
    CHECK_ROW(row(&q, HOUR, "/a"), 2, 1, 300000, 1, 2);
    CHECK_ROW(row(&q, HOUR, "/b"), 1, 1, 100000, 1, 1);
    CHECK_ROW(row(&q, HOUR, ""), 3, 2, 400000, 1, 2);
    const audience_row_t *r = row(&q, HOUR, "");
    CHECK(r && r->to_ms == 2 * HOUR);
    /* prerolls count in the bucket their session began in: s1 and s3 in H0, s5 in H1 */
    CHECK(row(&q, 0, "/a")->prerolls == 2 && row(&q, HOUR, "/a")->prerolls == 1);
    CHECK(row(&q, 0, "")->prerolls == 2 && row(&q, HOUR, "/b")->prerolls == 0);
    audience_query_clear(&q);
    sqlite3_close(db);
}

static void a_whole_period_counts_each_session_once(void)
{
    sqlite3 *db = store();
    audience_query_t q = {.from_ms = 0, .to_ms = 2 * HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0 && q.nrows == 3);
    CHECK_ROW(row(&q, 0, "/a"), 4, 2, 900000 + 200000, 2, 2);
    CHECK_ROW(row(&q, 0, ""), 5, 3, 900000 + 200000 + 3400000, 2, 2);
    audience_query_clear(&q);
    /* a bucket that ends inside a day: buckets end at whole days, the last at `to` */
    q = (audience_query_t){.from_ms = 30 * MIN, .to_ms = 50 * MIN, .step_ms = 24 * HOUR,
                           .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.nrows == 2 && q.rows[0].from_ms == 30 * MIN && q.rows[0].to_ms == 50 * MIN);
    CHECK_ROW(row(&q, 30 * MIN, ""), 1, 1, 20 * MIN, 1, 1); /* s4 only */
    audience_query_clear(&q);
    sqlite3_close(db);
}

static void a_mount_and_countries(void)
{
    sqlite3 *db = store();
    audience_query_t q = {.from_ms = 0, .to_ms = 2 * HOUR, .qualify_s = 60,
                          .mount = strdup("/b")};
    audience_sqlite_figures(db, &q);
    CHECK(q.nrows == 1 && strcmp(q.rows[0].mount, "/b") == 0);
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 0, .to_ms = 2 * HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0);
    const audience_row_t *a = row(&q, 0, "/a"), *all = row(&q, 0, "");
    CHECK(a && a->ncountries == 3 && all && all->ncountries == 3);
    CHECK(of_country(a, "DE") == 2 && of_country(a, "FR") == 1 && of_country(a, "") == 1);
    CHECK(of_country(all, "DE") == 3);
    audience_query_clear(&q);
    /* an empty period still has its server line */
    q = (audience_query_t){.from_ms = 10 * HOUR, .to_ms = 11 * HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK_ROW(row(&q, 10 * HOUR, ""), 0, 0, 0, 0, 0);
    CHECK(q.nrows == 1);
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 0, .to_ms = HOUR, .qualify_s = 60};
    audience_sqlite_figures(NULL, &q);
    CHECK(q.err == -ENODEV);
    audience_query_clear(&q);
    sqlite3_close(db);
}

/* A session going on: counted as far as it went once it lasted min-session, as in progress. */
static void sessions_going_on_count_once_qualified(void)
{
    sqlite3 *db = store();
    int64_t now = session_now_ms();
    session_record_t young = {.id = 7, .mount = "/live", .start_ms = now - 10000,
                              .address = "192.0.2.1", .agent = "y"};
    session_record_t old = {.id = 8, .mount = "/live", .start_ms = now - 120000,
                            .address = "192.0.2.2", .agent = "o", .country = "NL"};
    session_live_t *s1 = session_listener_join(&young), *s2 = session_listener_join(&old);
    CHECK(s1 && s2);
    session_live_preroll(s2);
    audience_query_t q = {.from_ms = now - HOUR, .to_ms = now + MIN, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0);
    const audience_row_t *r = row(&q, now - HOUR, "/live");
    CHECK(r && r->sessions == 1 && r->qualified == 1 && r->in_progress == 1 && r->cume == 1);
    CHECK(r && r->listened_ms >= 120000 && r->listened_ms < 130000 && r->prerolls == 1);
    CHECK(of_country(r, "NL") == 1);
    audience_query_clear(&q);
    session_listener_leave(s1);
    session_listener_leave(s2);
    q = (audience_query_t){.from_ms = now - HOUR, .to_ms = now + MIN, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0 && !row(&q, now - HOUR, "/live"));
    audience_query_clear(&q);
    sqlite3_close(db);
}

/* ---- the worked example of docs/AUDIENCE.md (Webcast Metrics' figures) ----
 * The hour 10:00-11:00 UTC of 1970-01-01 on /wm:
 *   A 10:00:00-10:00:59 (59 s): under a minute, in no figure of Webcast Metrics
 *   B 10:00:00-10:01:01 (61 s): AS and SS, 61 s of TLH, no quarter-hour (under 5 min)
 *   C 10:12:00-10:20:00 (8 min, B's listener): 3 min of 10:00-10:15, 5 of 10:15-10:30: AQH in
 *     the second only
 *   D 09:50:00-10:40:00: AS, not SS (began before); 10:00-10:15, 10:15-10:30 whole and 10 min
 *     of 10:30-10:45: three quarter-hours
 * AS 3, SS 2, TLH 61 + 480 + 2400 s = 0.816944 h, CUME 2, TSL 0.408472 h, AAS 0.816944,
 * AQH: 1, 2, 1 and 0 listeners in the four quarter-hours, (1 + 2 + 1 + 0) / 4 = 1.000. */
static void webcast_metrics_worked_example(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    static const char rows[] =
        "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, user_agent,"
        " ended) VALUES"
        " (1, '/wm', '/wm', 36000000, 36059000, 1, 'A', 'a', 'client_left'),"
        " (2, '/wm', '/wm', 36000000, 36061000, 1, 'B', 'b', 'client_left'),"
        " (3, '/wm', '/wm', 36720000, 37200000, 1, 'B', 'b', 'client_left'),"
        " (4, '/wm', '/wm', 35400000, 38400000, 1, 'D', 'd', 'client_left')";
    CHECK(sqlite3_exec(db, rows, NULL, NULL, NULL) == SQLITE_OK);
    audience_query_t q = {.from_ms = 10 * HOUR, .to_ms = 11 * HOUR, .step_ms = HOUR,
                          .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0);
    const audience_row_t *r = row(&q, 10 * HOUR, "/wm");
    CHECK(r != NULL);
    if (r) {
        CHECK(r->sessions == 4 && r->qualified == 3);
        CHECK(r->active == 3 && r->started == 2);
        CHECK(r->listened_ms == (61 + 480 + 2400) * 1000ULL && r->cume == 2);
        CHECK(r->aqh_quarters == 4);
        audience_derived_t d = audience_row_derived(r);
        char text[64];
        snprintf(text, sizeof(text), "%.6f %.6f %.3f", d.tsl_hours, d.aas, d.aqh);
        CHECK_STR(text, "0.408472 0.816944 1.000");
    }
    audience_query_clear(&q);
    /* 59 s against 61 s, alone in their bucket */
    q = (audience_query_t){.from_ms = 10 * HOUR, .to_ms = 10 * HOUR + 2 * MIN, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    r = row(&q, 10 * HOUR, "/wm");
    CHECK(q.err == 0 && r && r->sessions == 3 && r->active == 2 && r->started == 1);
    audience_query_clear(&q);
    sqlite3_close(db);
    /* the quarter-hours by themselves: 5 min on either side of an edge, and a bucket with no
     * whole quarter-hour */
    audience_edges_t e;
    CHECK(audience_quarter_edges(10 * MIN, 20 * MIN, 0, HOUR, &e) && e.n == 2 && !e.whole &&
          e.quarter[0] == 0 && e.ms[0] == 5 * MIN && e.quarter[1] == 1 && e.ms[1] == 5 * MIN);
    CHECK(audience_quarter_edges(11 * MIN, 19 * MIN, 0, HOUR, &e) && e.n == 2 &&
          e.ms[0] == 4 * MIN && e.ms[1] == 4 * MIN);
    CHECK(audience_quarter_edges(0, 60 * MIN, 7 * MIN, HOUR, &e) && e.n == 2 && e.whole == 1 &&
          e.quarter[0] == 1 && e.ms[0] == 15 * MIN && e.quarter[1] == 3 && e.ms[1] == 15 * MIN);
    CHECK(audience_quarter_edges(16 * MIN, 20 * MIN, 0, HOUR, &e) && e.n == 1 &&
          e.quarter[0] == 1 && e.ms[0] == 4 * MIN);
    CHECK(!audience_quarter_edges(0, HOUR, 7 * MIN, 20 * MIN, &e));
    CHECK(audience_quarters(7 * MIN, HOUR) == 3 && audience_quarters(7 * MIN, 20 * MIN) == 0);
}

/* ---- AQH counts listeners: example J of docs/AUDIENCE.md ----
 * 10:00-11:00 UTC of 1970-01-01:
 *   j on /aq 10:00-10:03 and 10:06-10:09: 6 minutes of 10:00-10:15 together
 *   k on /aq 10:00-10:03 and on /aq2 10:05-10:08: 3 minutes on each mount, 6 on the server
 *   l on /aq 10:14-10:31: 1 minute of 10:00-10:15, 10:15-10:30 whole, 1 minute of 10:30-10:45
 * AQH quarter-hours: /aq 2 (j, l), /aq2 0, the server 3 (j, k, l). With and without pauses. */
static void aqh_counts_listeners(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    static const char rows[] =
        "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, user_agent,"
        " ended) VALUES"
        " (1, '/aq', '/aq', 36000000, 36180000, 1, 'E', 'e', 'client_left'),"
        " (2, '/aq', '/aq', 36360000, 36540000, 1, 'E', 'e', 'client_left'),"
        " (3, '/aq', '/aq', 36000000, 36180000, 1, 'F', 'f', 'client_left'),"
        " (4, '/aq2', '/aq2', 36300000, 36480000, 1, 'F', 'f', 'client_left'),"
        " (5, '/aq', '/aq', 36840000, 37860000, 1, 'G', 'g', 'client_left')";
    CHECK(sqlite3_exec(db, rows, NULL, NULL, NULL) == SQLITE_OK);
    for (int resume = 0; resume <= 180; resume += 180) {
        audience_query_t q = {.from_ms = 10 * HOUR, .to_ms = 11 * HOUR, .step_ms = HOUR,
                              .qualify_s = 60, .resume_s = resume};
        audience_sqlite_figures(db, &q);
        CHECK(q.err == 0);
        const audience_row_t *aq = row(&q, 10 * HOUR, "/aq"), *aq2 = row(&q, 10 * HOUR, "/aq2");
        const audience_row_t *all = row(&q, 10 * HOUR, "");
        CHECK(aq && aq->aqh_quarters == 2);
        CHECK(aq2 && aq2->aqh_quarters == 0);
        CHECK(all && all->aqh_quarters == 3);
        audience_query_clear(&q);
    }
    sqlite3_close(db);
}

/* ---- a session counts 24 hours at most: example K of docs/AUDIENCE.md ----
 * m on /cap from 12:00 of day 1 to 18:00 of day 2 (30 hours), n on /cap 23:00-23:30 of day 1.
 * Day 1 (00:00-24:00): m's 12 hours, n's 30 minutes. Day 2: m's first 12 hours (to 12:00), not
 * its last 6; the hour 13:00-14:00 of day 2 has no session at all. The record stays whole. */
static void a_session_counts_a_day_at_most(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    char rows[512];
    snprintf(rows, sizeof(rows),
             "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip,"
             " user_agent, ended) VALUES (1, '/cap', '/cap', %lld, %lld, 1, 'M', 'm',"
             " 'client_left'), (2, '/cap', '/cap', %lld, %lld, 1, 'N', 'n', 'client_left')",
             (long long)(DAY + 12 * HOUR), (long long)(2 * DAY + 18 * HOUR),
             (long long)(DAY + 23 * HOUR), (long long)(DAY + 23 * HOUR + 30 * MIN));
    CHECK(sqlite3_exec(db, rows, NULL, NULL, NULL) == SQLITE_OK);
    audience_query_t q = {.from_ms = DAY, .to_ms = 3 * DAY, .step_ms = DAY, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0);
    const audience_row_t *d1 = row(&q, DAY, "/cap"), *d2 = row(&q, 2 * DAY, "/cap");
    CHECK(d1 && d1->active == 2 && d1->started == 2 &&
          d1->listened_ms == (uint64_t)(12 * HOUR + 30 * MIN));
    CHECK(d2 && d2->active == 1 && d2->started == 0 && d2->listened_ms == (uint64_t)(12 * HOUR));
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 2 * DAY + 13 * HOUR, .to_ms = 2 * DAY + 14 * HOUR,
                           .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0 && !row(&q, 2 * DAY + 13 * HOUR, "/cap"));
    audience_query_clear(&q);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT end_ms FROM sessions WHERE conn_id = 1", -1, &st,
                             NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) == 2 * DAY + 18 * HOUR);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* ---- the one pass against a brute force ---- */

typedef struct rnd_session {
    const char *mount, *agent, *country; /* agent, country may be NULL */
    char address[64];          /* as the figures see it (a live one's truncated if asked) */
    int64_t start_ms, end_ms;  /* a live one's end: after every period asked */
    int preroll, live;
    char key[SESSION_KEY_LEN + 1]; /* its listener key, "" none (a record made before) */
    int cont;                  /* with pauses: it continues the session before it */
    int64_t prev_end, chain_ms; /* where that one ended; its chain's length */
} rnd_session_t;

#define RND_MAX 400

static uint64_t rnd_state;

static uint64_t rnd(uint64_t n)
{
    rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
    return (rnd_state >> 33) % n;
}

static const char *const rnd_mounts[] = {"/live", "/b", "/a", "/jazz.ogg", "/z"};
static const char *const rnd_agents[] = {"x", "y", NULL, "", "Mozilla/5.0 (X11; Linux x86_64)"};
static const char *const rnd_countries[] = {"DE", NULL, "FR", "NL", "US", "BR"};
#define PICK(a) (a)[rnd(sizeof(a) / sizeof((a)[0]))]

/* A length from seconds (some too short to qualify) to days. */
static int64_t rnd_length(void)
{
    switch (rnd(20)) {
    case 0: return DAY + (int64_t)rnd(3 * DAY);
    case 1: case 2: case 3: return 5 * HOUR + (int64_t)rnd(19 * HOUR);
    case 4: case 5: case 6: case 7: case 8: case 9: case 10: case 11:
        return 2 * MIN + (int64_t)rnd(5 * HOUR);
    default: return 1000 + (int64_t)rnd(119000);
    }
}

/* A time in [lo, lo + span): on a quarter hour one time in three, so that ends and starts
 * fall on each other and on the buckets' edges. */
static int64_t rnd_time(int64_t lo, int64_t span)
{
    int64_t t = lo + (int64_t)rnd((uint64_t)span);
    return rnd(3) ? t : t - t % (15 * MIN);
}

/* Stores n random sessions in db (and in v), beginning in the 1 to 4 days from 3 days before
 * base, and has `live` more going on, joined (into joined) since times before base. */
static size_t rnd_sessions(sqlite3 *db, rnd_session_t *v, size_t n, size_t live, int64_t base,
                           int anonymize, session_live_t **joined)
{
    sqlite3_stmt *ins = NULL;
    int64_t span = (1 + (int64_t)rnd(4)) * DAY; /* crowded or not */
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms,"
                             " bytes, ip, user_agent, country, ended, preroll, listener_key)"
                             " VALUES (?1, ?2, ?2, ?3, ?4, 1, ?5, ?6, ?7, 'client_left', ?8,"
                             " ?9)",
                             -1, &ins, NULL) == SQLITE_OK);
    for (size_t i = 0; i < n + live; i++) {
        rnd_session_t *s = &v[i];
        *s = (rnd_session_t){.mount = PICK(rnd_mounts), .agent = PICK(rnd_agents),
                             .country = PICK(rnd_countries), .preroll = rnd(3) == 0,
                             .live = i >= n};
        /* forty listeners, coming back with the same or another player */
        snprintf(s->address, sizeof(s->address), "192.0.2.%u", (unsigned)rnd(40));
        s->start_ms = rnd_time(base - 3 * DAY, span);
        s->end_ms = s->start_ms + rnd_length();
        if (i > 0 && i < n && rnd(3) == 0) { /* back after a pause of up to 6 minutes */
            const rnd_session_t *b = &v[rnd(i)];
            s->mount = b->mount;
            s->agent = b->agent;
            memcpy(s->address, b->address, sizeof(s->address));
            s->start_ms = b->end_ms + (int64_t)rnd(6 * MIN);
            s->end_ms = s->start_ms + (rnd(2) ? 1000 + (int64_t)rnd(80000) : rnd_length());
        }
        for (size_t j = 0; j < i; j++) /* no two of one listener and mount alike */
            if (strcmp(v[j].address, s->address) == 0 && v[j].mount == s->mount &&
                v[j].start_ms == s->start_ms && v[j].end_ms == s->end_ms)
                s->end_ms += 1;
        if (s->live || rnd(4)) /* a record made before keys has none */
            session_listener_key(s->address, s->agent, NULL, s->key);
        if (rnd(2)) /* on a quarter hour too, often where another starts */
            s->end_ms = s->end_ms - s->end_ms % (15 * MIN) > s->start_ms
                            ? s->end_ms - s->end_ms % (15 * MIN)
                            : s->start_ms + 15 * MIN;
        if (s->live) {
            session_record_t r = {.id = 1000 + i, .mount = s->mount, .start_ms = s->start_ms,
                                  .address = s->address, .agent = s->agent,
                                  .country = s->country};
            joined[i - n] = session_listener_join(&r);
            CHECK(joined[i - n] != NULL);
            if (s->preroll)
                session_live_preroll(joined[i - n]);
            s->end_ms = s->start_ms + AUDIENCE_SESSION_CAP_MS; /* counted 24 hours at most */
            char shown[64];
            session_address(s->address, anonymize, shown, sizeof(shown));
            snprintf(s->address, sizeof(s->address), "%s", shown);
            continue;
        }
        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)i);
        sqlite3_bind_text(ins, 2, s->mount, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 3, s->start_ms);
        sqlite3_bind_int64(ins, 4, s->end_ms);
        sqlite3_bind_text(ins, 5, s->address, -1, SQLITE_STATIC);
        if (s->agent)
            sqlite3_bind_text(ins, 6, s->agent, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(ins, 6);
        if (s->country)
            sqlite3_bind_text(ins, 7, s->country, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(ins, 7);
        sqlite3_bind_int(ins, 8, s->preroll);
        if (s->key[0])
            sqlite3_bind_text(ins, 9, s->key, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(ins, 9);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
        /* stored as it was, counted 24 hours at most */
        if (s->end_ms - s->start_ms > AUDIENCE_SESSION_CAP_MS)
            s->end_ms = s->start_ms + AUDIENCE_SESSION_CAP_MS;
    }
    sqlite3_finalize(ins);
    return n + live;
}

/* Whether s belongs to group g ("" the server) of the query and listened in [from, to). */
static int rnd_in(const rnd_session_t *s, const char *g, const char *only, int64_t from,
                  int64_t to)
{
    return (!only || strcmp(s->mount, only) == 0) && (!*g || strcmp(s->mount, g) == 0) &&
           s->start_ms < to && s->end_ms > from;
}

static int same_listener(const rnd_session_t *a, const rnd_session_t *b)
{
    if (a->key[0] || b->key[0]) /* by the key; a record without one by address and agent */
        return strcmp(a->key, b->key) == 0;
    return strcmp(a->address, b->address) == 0 &&
           strcmp(a->agent ? a->agent : "", b->agent ? b->agent : "") == 0;
}

/* Whether a comes before b among the sessions of one key and mount (by start, then end). */
static int rnd_before(const rnd_session_t *a, const rnd_session_t *b)
{
    return a->start_ms < b->start_ms || (a->start_ms == b->start_ms && a->end_ms < b->end_ms);
}

static int rnd_same_chain_group(const rnd_session_t *a, const rnd_session_t *b)
{
    return a->key[0] && strcmp(a->key, b->key) == 0 && strcmp(a->mount, b->mount) == 0;
}

/* Pauses by their definition: a keyed session continues the session of its key and mount
 * that ended last before it (ties: the later one) when every one before it had ended, at most
 * resume_ms before it began; a chain's length is the time its sessions listened (one going
 * on: long enough). */
static void rnd_chains(rnd_session_t *v, size_t n, int64_t resume_ms)
{
    static size_t parent[RND_MAX + 16];
    for (size_t i = 0; i < n; i++) {
        rnd_session_t *s = &v[i];
        s->cont = 0;
        s->prev_end = 0;
        parent[i] = i;
        const rnd_session_t *last = NULL;
        for (size_t j = 0; resume_ms && j < n; j++)
            if (j != i && rnd_same_chain_group(&v[j], s) && rnd_before(&v[j], s) &&
                (!last || v[j].end_ms > last->end_ms ||
                 (v[j].end_ms == last->end_ms && rnd_before(last, &v[j]))))
                last = &v[j];
        if (last && s->start_ms >= last->end_ms && s->start_ms - last->end_ms <= resume_ms) {
            s->cont = 1;
            s->prev_end = last->end_ms;
            parent[i] = (size_t)(last - v);
        }
    }
    for (size_t i = 0; i < n; i++) { /* the chain's first session, then every one of it */
        size_t root = i;
        while (parent[root] != root)
            root = parent[root];
        int64_t len = 0;
        for (size_t j = 0; j < n; j++) {
            size_t r = j;
            while (parent[r] != r)
                r = parent[r];
            if (r == root)
                len += v[j].live ? DAY : v[j].end_ms - v[j].start_ms;
        }
        v[i].chain_ms = len;
    }
}

/* AQH quarter-hours of group g in [from, to) by the definition, quarter-hour by quarter-hour:
 * a quarter-hour a session of a minute or more covers whole counts for it; in a session's first
 * and last quarter-hours, a listener counts once its sessions' time there makes five minutes
 * (each such quarter-hour and listener once). */
static uint64_t brute_aqh(const rnd_session_t *v, size_t n, const char *g, const char *only,
                          int64_t from, int64_t to)
{
    const int64_t qm = 15 * MIN;
    int64_t qa = from - from % qm + (from % qm ? qm : 0), qb = to - to % qm;
    uint64_t count = 0;
    for (int64_t qh = qa; qh + qm <= qb; qh += qm) {
        for (size_t i = 0; i < n; i++) {
            const rnd_session_t *s = &v[i];
            int64_t a = s->start_ms > qa ? s->start_ms : qa, b = s->end_ms < qb ? s->end_ms : qb;
            if (!rnd_in(s, g, only, from, to) || s->chain_ms < 60000 || b <= qh ||
                a >= qh + qm)
                continue;
            if (a < qh && b > qh + qm) { /* between its first and last quarter-hours */
                count++;
                continue;
            }
            /* its first or last: the listener's time in it from every session it is the first
             * or last of, counted once (by the first such session) */
            int64_t sum = 0;
            int seen = 0;
            for (size_t j = 0; j < n; j++) {
                const rnd_session_t *o = &v[j];
                int64_t oa = o->start_ms > qa ? o->start_ms : qa;
                int64_t ob = o->end_ms < qb ? o->end_ms : qb;
                if (!rnd_in(o, g, only, from, to) || o->chain_ms < 60000 ||
                    !same_listener(o, s) || ob <= qh || oa >= qh + qm ||
                    (oa < qh && ob > qh + qm))
                    continue;
                seen |= j < i;
                sum += (ob < qh + qm ? ob : qh + qm) - (oa > qh ? oa : qh);
            }
            count += !seen && sum >= 5 * MIN;
        }
    }
    return count;
}

/* The row of group g for [from, to) by the definitions; 0 if it has no session (the
 * server's is made all the same). Countries in r->countries (room for 8). */
static int brute_row(const rnd_session_t *v, size_t n, const char *g, const char *only,
                     int64_t from, int64_t to, audience_row_t *r)
{
    const int64_t qualify = 60000;
    *r = (audience_row_t){.from_ms = from, .to_ms = to, .countries = r->countries};
    for (size_t i = 0; i < n; i++) {
        const rnd_session_t *s = &v[i];
        if (!rnd_in(s, g, only, from, to))
            continue;
        r->sessions++;
        r->in_progress += s->live;
        r->prerolls += s->preroll && s->start_ms >= from;
        int first_here = !s->cont || s->prev_end <= from; /* a chain counts once */
        if (s->chain_ms >= 60000) { /* Webcast Metrics: AS, SS, AQH */
            r->active += first_here;
            r->started += !s->cont && s->start_ms >= from;
        }
        int qualified = s->chain_ms >= qualify;
        if (qualified) {
            r->qualified += first_here;
            r->listened_ms += (uint64_t)((s->end_ms < to ? s->end_ms : to) -
                                         (s->start_ms > from ? s->start_ms : from));
            int seen = 0; /* CUME: the first qualified session of each listener */
            for (size_t j = 0; j < i && !seen; j++)
                seen = rnd_in(&v[j], g, only, from, to) && v[j].chain_ms >= qualify &&
                       same_listener(&v[j], s);
            r->cume += !seen;
        }
        /* the peak: how many listen at `from` or at a start inside the bucket */
        int64_t t = s->start_ms > from ? s->start_ms : from;
        uint64_t at = 0;
        for (size_t j = 0; j < n; j++)
            at += rnd_in(&v[j], g, only, from, to) && v[j].start_ms <= t && v[j].end_ms > t;
        r->peak = at > r->peak ? at : r->peak;
        const char *cc = s->country ? s->country : "";
        size_t c = 0;
        while (c < r->ncountries && strcmp(r->countries[c].cc, cc) != 0)
            c++;
        if (c == r->ncountries) {
            snprintf(r->countries[c].cc, sizeof(r->countries[c].cc), "%s", cc);
            r->countries[r->ncountries++].sessions = 0;
        }
        r->countries[c].sessions++;
    }
    r->aqh_quarters = brute_aqh(v, n, g, only, from, to);
    return r->sessions > 0;
}

static int by_cc(const void *a, const void *b)
{
    return strcmp(((const audience_country_t *)a)->cc, ((const audience_country_t *)b)->cc);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Checks q's answer row by row against the definitions; returns the rows that differ. */
static int brute_compare(const rnd_session_t *v, size_t n, const audience_query_t *q)
{
    const char *groups[8] = {""};
    size_t ng = 1;
    for (size_t m = 0; m < sizeof(rnd_mounts) / sizeof(rnd_mounts[0]); m++)
        groups[ng++] = rnd_mounts[m];
    qsort(groups + 1, ng - 1, sizeof(groups[0]), by_name);
    size_t at = 0;
    int wrong = 0;
    for (int64_t from = q->from_ms; from < q->to_ms;) {
        int64_t to = q->step_ms ? from - from % q->step_ms + q->step_ms : q->to_ms;
        to = to < q->to_ms ? to : q->to_ms;
        for (size_t g = q->mount ? 1 : 0; g < ng; g++) {
            audience_country_t cc[8];
            audience_row_t want = {.countries = cc};
            if (!brute_row(v, n, groups[g], q->mount, from, to, &want) && g > 0)
                continue;
            qsort(cc, want.ncountries, sizeof(cc[0]), by_cc);
            const audience_row_t *r = at < q->nrows ? &q->rows[at] : NULL;
            at++;
            int same = r && strcmp(r->mount, groups[g]) == 0 && r->from_ms == from &&
                       r->to_ms == to && r->sessions == want.sessions &&
                       r->qualified == want.qualified && r->listened_ms == want.listened_ms &&
                       r->cume == want.cume && r->peak == want.peak &&
                       r->prerolls == want.prerolls && r->in_progress == want.in_progress &&
                       r->active == want.active && r->started == want.started &&
                       r->aqh_quarters == want.aqh_quarters &&
                       r->ncountries == want.ncountries;
            for (size_t c = 0; same && c < want.ncountries; c++)
                same = strcmp(r->countries[c].cc, cc[c].cc) == 0 &&
                       r->countries[c].sessions == cc[c].sessions;
            if (!same && wrong++ < 3)
                fprintf(stderr, "row %zu (%s, %lld): want %llu sessions %llu qualified %llu ms"
                        " cume %llu peak %llu prerolls %llu on %llu AS %llu SS %llu AQH %llu\n",
                        at - 1, groups[g],
                        (long long)from, (unsigned long long)want.sessions,
                        (unsigned long long)want.qualified, (unsigned long long)want.listened_ms,
                        (unsigned long long)want.cume, (unsigned long long)want.peak,
                        (unsigned long long)want.prerolls, (unsigned long long)want.in_progress,
                        (unsigned long long)want.active, (unsigned long long)want.started,
                        (unsigned long long)want.aqh_quarters);
            if (!same && r && wrong <= 3)
                fprintf(stderr, "  got %llu sessions %llu qualified %llu ms cume %llu peak %llu"
                        " AS %llu SS %llu AQH %llu\n", (unsigned long long)r->sessions,
                        (unsigned long long)r->qualified, (unsigned long long)r->listened_ms,
                        (unsigned long long)r->cume, (unsigned long long)r->peak,
                        (unsigned long long)r->active, (unsigned long long)r->started,
                        (unsigned long long)r->aqh_quarters);
        }
        from = to;
    }
    return wrong + (at != q->nrows);
}

static void one_pass_matches_the_definitions(void)
{
    /* days start at midnight UTC; the periods asked end a day before now, so that the
     * sessions going on reach past them whenever the figures are made */
    int64_t now = session_now_ms(), base = now - now % DAY - 4 * DAY;
    static rnd_session_t v[RND_MAX + 16];
    size_t continued = 0;      /* sessions that continued another (pauses were tried) */
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rnd_state = seed;
        sqlite3 *db = NULL;
        CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
        int anonymize = seed % 3 == 0;
        session_live_t *joined[16];
        size_t live = (size_t)rnd(16);
        size_t n = rnd_sessions(db, v, (size_t)rnd(RND_MAX), live, base, anonymize, joined);
        /* one that has not listened min-session yet: not in the figures */
        session_record_t young = {.id = 999, .mount = "/b", .start_ms = now - 10000,
                                  .address = "192.0.2.1", .agent = "x"};
        session_live_t *y = session_listener_join(&young);
        const struct { int64_t from, to, step; } periods[] = {
            {base, base + 3 * DAY, HOUR},           /* the last two days: nobody */
            {base - 3 * DAY + 5 * HOUR + 17, base + 3 * DAY, DAY},
            {base - 2 * DAY, base + 2 * DAY + 12 * HOUR, 0},
            {base - 10 * DAY, base - 9 * DAY, HOUR}, /* before anything */
        };
        for (size_t p = 0; p < 2 * sizeof(periods) / sizeof(periods[0]); p++) {
            int resume_s = p % 2 ? 180 : 0; /* without pauses and with */
            rnd_chains(v, n, resume_s * 1000LL);
            for (size_t i = 0; i < n; i++)
                continued += v[i].cont;
            for (int filtered = 0; filtered < 2; filtered++) {
                audience_query_t q = {.from_ms = periods[p / 2].from, .to_ms = periods[p / 2].to,
                                      .step_ms = periods[p / 2].step, .qualify_s = 60,
                                      .anonymize = anonymize, .resume_s = resume_s,
                                      .mount = filtered ? strdup(PICK(rnd_mounts)) : NULL};
                audience_sqlite_figures(db, &q);
                CHECK(q.err == 0);
                int wrong = brute_compare(v, n, &q);
                if (wrong)
                    fprintf(stderr, "seed %llu, period %zu, mount %s: %d rows differ\n",
                            (unsigned long long)seed, p, q.mount ? q.mount : "(all)", wrong);
                CHECK(wrong == 0);
                audience_query_clear(&q);
            }
        }
        session_listener_leave(y);
        for (size_t i = 0; i < live; i++)
            session_listener_leave(joined[i]);
        sqlite3_close(db);
    }
    CHECK(continued > 100);
}

/* ---- pauses and the listener key: the worked examples of docs/AUDIENCE.md ----
 * The hour 10:00-11:00 UTC of 1970-01-01 on /p, <resume-seconds> 180:
 *   E 10:00:00-10:00:40 and 10:02:40-10:03:10: a pause of 2 minutes, one session of 70 s
 *   F 10:10:00-10:11:30 and 10:15:30-10:17:00: a pause of 4 minutes, two sessions of 90 s
 *   G 10:20:00-10:22:00 from 2001:db8:1:2::10, 10:40:00-10:42:00 from 2001:db8:1:2:ffff::7
 *     (one /64, the same agent): one listener, two sessions
 *   H 10:30:00-10:32:00 from 192.0.2.8, 10:50:00-10:52:00 from 198.51.100.9, both with
 *     listener id "h-1": one listener, two sessions
 * AS 1 + 2 + 2 + 2 = 7, SS 7, CUME 4; without pauses E's two parts (40 and 30 s) are in no
 * figure: AS 6, CUME 3. */
static void insert_keyed(sqlite3 *db, int64_t start, int64_t end, const char *ip,
                         const char *agent, const char *id)
{
    char key[SESSION_KEY_LEN + 1], sql[512];
    session_listener_key(ip, agent, id, key);
    snprintf(sql, sizeof(sql), "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms,"
             " bytes, ip, user_agent, ended, listener_key) VALUES (1, '/p', '/p', %lld, %lld, 1,"
             " '%s', '%s', 'client_left', '%s')", (long long)start, (long long)end, ip, agent,
             key);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
}

static void pauses_and_listener_keys_worked_example(void)
{
    char k1[SESSION_KEY_LEN + 1], k2[SESSION_KEY_LEN + 1];
    session_listener_key("2001:db8:1:2::10", "g", NULL, k1);
    session_listener_key("2001:db8:1:2:ffff::7", "g", NULL, k2);
    CHECK_STR(k1, k2);                     /* one /64 */
    session_listener_key("2001:db8:1:3::10", "g", NULL, k2);
    CHECK(strcmp(k1, k2) != 0);            /* another /64 */
    session_listener_key("192.0.2.8", "g", NULL, k1);
    session_listener_key("192.0.2.9", "g", NULL, k2);
    CHECK(strcmp(k1, k2) != 0);            /* IPv4 whole */
    session_listener_key("::ffff:192.0.2.8", "g", NULL, k2);
    CHECK_STR(k1, k2);
    session_listener_key("192.0.2.8", "h", NULL, k2);
    CHECK(strcmp(k1, k2) != 0);            /* another agent */
    session_listener_key("192.0.2.8", "g", "h-1", k1);
    session_listener_key("198.51.100.9", "x", "h-1", k2);
    CHECK_STR(k1, k2);                     /* the listener id alone */
    CHECK(strlen(k1) == SESSION_KEY_LEN && strspn(k1, "0123456789abcdef") == SESSION_KEY_LEN);

    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    int64_t t = 10 * HOUR, s = 1000;
    insert_keyed(db, t, t + 40 * s, "192.0.2.5", "e", NULL);
    insert_keyed(db, t + 160 * s, t + 190 * s, "192.0.2.5", "e", NULL);
    insert_keyed(db, t + 10 * MIN, t + 10 * MIN + 90 * s, "192.0.2.6", "f", NULL);
    insert_keyed(db, t + 15 * MIN + 30 * s, t + 17 * MIN, "192.0.2.6", "f", NULL);
    insert_keyed(db, t + 20 * MIN, t + 22 * MIN, "2001:db8:1:2::10", "g", NULL);
    insert_keyed(db, t + 40 * MIN, t + 42 * MIN, "2001:db8:1:2:ffff::7", "g", NULL);
    insert_keyed(db, t + 30 * MIN, t + 32 * MIN, "192.0.2.8", "h", "h-1");
    insert_keyed(db, t + 50 * MIN, t + 52 * MIN, "198.51.100.9", "h", "h-1");
    audience_query_t q = {.from_ms = t, .to_ms = t + HOUR, .step_ms = HOUR, .qualify_s = 60,
                          .resume_s = 180};
    audience_sqlite_figures(db, &q);
    const audience_row_t *r = row(&q, t, "/p");
    CHECK(q.err == 0 && r);
    if (r) {
        CHECK(r->sessions == 8 && r->active == 7 && r->started == 7 && r->qualified == 7);
        CHECK(r->cume == 4 && r->listened_ms == (70 + 180 + 240 + 240) * 1000ULL);
    }
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = t, .to_ms = t + HOUR, .step_ms = HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    r = row(&q, t, "/p");
    CHECK(q.err == 0 && r);
    if (r) {
        CHECK(r->sessions == 8 && r->active == 6 && r->started == 6 && r->qualified == 6);
        CHECK(r->cume == 3 && r->listened_ms == (180 + 240 + 240) * 1000ULL);
    }
    audience_query_clear(&q);
    /* the hour after: E's chain began before it (no SS), split across 10:59:30 */
    CHECK(sqlite3_exec(db, "DELETE FROM sessions", NULL, NULL, NULL) == SQLITE_OK);
    insert_keyed(db, t + 59 * MIN + 30 * s, t + HOUR, "192.0.2.5", "e", NULL);
    insert_keyed(db, t + HOUR + 60 * s, t + HOUR + 100 * s, "192.0.2.5", "e", NULL);
    q = (audience_query_t){.from_ms = t, .to_ms = t + 2 * HOUR, .step_ms = HOUR,
                           .qualify_s = 60, .resume_s = 180};
    audience_sqlite_figures(db, &q);
    const audience_row_t *a = row(&q, t, "/p"), *b = row(&q, t + HOUR, "/p");
    CHECK(a && a->active == 1 && a->started == 1 && a->listened_ms == 30000 && a->cume == 1);
    CHECK(b && b->active == 1 && b->started == 0 && b->listened_ms == 40000 && b->cume == 1);
    audience_query_clear(&q);
    sqlite3_close(db);
}

static void truncation_keeps_the_network(void)
{
    char out[64];
    cidr_truncate("198.51.100.77", out, sizeof(out));
    CHECK_STR(out, "198.51.100.0");
    cidr_truncate("::ffff:198.51.100.77", out, sizeof(out));
    CHECK_STR(out, "198.51.100.0");
    cidr_truncate("2001:db8:abcd:12:1:2:3:4", out, sizeof(out));
    CHECK_STR(out, "2001:db8:abcd::");
    cidr_truncate("fe80::1", out, sizeof(out));
    CHECK_STR(out, "fe80::");
    cidr_truncate("not an address", out, sizeof(out));
    CHECK_STR(out, "-");
    cidr_truncate(NULL, out, sizeof(out));
    CHECK_STR(out, "-");
}

/* The servers with sessions in the period, whatever mount and server are asked: a record
 * without a name is this server's (<server-name>); none in a period without sessions. */
static void the_servers_of_the_period(void)
{
    sqlite3 *db = store();
    CHECK(sqlite3_exec(db, "UPDATE sessions SET server = 'edge-b' WHERE conn_id = 4;"
                           "UPDATE sessions SET server = 'a-first' WHERE conn_id = 5",
                       NULL, NULL, NULL) == SQLITE_OK);
    audience_query_t q = {.from_ms = 0, .to_ms = 2 * HOUR, .qualify_s = 60,
                          .mount = strdup("/a"), .server = strdup("unit-1")};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0 && q.nservers == 3);
    if (q.nservers == 3) {
        CHECK_STR(q.servers[0], "a-first");
        CHECK_STR(q.servers[1], "edge-b");
        CHECK_STR(q.servers[2], "unit-1");
    }
    audience_query_clear(&q);
    /* from 3750 s: sessions 1 (this server's) and 5 (a-first); 4 (edge-b) ended at 3700 s */
    q = (audience_query_t){.from_ms = 3750000, .to_ms = 2 * HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0 && q.nservers == 2);
    if (q.nservers == 2) {
        CHECK_STR(q.servers[0], "a-first");
        CHECK_STR(q.servers[1], "unit-1");
    }
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 5 * HOUR, .to_ms = 6 * HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    CHECK(q.err == 0 && q.nservers == 0);
    audience_query_clear(&q);
    sqlite3_close(db);
}

int main(void)
{
    /* the name this server's records carry (the figures name it for records without one) */
    static const char xml[] = "<icecast><audience><server-name>unit-1</server-name></audience>"
                              "</icecast>";
    config_t *cfg = NULL;
    char err[256];
    CHECK(config_load_buffer(xml, sizeof(xml) - 1, "t.xml", &cfg, err, sizeof(err), NULL) == 0);
    server_set_config(cfg);
    hours_split_sessions_that_span_them();
    a_whole_period_counts_each_session_once();
    a_mount_and_countries();
    sessions_going_on_count_once_qualified();
    truncation_keeps_the_network();
    webcast_metrics_worked_example();
    aqh_counts_listeners();
    a_session_counts_a_day_at_most();
    pauses_and_listener_keys_worked_example();
    one_pass_matches_the_definitions();
    the_servers_of_the_period();
    server_free_configs();
    return testlib_done();
}
