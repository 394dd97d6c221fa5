/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_ogg: the Ogg format handler on arbitrary bytes, fed in pieces whose sizes come from the
 * input itself. Every emitted block and header chain must consist of whole, well-formed pages.
 * Inputs whose first byte is even are read as packets for up to four logical streams and paged
 * with libogg first, so that valid CRCs reach the codec header parsers and the chaining logic.
 * Halfway through, a metadata update (set_meta) asks for a chain link of the handler's own
 * (into an Opus stream too, or not: opus_title_updates). Each header chain is also read by
 * format_ogg_codec.
 */
// fuzz-sources: src/format/format.c src/format/generic.c src/format/mpeg.c src/format/icy.c src/format/ogg.c src/format/ogg_vorbis.c src/format/ogg_opus.c src/format/ogg_flac.c src/format/ogg_theora.c src/format/ogg_speex.c src/format/ogg_comment.c src/format/ogg_file.c src/core/block.c src/core/str.c src/core/utf8.c src/core/loop.c src/core/record.c src/core/buf.c
// fuzz-pkgs: ogg
// fuzz-args: -max_len=70000
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ogg/ogg.h>

#include "format/format.h"

/* Aborts unless p[0..len) is a sequence of complete Ogg pages. */
static void check_pages(const unsigned char *p, size_t len)
{
    size_t pos = 0;
    if (len == 0)
        abort();
    while (pos < len) {
        if (len - pos < 27 || memcmp(p + pos, "OggS", 4) != 0)
            abort();
        size_t segs = p[pos + 26], body = 0;
        if (len - pos < 27 + segs)
            abort();
        for (size_t s = 0; s < segs; s++)
            body += p[pos + 27 + s];
        pos += 27 + segs + body;
        if (pos > len)
            abort();
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
    const char *codec = format_ogg_codec(h); /* what the admin layer asks of a mount's headers */
    if (codec && strlen(codec) > 8)
        abort();
    block_unref(h);
}

static void sink_set_tag(void *ctx, const char *key, const char *value)
{
    (void)ctx;
    if (!key || (value && strlen(value) > 4096))
        abort();
}

static void sink_tags_done(void *ctx) { (void)ctx; }
static void sink_log(void *ctx, int level, const char *msg)
{
    (void)ctx, (void)level, (void)msg;
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
        if (!p)
            abort();
        o->p = p;
        memcpy(o->p + o->len, og.header, (size_t)og.header_len);
        memcpy(o->p + o->len + og.header_len, og.body, (size_t)og.body_len);
        o->len += (size_t)og.header_len + (size_t)og.body_len;
    }
}

/* Packet records: stream (2 bits) + flags (bit 2 restart the stream with a new serial,
 * bit 3 eos, bit 4 flush), length (2 bytes), payload. */
static void build_pages(const uint8_t *d, size_t n, out_t *o)
{
    ogg_stream_state os[4];
    int serial = 1000;
    long packetno[4] = {0};
    for (int i = 0; i < 4; i++)
        ogg_stream_init(&os[i], serial++);
    while (n >= 3) {
        int s = d[0] & 3, flags = d[0];
        size_t len = (size_t)d[1] << 8 | d[2];
        d += 3, n -= 3;
        if (len > n)
            len = n;
        if (flags & 4) {
            ogg_stream_clear(&os[s]);
            ogg_stream_init(&os[s], serial++);
            packetno[s] = 0;
        }
        ogg_packet op = {(unsigned char *)d, (long)len, packetno[s] == 0, (flags & 8) != 0,
                         packetno[s] * 960, packetno[s]};
        packetno[s]++;
        ogg_stream_packetin(&os[s], &op);
        out_pages(o, &os[s], (flags & 16) != 0);
        d += len, n -= len;
    }
    for (int i = 0; i < 4; i++) {
        out_pages(o, &os[i], 1);
        ogg_stream_clear(&os[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    format_sink_t sink = {NULL, sink_emit, sink_set_headers, sink_set_tag, sink_tags_done,
                          sink_log};
    out_t built = {NULL, 0};
    if (size > 1 && !(data[0] & 1)) {
        build_pages(data + 2, size - 2, &built);
        if (data[1] && built.len)
            built.p[data[1] * 257u % built.len] ^= data[1]; /* one damaged byte */
    }
    format_t *f = format_new(&format_ogg_ops, &sink);
    if (!f) {
        free(built.p);
        return 0;
    }
    size_t step = size > 0 ? (size_t)data[0] * 7 + 1 : 1;
    f->opus_title_updates = (step & 4) != 0; /* an Opus stream carries the update, or not */
    if (built.p) {
        data = built.p;
        size = built.len;
    }
    int updated = 0;
    for (size_t i = 0; i < size; i += step) {
        if (!updated && i >= size / 2) {
            f->ops->set_meta(f, "Fuzz Title", step & 2 ? "Fuzz Artist" : NULL);
            updated = 1;
        }
        if (f->ops->ingest(f, data + i, size - i < step ? size - i : step) < 0)
            break;
    }
    f->ops->flush(f);
    format_free(f);
    free(built.p);
    return 0;
}
