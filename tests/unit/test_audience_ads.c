/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience_ads: the ads figures (audience/audience_ads.h) on made-up ad decisions in an
 * SQLite store in memory, as the store's thread writes them (audience_sqlite_ads_insert): per
 * period and mount, requests (decisions), fills (ads placed), impressions, starts, completes
 * and seconds delivered, the server's row their sum; per creative each quartile; a decision
 * without ads counts as a request only; a record written twice counts once; net leaves out
 * the ads of a session recorded invalid (same server, id and mount, over its time), gross
 * keeps them; mount= and server=; by hour. And a decision through the spool's A1 line and
 * back, its title with tabs, backslashes and quotes unchanged, and an A1 line that lies about
 * its number of ads refused. (PostgreSQL's statements are run by tests/wire/test_ads_figures.py.)
 */
#include "audience/audience_ads.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_spool.h"
#include "audience/audience_sqlite.h"
#include "testlib.h"

#define HOUR 3600000LL
#define T0 (1795726800000LL) /* 2026-11-27T10:00:00Z, a whole hour */

static sqlite3 *store(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_ads_schema(), NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static uint8_t next_uid = 1;

/* A decision of session `session` on mount, asked at `at`, with n ads of creative ids cids
 * (their events in ev, delivered ms in got, 10 s long each). */
static void decide(sqlite3 *db, const char *server, uint64_t session, const char *mount,
                   int64_t at, ads_outcome_t outcome, int n, const char *const *cids,
                   const unsigned *ev, const uint32_t *got, int twice)
{
    ads_record_t r = {.session = session, .mount = (char *)mount, .asked_ms = at,
                      .ended_ms = at + 30000, .outcome = outcome, .break_ms = 30000, .n = n};
    for (int i = 0; i < n; i++) {
        snprintf(r.ad[i].ad_id, sizeof(r.ad[i].ad_id), "ad-%s", cids[i]);
        snprintf(r.ad[i].creative_id, sizeof(r.ad[i].creative_id), "%s", cids[i]);
        r.ad[i].title = (char *)"Spring \"sale\" <now>";
        r.ad[i].duration_ms = 10000;
        r.ad[i].delivered_ms = got[i];
        r.ad[i].events = ev[i];
    }
    audience_record_t *e = audience_record_copy_ad(&r, server);
    CHECK(e != NULL);
    e->uid[15] = next_uid++;
    sqlite3_stmt *ins = NULL;
    CHECK(audience_sqlite_ads_prepare(db, &ins) == SQLITE_OK);
    CHECK(audience_sqlite_ads_insert(ins, e) == 0);
    if (twice) /* the same record again (a replay of the spool): there once */
        CHECK(audience_sqlite_ads_insert(ins, e) == 0);
    sqlite3_finalize(ins);
    free(e);
}

static void session(sqlite3 *db, const char *server, uint64_t id, const char *mount,
                    int64_t start, int64_t end, const char *invalid)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, ended,"
             " server, invalid) VALUES (%llu, '%s', '%s', %lld, %lld, 1, 'A', 'client_left',"
             " '%s', '%s')", (unsigned long long)id, mount, mount, (long long)start,
             (long long)end, server, invalid);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
}

enum { ALL = ADS_FIRED_START | ADS_FIRED_IMPRESSION | ADS_FIRED_Q1 | ADS_FIRED_MID |
             ADS_FIRED_Q3 | ADS_FIRED_COMPLETE,
       HALF = ADS_FIRED_START | ADS_FIRED_IMPRESSION | ADS_FIRED_Q1 | ADS_FIRED_MID };

/* The made-up decisions: on /a at 10:05, two listeners with pods of two ads (c1 complete, c2
 * complete for one, halfway for the other), one with nothing (timeout), one empty; on /b at
 * 11:10 a robot's (its session invalid) with c1 complete, and a valid one with c1 started only;
 * on edge-2 at 10:20, /a, c1 complete. */
static sqlite3 *made_up(void)
{
    sqlite3 *db = store();
    const char *two[] = {"c1", "c2"}, *one[] = {"c1"};
    const unsigned both[] = {ALL, ALL}, first_half[] = {ALL, HALF}, all1[] = {ALL},
                   start1[] = {ADS_FIRED_START};
    const uint32_t full2[] = {10000, 10000}, part2[] = {10000, 6000}, full1[] = {10000},
                   little[] = {500};
    int64_t a = T0 + 5 * 60000, b = T0 + HOUR + 10 * 60000;
    decide(db, "edge-1", 1, "/a", a, ADS_OUT_FILLED, 2, two, both, full2, 1);
    decide(db, "edge-1", 2, "/a", a + 1, ADS_OUT_FILLED, 2, two, first_half, part2, 0);
    decide(db, "edge-1", 3, "/a", a + 2, ADS_OUT_TIMEOUT, 0, NULL, NULL, NULL, 0);
    decide(db, "edge-1", 4, "/a", a + 3, ADS_OUT_EMPTY, 0, NULL, NULL, NULL, 1);
    decide(db, "edge-1", 5, "/b", b, ADS_OUT_FILLED, 1, one, all1, full1, 0);
    session(db, "edge-1", 5, "/b", b - 1000, b + 60000, "bot");
    session(db, "edge-2", 5, "/b", b - 1000, b + 60000, "bot"); /* another server's id 5 */
    decide(db, "edge-1", 6, "/b", b + 1, ADS_OUT_FILLED, 1, one, start1, little, 0);
    session(db, "edge-1", 6, "/b", b - 1000, b + 60000, "");
    decide(db, "edge-2", 5, "/a", T0 + 20 * 60000, ADS_OUT_FILLED, 1, one, all1, full1, 0);
    return db;
}

static audience_ads_query_t ask(sqlite3 *db, int64_t step, const char *mount, const char *server,
                                int gross)
{
    audience_ads_query_t q = {.from_ms = T0, .to_ms = T0 + 2 * HOUR, .step_ms = step,
                              .mount = mount ? strdup(mount) : NULL,
                              .server = server ? strdup(server) : NULL, .gross = gross};
    audience_sqlite_ads_figures(db, &q);
    CHECK(q.err == 0);
    return q;
}

static const audience_ads_mount_t *mount_row(const audience_ads_query_t *q, int64_t from,
                                             const char *mount)
{
    for (size_t i = 0; i < q->nmounts; i++)
        if (q->mounts[i].from_ms == from &&
            (mount ? q->mounts[i].mount && strcmp(q->mounts[i].mount, mount) == 0
                   : !q->mounts[i].mount))
            return &q->mounts[i];
    return NULL;
}

static const audience_ads_creative_t *creative_row(const audience_ads_query_t *q, int64_t from,
                                                   const char *id)
{
    for (size_t i = 0; i < q->ncreatives; i++)
        if (q->creatives[i].from_ms == from && strcmp(q->creatives[i].creative_id, id) == 0)
            return &q->creatives[i];
    return NULL;
}

#define CHECK_MOUNT(m, rq, fi, im, st, co, ms)                                                  \
    do {                                                                                       \
        CHECK((m) != NULL);                                                                    \
        if (m) {                                                                               \
            CHECK((m)->requests == (rq) && (m)->fills == (fi));                                \
            CHECK((m)->impressions == (im) && (m)->starts == (st));                            \
            CHECK((m)->completes == (co) && (m)->delivered_ms == (ms));                        \
        }                                                                                      \
    } while (0)

static void a_whole_period_per_mount_and_creative(void)
{
    sqlite3 *db = made_up();
    audience_ads_query_t q = ask(db, 0, NULL, NULL, 0); /* net */
    CHECK(q.nmounts == 3 && q.mounts[0].mount == NULL); /* the server's first */
    /* /a: 5 decisions (edge-2's too), 5 ads; c2 halfway for one */
    CHECK_MOUNT(mount_row(&q, T0, "/a"), 5, 5, 5, 5, 4, 46000);
    /* /b net: the robot's decision left out */
    CHECK_MOUNT(mount_row(&q, T0, "/b"), 1, 1, 0, 1, 0, 500);
    CHECK_MOUNT(mount_row(&q, T0, NULL), 6, 6, 5, 6, 4, 46500);
    const audience_ads_creative_t *c1 = creative_row(&q, T0, "c1"),
                                  *c2 = creative_row(&q, T0, "c2");
    CHECK(q.ncreatives == 2 && c1 && c2);
    if (c1 && c2) {
        CHECK(c1->impressions == 3 && c1->starts == 4 && c1->q1 == 3 && c1->completes == 3);
        CHECK(c2->impressions == 2 && c2->q1 == 2 && c2->mid == 2 && c2->q3 == 1 &&
              c2->completes == 1);
        CHECK_STR(c1->ad_id, "ad-c1");
        CHECK_STR(c1->title, "Spring \"sale\" <now>");
    }
    audience_ads_query_clear(&q);
    q = ask(db, 0, NULL, NULL, 1); /* gross: the robot's too */
    CHECK_MOUNT(mount_row(&q, T0, "/b"), 2, 2, 1, 2, 1, 10500);
    audience_ads_query_clear(&q);
    sqlite3_close(db);
}

static void by_hour_one_mount_one_server(void)
{
    sqlite3 *db = made_up();
    audience_ads_query_t q = ask(db, HOUR, NULL, NULL, 0);
    CHECK_MOUNT(mount_row(&q, T0, "/a"), 5, 5, 5, 5, 4, 46000);
    CHECK_MOUNT(mount_row(&q, T0 + HOUR, "/b"), 1, 1, 0, 1, 0, 500);
    CHECK(mount_row(&q, T0, "/b") == NULL && mount_row(&q, T0 + HOUR, "/a") == NULL);
    CHECK_MOUNT(mount_row(&q, T0 + HOUR, NULL), 1, 1, 0, 1, 0, 500);
    audience_ads_query_clear(&q);
    q = ask(db, 0, "/a", "edge-2", 0); /* one mount: no server row */
    CHECK(q.nmounts == 1);
    CHECK_MOUNT(mount_row(&q, T0, "/a"), 1, 1, 1, 1, 1, 10000);
    audience_ads_query_clear(&q);
    q = ask(db, 0, NULL, "edge-2", 1); /* edge-2 has no /b decision: its robot is edge-1's */
    CHECK(mount_row(&q, T0, "/b") == NULL);
    audience_ads_query_clear(&q);
    sqlite3_close(db);
}

static void a_decision_through_the_spool(void)
{
    ads_record_t r = {.session = 77, .mount = (char *)"/live\tx", .hls = 1, .asked_ms = T0,
                      .ended_ms = T0 + 9000, .outcome = ADS_OUT_FILLED, .break_ms = 30000,
                      .n = 2};
    snprintf(r.ad[0].ad_id, sizeof(r.ad[0].ad_id), "a\\1");
    snprintf(r.ad[0].creative_id, sizeof(r.ad[0].creative_id), "url:0011223344556677");
    r.ad[0].title = (char *)"tab\there \"q\" back\\slash";
    r.ad[0].events = ALL;
    r.ad[0].delivered_ms = r.ad[0].duration_ms = 5000;
    snprintf(r.ad[1].ad_id, sizeof(r.ad[1].ad_id), "b");
    snprintf(r.ad[1].creative_id, sizeof(r.ad[1].creative_id), "c");
    r.ad[1].events = HALF;
    audience_record_t *e = audience_record_copy_ad(&r, "edge-1");
    CHECK(e && e->ad && e->r.id == 77 && e->r.start_ms == T0);
    e->uid[0] = 0xab;
    buf_t b = BUF_INIT;
    CHECK(audience_spool_encode(&b, e) == 0);
    CHECK(b.len > 3 && memcmp(b.data, "A1\t", 3) == 0);
    audience_record_t *back = audience_spool_decode(b.data, b.len - 1);
    CHECK(back && back->ad);
    if (back && back->ad) {
        const ads_record_t *z = back->ad;
        CHECK(back->uid[0] == 0xab && z->session == 77 && z->hls == 1 && z->n == 2);
        CHECK_STR(z->mount, "/live\tx");
        CHECK_STR(back->server, "edge-1");
        CHECK_STR(z->ad[0].title, "tab\there \"q\" back\\slash");
        CHECK_STR(z->ad[0].ad_id, "a\\1");
        CHECK(z->ad[1].title == NULL && z->ad[1].events == HALF && z->outcome == ADS_OUT_FILLED);
    }
    free(back);
    /* a line whose number of ads is not its fields' */
    char *nl = memchr(b.data, '\n', b.len);
    CHECK(nl != NULL);
    char *last_tab = NULL;
    for (char *p = b.data; p < nl; p++)
        if (*p == '\t')
            last_tab = p;
    CHECK(audience_spool_decode(b.data, (size_t)(last_tab - b.data)) == NULL);
    buf_free(&b);
    free(e);
    CHECK_STR(ads_reached_name(HALF), "midpoint");
    CHECK_STR(ads_reached_name(ADS_FIRED_START), "start");
    CHECK_STR(ads_reached_name(0), "none");
    CHECK(ads_outcome_of("no_match") == ADS_OUT_NO_MATCH && ads_outcome_of("x") < 0);
}

int main(void)
{
    RUN(a_whole_period_per_mount_and_creative);
    RUN(by_hour_one_mount_one_server);
    RUN(a_decision_through_the_spool);
    return testlib_done();
}
