/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience_top: the top user agents and referrers of a period on a store in memory: most
 * sessions first (ties by name), sessions that were listening in the period only, qualified
 * time clipped to it, mount=, the limit and the total of every session; and the JSON of
 * /admin/audience/top.json: its shape (entries always a list) and client text escaped
 * (quotes, "</script>", control characters, invalid UTF-8 made valid); with the user agents in
 * a column "agent" as in the first stores, or "user_agent".
 */
#include "audience/audience_sqlite.h"

#include <errno.h>
#include <sqlite3.h>

#include "admin/commands.h"
#include "admin/json.h"
#include "testlib.h"

#define MIN 60000LL
#define HOUR 3600000LL

/* A store with the columns the list reads, its user agents in the column agent_col (the
 * first stores' "agent" or "user_agent"). */
static sqlite3 *store(const char *agent_col)
{
    sqlite3 *db = NULL;
    char sql[1024];
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    snprintf(sql, sizeof(sql), "CREATE TABLE sessions (id INTEGER PRIMARY KEY, mount TEXT NOT NULL,"
             " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, %s TEXT, referer TEXT,"
             " invalid TEXT NOT NULL DEFAULT '');"
             "CREATE INDEX sessions_start ON sessions (start_ms);", agent_col);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    /* mount, start, end (ms), agent, referer; qualifying at 60 s */
    snprintf(sql, sizeof(sql), "INSERT INTO sessions (mount, start_ms, end_ms, %s, referer) VALUES"
        " ('/a', 0, 600000, 'VLC/3.0', 'http://r.example/'),"
        " ('/a', 60000, 90000, 'VLC/3.0', NULL),"
        " ('/b', 120000, 150000, 'VLC/3.0', NULL),"
        " ('/a', 1000, 301000, '<script>alert(\"x\")</script>', 'http://r.example/'),"
        " ('/a', 2000, 3000, '<script>alert(\"x\")</script>', NULL),"
        " ('/b', 0, 10000, NULL, NULL),"
        " ('/b', 0, 20000, CAST(X'41FF0142' AS TEXT), NULL),"
        " ('/a', 2 * 3600000, 2 * 3600000 + 5000, 'later', NULL)", agent_col);
    CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    return db;
}

static void agents_with_the_most_sessions_come_first(const char *agent_col)
{
    sqlite3 *db = store(agent_col);
    audience_top_t t = {.from_ms = 0, .to_ms = HOUR, .limit = 10, .qualify_s = 60};
    audience_sqlite_top(db, &t);
    CHECK(t.err == 0);
    CHECK(t.sessions == 7);        /* the later one is out of the period */
    CHECK(t.n == 4);
    if (t.n == 4) {
        CHECK_STR(t.entries[0].name, "VLC/3.0");
        CHECK(t.entries[0].sessions == 3 && t.entries[0].qualified == 1);
        CHECK(t.entries[0].listened_ms == 600000);
        CHECK_STR(t.entries[1].name, "<script>alert(\"x\")</script>");
        CHECK(t.entries[1].sessions == 2 && t.entries[1].qualified == 1);
        CHECK(t.entries[1].listened_ms == 300000);
        CHECK(t.entries[2].name == NULL && t.entries[2].sessions == 1); /* none: ties by name */
        CHECK(t.entries[3].name != NULL && t.entries[3].sessions == 1);
    }
    audience_top_clear(&t);
    /* a robot's session: in the gross list only */
    CHECK(sqlite3_exec(db, "INSERT INTO sessions (mount, start_ms, end_ms, referer, invalid)"
                       " VALUES ('/a', 0, 600000, NULL, 'bot')", NULL, NULL, NULL) == SQLITE_OK);
    t = (audience_top_t){.from_ms = 0, .to_ms = HOUR, .limit = 10, .qualify_s = 60};
    audience_sqlite_top(db, &t);
    CHECK(t.err == 0 && t.sessions == 7);
    audience_top_clear(&t);
    t = (audience_top_t){.from_ms = 0, .to_ms = HOUR, .limit = 10, .qualify_s = 60, .gross = 1};
    audience_sqlite_top(db, &t);
    CHECK(t.err == 0 && t.sessions == 8);
    audience_top_clear(&t);
    CHECK(sqlite3_exec(db, "DELETE FROM sessions WHERE invalid <> ''", NULL, NULL, NULL) ==
          SQLITE_OK);
    /* the period clips the qualified time; mount= keeps one mount; the limit cuts the list */
    t = (audience_top_t){.from_ms = 6 * MIN, .to_ms = HOUR, .limit = 10, .qualify_s = 60};
    audience_sqlite_top(db, &t);
    CHECK(t.sessions == 1 && t.n == 1 && t.entries[0].listened_ms == 4 * MIN);
    audience_top_clear(&t);
    t = (audience_top_t){.from_ms = 0, .to_ms = HOUR, .limit = 1, .qualify_s = 60,
                         .mount = strdup("/a")};
    audience_sqlite_top(db, &t);
    CHECK(t.sessions == 4 && t.n == 1 && t.entries[0].sessions == 2);
    audience_top_clear(&t);
    t = (audience_top_t){.from_ms = 0, .to_ms = HOUR, .limit = 10, .by_referer = 1,
                         .qualify_s = 60};
    audience_sqlite_top(db, &t);
    CHECK(t.n == 2 && t.entries[0].name == NULL && t.entries[0].sessions == 5);
    CHECK(t.n == 2 && t.entries[1].sessions == 2);
    CHECK_STR(t.n == 2 ? t.entries[1].name : NULL, "http://r.example/");
    audience_top_clear(&t);
    t = (audience_top_t){.from_ms = 0, .to_ms = HOUR, .limit = 10};
    audience_sqlite_top(NULL, &t);
    CHECK(t.err == -ENODEV);
    sqlite3_close(db);
}

static char *top_json(sqlite3 *db, int64_t from, int64_t to)
{
    audience_top_t t = {.from_ms = from, .to_ms = to, .limit = 10, .qualify_s = 60};
    audience_sqlite_top(db, &t);
    xmlDocPtr doc = admin_audience_top_doc(&t);
    size_t len = 0;
    char *json = doc ? json_render(doc, &len) : NULL;
    if (doc)
        xmlFreeDoc(doc);
    audience_top_clear(&t);
    return json;
}

static void the_json_escapes_what_clients_sent(const char *agent_col)
{
    sqlite3 *db = store(agent_col);
    char *json = top_json(db, 0, HOUR);
    CHECK(json != NULL);
    if (json) {
        static const char head[] = "{\"audience_top\":{\"from\":\"1970-01-01T00:00:00Z\","
                                   "\"to\":\"1970-01-01T01:00:00Z\",\"by\":\"agent\","
                                   "\"traffic\":\"net\",\"sessions\":7,\"entry\":[";
        CHECK(strncmp(json, head, sizeof(head) - 1) == 0);
        CHECK(strstr(json, "{\"name\":\"VLC/3.0\",\"sessions\":3,\"qualified_sessions\":1,"
                           "\"tlh_hours\":0.166667}") != NULL);
        CHECK(strstr(json, "\"name\":\"<script>alert(\\\"x\\\")<\\/script>\"") != NULL);
        CHECK(strstr(json, "</script>") == NULL);
        CHECK(strstr(json, "\"name\":\"\",\"sessions\":1") != NULL);   /* none sent */
        CHECK(strstr(json, "\"name\":\"A\xc3\xbf" "B\"") != NULL); /* valid UTF-8, no \x01 */
        CHECK(strchr(json, '\x01') == NULL && strchr(json, '\xff') == NULL);
    }
    free(json);
    /* one entry is still a list; none is no key */
    json = top_json(db, 2 * HOUR, 3 * HOUR);
    CHECK(json && strstr(json, "\"entry\":[{\"name\":\"later\"") != NULL);
    free(json);
    json = top_json(db, 5 * HOUR, 6 * HOUR);
    CHECK(json && strstr(json, "\"sessions\":0}}") != NULL && !strstr(json, "entry"));
    free(json);
    sqlite3_close(db);
}

int main(void)
{
    static const char *const columns[] = {"agent", "user_agent"};
    for (size_t i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
        agents_with_the_most_sessions_come_first(columns[i]);
        the_json_escapes_what_clients_sent(columns[i]);
    }
    return testlib_done();
}
