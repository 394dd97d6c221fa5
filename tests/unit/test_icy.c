/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_icy: inbound ICY metadata in the generic handler (stripping at every split of the input,
 * titles reported once per change) and the icy helpers (StreamTitle parsing, charsets).
 */
#include "core/utf8.h"
#include "format/format.h"
#include "format/icy.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

typedef struct rec {
    unsigned char *audio;
    size_t len;
    char events[8192]; /* "key=value|" and "done|" in order */
    int blocks, nonsync;
} rec_t;

static void rec_emit(void *ctx, block_t *b)
{
    rec_t *r = ctx;
    r->audio = realloc(r->audio, r->len + b->len);
    memcpy(r->audio + r->len, b->data, b->len);
    r->len += b->len;
    r->blocks++;
    r->nonsync += !(b->flags & BLOCK_SYNC) || b->len == 0;
    block_unref(b);
}

static void rec_set_headers(void *ctx, block_t *h)
{
    (void)ctx;
    block_unref(h);
}

static void rec_set_tag(void *ctx, const char *key, const char *value)
{
    rec_t *r = ctx;
    size_t n = strlen(r->events);
    snprintf(r->events + n, sizeof(r->events) - n, "%s=%s|", key, value ? value : "(null)");
}

static void rec_tags_done(void *ctx)
{
    rec_t *r = ctx;
    size_t n = strlen(r->events);
    snprintf(r->events + n, sizeof(r->events) - n, "done|");
}

static void rec_log(void *ctx, int level, const char *msg)
{
    (void)ctx, (void)level, (void)msg;
}

static format_t *open_generic(rec_t *r, int metaint, const char *charset)
{
    memset(r, 0, sizeof(*r));
    format_sink_t sink = {r, rec_emit, rec_set_headers, rec_set_tag, rec_tags_done, rec_log, NULL};
    format_t *f = format_new(format_for_content_type("audio/mpeg"), &sink);
    if (f) {
        f->icy_metaint = metaint; /* set after creation, as the source does */
        f->charset = charset;
    }
    return f;
}

typedef struct buf {
    unsigned char *p;
    size_t len;
} buf_t;

static void buf_add(buf_t *b, const void *d, size_t n)
{
    b->p = realloc(b->p, b->len + n + 1);
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

/* Interleaves audio (npoints * metaint bytes) with metadata blocks: metas[k] (NULL = empty). */
static void build(buf_t *wire, buf_t *audio, size_t metaint, const char *const *metas, int npoints)
{
    for (int k = 0; k < npoints; k++) {
        for (size_t i = 0; i < metaint; i++) {
            unsigned char c = (unsigned char)((audio->len * 7 + 3) % 251);
            buf_add(audio, &c, 1);
            buf_add(wire, &c, 1);
        }
        unsigned char block[1 + 255 * 16] = {0};
        size_t n = metas[k] ? strlen(metas[k]) : 0;
        block[0] = (unsigned char)((n + 15) / 16);
        memcpy(block + 1, metas[k] ? metas[k] : "", n);
        buf_add(wire, block, 1 + (size_t)block[0] * 16);
    }
    unsigned char tail[5] = {1, 2, 3, 4, 5}; /* some audio after the last metadata */
    size_t n = metaint < sizeof(tail) ? metaint : sizeof(tail);
    buf_add(audio, tail, n);
    buf_add(wire, tail, n);
}

static void feed(format_t *f, const unsigned char *p, size_t len, size_t step)
{
    for (size_t i = 0; i < len; i += step)
        CHECK(f->ops->ingest(f, p + i, len - i < step ? len - i : step) == 0);
}

static void test_strip_at_every_split(void)
{
    const char *const metas[] = {
        NULL,
        "StreamTitle='Rock 'n' Roll';StreamUrl='http://example.com/';",
        NULL,
        "StreamTitle='Caf\xe9';",
        "StreamTitle='Caf\xe9';", /* repeated: not reported again */
        NULL,
        "StreamTitle='A';B';",
    };
    const char *want = "title=Rock 'n' Roll|url=http://example.com/|done|"
                       "title=Caf\xc3\xa9|url=(null)|done|title=A';B|done|";
    buf_t wire = {0}, audio = {0};
    build(&wire, &audio, 37, metas, 7);
    int bad = 0;
    for (size_t split = 0; split <= wire.len; split++) {
        rec_t r;
        format_t *f = open_generic(&r, 37, NULL);
        feed(f, wire.p, split, split ? split : 1);
        feed(f, wire.p + split, wire.len - split, wire.len);
        bad += r.len != audio.len || memcmp(r.audio, audio.p, audio.len) != 0 ||
               strcmp(r.events, want) != 0 || r.nonsync != 0;
        if (split == 0)
            CHECK_STR(r.events, want);
        format_free(f);
        free(r.audio);
    }
    CHECK(bad == 0);
    for (size_t step = 1; step <= 64; step++) {
        rec_t r;
        format_t *f = open_generic(&r, 37, NULL);
        feed(f, wire.p, wire.len, step);
        CHECK(r.len == audio.len && memcmp(r.audio, audio.p, audio.len) == 0);
        CHECK_STR(r.events, want);
        format_free(f);
        free(r.audio);
    }
    free(wire.p);
    free(audio.p);
}

static void test_metaint_boundaries(void)
{
    char longest[255 * 16 + 1];
    memset(longest, 'x', sizeof(longest) - 1);
    memcpy(longest, "StreamTitle='", 13);
    memcpy(longest + sizeof(longest) - 3, "';", 2);
    longest[sizeof(longest) - 1] = '\0';
    const char *const metas[] = {longest, NULL, "StreamTitle='one byte';"};
    const size_t ints[] = {1, 2, 16, 16000};
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        buf_t wire = {0}, audio = {0};
        build(&wire, &audio, ints[i], metas, 3);
        rec_t r;
        format_t *f = open_generic(&r, (int)ints[i], NULL);
        feed(f, wire.p, wire.len, 4096);
        CHECK(r.len == audio.len && memcmp(r.audio, audio.p, audio.len) == 0);
        CHECK(strstr(r.events, "title=one byte|done|") != NULL);
        CHECK(strlen(r.events) > 4000);
        format_free(f);
        free(r.audio);
        free(wire.p);
        free(audio.p);
    }
}

static void test_no_metaint_passes_through(void)
{
    unsigned char data[1000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)i;
    rec_t r;
    format_t *f = open_generic(&r, 0, NULL);
    feed(f, data, sizeof(data), 333);
    CHECK(r.len == sizeof(data) && memcmp(r.audio, data, sizeof(data)) == 0);
    CHECK(r.blocks == 4 && r.nonsync == 0 && r.events[0] == '\0');
    format_free(f);
    free(r.audio);
}

static void check_parse(const char *meta, size_t len, const char *title, const char *url)
{
    char *t = NULL, *u = NULL;
    CHECK(icy_parse(meta, len, &t, &u) == 0);
    if (title)
        CHECK_STR(t, title);
    else
        CHECK(t == NULL);
    if (url)
        CHECK_STR(u, url);
    else
        CHECK(u == NULL);
    free(t);
    free(u);
}

#define PARSE(m, t, u) check_parse(m, sizeof(m) - 1, t, u)

static void test_title_parsing(void)
{
    PARSE("StreamTitle='Artist - Song';", "Artist - Song", NULL);
    PARSE("StreamTitle='It's';StreamUrl='u';", "It's", "u");
    PARSE("StreamTitle='x';y';\0\0\0", "x';y", NULL);
    PARSE("StreamTitle='no end", "no end", NULL);
    PARSE("StreamTitle='quote end'", "quote end", NULL);
    PARSE("StreamTitle='';", "", NULL);
    PARSE("StreamTitle=';", ";", NULL);
    PARSE("streamtitle='lower';", "lower", NULL);
    PARSE("StreamUrl='first';StreamTitle='second';", "second", "first");
    PARSE("garbage", NULL, NULL);
    PARSE("", NULL, NULL);
    PARSE("StreamTitle=", NULL, NULL);
    PARSE("XStreamTitle='a';", NULL, NULL);
    PARSE("StreamTitle='a\0b';", "a", NULL);
    PARSE("StreamTitle='<script>\"\r\n';", "<script>\"\r\n", NULL);
}

static void test_charsets(void)
{
    char *s = utf8_from_text("Caf\xe9", 4, NULL);
    CHECK_STR(s, "Caf\xc3\xa9");
    free(s);
    s = utf8_from_text("Caf\xc3\xa9", 5, NULL);
    CHECK_STR(s, "Caf\xc3\xa9");
    free(s);
    s = utf8_from_text("\x80", 1, "cp1252");
    CHECK_STR(s, "\xe2\x82\xac");
    free(s);
    s = utf8_from_text("Caf\xc3\xa9", 5, "ISO-8859-1");
    CHECK_STR(s, "Caf\xc3\x83\xc2\xa9");
    free(s);
    s = utf8_from_text("Caf\xe9", 4, "UTF-8");
    CHECK_STR(s, "Caf\xc3\xa9");
    free(s);
    s = utf8_from_text("Caf\xe9", 4, "no-such-charset");
    CHECK_STR(s, "Caf\xc3\xa9");
    free(s);
    s = utf8_from_text("\xed\xa0\x80", 3, NULL); /* a surrogate is not UTF-8 */
    CHECK_STR(s, "\xc3\xad\xc2\xa0\xc2\x80");
    free(s);
    CHECK(utf8_valid("\xf0\x9f\x8e\xb5", 4));
    CHECK(!utf8_valid("\xc0\xaf", 2));
    CHECK(!utf8_valid("\xe2\x82", 2));

    /* through the handler with a mount charset */
    buf_t wire = {0}, audio = {0};
    const char *const metas[] = {"StreamTitle='\x80 Euro';"};
    build(&wire, &audio, 10, metas, 1);
    rec_t r;
    format_t *f = open_generic(&r, 10, "windows-1252");
    feed(f, wire.p, wire.len, 3);
    CHECK_STR(r.events, "title=\xe2\x82\xac Euro|done|");
    format_free(f);
    free(r.audio);
    free(wire.p);
    free(audio.p);
}

/* Small reads are gathered into blocks of GENERIC_BLOCK (4096) bytes while coalescing is on;
 * the remainder comes out on flush; bytes and order are unchanged. */
static void test_small_reads_are_gathered(void)
{
    rec_t r;
    format_t *f = open_generic(&r, 0, NULL);
    f->coalesce_ms = 60000; /* far longer than the test: only the size rule applies */
    unsigned char chunk[417];
    size_t total = 0;
    for (int i = 0; i < 25; i++) {
        for (size_t k = 0; k < sizeof(chunk); k++)
            chunk[k] = (unsigned char)((total + k) * 13);
        CHECK(f->ops->ingest(f, chunk, sizeof(chunk)) == 0);
        total += sizeof(chunk);
    }
    CHECK(r.blocks == (int)(total / 4096));
    f->ops->flush(f);
    CHECK(r.blocks == (int)(total / 4096) + 1);
    CHECK(r.len == total && r.nonsync == 0);
    int same = 1;
    for (size_t k = 0; k < r.len; k++)
        same &= r.audio[k] == (unsigned char)(k * 13);
    CHECK(same);
    format_free(f);
    free(r.audio);

    f = open_generic(&r, 0, NULL); /* coalescing off: one block per read */
    CHECK(f->ops->ingest(f, chunk, sizeof(chunk)) == 0);
    CHECK(f->ops->ingest(f, chunk, sizeof(chunk)) == 0);
    CHECK(r.blocks == 2 && r.len == 2 * sizeof(chunk));
    format_free(f);
    free(r.audio);
}

int main(void)
{
    RUN(test_small_reads_are_gathered);
    RUN(test_strip_at_every_split);
    RUN(test_metaint_boundaries);
    RUN(test_no_metaint_passes_through);
    RUN(test_title_parsing);
    RUN(test_charsets);
    return testlib_done();
}
