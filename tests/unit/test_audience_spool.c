/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_audience_spool: the spool of records waiting for a database that is away: a record's
 * line and back (text with tabs, newlines and backslashes, fields without a value), lines that
 * are not records refused (R3 lines with why a session is invalid and its kind; R2 and R1 lines
 * of earlier versions read as valid streams); the file: records appended and read back in order, a few at a time,
 * emptied once all were written, never past its size, a last line cut short (a crash) cut off
 * when it is opened again, held by one opener at a time, a symbolic link refused. And a libpq URI as logs show it: its
 * password replaced, wherever it is.
 */
#include "audience/audience_spool.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audience/audience_pgconn.h"
#include "testlib.h"

static audience_record_t *record(uint64_t id, const char *agent, const char *server)
{
    session_record_t r = {.id = id, .mount = "/live", .start_ms = 1795000000123LL + (int64_t)id,
                          .end_ms = 1795000060456LL, .bytes = 12345, .address = "192.0.2.7",
                          .agent = agent, .country = id % 2 ? "DE" : NULL,
                          .end = SESSION_END_TOO_SLOW, .preroll = (int)(id % 2),
                          .key = id % 2 ? "0123456789abcdef0123456789abcdef" : NULL,
                          .invalid = id % 3 == 0 ? "bot" : id % 3 == 1 ? "concurrent" : "",
                          .hls = (int)(id % 2)};
    audience_record_t *e = audience_record_copy(&r, server);
    for (int i = 0; e && i < 16; i++)
        e->uid[i] = (uint8_t)(id * 16 + (uint64_t)i);
    return e;
}

static int same(const audience_record_t *a, const audience_record_t *b)
{
    const session_record_t *x = &a->r, *y = &b->r;
#define SAME_TEXT(s, t) ((!(s) && !(t)) || ((s) && (t) && strcmp((s), (t)) == 0))
    return memcmp(a->uid, b->uid, 16) == 0 && SAME_TEXT(a->server, b->server) &&
           x->id == y->id && SAME_TEXT(x->mount, y->mount) && SAME_TEXT(x->served, y->served) &&
           x->start_ms == y->start_ms && x->end_ms == y->end_ms && x->bytes == y->bytes &&
           SAME_TEXT(x->address, y->address) && SAME_TEXT(x->agent, y->agent) &&
           SAME_TEXT(x->referer, y->referer) && SAME_TEXT(x->user, y->user) &&
           SAME_TEXT(x->country, y->country) && x->end == y->end && x->preroll == y->preroll &&
           SAME_TEXT(x->key, y->key) && SAME_TEXT(x->invalid, y->invalid) && x->hls == y->hls;
#undef SAME_TEXT
}

static void a_record_makes_a_line_and_back(void)
{
    static const char *const agents[] = {"plain", "tab\there", "new\nline\r", "back\\slash\\t",
                                         "", NULL};
    for (size_t i = 0; i < sizeof(agents) / sizeof(agents[0]); i++) {
        audience_record_t *e = record(i + 1, agents[i], i % 2 ? "edge-1" : NULL);
        buf_t b = BUF_INIT;
        CHECK(e && audience_spool_encode(&b, e) == 0);
        CHECK(b.len > 0 && b.data[b.len - 1] == '\n' && !memchr(b.data, '\n', b.len - 1));
        audience_record_t *back = audience_spool_decode(b.data, b.len - 1);
        CHECK(back && same(e, back));
        free(back);
        free(e);
        buf_free(&b);
    }
    static const char *const bad[] = {
        "", "R1", "R2\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0",
        /* a field short, a field more */
        "R1\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0",
        "R1\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0\t0",
        /* an id that is not hex, a number that is not one, an end out of range, a bad escape */
        "R1\t0000000000000000000000000000000g\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0",
        "R1\t00000000000000000000000000000000\tx\t1x\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0",
        "R1\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t9\t0",
        "R1\t00000000000000000000000000000000\tx\t1\t/m\\q\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0",
        /* a listener key that is not one */
        "R2\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0\tk",
        "R2\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0"
        "\t0123456789abcdef0123456789abcdeg",
        /* R3: a kind that is not 0 or 1, a reason too long, an escape in it, a field short */
        "R3\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0"
        "\t\\N\tbot\t2",
        "R3\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0"
        "\t\\N\tconcurrentconcurrent\t0",
        "R3\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0"
        "\t\\N\tb\\tt\t0",
        "R3\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0"
        "\t\\N\tbot",
        /* no mount */
        "R1\t00000000000000000000000000000000\tx\t1\t\\N\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        audience_record_t *e = audience_spool_decode(bad[i], strlen(bad[i]));
        CHECK(e == NULL);
        free(e);
    }
    const char *good =
        "R1\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N\t\\N\t0\t0";
    audience_record_t *e = audience_spool_decode(good, strlen(good));
    CHECK(e && e->r.served == NULL && e->r.agent == NULL && strcmp(e->r.address, "a") == 0);
    CHECK(e && e->r.key == NULL); /* a line from before records had a key */
    free(e);
    good = "R2\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N"
           "\t\\N\t0\t0\t0123456789abcdef0123456789abcdef";
    e = audience_spool_decode(good, strlen(good));
    CHECK(e && e->r.key && strcmp(e->r.key, "0123456789abcdef0123456789abcdef") == 0);
    free(e);
    good = "R2\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N"
           "\t\\N\t0\t0\t\\N";
    e = audience_spool_decode(good, strlen(good));
    CHECK(e && e->r.key == NULL);
    /* a line from before records said why they were invalid: a valid stream */
    CHECK(e && e->r.invalid && strcmp(e->r.invalid, "") == 0 && e->r.hls == 0);
    free(e);
    good = "R3\t00000000000000000000000000000000\tx\t1\t/m\t\\N\t1\t2\t3\ta\t\\N\t\\N\t\\N"
           "\t\\N\t0\t0\t\\N\tconcurrent\t1";
    e = audience_spool_decode(good, strlen(good));
    CHECK(e && strcmp(e->r.invalid, "concurrent") == 0 && e->r.hls == 1);
    free(e);
}

/* Reads what is left, at most max at a time: the ids in order. */
static size_t read_all(audience_spool_t *s, size_t max, uint64_t *ids, size_t cap)
{
    size_t got = 0;
    while (s->records) {
        size_t n, bad;
        off_t next;
        audience_record_t *list = audience_spool_read(s, max, &n, &next, &bad);
        CHECK(n <= max && bad == 0);
        for (audience_record_t *e = list; e; e = e->next)
            if (got < cap)
                ids[got++] = e->r.id;
        audience_record_free_list(list);
        audience_spool_done(s, next, n + bad);
        if (!n)
            break;
    }
    return got;
}

static void the_file_gives_back_its_records_in_order(const char *dir)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/audience.spool", dir);
    audience_spool_t s;
    const char *why;
    CHECK(audience_spool_open(&s, path, &why) == 0 && s.records == 0);
    /* one process at a time: another open (the process after an upgrade) waits for it */
    audience_spool_t other;
    CHECK(audience_spool_open(&other, path, &why) == -EAGAIN && other.fd < 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    audience_record_t *v[10];
    for (int i = 0; i < 10; i++)
        v[i] = record((uint64_t)i + 1, "agent\twith tab", "edge");
    CHECK(audience_spool_append(&s, v, 4, 1L << 20) == 4);
    CHECK(audience_spool_append(&s, v + 4, 6, 1L << 20) == 6 && s.records == 10);
    uint64_t ids[16];
    CHECK(read_all(&s, 3, ids, 16) == 10);
    for (int i = 0; i < 10; i++)
        CHECK(ids[i] == (uint64_t)i + 1);
    CHECK(s.records == 0 && s.size == 0 && stat(path, &st) == 0 && st.st_size == 0);
    /* never past its size: what does not fit is not appended */
    buf_t one = BUF_INIT;
    audience_spool_encode(&one, v[0]);
    CHECK(audience_spool_append(&s, v, 10, (long)(3 * one.len + 1)) == 3 && s.records == 3);
    buf_free(&one);
    /* a crash in the middle of a line: opened again, the line is cut off */
    audience_spool_close(&s);
    FILE *f = fopen(path, "a");
    CHECK(f && fputs("R1\t0123", f) >= 0);
    if (f)
        fclose(f);
    CHECK(audience_spool_open(&s, path, &why) == 0 && s.records == 3);
    CHECK(audience_spool_append(&s, v + 3, 1, 1L << 20) == 1);
    CHECK(read_all(&s, 100, ids, 16) == 4 && ids[3] == 4);
    audience_spool_close(&s);
    for (int i = 0; i < 10; i++)
        free(v[i]);
    /* a symbolic link at its name is refused */
    char link[600];
    snprintf(link, sizeof(link), "%s/link.spool", dir);
    CHECK(symlink(path, link) == 0);
    CHECK(audience_spool_open(&s, link, &why) < 0 && s.fd < 0);
    unlink(link);
    unlink(path);
}

static void a_uri_is_shown_without_its_password(void)
{
    static const struct {
        const char *uri, *shown;
    } cases[] = {
        {"postgresql://rc:s3cret@db.example:5432/audience",
         "postgresql://rc:***@db.example:5432/audience"},
        {"postgres://rc:s3cret@db/a?sslmode=require&password=other&x=1",
         "postgres://rc:***@db/a?sslmode=require&password=***&x=1"},
        {"postgresql://rc@db/a", "postgresql://rc@db/a"},
        {"postgresql://db/a?password=p", "postgresql://db/a?password=***"},
        {"postgresql:///a", "postgresql:///a"},
        {"postgresql://u:p@h1:5432,h2:5433/a", "postgresql://u:***@h1:5432,h2:5433/a"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK_OWNED(audience_pg_shown(cases[i].uri), cases[i].shown);
    CHECK(audience_pg_is_uri("postgresql://x/y") && audience_pg_is_uri("postgres://x"));
    CHECK(!audience_pg_is_uri("audience.db") && !audience_pg_is_uri("/var/postgres://x") &&
          !audience_pg_is_uri(NULL));
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    char pattern[512];
    snprintf(pattern, sizeof(pattern), "%s/test_audience_spool.XXXXXX", tmp ? tmp : "/tmp");
    char *made = mkdtemp(pattern);
    CHECK(made != NULL);
    a_record_makes_a_line_and_back();
    if (made) {
        the_file_gives_back_its_records_in_order(made);
        rmdir(made);
    }
    a_uri_is_shown_without_its_password();
    return testlib_done();
}
