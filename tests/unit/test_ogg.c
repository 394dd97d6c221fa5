/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_ogg: the Ogg format handler and its codecs. Streams are built in memory with libogg
 * (synthetic headers are enough for page and header handling), and, when ffmpeg is installed,
 * real Vorbis/Opus/FLAC/Speex/Theora files are encoded at test time to check that the header
 * chain plus the pages from any sync block decode without error (with libvorbis and ffmpeg).
 */
#include "format/format.h"
#include "format/ogg_codec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vorbis/codec.h>

#include "core/log.h"
#include "testlib.h"

/* ---- a sink that records everything ---- */

typedef struct rec_block {
    unsigned char *data;
    size_t len;
    uint32_t flags;
} rec_block_t;

typedef struct rec {
    rec_block_t *blocks;
    size_t nblocks;
    unsigned char *headers; /* the latest set_headers() */
    size_t headers_len;
    int nheaders;           /* set_headers() calls */
    size_t headers_at[8];   /* nblocks when each set_headers() came */
    unsigned char *hdr_copy[8]; /* each set_headers() */
    size_t hdr_copy_len[8];
    char *tags[64][2];
    int ntags, tags_done, warnings;
    char lastlog[512]; /* the last warning or error */
} rec_t;

static void rec_emit(void *ctx, block_t *b)
{
    rec_t *r = ctx;
    r->blocks = realloc(r->blocks, (r->nblocks + 1) * sizeof(*r->blocks));
    rec_block_t *rb = &r->blocks[r->nblocks++];
    rb->data = malloc(b->len ? b->len : 1);
    memcpy(rb->data, b->data, b->len);
    rb->len = b->len;
    rb->flags = b->flags;
    block_unref(b);
}

static void rec_set_headers(void *ctx, block_t *h)
{
    rec_t *r = ctx;
    free(r->headers);
    r->headers = NULL;
    r->headers_len = 0;
    for (block_t *b = h; b; b = block_next(b)) {
        r->headers = realloc(r->headers, r->headers_len + b->len);
        memcpy(r->headers + r->headers_len, b->data, b->len);
        r->headers_len += b->len;
    }
    if (r->nheaders < 8) {
        r->headers_at[r->nheaders] = r->nblocks;
        r->hdr_copy[r->nheaders] = malloc(r->headers_len + 1);
        memcpy(r->hdr_copy[r->nheaders], r->headers, r->headers_len);
        r->hdr_copy_len[r->nheaders] = r->headers_len;
    }
    r->nheaders++;
    block_unref(h);
}

static void rec_set_tag(void *ctx, const char *key, const char *value)
{
    rec_t *r = ctx;
    for (int i = 0; i < r->ntags; i++) {
        if (strcmp(r->tags[i][0], key) == 0) {
            free(r->tags[i][1]);
            r->tags[i][1] = value ? strdup(value) : NULL;
            return;
        }
    }
    if (r->ntags < 64 && value) {
        r->tags[r->ntags][0] = strdup(key);
        r->tags[r->ntags][1] = strdup(value);
        r->ntags++;
    }
}

static const char *rec_tag(const rec_t *r, const char *key)
{
    for (int i = 0; i < r->ntags; i++)
        if (strcmp(r->tags[i][0], key) == 0)
            return r->tags[i][1];
    return NULL;
}

static void rec_tags_done(void *ctx) { ((rec_t *)ctx)->tags_done++; }

static void rec_log(void *ctx, int level, const char *msg)
{
    rec_t *r = ctx;
    if (getenv("TEST_VERBOSE"))
        fprintf(stderr, "   log %d: %s\n", level, msg);
    if (level > LOG_WARN)
        return;
    r->warnings++;
    snprintf(r->lastlog, sizeof(r->lastlog), "%s", msg);
}

static void rec_free(rec_t *r)
{
    for (size_t i = 0; i < r->nblocks; i++)
        free(r->blocks[i].data);
    free(r->blocks);
    free(r->headers);
    for (int i = 0; i < r->nheaders && i < 8; i++)
        free(r->hdr_copy[i]);
    for (int i = 0; i < r->ntags; i++) {
        free(r->tags[i][0]);
        free(r->tags[i][1]);
    }
    memset(r, 0, sizeof(*r));
}

/* Runs the Ogg handler over data, fed in pieces of `step` bytes (0 = all at once). */
static void run_ogg(rec_t *r, const unsigned char *data, size_t len, size_t step)
{
    memset(r, 0, sizeof(*r));
    format_sink_t sink = {r, rec_emit, rec_set_headers, rec_set_tag, rec_tags_done, rec_log, NULL};
    format_t *f = format_new(format_for_content_type("audio/ogg"), &sink);
    CHECK(f != NULL);
    if (!f)
        return;
    if (step == 0)
        step = len ? len : 1;
    for (size_t i = 0; i < len; i += step)
        CHECK(f->ops->ingest(f, data + i, len - i < step ? len - i : step) == 0);
    f->ops->flush(f);
    format_free(f);
}

static int same_output(const rec_t *a, const rec_t *b)
{
    if (a->nblocks != b->nblocks || a->headers_len != b->headers_len ||
        a->nheaders != b->nheaders || memcmp(a->headers, b->headers, a->headers_len) != 0)
        return 0;
    for (size_t i = 0; i < a->nblocks; i++)
        if (a->blocks[i].len != b->blocks[i].len || a->blocks[i].flags != b->blocks[i].flags ||
            memcmp(a->blocks[i].data, b->blocks[i].data, a->blocks[i].len) != 0)
            return 0;
    return 1;
}

/* ---- building streams with libogg ---- */

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

typedef struct writer {
    ogg_stream_state os;
    buf_t *out;
    ogg_int64_t packetno;
} writer_t;

static void w_init(writer_t *w, buf_t *out, int serial)
{
    ogg_stream_init(&w->os, serial);
    w->out = out;
    w->packetno = 0;
}

/* Adds a packet; flush: end the page after it (else pages are cut when full). */
static void w_packet(writer_t *w, const void *p, size_t n, int eos, ogg_int64_t gp, int flush)
{
    ogg_packet op = {(unsigned char *)p, (long)n, w->packetno == 0, eos, gp, w->packetno};
    w->packetno++;
    ogg_stream_packetin(&w->os, &op);
    ogg_page og;
    while (flush ? ogg_stream_flush(&w->os, &og) : ogg_stream_pageout(&w->os, &og)) {
        buf_add(w->out, og.header, (size_t)og.header_len);
        buf_add(w->out, og.body, (size_t)og.body_len);
    }
}

static size_t put_le32(unsigned char *p, uint32_t v)
{
    p[0] = v & 0xff, p[1] = (v >> 8) & 0xff, p[2] = (v >> 16) & 0xff, p[3] = v >> 24;
    return 4;
}

/* A Vorbis comment structure with NULL-terminated "KEY=value" entries. */
static size_t comments(unsigned char *p, const char *const *entries)
{
    size_t n = put_le32(p, 6);
    memcpy(p + n, "vendor", 6);
    n += 6;
    size_t count = 0;
    while (entries[count])
        count++;
    n += put_le32(p + n, (uint32_t)count);
    for (size_t i = 0; i < count; i++) {
        n += put_le32(p + n, (uint32_t)strlen(entries[i]));
        memcpy(p + n, entries[i], strlen(entries[i]));
        n += strlen(entries[i]);
    }
    return n;
}

static size_t vorbis_id(unsigned char *p)
{
    memset(p, 0, 30);
    memcpy(p, "\x01vorbis", 7);
    p[11] = 2;
    put_le32(p + 12, 44100);
    put_le32(p + 20, 128000);
    p[28] = 0xb8;
    p[29] = 1;
    return 30;
}

/* Headers of a synthetic Vorbis stream (id page, comment + setup page). */
static void vorbis_headers(writer_t *w, const char *const *tags)
{
    unsigned char p[1024];
    w_packet(w, p, vorbis_id(p), 0, 0, 1);
    memcpy(p, "\x03vorbis", 7);
    size_t n = 7 + comments(p + 7, tags);
    p[n++] = 1;
    w_packet(w, p, n, 0, 0, 0);
    memcpy(p, "\x05vorbis", 7);
    memset(p + 7, 0x55, 200);
    w_packet(w, p, 207, 0, 0, 1);
}

/* Audio pages: npages pages of 3 packets of 300 bytes (even first byte = audio packet). */
static void audio_pages(writer_t *w, int npages, int eos_last)
{
    unsigned char p[300];
    for (int i = 0; i < npages; i++)
        for (int k = 0; k < 3; k++) {
            memset(p, (i * 3 + k) * 2 & 0xfe, sizeof(p));
            w_packet(w, p, sizeof(p), eos_last && i == npages - 1 && k == 2,
                     (ogg_int64_t)(i * 3 + k + 1) * 1024, k == 2);
        }
}

static void make_vorbis(buf_t *out, int serial, const char *title, int npages)
{
    char t[128];
    snprintf(t, sizeof(t), "TITLE=%s", title);
    const char *const tags[] = {t, "Artist=Some Artist", "ENCODER=x", NULL};
    writer_t w;
    w_init(&w, out, serial);
    vorbis_headers(&w, tags);
    audio_pages(&w, npages, 1);
    ogg_stream_clear(&w.os);
}

/* Offset of the n-th page (0-based) in a well-formed buffer, or len. */
static size_t page_offset(const buf_t *b, int n)
{
    size_t pos = 0;
    for (int i = 0; i < n && pos + 27 <= b->len; i++) {
        size_t body = 0;
        for (int s = 0; s < b->p[pos + 26]; s++)
            body += b->p[pos + 27 + s];
        pos += 27 + b->p[pos + 26] + body;
    }
    return pos;
}


static int is_page(const rec_block_t *b) { return b->len >= 27 && memcmp(b->data, "OggS", 4) == 0; }

/* ---- synthetic streams ---- */

static void test_vorbis_headers_kept_not_emitted(void)
{
    buf_t in = {0};
    make_vorbis(&in, 11, "First Song", 10);
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    CHECK(r.nheaders == 1);
    CHECK(r.headers_at[0] == 0);
    CHECK(r.headers_len == page_offset(&in, 2));
    CHECK(r.headers_len > 0 && memcmp(r.headers, in.p, r.headers_len) == 0);
    CHECK(r.nblocks == 10);
    CHECK(r.nblocks > 0 && (r.blocks[0].flags & BLOCK_SYNC) && is_page(&r.blocks[0]));
    size_t total = r.headers_len;
    for (size_t i = 0; i < r.nblocks; i++) {
        CHECK(!(r.blocks[i].flags & BLOCK_HEADER));
        CHECK(is_page(&r.blocks[i]));
        total += r.blocks[i].len;
    }
    CHECK(total == in.len);
    CHECK_STR(rec_tag(&r, "title"), "First Song");
    CHECK_STR(rec_tag(&r, "artist"), "Some Artist");
    CHECK(rec_tag(&r, "encoder") == NULL);
    CHECK_STR(rec_tag(&r, "audio_channels"), "2");
    CHECK_STR(rec_tag(&r, "audio_samplerate"), "44100");
    CHECK_STR(rec_tag(&r, "audio_bitrate"), "128000");
    CHECK(r.tags_done == 1);
    CHECK(r.warnings == 0);
    rec_free(&r);
    free(in.p);
}

static void test_byte_by_byte_same_blocks(void)
{
    buf_t in = {0};
    make_vorbis(&in, 12, "x", 20);
    rec_t whole, bytes, odd;
    run_ogg(&whole, in.p, in.len, 0);
    run_ogg(&bytes, in.p, in.len, 1);
    run_ogg(&odd, in.p, in.len, 4093);
    CHECK(whole.nblocks == 20);
    CHECK(same_output(&whole, &bytes));
    CHECK(same_output(&whole, &odd));
    rec_free(&whole);
    rec_free(&bytes);
    rec_free(&odd);
    free(in.p);
}

static void test_chained_stream_new_headers_inline(void)
{
    buf_t in = {0}, second = {0};
    make_vorbis(&in, 21, "Track One", 5);
    size_t first_len = in.len;
    make_vorbis(&second, 22, "Track Two", 5);
    buf_add(&in, second.p, second.len);
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    size_t hdr2 = page_offset(&second, 2);
    CHECK(r.nheaders == 2);
    CHECK(r.headers_len == hdr2 && memcmp(r.headers, second.p, hdr2) == 0);
    /* 5 audio pages, 2 header pages of track two inline, 5 audio pages */
    CHECK(r.nblocks == 12);
    if (r.nblocks == 12) {
        CHECK(r.blocks[5].flags == BLOCK_HEADER && r.blocks[6].flags == BLOCK_HEADER);
        CHECK(memcmp(r.blocks[5].data, second.p, r.blocks[5].len) == 0);
        CHECK(r.headers_at[1] == 7);
        CHECK(r.blocks[7].flags == BLOCK_SYNC);
        size_t total = page_offset(&in, 2);
        for (size_t i = 0; i < r.nblocks; i++)
            total += r.blocks[i].len;
        CHECK(total == first_len + second.len);
    }
    CHECK_STR(rec_tag(&r, "title"), "Track Two");
    CHECK(r.tags_done == 2);
    rec_free(&r);
    free(in.p);
    free(second.p);
}

static size_t theora_id(unsigned char *p)
{
    memset(p, 0, 42);
    memcpy(p, "\x80theora\x03\x02\x01", 10);
    p[11] = 20, p[13] = 15;             /* 320x240 in macroblocks */
    p[15] = 1, p[16] = 64, p[19] = 240; /* picture 320x240 */
    p[25] = 25, p[29] = 1;              /* 25/1 fps */
    p[39] = 200, p[40] = 40 << 2;
    return 42;
}

/* Theora + Vorbis: a listener may start only on pages beginning with a Theora keyframe. */
static void test_mux_sync_on_keyframes_only(void)
{
    buf_t in = {0};
    writer_t tw, vw;
    w_init(&tw, &in, 31);
    w_init(&vw, &in, 32);
    unsigned char p[1024] = {0};
    w_packet(&tw, p, theora_id(p), 0, 0, 1);
    w_packet(&vw, p, vorbis_id(p), 0, 0, 1);
    const char *const tags[] = {"title=Video", NULL}, *const vtags[] = {"title=Audio", NULL};
    memcpy(p, "\x81theora", 7);
    w_packet(&tw, p, 7 + comments(p + 7, tags), 0, 0, 0);
    memcpy(p, "\x82theora", 7);
    w_packet(&tw, p, 100, 0, 0, 1);
    memcpy(p, "\x03vorbis", 7);
    w_packet(&vw, p, 7 + comments(p + 7, vtags), 0, 0, 0);
    memcpy(p, "\x05vorbis", 7);
    w_packet(&vw, p, 100, 0, 0, 1);
    int keyframe_pages = 0;
    for (int fr = 0; fr < 30; fr++) {
        p[0] = fr % 10 == 0 ? 0x00 : 0x40;
        keyframe_pages += fr % 10 == 0;
        w_packet(&tw, p, 500, 0, fr, 1);
        p[0] = 0;
        w_packet(&vw, p, 300, 0, fr * 1024, 1);
    }
    ogg_stream_clear(&tw.os);
    ogg_stream_clear(&vw.os);

    rec_t r, bytes;
    run_ogg(&r, in.p, in.len, 0);
    run_ogg(&bytes, in.p, in.len, 1);
    CHECK(same_output(&r, &bytes));
    CHECK(r.nheaders == 1 && r.nblocks == 60);
    int sync = 0, wrong = 0;
    for (size_t i = 0; i < r.nblocks; i++) {
        if (!(r.blocks[i].flags & BLOCK_SYNC))
            continue;
        sync++;
        const unsigned char *d = r.blocks[i].data;
        uint32_t serial = d[14] | d[15] << 8 | d[16] << 16 | (uint32_t)d[17] << 24;
        wrong += serial != 31 || (d[27 + d[26]] & 0x40) != 0;
    }
    CHECK(sync == keyframe_pages);
    CHECK(wrong == 0);
    CHECK(r.nblocks > 0 && (r.blocks[0].flags & BLOCK_SYNC));
    CHECK_STR(rec_tag(&r, "frame_size"), "320x240");
    CHECK_STR(rec_tag(&r, "frame_rate"), "25.00");
    CHECK_STR(rec_tag(&r, "video_quality"), "40");
    CHECK_STR(rec_tag(&r, "video_bitrate"), "200");
    CHECK_STR(rec_tag(&r, "title"), "Video");
    CHECK_STR(rec_tag(&r, "audio_samplerate"), "44100");
    rec_free(&r);
    rec_free(&bytes);
    free(in.p);
}

/* One packet larger than a page: the continued pages are never sync points. */
static void test_continued_page_not_sync(void)
{
    buf_t in = {0};
    writer_t w;
    w_init(&w, &in, 41);
    const char *const tags[] = {NULL};
    vorbis_headers(&w, tags);
    static unsigned char big[20000];
    for (int i = 0; i < 4; i++)
        w_packet(&w, big, sizeof(big), i == 3, (i + 1) * 2048, 0);
    ogg_page og;
    while (ogg_stream_flush(&w.os, &og)) {
        buf_add(&in, og.header, (size_t)og.header_len);
        buf_add(&in, og.body, (size_t)og.body_len);
    }
    ogg_stream_clear(&w.os);
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    int continued = 0, bad = 0;
    for (size_t i = 0; i < r.nblocks; i++) {
        int cont = r.blocks[i].data[5] & 1;
        continued += cont;
        bad += cont && (r.blocks[i].flags & BLOCK_SYNC);
    }
    CHECK(continued > 0);
    CHECK(bad == 0);
    CHECK(r.nblocks > 0 && (r.blocks[0].flags & BLOCK_SYNC));
    rec_free(&r);
    free(in.p);
}

static void run_headers_only(rec_t *r, const unsigned char *bos, size_t boslen,
                             const unsigned char *second, size_t seclen)
{
    buf_t in = {0};
    writer_t w;
    w_init(&w, &in, 51);
    w_packet(&w, bos, boslen, 0, 0, 1);
    if (second)
        w_packet(&w, second, seclen, 0, 0, 1);
    audio_pages(&w, 3, 1);
    ogg_stream_clear(&w.os);
    run_ogg(r, in.p, in.len, 0);
    free(in.p);
}

static void test_opus_tags(void)
{
    unsigned char head[19] = "OpusHead\x01\x02\x38\x01\x80\xbb\0\0\0\0\0";
    unsigned char tags[512];
    const char *const t[] = {"TITLE=Opus Title", "ARTIST=Opus Artist", "album=Album", NULL};
    memcpy(tags, "OpusTags", 8);
    size_t n = 8 + comments(tags + 8, t);
    rec_t r;
    run_headers_only(&r, head, sizeof(head), tags, n);
    CHECK(r.nheaders == 1 && r.nblocks == 3);
    CHECK_STR(rec_tag(&r, "title"), "Opus Title");
    CHECK_STR(rec_tag(&r, "artist"), "Opus Artist");
    CHECK_STR(rec_tag(&r, "album"), "Album");
    CHECK_STR(rec_tag(&r, "audio_channels"), "2");
    CHECK_STR(rec_tag(&r, "audio_samplerate"), "48000");
    CHECK(r.warnings == 0);
    rec_free(&r);
}

static void test_opus_short_bos(void)
{
    const unsigned char *shorts[] = {(const unsigned char *)"OpusHead\x01\x02",
                                     (const unsigned char *)"OpusHe", (const unsigned char *)"O"};
    const size_t lens[] = {10, 6, 1};
    for (int i = 0; i < 3; i++) {
        rec_t r;
        run_headers_only(&r, shorts[i], lens[i], NULL, 0);
        CHECK(r.nheaders == 1);
        CHECK(r.nblocks == 3);
        CHECK(r.warnings == 1);
        if (i == 0)
            CHECK(strstr(r.lastlog, "Opus") && strstr(r.lastlog, "malformed"));
        else
            CHECK(strstr(r.lastlog, "unknown codec") != NULL);
        rec_free(&r);
    }
}

static size_t flac_bos(unsigned char *p, int nheaders)
{
    memset(p, 0, 51);
    memcpy(p, "\x7f" "FLAC\x01\x00", 7);
    p[8] = (unsigned char)nheaders;
    memcpy(p + 9, "fLaC", 4);
    p[13] = 0, p[16] = 34;                  /* STREAMINFO, 34 bytes */
    p[27] = 0x0a, p[28] = 0xc4, p[29] = 0x42; /* 44100 Hz, 2 channels, 16 bits */
    p[30] = 0xf0;
    return 51;
}

static void test_flac_tags(void)
{
    for (int nheaders = 0; nheaders <= 1; nheaders++) {
        unsigned char bos[51], vc[512];
        const char *const t[] = {"TITLE=Flac Title", "ARTIST=Flac Artist", NULL};
        size_t n = comments(vc + 4, t);
        vc[0] = 0x84; /* last block, VORBIS_COMMENT */
        vc[1] = 0, vc[2] = (unsigned char)(n >> 8), vc[3] = (unsigned char)n;
        if (nheaders == 0)
            vc[0] = 0x04; /* unknown count, no last flag: headers end at the first frame */
        unsigned char frames[1] = {0};
        rec_t r;
        buf_t in = {0};
        writer_t w;
        w_init(&w, &in, 61);
        w_packet(&w, bos, flac_bos(bos, nheaders), 0, 0, 1);
        w_packet(&w, vc, n + 4, 0, 0, 1);
        unsigned char fr[200];
        memset(fr, 0x11, sizeof(fr));
        fr[0] = 0xff, fr[1] = 0xf8;
        for (int i = 0; i < 4; i++)
            w_packet(&w, fr, sizeof(fr), i == 3, (i + 1) * 4096, 1);
        ogg_stream_clear(&w.os);
        run_ogg(&r, in.p, in.len, 0);
        (void)frames;
        CHECK(r.nheaders == 1 && r.nblocks == 4);
        CHECK(r.headers_len == page_offset(&in, 2));
        CHECK(r.nblocks > 0 && (r.blocks[0].flags & BLOCK_SYNC));
        CHECK_STR(rec_tag(&r, "title"), "Flac Title");
        CHECK_STR(rec_tag(&r, "artist"), "Flac Artist");
        CHECK_STR(rec_tag(&r, "FLAC_version"), "1.0");
        CHECK_STR(rec_tag(&r, "audio_samplerate"), "44100");
        CHECK_STR(rec_tag(&r, "audio_channels"), "2");
        rec_free(&r);
        free(in.p);
    }
}

static void test_speex_headers(void)
{
    unsigned char h[80] = "Speex   1.2";
    memset(h + 11, 0, sizeof(h) - 11);
    put_le32(h + 28, 1);
    put_le32(h + 32, 80);
    put_le32(h + 36, 16000);
    put_le32(h + 48, 1);
    put_le32(h + 68, 0);
    unsigned char vc[256];
    const char *const t[] = {"title=Speech", NULL};
    size_t n = comments(vc, t);
    rec_t r;
    run_headers_only(&r, h, sizeof(h), vc, n);
    CHECK(r.nheaders == 1 && r.nblocks == 3);
    CHECK_STR(rec_tag(&r, "title"), "Speech");
    CHECK_STR(rec_tag(&r, "audio_samplerate"), "16000");
    CHECK_STR(rec_tag(&r, "audio_channels"), "1");
    rec_free(&r);
}

static void test_malformed_comments_ignored(void)
{
    unsigned char c[64];
    static const uint32_t bad[][3] = {
        {0xffffffffu, 0, 0}, {6, 0xffffffffu, 0}, {6, 3, 0xfffffff0u}, {6, 1, 40}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memcpy(c, "OpusTags", 8);
        size_t n = 8 + put_le32(c + 8, bad[i][0]);
        memcpy(c + n, "vendor", 6);
        n += 6;
        n += put_le32(c + n, bad[i][1]);
        n += put_le32(c + n, bad[i][2]);
        memcpy(c + n, "TITLE=x", 7);
        n += 7;
        unsigned char head[19] = "OpusHead\x01\x02";
        rec_t r;
        run_headers_only(&r, head, sizeof(head), c, n);
        CHECK(r.nheaders == 1 && r.nblocks == 3);
        CHECK(rec_tag(&r, "title") == NULL);
        rec_free(&r);
    }
}

static void test_unknown_codec_passed_through(void)
{
    unsigned char bos[32] = "\x01MyCodec0123456789";
    rec_t r;
    run_headers_only(&r, bos, sizeof(bos), NULL, 0);
    CHECK(r.nheaders == 1 && r.nblocks == 3);
    CHECK(r.nblocks > 0 && (r.blocks[0].flags & BLOCK_SYNC));
    CHECK(strstr(r.lastlog, "MyCodec0123456") != NULL);
    rec_free(&r);
}

/* ---- damaged input ---- */

static void test_garbage_between_pages(void)
{
    buf_t in = {0}, bad = {0};
    make_vorbis(&in, 71, "g", 8);
    size_t cut = page_offset(&in, 5);
    buf_add(&bad, in.p, cut);
    unsigned char junk[3000];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 131 + 7);
    memcpy(junk + 100, "OggS", 4); /* a false capture pattern inside */
    buf_add(&bad, junk, sizeof(junk));
    buf_add(&bad, in.p + cut, in.len - cut);
    rec_t clean, r, bytes;
    run_ogg(&clean, in.p, in.len, 0);
    run_ogg(&r, bad.p, bad.len, 0);
    run_ogg(&bytes, bad.p, bad.len, 1);
    CHECK(same_output(&clean, &r));
    CHECK(same_output(&clean, &bytes));
    CHECK(r.warnings == 1);
    CHECK(bytes.warnings == 1);
    rec_free(&clean);
    rec_free(&r);
    rec_free(&bytes);
    free(in.p);
    free(bad.p);
}

static void test_bad_crc_page_skipped(void)
{
    buf_t in = {0};
    make_vorbis(&in, 72, "c", 8);
    size_t at = page_offset(&in, 6);
    in.p[at + 40] ^= 0x20; /* inside the body of the 5th audio page */
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    CHECK(r.nblocks == 7);
    CHECK(r.warnings == 1);
    CHECK(strstr(r.lastlog, "corrupt") != NULL);
    rec_free(&r);
    free(in.p);
}

static void test_truncated_page(void)
{
    buf_t in = {0}, t = {0};
    make_vorbis(&in, 73, "t", 8);
    size_t a = page_offset(&in, 4), b = page_offset(&in, 5);
    buf_add(&t, in.p, a + (b - a) / 2); /* half of the 3rd audio page */
    buf_add(&t, in.p + b, in.len - b);
    rec_t r;
    run_ogg(&r, t.p, t.len, 7);
    CHECK(r.nblocks == 7);
    CHECK(r.warnings == 1);
    rec_free(&r);
    /* cut at the very end: the half page is dropped with one line at flush */
    run_ogg(&r, in.p, in.len - 100, 0);
    CHECK(r.nblocks == 7);
    CHECK(r.warnings == 1);
    rec_free(&r);
    free(in.p);
    free(t.p);
}

static void test_random_bytes(void)
{
    size_t len = 1 << 20;
    unsigned char *p = malloc(len);
    srand(1234);
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)rand();
    for (size_t i = 0; i + 4 < len; i += 9973)
        memcpy(p + i, "OggS\0\0", 6);
    rec_t r;
    run_ogg(&r, p, len, 1000);
    CHECK(r.nblocks == 0 && r.nheaders == 0);
    CHECK(r.warnings == 1);
    rec_free(&r);
    free(p);
}

/* A page of 255 segments of 255 bytes, the largest libogg builds, passes. */
static void test_largest_page(void)
{
    buf_t in = {0};
    writer_t w;
    w_init(&w, &in, 74);
    const char *const tags[] = {NULL};
    vorbis_headers(&w, tags);
    static unsigned char big[255 * 255 + 100];
    ogg_packet op = {big, sizeof(big), 0, 1, 4096, 3};
    ogg_stream_packetin(&w.os, &op);
    ogg_page og;
    size_t largest = 0;
    while (ogg_stream_flush_fill(&w.os, &og, 1 << 20)) {
        if ((size_t)og.body_len > largest)
            largest = (size_t)og.body_len;
        buf_add(&in, og.header, (size_t)og.header_len);
        buf_add(&in, og.body, (size_t)og.body_len);
    }
    ogg_stream_clear(&w.os);
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    CHECK(largest == 255 * 255);
    CHECK(r.nblocks == 2 && r.warnings == 0);
    CHECK(r.nblocks == 2 && r.blocks[0].len == 27 + 255 + 255 * 255);
    rec_free(&r);
    free(in.p);
}

/* A page whose stream had no BOS (a source joined mid-stream) is skipped, one line. */
static void test_pages_without_bos(void)
{
    buf_t in = {0};
    make_vorbis(&in, 75, "x", 6);
    size_t at = page_offset(&in, 3);
    rec_t r;
    run_ogg(&r, in.p + at, in.len - at, 0);
    CHECK(r.nblocks == 0 && r.nheaders == 0);
    CHECK(r.warnings == 1);
    rec_free(&r);
    free(in.p);
}

/* ---- real encoders (skipped without ffmpeg) ---- */

static char tmpdir[128];

static int have_ffmpeg(void)
{
    static int have = -1;
    if (have < 0)
        have = system("ffmpeg -version >/dev/null 2>&1") == 0;
    return have;
}

static int read_file(const char *path, buf_t *out)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    unsigned char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
        buf_add(out, chunk, n);
    fclose(fp);
    return 0;
}

/* Encodes with ffmpeg into tmpdir/name and loads the file. */
static int encode(const char *args, const char *name, buf_t *out)
{
    char cmd[2048], path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    snprintf(cmd, sizeof(cmd), "ffmpeg -nostdin -v error -y %s -f ogg %s", args, path);
    if (system(cmd) != 0)
        return -1;
    return read_file(path, out);
}

/* The bytes a listener gets when it starts at block `from` with header set `h`. */
static void listener_bytes(const rec_t *r, int h, size_t from, buf_t *out)
{
    buf_add(out, r->hdr_copy[h], r->hdr_copy_len[h]);
    for (size_t i = from; i < r->nblocks; i++)
        buf_add(out, r->blocks[i].data, r->blocks[i].len);
}

/* 1 if ffmpeg decodes the data with no error output. */
static int ffmpeg_decodes(const buf_t *data, const char *name)
{
    char path[256], cmd[1400];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 0;
    fwrite(data->p, 1, data->len, fp);
    fclose(fp);
    /* libgcrypt's notice in a container without CAP_IPC_LOCK is not a decoding error */
    snprintf(cmd, sizeof(cmd),
             "ffmpeg -nostdin -v error -i %s -f null - 2>%s.raw; rc=$?; "
             "grep -vx 'Warning: using insecure memory!' %s.raw >%s.err; exit $rc",
             path, path, path, path);
    int rc = system(cmd);
    snprintf(cmd, sizeof(cmd), "%s.err", path);
    buf_t err = {0};
    read_file(cmd, &err);
    if (rc != 0 || err.len)
        fprintf(stderr, "   ffmpeg on %s: rc %d: %.*s\n", name, rc, (int)err.len,
                err.p ? (char *)err.p : "");
    free(err.p);
    return rc == 0 && err.len == 0;
}

/* Decodes a single Vorbis stream with libvorbis; returns samples or -1 on any error. */
static long vorbis_decode(const buf_t *data)
{
    ogg_sync_state oy;
    ogg_stream_state os;
    vorbis_info vi;
    vorbis_comment vc;
    vorbis_dsp_state vd;
    vorbis_block vb;
    ogg_page og;
    ogg_packet op;
    long samples = 0, npackets = 0, err = 0;
    int started = 0;
    ogg_sync_init(&oy);
    vorbis_info_init(&vi);
    vorbis_comment_init(&vc);
    memcpy(ogg_sync_buffer(&oy, (long)data->len), data->p, data->len);
    ogg_sync_wrote(&oy, (long)data->len);
    while (!err && ogg_sync_pageout(&oy, &og) == 1) {
        if (!started) {
            ogg_stream_init(&os, ogg_page_serialno(&og));
            started = 1;
        }
        if (ogg_page_serialno(&og) != os.serialno)
            continue;
        ogg_stream_pagein(&os, &og);
        int pr;
        while (!err && (pr = ogg_stream_packetout(&os, &op)) != 0) {
            if (pr < 0)
                continue; /* the gap between the headers and the first page */
            if (npackets < 3) {
                err = vorbis_synthesis_headerin(&vi, &vc, &op) != 0;
                if (++npackets == 3 && !err) {
                    vorbis_synthesis_init(&vd, &vi);
                    vorbis_block_init(&vd, &vb);
                }
                continue;
            }
            npackets++;
            err = vorbis_synthesis(&vb, &op) != 0 || vorbis_synthesis_blockin(&vd, &vb) != 0;
            if (err)
                fprintf(stderr, "   libvorbis: packet %ld: %d\n", npackets, vorbis_synthesis(&vb, &op));
            float **pcm;
            int n;
            while (!err && (n = vorbis_synthesis_pcmout(&vd, &pcm)) > 0) {
                samples += n;
                vorbis_synthesis_read(&vd, n);
            }
        }
    }
    if (npackets >= 3) {
        vorbis_block_clear(&vb);
        vorbis_dsp_clear(&vd);
    }
    if (started)
        ogg_stream_clear(&os);
    vorbis_comment_clear(&vc);
    vorbis_info_clear(&vi);
    ogg_sync_clear(&oy);
    if (getenv("TEST_VERBOSE"))
        fprintf(stderr, "   libvorbis: err %ld packets %ld samples %ld\n", err, npackets, samples);
    return err || npackets < 4 ? -1 : samples;
}

/* Every listener start point tried decodes: at most `tries` sync blocks spread evenly. */
static int check_starts(const rec_t *r, const char *name, int tries, int use_libvorbis)
{
    size_t sync[4096], n = 0;
    for (size_t i = 0; i < r->nblocks && n < 4096; i++)
        if (r->blocks[i].flags & BLOCK_SYNC)
            sync[n++] = i;
    int ok = n > 0;
    for (int t = 0; t < tries && n > 0; t++) {
        size_t from = sync[(n - 1) * (size_t)t / (size_t)(tries > 1 ? tries - 1 : 1)];
        int h = 0;
        while (h + 1 < r->nheaders && r->headers_at[h + 1] <= from)
            h++;
        buf_t lb = {0};
        listener_bytes(r, h, from, &lb);
        char fname[64];
        snprintf(fname, sizeof(fname), "%s-%zu.ogg", name, from);
        ok &= ffmpeg_decodes(&lb, fname);
        if (use_libvorbis && vorbis_decode(&lb) < 0) {
            fprintf(stderr, "   libvorbis failed on %s\n", fname);
            ok = 0;
        }
        free(lb.p);
    }
    return ok;
}

static const char *const sine = "-f lavfi -i sine=frequency=440:duration=6:sample_rate=44100";

static void test_real_codecs_decode_from_any_sync(void)
{
    static const struct {
        const char *name, *codec;
        int libvorbis, tags;
    } c[] = {
        {"vorbis", "-c:a libvorbis", 1, 1},
        {"opus", "-c:a libopus", 0, 1},
        {"flac", "-c:a flac", 0, 1},
        {"speex", "-ar 16000 -c:a libspeex", 0, 0},
    };
    if (!have_ffmpeg()) {
        fprintf(stderr, "   ffmpeg missing, skipped\n");
        return;
    }
    for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
        char args[512];
        snprintf(args, sizeof(args), "%s %s -metadata title='Real %s' -metadata artist=Band",
                 sine, c[i].codec, c[i].name);
        buf_t in = {0};
        if (encode(args, c[i].name, &in) < 0) {
            fprintf(stderr, "   %s: encoder missing, skipped\n", c[i].name);
            continue;
        }
        rec_t r, bytes;
        run_ogg(&r, in.p, in.len, 0);
        run_ogg(&bytes, in.p, in.len, 1);
        fprintf(stderr, "   %s: %zu blocks, headers %zu bytes\n", c[i].name, r.nblocks,
                r.headers_len);
        CHECK(same_output(&r, &bytes));
        CHECK(r.nheaders == 1 && r.nblocks >= 5 && r.warnings == 0);
        CHECK(r.nblocks > 0 && (r.blocks[0].flags & BLOCK_SYNC));
        if (c[i].tags) {
            char want[64];
            snprintf(want, sizeof(want), "Real %s", c[i].name);
            CHECK_STR(rec_tag(&r, "title"), want);
            CHECK_STR(rec_tag(&r, "artist"), "Band");
        }
        CHECK(rec_tag(&r, "audio_samplerate") != NULL);
        CHECK(check_starts(&r, c[i].name, 4, c[i].libvorbis));
        rec_free(&r);
        rec_free(&bytes);
        free(in.p);
    }
}

static void test_real_theora_vorbis_mux(void)
{
    buf_t in = {0};
    if (!have_ffmpeg() ||
        encode("-f lavfi -i testsrc=size=160x120:rate=10 -f lavfi -i sine=duration=6 -t 6 "
               "-c:v libtheora -g 15 -c:a libvorbis", "mux", &in) < 0) {
        fprintf(stderr, "   ffmpeg/libtheora missing, skipped\n");
        return;
    }
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    CHECK(r.nheaders == 1 && r.warnings == 0);
    const unsigned char *bos = r.headers;
    uint32_t theora = 0;
    for (size_t pos = 0; pos + 28 < r.headers_len;) {
        size_t body = 0;
        for (int s = 0; s < bos[pos + 26]; s++)
            body += bos[pos + 27 + s];
        if (memcmp(bos + pos + 27 + bos[pos + 26], "\x80theora", 7) == 0)
            theora = ogg_codec_le32(bos + pos + 14);
        pos += 27 + bos[pos + 26] + body;
    }
    int sync = 0, wrong = 0;
    for (size_t i = 0; i < r.nblocks; i++) {
        if (!(r.blocks[i].flags & BLOCK_SYNC))
            continue;
        const unsigned char *d = r.blocks[i].data;
        sync++;
        wrong += ogg_codec_le32(d + 14) != theora || (d[5] & 1) || (d[27 + d[26]] & 0x40);
    }
    fprintf(stderr, "   mux: %zu blocks, %d keyframe pages\n", r.nblocks, sync);
    CHECK(sync >= 4 && wrong == 0);
    CHECK(check_starts(&r, "mux", 3, 0));
    CHECK(rec_tag(&r, "frame_size") && rec_tag(&r, "audio_channels"));
    rec_free(&r);
    free(in.p);
}

static void test_real_chained_vorbis(void)
{
    buf_t a = {0}, b = {0};
    if (!have_ffmpeg() || encode("-f lavfi -i sine=frequency=440:duration=3 -c:a libvorbis "
                                 "-metadata title=One", "chain1", &a) < 0 ||
        encode("-f lavfi -i sine=frequency=660:duration=3 -ac 1 -c:a libvorbis "
               "-metadata title=Two", "chain2", &b) < 0) {
        fprintf(stderr, "   ffmpeg missing, skipped\n");
        free(a.p);
        return;
    }
    buf_add(&a, b.p, b.len);
    rec_t r;
    run_ogg(&r, a.p, a.len, 333);
    CHECK(r.nheaders == 2 && r.warnings == 0);
    CHECK_STR(rec_tag(&r, "title"), "Two");
    CHECK_STR(rec_tag(&r, "audio_channels"), "1");
    size_t inline_headers = 0;
    for (size_t i = 0; i < r.nblocks; i++)
        inline_headers += r.blocks[i].flags == BLOCK_HEADER;
    CHECK(inline_headers >= 2);
    CHECK(check_starts(&r, "chain", 5, 0));
    rec_free(&r);
    free(a.p);
    free(b.p);
}


/* ---- metadata updates carried into the stream ---- */

/* The entries of a comment structure, "KEY=value" joined by '|', and its vendor. */
static void read_comments(const unsigned char *c, size_t len, char *out, size_t cap,
                          char *vendor, size_t vcap)
{
    size_t vlen = ogg_codec_le32(c), pos = 4 + vlen, o = 0;
    snprintf(vendor, vcap, "%.*s", (int)vlen, (const char *)c + 4);
    uint32_t count = ogg_codec_le32(c + pos);
    pos += 4;
    out[0] = '\0';
    for (uint32_t i = 0; i < count && pos + 4 <= len; i++) {
        size_t n = ogg_codec_le32(c + pos);
        o += (size_t)snprintf(out + o, cap - o, "%s%.*s", i ? "|" : "", (int)n,
                              (const char *)c + pos + 4);
        pos += 4 + n;
    }
    CHECK(pos == len);
}

static void test_comment_writer(void)
{
    unsigned char in[512], out[1024];
    char got[512], vendor[64];
    const char *const t[] = {"TITLE=Old", "Artist=Old Band", "ENCODER=x", "title=again",
                             "ARTISTS=kept", NULL};
    size_t n = comments(in, t), used;
    long w = ogg_comment_write(out, in, n, "New \xc3\xa9", "Band", &used);
    CHECK(w > 0 && used == n);
    read_comments(out, (size_t)w, got, sizeof(got), vendor, sizeof(vendor));
    CHECK_STR(vendor, "vendor");
    CHECK_STR(got, "ENCODER=x|ARTISTS=kept|TITLE=New \xc3\xa9|ARTIST=Band");
    CHECK((size_t)w <= n + ogg_comment_extra("New \xc3\xa9", "Band"));
    /* a song alone: TITLE only; nothing given: the other comments only */
    w = ogg_comment_write(out, in, n, "Song", NULL, &used);
    read_comments(out, (size_t)w, got, sizeof(got), vendor, sizeof(vendor));
    CHECK_STR(got, "ENCODER=x|ARTISTS=kept|TITLE=Song");
    w = ogg_comment_write(out, in, n, "", NULL, &used);
    read_comments(out, (size_t)w, got, sizeof(got), vendor, sizeof(vendor));
    CHECK_STR(got, "ENCODER=x|ARTISTS=kept");
    /* bytes after the structure are not its own */
    in[n] = 1;
    CHECK(ogg_comment_write(out, in, n + 1, "A", "B", &used) > 0 && used == n);
    /* malformed: an entry past the end, a vendor past the end, too short */
    CHECK(ogg_comment_write(out, in, n - 1, "A", "B", &used) == -1);
    unsigned char bad[12] = {200, 0, 0, 0};
    CHECK(ogg_comment_write(out, bad, sizeof(bad), "A", NULL, &used) == -1);
    CHECK(ogg_comment_write(out, in, 7, "A", NULL, &used) == -1);
}

static void test_codec_comment_packets_rewritten(void)
{
    const char *const t[] = {"TITLE=Old", "ALBUM=Al", NULL};
    unsigned char p[512], *out;
    size_t n, len;
    char got[256], vendor[64];
    /* Vorbis: the framing bit after the structure stays */
    memcpy(p, "\x03vorbis", 7);
    n = 7 + comments(p + 7, t);
    p[n++] = 1;
    CHECK(ogg_vorbis_ops.comment_rewrite(p, n, "New", "Band", &out, &len) == 1);
    CHECK(memcmp(out, "\x03vorbis", 7) == 0 && out[len - 1] == 1);
    read_comments(out + 7, len - 8, got, sizeof(got), vendor, sizeof(vendor));
    CHECK_STR(got, "ALBUM=Al|TITLE=New|ARTIST=Band");
    free(out);
    CHECK(ogg_vorbis_ops.comment_rewrite((const unsigned char *)"\x05vorbis", 7, "x", NULL, &out,
                                         &len) == 0);
    /* Opus: binary data after the structure stays */
    memcpy(p, "OpusTags", 8);
    n = 8 + comments(p + 8, t);
    memcpy(p + n, "\x01\x02\x03", 3);
    n += 3;
    CHECK(ogg_opus_ops.comment_rewrite(p, n, "New", NULL, &out, &len) == 1);
    CHECK(memcmp(out, "OpusTags", 8) == 0 && memcmp(out + len - 3, "\x01\x02\x03", 3) == 0);
    read_comments(out + 8, len - 11, got, sizeof(got), vendor, sizeof(vendor));
    CHECK_STR(got, "ALBUM=Al|TITLE=New");
    free(out);
    /* FLAC: the block's length follows, its last-block flag stays; other blocks untouched */
    n = comments(p + 4, t);
    p[0] = 0x84, p[1] = 0, p[2] = (unsigned char)(n >> 8), p[3] = (unsigned char)n;
    CHECK(ogg_flac_ops.comment_rewrite(p, n + 4, "Longer New Title", "B", &out, &len) == 1);
    CHECK(out[0] == 0x84 && ogg_codec_be(out + 1, 3) == len - 4);
    read_comments(out + 4, len - 4, got, sizeof(got), vendor, sizeof(vendor));
    CHECK_STR(got, "ALBUM=Al|TITLE=Longer New Title|ARTIST=B");
    free(out);
    p[0] = 0x81; /* PADDING */
    CHECK(ogg_flac_ops.comment_rewrite(p, n + 4, "x", NULL, &out, &len) == 0);
    p[0] = 0x04, p[3] = (unsigned char)(n + 9); /* a length past the packet */
    CHECK(ogg_flac_ops.comment_rewrite(p, n + 4, "x", NULL, &out, &len) == -1);
}

/* Every page of data[0..len) has a right CRC (libogg finds them all), in order; returns the
 * pages found. */
static int count_good_pages(const unsigned char *data, size_t len)
{
    ogg_sync_state sy;
    ogg_sync_init(&sy);
    char *b = ogg_sync_buffer(&sy, (long)len);
    memcpy(b, data, len);
    ogg_sync_wrote(&sy, (long)len);
    ogg_page pg;
    int pages = 0;
    long r;
    while ((r = ogg_sync_pageseek(&sy, &pg)) != 0) {
        if (r < 0) {
            pages = -1;
            break;
        }
        pages++;
    }
    ogg_sync_clear(&sy);
    return pages;
}

static void test_metadata_update_starts_a_chain_link(void)
{
    buf_t in = {0};
    make_vorbis(&in, 11, "First Song", 10);
    size_t half = page_offset(&in, 6) + 5; /* 4 audio pages, and a bit of the fifth */
    rec_t r;
    memset(&r, 0, sizeof(r));
    format_sink_t sink = {&r, rec_emit, rec_set_headers, rec_set_tag, rec_tags_done, rec_log, NULL};
    format_t *f = format_new(&format_ogg_ops, &sink);
    CHECK(f->ops->ingest(f, in.p, half) == 0);
    CHECK(r.nblocks == 4 && r.nheaders == 1);
    f->ops->set_meta(f, "New Song", "New Band");
    CHECK(f->ops->ingest(f, in.p + half, in.len - half) == 0);
    f->ops->flush(f);
    format_free(f);
    /* 4 pages, the EOS page, the new head, the 6 pages left relabelled */
    CHECK(r.nblocks == 12);
    if (r.nblocks != 12)
        goto out;
    const rec_block_t *eos = &r.blocks[4], *head = &r.blocks[5];
    CHECK(eos->len == 27 && eos->data[5] == 0x04 && eos->data[26] == 0);
    CHECK(ogg_codec_le32(eos->data + 14) == 11 && ogg_codec_le32(eos->data + 18) == 6);
    CHECK(memcmp(eos->data + 6, r.blocks[3].data + 6, 8) == 0); /* the last granule again */
    CHECK(head->flags == BLOCK_HEADER && eos->flags == 0);
    CHECK(r.nheaders == 2 && r.headers_at[1] == 6);
    CHECK(r.hdr_copy_len[1] == head->len && memcmp(r.hdr_copy[1], head->data, head->len) == 0);
    uint32_t serial = ogg_codec_le32(head->data + 14);
    CHECK(serial != 11 && head->data[5] == 0x02);
    CHECK(r.blocks[6].flags == BLOCK_SYNC);
    for (size_t i = 6; i < 12; i++) {
        const unsigned char *pg = r.blocks[i].data;
        CHECK(ogg_codec_le32(pg + 14) == serial && ogg_codec_le32(pg + 18) == 3 + (i - 6));
        int64_t g = 0;
        for (int k = 7; k >= 0; k--)
            g = g << 8 | pg[6 + k];
        CHECK(g == (int64_t)(i - 5) * 3 * 1024); /* 12 x 1024 subtracted */
    }
    /* every page checks out; the new head's comments name the update, others kept */
    buf_t all = {0};
    for (size_t i = 0; i < r.nblocks; i++)
        buf_add(&all, r.blocks[i].data, r.blocks[i].len);
    CHECK(count_good_pages(all.p, all.len) == 4 + 1 + 3 + 6);
    rec_t again;
    run_ogg(&again, head->data, head->len, 0);
    CHECK_STR(rec_tag(&again, "title"), "New Song");
    CHECK_STR(rec_tag(&again, "artist"), "New Band");
    CHECK(again.warnings == 0 && again.nheaders == 1);
    rec_free(&again);
    free(all.p);
out:
    rec_free(&r);
    free(in.p);
}

static void test_metadata_update_not_carried_by_a_mux(void)
{
    /* two logical streams: logged once, the stream goes on untouched */
    const char *const t[] = {"TITLE=x", NULL};
    buf_t mux = {0};
    writer_t v, o;
    w_init(&v, &mux, 21);
    w_init(&o, &mux, 22);
    unsigned char id[64], head[19] = "OpusHead\x01\x02\x38\x01\x80\xbb\0\0\0\0\0";
    w_packet(&v, id, vorbis_id(id), 0, 0, 1);
    w_packet(&o, head, sizeof(head), 0, 0, 1);
    unsigned char c[256];
    memcpy(c, "\x03vorbis", 7);
    size_t n = 7 + comments(c + 7, t);
    c[n++] = 1;
    w_packet(&v, c, n, 0, 0, 0);
    memcpy(c, "\x05vorbis", 7);
    w_packet(&v, c, 7, 0, 0, 1);
    memcpy(c, "OpusTags", 8);
    w_packet(&o, c, 8 + comments(c + 8, t), 0, 0, 1);
    audio_pages(&v, 6, 0);
    ogg_stream_clear(&v.os);
    ogg_stream_clear(&o.os);
    rec_t r;
    memset(&r, 0, sizeof(r));
    format_sink_t sink = {&r, rec_emit, rec_set_headers, rec_set_tag, rec_tags_done, rec_log, NULL};
    format_t *f = format_new(&format_ogg_ops, &sink);
    size_t half = page_offset(&mux, 7);
    CHECK(f->ops->ingest(f, mux.p, half) == 0);
    f->ops->set_meta(f, "New", NULL);
    CHECK(f->ops->ingest(f, mux.p + half, mux.len - half) == 0);
    format_free(f);
    CHECK(r.nheaders == 1 && r.warnings == 1);
    CHECK(strstr(r.lastlog, "not carried") != NULL);
    size_t total = r.headers_len;
    for (size_t i = 0; i < r.nblocks; i++)
        total += r.blocks[i].len;
    CHECK(total == mux.len);
    rec_free(&r);
    free(mux.p);
}

static void test_codec_of_header_pages(void)
{
    /* what the admin layer asks before a title update: Opus, Vorbis, or not one stream */
    unsigned char head[19] = "OpusHead\x01\x02\x38\x01\x80\xbb\0\0\0\0\0", tags[64];
    const char *const t[] = {"TITLE=x", NULL};
    memcpy(tags, "OpusTags", 8);
    ogg_head_packet_t pk[2] = {{head, sizeof(head)}, {tags, 8 + comments(tags + 8, t)}};
    int pages;
    block_t *opus = ogg_head_pages(7, pk, 2, &pages);
    CHECK(opus && pages == 2);
    CHECK_STR(format_ogg_codec(opus), "Opus");
    buf_t in = {0};
    make_vorbis(&in, 5, "Song", 2);
    rec_t r;
    run_ogg(&r, in.p, in.len, 0);
    block_t *vorbis = block_new_copy(r.headers, r.headers_len);
    CHECK_STR(format_ogg_codec(vorbis), "Vorbis");
    /* a chain of blocks is read whole: a second BOS page is a second stream */
    block_t *two = block_new_copy(opus->data, opus->len);
    block_link(two, block_new_copy(vorbis->data, vorbis->len));
    CHECK(format_ogg_codec(two) == NULL);
    /* not whole pages, or nothing */
    block_t *cut = block_new_copy(opus->data, opus->len - 1);
    CHECK(format_ogg_codec(cut) == NULL && format_ogg_codec(NULL) == NULL);
    block_unref(cut);
    block_unref(two);
    block_unref(vorbis);
    block_unref(opus);
    rec_free(&r);
    free(in.p);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof(tmpdir), "%s/test_ogg.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir))
        return 1;
    RUN(test_vorbis_headers_kept_not_emitted);
    RUN(test_byte_by_byte_same_blocks);
    RUN(test_chained_stream_new_headers_inline);
    RUN(test_mux_sync_on_keyframes_only);
    RUN(test_continued_page_not_sync);
    RUN(test_opus_tags);
    RUN(test_opus_short_bos);
    RUN(test_flac_tags);
    RUN(test_speex_headers);
    RUN(test_malformed_comments_ignored);
    RUN(test_unknown_codec_passed_through);
    RUN(test_garbage_between_pages);
    RUN(test_bad_crc_page_skipped);
    RUN(test_truncated_page);
    RUN(test_random_bytes);
    RUN(test_largest_page);
    RUN(test_pages_without_bos);
    RUN(test_real_codecs_decode_from_any_sync);
    RUN(test_real_theora_vorbis_mux);
    RUN(test_real_chained_vorbis);
    RUN(test_comment_writer);
    RUN(test_codec_comment_packets_rewritten);
    RUN(test_metadata_update_starts_a_chain_link);
    RUN(test_metadata_update_not_carried_by_a_mux);
    RUN(test_codec_of_header_pages);
    char cmd[160];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return testlib_done();
}
