/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience_bots: invalid traffic. The bots lists: the IAB/ABC format (active and
 * inactive entries, start-of-string, exceptions, comments, malformed lines counted and
 * skipped, a plain pattern line), the built-in list (self-declared robots and monitors in,
 * players, browsers, curl and ffmpeg out); why a session is invalid (a robot's agent, a
 * listener key over <max-concurrent-per-listener> on a mount: each of its sessions then, a
 * robot staying a robot); and the figures net and gross on the SQLite store: net leaves the
 * invalid sessions out of every figure, CUME counting only listeners with a valid qualified
 * session.
 */
#include "audience/bots.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience.h"
#include "audience/audience_sqlite.h"
#include "conf/config.h"
#include "net/server.h"
#include "stream/session.h"
#include "testlib.h"

#define MIN 60000LL
#define HOUR 3600000LL

static void the_iab_format_is_read(void)
{
    static const char list[] =
        "# IAB/ABC International Spiders & Bots List (a sample in its format)\n"
        "\n"
        "googlebot|1||0|2|0\n"
        "crawl|1|crawley browser, NotACrawl|1|0|0\r\n" /* exceptions: the whitelist */
        "java/|1||0|1|1\n"                              /* at the start of the agent only */
        "oldbot|0||0|2|0|01/01/2020\n"                  /* inactive */
        "StreamChecker\n"                               /* a plain pattern */
        "bad|2||0|2|0\n"                                /* an active flag that is not one */
        "|1||0|2|0\n"                                   /* no pattern */
        "x|1||0|2|0|a|b\n"                              /* too many fields */
        "y|1||0|2|7\n";                                 /* a start flag that is not one */
    size_t bad = 0;
    bots_t *b = bots_parse(list, sizeof(list) - 1, &bad);
    CHECK(b != NULL);
    CHECK(bad == 4);
    CHECK(bots_count(b) == 4);
    CHECK(bots_match(b, "Mozilla/5.0 (compatible; Googlebot/2.1)"));
    CHECK(bots_match(b, "WebCrawler/1.0"));
    CHECK(!bots_match(b, "Crawley Browser 2.0"));       /* excepted (any case) */
    CHECK(!bots_match(b, "x notacrawler"));
    CHECK(bots_match(b, "Java/17.0.1"));
    CHECK(!bots_match(b, "Mozilla/5.0 Java/17.0.1"));   /* not at the start */
    CHECK(!bots_match(b, "oldbot/1.0"));                /* inactive */
    CHECK(bots_match(b, "streamchecker 3"));
    CHECK(!bots_match(b, "") && !bots_match(b, NULL) && !bots_match(NULL, "googlebot"));
    bots_free(b);
    /* empty, or comments only */
    b = bots_parse("# nothing\n", 10, &bad);
    CHECK(b && bots_count(b) == 0 && bad == 0 && !bots_match(b, "googlebot"));
    bots_free(b);
}

static void the_builtin_list_holds_self_declared_robots_only(void)
{
    static const char *const robots[] = {
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
        "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)",
        "Mozilla/5.0 (compatible; AhrefsBot/7.0; +http://ahrefs.com/robot/)",
        "Mozilla/5.0 (compatible; UptimeRobot/2.0; http://www.uptimerobot.com/)",
        "Pingdom.com_bot_version_1.4_(http://www.pingdom.com/)",
        "StatusCake", "Site24x7", "Uptime-Kuma/1.23.0", "check_http/v2.3.3 (nagios-plugins)",
        "Zabbix", "Blackbox Exporter/0.24.0", "facebookexternalhit/1.1",
        "Mozilla/5.0 (compatible; Yahoo! Slurp)", "Baiduspider+(+http://www.baidu.com)",
        "Icecast Stream Monitor 1.0", "my-crawler 2", "stream-bot",
    };
    const bots_t *b = bots_builtin();
    CHECK(b && bots_count(b) > 10);
    for (size_t i = 0; i < sizeof(robots) / sizeof(robots[0]); i++) {
        if (!bots_match(b, robots[i]))
            fprintf(stderr, "not a robot: %s\n", robots[i]);
        CHECK(bots_match(b, robots[i]));
    }
    /* "bot" ending the agent with no separator after it is not in the list (a station names
     * such agents in <bots>) */
    CHECK(!bots_match(b, "RadioBot"));
    static const char *const people[] = {
        "curl/8.5.0", "Lavf/60.16.100", "VLC/3.0.20 LibVLC/3.0.20", "mpv 0.37.0",
        "Wget/1.21.4", "python-requests/2.31.0", "AppleCoreMedia/1.0.0.21A329 (iPhone)",
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/124.0.0.0 Safari/537.36",
        "Mozilla/5.0 (Linux; Android 10; CUBOT X30) AppleWebKit/537.36 Chrome/90.0 Mobile",
        "Mozilla/5.0 (Linux; Android 9; CUBOT_P30) AppleWebKit/537.36", "Winamp", "iTunes/12.1",
        "Sonos/70.3-35220 (ZPS1)", "TuneIn Radio/27.1", "Botanic Radio/1.0", "",
    };
    for (size_t i = 0; i < sizeof(people) / sizeof(people[0]); i++) {
        if (bots_match(b, people[i]))
            fprintf(stderr, "a robot: %s\n", people[i]);
        CHECK(!bots_match(b, people[i]));
    }
}

static session_record_t rec(uint64_t id, const char *mount, const char *ip, const char *agent)
{
    return (session_record_t){.id = id, .mount = mount, .start_ms = session_now_ms(),
                              .address = ip, .agent = agent};
}

static const char *last_invalid;
static void sink(const session_record_t *r)
{
    last_invalid = r->invalid;
}

static void sessions_say_why_they_are_invalid(void)
{
    bots_load(); /* the built-in list (no <bots>), the classifier registered */
    CHECK(strcmp(bots_classify("Googlebot/2.1"), SESSION_INVALID_BOT) == 0);
    CHECK(strcmp(bots_classify("curl/8.5.0"), "") == 0 && strcmp(bots_classify(NULL), "") == 0);
    /* the limit is 2 (the config below): a third session of one key on /a makes all three
     * concurrent; on /b the same listener is alone; a robot over the limit stays a robot */
    session_record_t r1 = rec(1, "/a", "192.0.2.1", "curl/8"),
                     r2 = rec(2, "/a", "192.0.2.1", "curl/8"),
                     r3 = rec(3, "/a", "192.0.2.1", "curl/8"),
                     r4 = rec(4, "/b", "192.0.2.1", "curl/8"),
                     r5 = rec(5, "/a", "192.0.2.9", "Googlebot/2.1"),
                     r6 = rec(6, "/a", "192.0.2.9", "Googlebot/2.1"),
                     r7 = rec(7, "/a", "192.0.2.9", "Googlebot/2.1");
    session_live_t *s1 = session_listener_join(&r1), *s2 = session_listener_join(&r2);
    CHECK(strcmp(session_live_invalid(s1), "") == 0 && strcmp(session_live_invalid(s2), "") == 0);
    session_live_t *s3 = session_listener_join(&r3), *s4 = session_listener_join(&r4);
    CHECK(strcmp(session_live_invalid(s1), SESSION_INVALID_CONCURRENT) == 0);
    CHECK(strcmp(session_live_invalid(s2), SESSION_INVALID_CONCURRENT) == 0);
    CHECK(strcmp(session_live_invalid(s3), SESSION_INVALID_CONCURRENT) == 0);
    CHECK(strcmp(session_live_invalid(s4), "") == 0);
    session_live_t *s5 = session_listener_join(&r5), *s6 = session_listener_join(&r6),
                   *s7 = session_listener_join(&r7);
    CHECK(strcmp(session_live_invalid(s5), SESSION_INVALID_BOT) == 0);
    CHECK(strcmp(session_live_invalid(s7), SESSION_INVALID_BOT) == 0);
    CHECK(session_live_invalid(NULL) == NULL);
    session_listener_leave(s1);
    session_listener_leave(s2);
    session_listener_leave(s3);
    /* the listener back with one session: valid again */
    session_live_t *s8 = session_listener_join(&r1);
    CHECK(strcmp(session_live_invalid(s8), "") == 0);
    session_listener_leave(s8);
    session_listener_leave(s4);
    session_listener_leave(s5);
    session_listener_leave(s6);
    session_listener_leave(s7);
    /* a record no session going on classified: session_end asks by its agent */
    session_set_sink(sink);
    session_record_t e = rec(9, "/a", "192.0.2.3", "Mozilla/5.0 (compatible; bingbot/2.0)");
    e.end_ms = e.start_ms + 1000;
    session_end(&e);
    CHECK(last_invalid && strcmp(last_invalid, SESSION_INVALID_BOT) == 0);
    e.agent = "VLC/3.0.20";
    session_end(&e);
    CHECK(last_invalid && strcmp(last_invalid, "") == 0);
    e.invalid = SESSION_INVALID_CONCURRENT; /* said by its session: kept */
    session_end(&e);
    CHECK(last_invalid && strcmp(last_invalid, SESSION_INVALID_CONCURRENT) == 0);
    session_set_sink(NULL);
}

static const audience_row_t *row(const audience_query_t *q, const char *mount)
{
    for (size_t i = 0; i < q->nrows; i++)
        if (strcmp(q->rows[i].mount, mount) == 0)
            return &q->rows[i];
    return NULL;
}

static void net_figures_leave_invalid_sessions_out(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    /* one hour on /a: k1 valid 10 min; k2 a robot 20 min; k3 two sessions at once over the
     * limit (concurrent, 10 min each) and one valid session of 5 min later; k4 concurrent
     * only (2 min) */
    static const char rows[] =
        "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, ended,"
        " listener_key, invalid) VALUES"
        " (1, '/a', '/a', 0, 600000, 1, 'A', 'client_left', 'k1', ''),"
        " (2, '/a', '/a', 0, 1200000, 1, 'B', 'client_left', 'k2', 'bot'),"
        " (3, '/a', '/a', 60000, 660000, 1, 'C', 'client_left', 'k3', 'concurrent'),"
        " (4, '/a', '/a', 60000, 660000, 1, 'C', 'client_left', 'k3', 'concurrent'),"
        " (5, '/a', '/a', 1800000, 2100000, 1, 'C', 'client_left', 'k3', ''),"
        " (6, '/a', '/a', 2400000, 2520000, 1, 'D', 'client_left', 'k4', 'concurrent')";
    CHECK(sqlite3_exec(db, rows, NULL, NULL, NULL) == SQLITE_OK);
    audience_query_t q = {.from_ms = 0, .to_ms = HOUR, .qualify_s = 60};
    audience_sqlite_figures(db, &q);
    const audience_row_t *r = row(&q, "/a");
    CHECK(q.err == 0 && r);
    if (r) { /* net: k1 and k3's later session */
        CHECK(r->sessions == 2 && r->qualified == 2 && r->cume == 2 && r->peak == 1);
        CHECK(r->listened_ms == 600000 + 300000 && r->active == 2 && r->started == 2);
    }
    audience_query_clear(&q);
    q = (audience_query_t){.from_ms = 0, .to_ms = HOUR, .qualify_s = 60, .gross = 1};
    audience_sqlite_figures(db, &q);
    r = row(&q, "/a");
    CHECK(q.err == 0 && r);
    if (r) { /* gross: all six, four listeners, four at once at 00:01 */
        CHECK(r->sessions == 6 && r->qualified == 6 && r->cume == 4 && r->peak == 4);
        CHECK(r->listened_ms == 600000 + 1200000 + 2 * 600000 + 300000 + 120000);
    }
    audience_query_clear(&q);
    sqlite3_close(db);
}

int main(void)
{
    static const char xml[] = "<icecast><audience><server-name>unit-1</server-name>"
                              "<max-concurrent-per-listener>2</max-concurrent-per-listener>"
                              "<session-log>none</session-log></audience></icecast>";
    config_t *cfg = NULL;
    char err[256];
    CHECK(config_load_buffer(xml, sizeof(xml) - 1, "t.xml", &cfg, err, sizeof(err), NULL) == 0);
    server_set_config(cfg);
    the_iab_format_is_read();
    the_builtin_list_holds_self_declared_robots_only();
    sessions_say_why_they_are_invalid();
    net_figures_leave_invalid_sessions_out();
    server_free_configs();
    return testlib_done();
}
