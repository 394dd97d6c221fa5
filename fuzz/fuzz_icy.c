/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_icy: inbound ICY metadata. The input's first bytes choose the metadata interval, the
 * charset and the piece size; the rest goes through the generic handler, and the whole input
 * through icy_parse and utf8_from_text. Tags must come out as valid UTF-8, audio never grows.
 */
// fuzz-sources: src/format/format.c src/format/generic.c src/format/mpeg.c src/format/icy.c src/format/ogg.c src/format/ogg_vorbis.c src/format/ogg_opus.c src/format/ogg_flac.c src/format/ogg_theora.c src/format/ogg_speex.c src/format/ogg_comment.c src/format/ogg_file.c src/core/block.c src/core/str.c src/core/utf8.c src/core/loop.c src/core/record.c src/core/buf.c
// fuzz-pkgs: ogg
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "format/format.h"
#include "format/icy.h"

static size_t audio_bytes;

static void sink_emit(void *ctx, block_t *b)
{
    (void)ctx;
    audio_bytes += b->len;
    block_unref(b);
}

static void sink_set_headers(void *ctx, block_t *h)
{
    (void)ctx;
    block_unref(h);
}

static void sink_set_tag(void *ctx, const char *key, const char *value)
{
    (void)ctx, (void)key;
    if (value && !utf8_valid(value, strlen(value)))
        abort();
}

static void sink_tags_done(void *ctx) { (void)ctx; }
static void sink_log(void *ctx, int level, const char *msg)
{
    (void)ctx, (void)level, (void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const charsets[] = {NULL, "UTF-8", "ISO-8859-1", "cp1252", "bogus"};
    if (size < 3)
        return 0;
    format_sink_t sink = {NULL, sink_emit, sink_set_headers, sink_set_tag, sink_tags_done,
                          sink_log};
    format_t *f = format_new(&format_generic_ops, &sink);
    if (!f)
        return 0;
    f->icy_metaint = data[0] % 64 + 1;
    f->charset = charsets[data[1] % 5];
    size_t step = (size_t)data[2] + 1;
    const uint8_t *p = data + 3;
    size_t len = size - 3;
    audio_bytes = 0;
    for (size_t i = 0; i < len; i += step)
        f->ops->ingest(f, p + i, len - i < step ? len - i : step);
    format_free(f);
    if (audio_bytes > len)
        abort();

    char *title, *url;
    if (icy_parse((const char *)p, len, &title, &url) == 0) {
        if (title) {
            char *u = utf8_from_text(title, strlen(title), charsets[data[1] % 5]);
            if (u && !utf8_valid(u, strlen(u)))
                abort();
            free(u);
        }
        free(title);
        free(url);
    }
    return 0;
}
