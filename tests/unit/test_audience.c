/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience: the audience figures by their definitions on a store in memory: sessions and
 * qualified sessions of a bucket are those listening in it, TLH is the qualified time inside
 * the bucket (a session over an hour's end is split), CUME counts address + agent pairs of
 * qualified sessions, peak the most sessions at once, prerolls those played through of the
 * sessions that began in it; the server line sums the mounts; mount= and sessions per
 * country; sessions going on count once qualified; and the address truncation of the
 * privacy setting.
 */
#include "stats/audience.h"

#include <errno.h>
#include <sqlite3.h>

#include "core/cidr.h"
#include "stats/audience_store.h"
#include "testlib.h"

#define MIN 60000LL
#define HOUR 3600000LL

static sqlite3 *store(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_store_schema(), NULL, NULL, NULL) == SQLITE_OK);
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
    audience_figures(db, &q);
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
    audience_figures(db, &q);
    CHECK(q.err == 0 && q.nrows == 3);
    CHECK_ROW(row(&q, 0, "/a"), 4, 2, 900000 + 200000, 2, 2);
    CHECK_ROW(row(&q, 0, ""), 5, 3, 900000 + 200000 + 3400000, 2, 2);
    audience_query_clear(&q);
    /* a bucket that ends inside a day: buckets end at whole days, the last at `to` */
    q = (audience_query_t){.from_ms = 30 * MIN, .to_ms = 50 * MIN, .step_ms = 24 * HOUR,
                           .qualify_s = 60};
    audience_figures(db, &q);
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
    audience_figures(db, &q);
    CHECK(q.nrows == 1 && strcmp(q.rows[0].mount, "/b") == 0);
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 0, .to_ms = 2 * HOUR, .qualify_s = 60};
    audience_figures(db, &q);
    CHECK(q.err == 0);
    const audience_row_t *a = row(&q, 0, "/a"), *all = row(&q, 0, "");
    CHECK(a && a->ncountries == 3 && all && all->ncountries == 3);
    CHECK(of_country(a, "DE") == 2 && of_country(a, "FR") == 1 && of_country(a, "") == 1);
    CHECK(of_country(all, "DE") == 3);
    audience_query_clear(&q);
    /* an empty period still has its server line */
    q = (audience_query_t){.from_ms = 10 * HOUR, .to_ms = 11 * HOUR, .qualify_s = 60};
    audience_figures(db, &q);
    CHECK_ROW(row(&q, 10 * HOUR, ""), 0, 0, 0, 0, 0);
    CHECK(q.nrows == 1);
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 0, .to_ms = HOUR, .qualify_s = 60};
    audience_figures(NULL, &q);
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
    audience_figures(db, &q);
    CHECK(q.err == 0);
    const audience_row_t *r = row(&q, now - HOUR, "/live");
    CHECK(r && r->sessions == 1 && r->qualified == 1 && r->in_progress == 1 && r->cume == 1);
    CHECK(r && r->listened_ms >= 120000 && r->listened_ms < 130000 && r->prerolls == 1);
    CHECK(of_country(r, "NL") == 1);
    audience_query_clear(&q);
    session_listener_leave(s1);
    session_listener_leave(s2);
    q = (audience_query_t){.from_ms = now - HOUR, .to_ms = now + MIN, .qualify_s = 60};
    audience_figures(db, &q);
    CHECK(q.err == 0 && !row(&q, now - HOUR, "/live"));
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

int main(void)
{
    hours_split_sessions_that_span_them();
    a_whole_period_counts_each_session_once();
    a_mount_and_countries();
    sessions_going_on_count_once_qualified();
    truncation_keeps_the_network();
    return testlib_done();
}
