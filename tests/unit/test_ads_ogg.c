/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_ads_ogg: Ogg creatives (ads/ads_ogg.h), built in memory with libogg: a Vorbis and an
 * Opus file checked page by page and cut into blocks of whole pages (their length from the
 * last granule position, less Opus's pre-skip; the tracking marks at page ends, in order);
 * refused: bytes between pages, a broken CRC, a second logical stream, pages out of order, no
 * BOS page, another codec; the format of a mount's header pages; a creative whose serial
 * number is the mount's goes out as a copy under another one, made once, with valid pages; the
 * page that ends a live link after its last page.
 */
#include "ads/ads.h"
#include "ads/ads_ogg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ogg/ogg.h>

#include "testlib.h"

static uint32_t page_seq(const unsigned char *p)
{
    return (uint32_t)p[18] | (uint32_t)p[19] << 8 | (uint32_t)p[20] << 16 | (uint32_t)p[21] << 24;
}

typedef struct obuf {
    unsigned char *p;
    size_t len, cap;
} obuf_t;

static void put(obuf_t *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void flush_pages(ogg_stream_state *os, obuf_t *out, int force)
{
    ogg_page pg;
    while (force ? ogg_stream_flush(os, &pg) : ogg_stream_pageout(os, &pg)) {
        put(out, pg.header, (size_t)pg.header_len);
        put(out, pg.body, (size_t)pg.body_len);
    }
}

static void packet(ogg_stream_state *os, obuf_t *out, const void *p, size_t n, int64_t gp,
                   int bos, int eos, int flush)
{
    static int64_t no;
    ogg_packet op = {.packet = (unsigned char *)p, .bytes = (long)n, .b_o_s = bos, .e_o_s = eos,
                     .granulepos = gp, .packetno = no++};
    ogg_stream_packetin(os, &op);
    flush_pages(os, out, flush);
}

/* A file of `codec` (1 Vorbis, 2 Opus): its headers, then `n` audio packets of 600 bytes, 1024
 * samples each (granule positions counting them, plus Opus's pre-skip of 312). */
static obuf_t make(int codec, int serial, int n, int rate, int channels)
{
    obuf_t out = {0};
    ogg_stream_state os;
    ogg_stream_init(&os, serial);
    unsigned char h[64] = {0};
    if (codec == 1) {
        memcpy(h, "\x01vorbis", 7);
        h[11] = (unsigned char)channels;
        for (int i = 0; i < 4; i++)
            h[12 + i] = (unsigned char)(rate >> (8 * i));
        h[28] = 0xb8;
        h[29] = 1;
        packet(&os, &out, h, 30, 0, 1, 0, 1);
        packet(&os, &out, "\x03vorbis\x00\x00\x00\x00\x00\x00\x00\x00\x01", 16, 0, 0, 0, 0);
        packet(&os, &out, "\x05vorbis-setup", 13, 0, 0, 0, 1);
    } else {
        memcpy(h, "OpusHead\x01", 9);
        h[9] = (unsigned char)channels;
        h[10] = 312 & 0xff;
        h[11] = 312 >> 8;
        h[12] = 0x44;
        h[13] = 0xac;
        packet(&os, &out, h, 19, 0, 1, 0, 1);
        packet(&os, &out, "OpusTags\x00\x00\x00\x00\x00\x00\x00\x00", 16, 0, 0, 0, 1);
    }
    unsigned char audio[600];
    memset(audio, 0x5a, sizeof(audio));
    int64_t base = codec == 2 ? 312 : 0;
    for (int i = 1; i <= n; i++)
        packet(&os, &out, audio, sizeof(audio), base + (int64_t)i * 1024, 0, i == n, 0);
    flush_pages(&os, &out, 1);
    ogg_stream_clear(&os);
    return out;
}

/* Every page of data[0..len) is valid (libogg finds each where the one before ended); the
 * serial number of the first. */
static int pages_ok(const unsigned char *data, size_t len, uint32_t *serial)
{
    ogg_sync_state oy;
    ogg_sync_init(&oy);
    char *buf = ogg_sync_buffer(&oy, (long)len);
    memcpy(buf, data, len);
    ogg_sync_wrote(&oy, (long)len);
    ogg_page og;
    long got;
    size_t at = 0;
    int ok = 1, n = 0;
    while ((got = ogg_sync_pageseek(&oy, &og)) != 0) {
        if (got < 0) {
            ok = 0;
            break;
        }
        if (n++ == 0)
            *serial = (uint32_t)ogg_page_serialno(&og);
        at += (size_t)got;
    }
    ogg_sync_clear(&oy);
    return ok && at == len;
}

static void check_creative(const ads_creative_t *c, const obuf_t *f)
{
    uint64_t off = 0;
    for (const block_t *b = c->blocks; b; b = block_next(b)) {
        uint32_t s;
        CHECK(b->flags == BLOCK_SYNC && b->offset == off && !b->meta);
        CHECK(off + b->len <= f->len && memcmp(b->data, f->p + off, b->len) == 0);
        CHECK(pages_ok(b->data, b->len, &s)); /* whole pages */
        off += b->len;
    }
    CHECK(off == c->bytes && off == f->len);
    for (int i = 0; i < ADS_MARKS; i++)
        CHECK(c->mark[i] > 0 && c->mark[i] <= c->bytes);
    CHECK(c->mark[ADS_MARK_Q1] <= c->mark[ADS_MARK_MID]);
    CHECK(c->mark[ADS_MARK_MID] <= c->mark[ADS_MARK_Q3] && c->mark[ADS_MARK_Q1] < c->mark[ADS_MARK_Q3]);
}

static void test_vorbis(void)
{
    obuf_t f = make(1, 1234, 200, 44100, 2);
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(f.p, f.len, "Spot", &c) == 0);
    if (c) {
        CHECK(c->fmt.ogg == ADS_OGG_VORBIS && c->fmt.samplerate == 44100 && c->fmt.channels == 2);
        CHECK(c->fmt.serial == 1234 && c->samples == 200 * 1024);
        CHECK(c->duration_ms == 200u * 1024 * 1000 / 44100);
        CHECK_STR(c->title, "Spot");
        check_creative(c, &f);
        CHECK(c->blocks && block_next(c->blocks)); /* 120 kB: more than one block */
    }
    ads_creative_unref(c);
    free(f.p);
}

static void test_opus(void)
{
    obuf_t f = make(2, 77, 100, 48000, 1);
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(f.p, f.len, "Spot", &c) == 0);
    if (c) {
        CHECK(c->fmt.ogg == ADS_OGG_OPUS && c->fmt.samplerate == 48000 && c->fmt.channels == 1);
        CHECK(c->samples == 100 * 1024); /* the last granule position less the pre-skip */
        check_creative(c, &f);
    }
    ads_creative_unref(c);
    free(f.p);
}

static int builds(const unsigned char *p, size_t n)
{
    ads_creative_t *c = NULL;
    int rc = ads_creative_build(p, n, "x", &c);
    ads_creative_unref(c);
    return rc;
}

static void test_refused(void)
{
    obuf_t f = make(1, 5, 20, 44100, 1);
    size_t first = 27 + (size_t)f.p[26] + 30; /* the BOS page: one segment of 30 bytes */
    unsigned char *bad = malloc(f.len + 8);
    /* bytes between two pages */
    memcpy(bad, f.p, first);
    memcpy(bad + first, "junk", 4);
    memcpy(bad + first + 4, f.p + first, f.len - first);
    CHECK(builds(bad, f.len + 4) == VAST_ERR_MEDIA_BROKEN);
    /* a broken CRC */
    memcpy(bad, f.p, f.len);
    bad[f.len - 1] ^= 0xff;
    CHECK(builds(bad, f.len) == VAST_ERR_MEDIA_BROKEN);
    /* a cut last page */
    CHECK(builds(f.p, f.len - 10) == VAST_ERR_MEDIA_BROKEN);
    /* no BOS page first */
    CHECK(builds(f.p + first, f.len - first) == VAST_ERR_MEDIA_BROKEN);
    /* a second logical stream after it */
    obuf_t g = make(1, 6, 20, 44100, 1);
    obuf_t two = {0};
    put(&two, f.p, f.len);
    put(&two, g.p, g.len);
    CHECK(builds(two.p, two.len) == VAST_ERR_MEDIA_BROKEN);
    /* pages out of order: the first audio page twice */
    obuf_t dup = {0};
    put(&dup, f.p, f.len);
    put(&dup, f.p + first, f.len - first);
    CHECK(builds(dup.p, dup.len) == VAST_ERR_MEDIA_BROKEN);
    /* another codec (a Speex-like BOS packet) */
    memcpy(bad, f.p, f.len);
    memcpy(bad + 27 + bad[26], "Speex  ", 7);
    CHECK(builds(bad, f.len) == VAST_ERR_MEDIA_BROKEN);
    free(bad);
    free(f.p);
    free(g.p);
    free(two.p);
    free(dup.p);
}

static void test_mount_format(void)
{
    obuf_t f = make(2, 99, 3, 48000, 2);
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(f.p, f.len, "x", &c) == 0);
    /* the first blocks' header pages as a mount keeps them (one block) */
    size_t hdr = 0;
    for (int pages = 0; pages < 2; pages++) {
        size_t h = 27 + f.p[hdr + 26], b = 0;
        for (int i = 0; i < f.p[hdr + 26]; i++)
            b += f.p[hdr + 27 + i];
        hdr += h + b;
    }
    block_t *headers = block_new_copy(f.p, hdr);
    ads_format_t fmt;
    CHECK(ads_ogg_format_of(headers, &fmt) == 0);
    CHECK(fmt.ogg == ADS_OGG_OPUS && fmt.channels == 2 && fmt.serial == 99);
    CHECK(c && ads_format_equal(&fmt, &c->fmt));
    block_unref(headers);
    /* two streams' BOS pages: not a mount with breaks */
    obuf_t g = make(1, 100, 1, 44100, 1);
    obuf_t both = {0};
    put(&both, f.p, 27 + f.p[26] + 19);
    put(&both, g.p, 27 + g.p[26] + 30);
    headers = block_new_copy(both.p, both.len);
    CHECK(ads_ogg_format_of(headers, &fmt) < 0);
    block_unref(headers);
    ads_creative_unref(c);
    free(f.p);
    free(g.p);
    free(both.p);
}

static void test_serial_clash(void)
{
    obuf_t f = make(1, 4242, 50, 44100, 1);
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(f.p, f.len, "x", &c) == 0);
    if (!c)
        return;
    ads_creative_t *same = ads_ogg_creative_for(c, 1);
    CHECK(same == c); /* another serial: the creative itself */
    ads_creative_unref(same);
    ads_creative_t *alt = ads_ogg_creative_for(c, 4242);
    CHECK(alt && alt != c && alt->fmt.serial != 4242 && alt->bytes == c->bytes);
    CHECK(alt && alt->samples == c->samples && !memcmp(alt->mark, c->mark, sizeof(c->mark)));
    for (const block_t *b = alt ? alt->blocks : NULL; b; b = block_next(b)) {
        uint32_t s = 0;
        CHECK(pages_ok(b->data, b->len, &s) && s == alt->fmt.serial);
    }
    ads_creative_t *again = ads_ogg_creative_for(c, 4242);
    CHECK(again == alt); /* made once */
    ads_creative_unref(again);
    ads_creative_unref(alt);
    ads_creative_unref(c);
    free(f.p);
}

static void test_eos_after(void)
{
    obuf_t f = make(1, 31337, 3, 44100, 1);
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(f.p, f.len, "x", &c) == 0);
    /* a block of every page but the last, which ends the stream */
    size_t at = 0, last = 0, hlen = 0;
    while (at < f.len) { /* the whole pages of the file but its EOS one */
        size_t h = 27 + f.p[at + 26], n = 0;
        for (int i = 0; i < f.p[at + 26]; i++)
            n += f.p[at + 27 + i];
        if (at + h + n >= f.len)
            break;
        last = at;
        hlen = h;
        at += h + n;
    }
    block_t *b = block_new_copy(f.p, at);
    block_t *e = ads_ogg_eos_after(b);
    CHECK(e && e->len == 27 && (e->data[5] & 0x04) && e->data[26] == 0);
    if (e) {
        uint32_t s = 0;
        CHECK(pages_ok(e->data, e->len, &s) && s == 31337);
        CHECK(page_seq(e->data) == page_seq(f.p + last) + 1);
        CHECK(ads_ogg_page_granule(e->data, 27) == ads_ogg_page_granule(f.p + last, hlen));
        block_unref(e);
    }
    block_unref(b);
    b = block_new_copy(f.p, f.len); /* ends with the file's EOS page: nothing to add */
    CHECK(ads_ogg_eos_after(b) == NULL);
    block_unref(b);
    b = block_new_copy(f.p, 20); /* not a whole page */
    CHECK(ads_ogg_eos_after(b) == NULL);
    block_unref(b);
    ads_creative_unref(c);
    free(f.p);
}

int main(void)
{
    test_vorbis();
    test_opus();
    test_refused();
    test_mount_format();
    test_serial_clash();
    test_eos_after();
    return testlib_done();
}
