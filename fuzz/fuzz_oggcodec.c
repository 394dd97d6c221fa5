/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_oggcodec: the Ogg codec header parsers (Vorbis, Opus, FLAC, Theora, Speex, Skeleton,
 * Kate) reached through the Ogg handler. The input chooses a codec per logical stream; each
 * packet record may start with that codec's signature for the packet's place in the header
 * chain (id, comment, setup), so the bytes behind the signatures - lengths, comment counts,
 * STREAMINFO, keyframe flags - are what gets mutated. Pages are built with libogg (valid
 * CRCs), fed in pieces, and every emitted block must be whole pages.
 */
// fuzz-sources: src/format/format.c src/format/generic.c src/format/mpeg.c src/format/icy.c src/format/ogg.c src/format/ogg_vorbis.c src/format/ogg_opus.c src/format/ogg_flac.c src/format/ogg_theora.c src/format/ogg_speex.c src/format/ogg_comment.c src/format/ogg_file.c src/core/block.c src/core/str.c src/core/utf8.c src/core/loop.c src/core/record.c src/core/buf.c
// fuzz-pkgs: ogg
// fuzz-args: -max_len=20000
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ogg/ogg.h>

#include "core/utf8.h"
#include "format/format.h"

#include "fuzz.h"

/* Signatures per codec and header index (id, comment, setup); len 0 = none. */
typedef struct sig {
    const char *bytes;
    size_t len;
} sig_t;

#define SIG(s) {s, sizeof(s) - 1}
static const sig_t signatures[][3] = {
    {SIG("\x01vorbis"), SIG("\x03vorbis"), SIG("\x05vorbis")},
    {SIG("OpusHead"), SIG("OpusTags"), {NULL, 0}},
    {SIG("\x7f" "FLAC"), SIG("\x84"), SIG("\x81")}, /* FLAC: mapping; VORBIS_COMMENT; PADDING */
    {SIG("\x80theora"), SIG("\x81theora"), SIG("\x82theora")},
    {SIG("Speex   "), {NULL, 0}, {NULL, 0}},
    {SIG("fishead\0"), SIG("fisbone\0"), SIG("index\0")},
    {SIG("\x80kate\0\0\0"), SIG("\x81kate\0\0\0"), {NULL, 0}},
};
#define NUM_CODECS (sizeof(signatures) / sizeof(signatures[0]))
#define FLAC_CODEC 2

static void check_pages(const unsigned char *p, size_t len)
{
    size_t pos = 0;
    REQUIRE(len > 0);
    while (pos < len) {
        REQUIRE(len - pos >= 27 && memcmp(p + pos, "OggS", 4) == 0);
        size_t segs = p[pos + 26], body = 0;
        REQUIRE(len - pos >= 27 + segs);
        for (size_t s = 0; s < segs; s++)
            body += p[pos + 27 + s];
        pos += 27 + segs + body;
        REQUIRE(pos <= len);
    }
}

static void sink_emit(void *ctx, block_t *b)
{
    (void)ctx;
    check_pages(b->data, b->len);
    block_unref(b);
}

static void sink_set_headers(void *ctx, block_t *h)
{
    (void)ctx;
    for (block_t *b = h; b; b = block_next(b))
        check_pages(b->data, b->len);
    block_unref(h);
}

static void sink_set_tag(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    REQUIRE(key && *key);
    if (value)
        REQUIRE(strlen(value) <= 4096 && utf8_valid(value, strlen(value)));
}

static void sink_tags_done(void *ctx) { (void)ctx; }
static void sink_log(void *ctx, int level, const char *msg)
{
    (void)ctx, (void)level;
    REQUIRE(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct out {
    unsigned char *p;
    size_t len;
} out_t;

static void out_pages(out_t *o, ogg_stream_state *os, int flush)
{
    ogg_page og;
    while (flush ? ogg_stream_flush(os, &og) : ogg_stream_pageout(os, &og)) {
        unsigned char *p = realloc(o->p, o->len + (size_t)og.header_len + (size_t)og.body_len);
        REQUIRE(p);
        o->p = p;
        memcpy(o->p + o->len, og.header, (size_t)og.header_len);
        memcpy(o->p + o->len + og.header_len, og.body, (size_t)og.body_len);
        o->len += (size_t)og.header_len + (size_t)og.body_len;
    }
}

/* One packet: the signature (if any) followed by the payload. FLAC's mapping header wants
 * "fLaC" at offset 9: the first four payload bytes (version, header count) go before it. */
static size_t make_packet(unsigned char *pkt, size_t codec, int which, const uint8_t *d,
                          size_t len)
{
    size_t n = 0;
    if (which < 3 && signatures[codec][which].len) {
        memcpy(pkt, signatures[codec][which].bytes, signatures[codec][which].len);
        n = signatures[codec][which].len;
        if (codec == FLAC_CODEC && which == 0) {
            size_t k = len < 4 ? len : 4;
            memset(pkt + n, 0, 4);
            memcpy(pkt + n, d, k);
            memcpy(pkt + n + 4, "fLaC", 4);
            n += 8;
            d += k, len -= k;
        }
    }
    memcpy(pkt + n, d, len);
    return n + len;
}

/* Records: flags, length (2 bytes), payload. flags bits 0-1: signature index (3 = none);
 * bit 2: second logical stream; bit 3: eos; bit 4: flush; bit 5: restart the stream with a
 * new serial (a chained group). Stream 0 uses codec c0, stream 1 codec c1. */
static void build_pages(size_t c0, size_t c1, const uint8_t *d, size_t n, out_t *o)
{
    ogg_stream_state os[2];
    int serial = 4242;
    long packetno[2] = {0, 0};
    size_t codec[2] = {c0, c1};
    unsigned char *pkt = malloc(65536 + 64);
    REQUIRE(pkt);
    for (int i = 0; i < 2; i++)
        ogg_stream_init(&os[i], serial++);
    while (n >= 3) {
        int flags = d[0], s = (flags >> 2) & 1;
        size_t len = (size_t)d[1] << 8 | d[2];
        d += 3, n -= 3;
        if (len > n)
            len = n;
        if (flags & 32) {
            out_pages(o, &os[s], 1);
            ogg_stream_clear(&os[s]);
            ogg_stream_init(&os[s], serial++);
            packetno[s] = 0;
        }
        size_t plen = make_packet(pkt, codec[s], flags & 3, d, len);
        ogg_packet op = {pkt, (long)plen, packetno[s] == 0, (flags & 8) != 0,
                         packetno[s] * 960, packetno[s]};
        packetno[s]++;
        ogg_stream_packetin(&os[s], &op);
        out_pages(o, &os[s], (flags & 16) != 0 || packetno[s] <= 3);
        d += len, n -= len;
    }
    for (int i = 0; i < 2; i++) {
        out_pages(o, &os[i], 1);
        ogg_stream_clear(&os[i]);
    }
    free(pkt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    format_sink_t sink = {NULL, sink_emit, sink_set_headers, sink_set_tag, sink_tags_done,
                          sink_log};
    out_t built = {NULL, 0};
    if (size < 2)
        return 0;
    size_t c0 = (data[0] & 15) % NUM_CODECS, c1 = (data[0] >> 4) % NUM_CODECS;
    size_t step = (size_t)data[1] * 13 + 1;
    build_pages(c0, c1, data + 2, size - 2, &built);
    format_t *f = format_new(&format_ogg_ops, &sink);
    if (f) {
        for (size_t i = 0; i < built.len; i += step)
            if (f->ops->ingest(f, built.p + i, built.len - i < step ? built.len - i : step) < 0)
                break;
        f->ops->flush(f);
        format_free(f);
    }
    free(built.p);
    return 0;
}
