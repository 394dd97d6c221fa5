/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience_export: the session log out. Text as a W3C extended log field (quoted, a quote
 * doubled, a backslash doubled, control characters as \xHH, "-" for none) and as a TSV field
 * (\t, \n, \r and \\ escaped, \N for none); the directives and header; a line of each format
 * with the listener as its key, or its address cut to its network without one; and the SQLite
 * store read a chunk at a time: every session that ended in the period once, by start, also
 * across a chunk's end among sessions that began at the same millisecond.
 */
#include "audience/audience_export.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_sqlite.h"
#include "conf/config.h"
#include "net/server.h"
#include "testlib.h"

static char *text_of(void (*fn)(buf_t *b, const char *s), const char *s)
{
    buf_t b = BUF_INIT;
    fn(&b, s);
    buf_append_char(&b, '\0');
    size_t len;
    return buf_take(&b, &len);
}

static void text_is_escaped(void)
{
    CHECK_OWNED(text_of(audience_export_w3c_text, "plain"), "\"plain\"");
    CHECK_OWNED(text_of(audience_export_w3c_text, "say \"hi\""), "\"say \"\"hi\"\"\"");
    CHECK_OWNED(text_of(audience_export_w3c_text, "a\\b"), "\"a\\\\b\"");
    CHECK_OWNED(text_of(audience_export_w3c_text, "t\tn\nr\r\x01\x7f"),
                "\"t\\x09n\\x0Ar\\x0D\\x01\\x7F\"");
    CHECK_OWNED(text_of(audience_export_w3c_text, "caf\xc3\xa9"), "\"caf\xc3\xa9\"");
    CHECK_OWNED(text_of(audience_export_w3c_text, ""), "\"\"");
    CHECK_OWNED(text_of(audience_export_w3c_text, NULL), "-");
    CHECK_OWNED(text_of(audience_export_tsv_text, "t\tn\nr\r\\x"), "t\\tn\\nr\\r\\\\x");
    CHECK_OWNED(text_of(audience_export_tsv_text, "say \"hi\""), "say \"hi\"");
    CHECK_OWNED(text_of(audience_export_tsv_text, ""), "");
    CHECK_OWNED(text_of(audience_export_tsv_text, NULL), "\\N");
}

/* The number of fields of a W3C line: tokens split by single spaces, quoted text whole. */
static size_t w3c_count(const char *line)
{
    size_t n = 0;
    for (const char *p = line; *p && *p != '\n';) {
        n++;
        if (*p == '"') {
            for (p++; *p; p++) {
                if (*p == '"' && p[1] == '"')
                    p++;
                else if (*p == '"')
                    break;
            }
            p++;
        } else {
            while (*p && *p != ' ' && *p != '\n')
                p++;
        }
        if (*p == ' ')
            p++;
    }
    return n;
}

static void lines_have_their_fields(void)
{
    size_t nw, nt;
    audience_export_fields(AUDIENCE_FORMAT_W3C, &nw);
    audience_export_fields(AUDIENCE_FORMAT_TSV, &nt);
    CHECK(nw == 13 && nt == 12);
    buf_t b = BUF_INIT;
    audience_export_head(&b, AUDIENCE_FORMAT_W3C, 1795729801123LL);
    buf_append_char(&b, '\0');
    CHECK(strncmp(b.data, "#Version: 1.0\n", 14) == 0);
    CHECK(strstr(b.data, "\n#Date: 2026-11-26 21:50:01\n") != NULL);
    CHECK(strstr(b.data, "\n#Fields: date time x-start time-taken sc-bytes cs-uri-stem "
                         "s-computername x-listener cs(User-Agent) x-country x-ended x-invalid "
                         "x-kind\n") != NULL);
    buf_free(&b);
    audience_session_row_t r = {.start_ms = 1795729801123LL, .end_ms = 1795729861456LL,
                                .bytes = 42, .mount = "/live", .server = "edge 1",
                                .ip = "192.0.2.77", .agent = "a \"b\" c\td", .ended = "client_left",
                                .invalid = "bot", .hls = 1};
    audience_export_line(&b, AUDIENCE_FORMAT_W3C, &r);
    buf_append_char(&b, '\0');
    CHECK_STR(b.data, "2026-11-26 21:51:01.456 2026-11-26T21:50:01.123Z 60.333 42 \"/live\" "
                      "\"edge 1\" \"192.0.2.0\" \"a \"\"b\"\" c\\x09d\" - \"client_left\" \"bot\" "
                      "\"hls\"\n");
    CHECK(w3c_count(b.data) == nw);
    buf_free(&b);
    r.key = "0123456789abcdef0123456789abcdef";
    r.invalid = "";
    r.hls = 0;
    audience_export_line(&b, AUDIENCE_FORMAT_TSV, &r);
    buf_append_char(&b, '\0');
    CHECK_STR(b.data, "2026-11-26T21:50:01.123Z\t2026-11-26T21:51:01.456Z\t60.333\t42\t/live\t"
                      "edge 1\t0123456789abcdef0123456789abcdef\ta \"b\" c\\td\t\\N\tclient_left\t"
                      "\tstream\n");
    size_t tabs = 0;
    for (const char *p = b.data; *p; p++)
        tabs += *p == '\t';
    CHECK(tabs == nt - 1);
    buf_free(&b);
}

static void the_sqlite_store_is_read_a_chunk_at_a_time(void)
{
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, audience_sqlite_schema(), NULL, NULL, NULL) == SQLITE_OK);
    /* 5000 sessions, ten at each start: those ending in [1000 s, 4000 s) are asked for */
    sqlite3_stmt *ins = NULL;
    CHECK(sqlite3_prepare_v2(db, "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms,"
                             " bytes, ip, ended) VALUES (?1, '/a', '/a', ?2, ?3, ?1, 'x',"
                             " 'client_left')", -1, &ins, NULL) == SQLITE_OK);
    size_t want = 0;
    for (int i = 0; i < 5000; i++) {
        int64_t start = (int64_t)(i / 10) * 10000, end = start + (i % 10) * 1000 + 500;
        want += end >= 1000000 && end < 4000000;
        sqlite3_reset(ins);
        sqlite3_bind_int(ins, 1, i);
        sqlite3_bind_int64(ins, 2, start);
        sqlite3_bind_int64(ins, 3, end);
        CHECK(sqlite3_step(ins) == SQLITE_DONE);
    }
    sqlite3_finalize(ins);
    audience_export_t x;
    CHECK(audience_export_init(&x, 1000000, 4000000, NULL, NULL, AUDIENCE_FORMAT_TSV) == 0);
    size_t rows = 0, chunks = 0, lines = 0;
    char last[64] = "";
    int ordered = 1;
    do {
        x.out.len = 0; /* as audience_export_chunk does */
        x.rows = 0;
        audience_sqlite_sessions(db, &x);
        CHECK(x.err == 0 && x.rows <= AUDIENCE_EXPORT_CHUNK);
        rows += x.rows;
        chunks++;
        buf_append_char(&x.out, '\0');
        for (char *p = x.out.data; *p; p = strchr(p, '\n') + 1) {
            lines++;
            ordered &= strncmp(last, p, 24) <= 0; /* by start */
            snprintf(last, sizeof(last), "%.24s", p);
        }
    } while (x.more && chunks < 10);
    CHECK(rows == want && lines == want && chunks == want / AUDIENCE_EXPORT_CHUNK + 1);
    CHECK(ordered);
    audience_export_clear(&x);
    sqlite3_close(db);
}

int main(void)
{
    static const char xml[] = "<icecast><audience><server-name>unit-1</server-name>"
                              "</audience></icecast>";
    config_t *cfg = NULL;
    char err[256];
    CHECK(config_load_buffer(xml, sizeof(xml) - 1, "t.xml", &cfg, err, sizeof(err), NULL) == 0);
    server_set_config(cfg);
    text_is_escaped();
    lines_have_their_fields();
    the_sqlite_store_is_read_a_chunk_at_a_time();
    server_free_configs();
    return testlib_done();
}
