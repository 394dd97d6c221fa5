/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_mpeg: MPEG audio / ADTS frame sync. The first input byte chooses the piece size; the
 * rest goes through the generic handler (which follows frames and cuts blocks) and through
 * mpeg_frame_parse at every offset. The bytes must come out unchanged and in order, all of
 * them but an incomplete last frame of a followed stream, and a sync block emitted while the
 * stream was followed must begin with a valid frame header. Each input then goes through the
 * handler again as a relay's stream (join_midway): what comes out must be one slice of the
 * input that begins at its start or at a frame header within the bytes held while joining.
 */
// fuzz-sources: src/format/format.c src/format/generic.c src/format/mpeg.c src/format/icy.c src/format/ogg.c src/format/ogg_vorbis.c src/format/ogg_opus.c src/format/ogg_flac.c src/format/ogg_theora.c src/format/ogg_speex.c src/format/ogg_comment.c src/format/ogg_file.c src/core/block.c src/core/str.c src/core/utf8.c src/core/loop.c src/core/record.c src/core/buf.c
// fuzz-pkgs: ogg
// fuzz-args: -max_len=65536
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/mpeg.h"

#define JOIN_HELD 32768 /* what the generic handler holds at most while joining */

static const uint8_t *input;
static size_t input_len, out_len;
static uint8_t joined[65536]; /* join_midway: what came out, to be found in the input */

static void sink_emit(void *ctx, block_t *b)
{
    (void)ctx;
    if (out_len + b->len > input_len || memcmp(input + out_len, b->data, b->len) != 0)
        abort(); /* bytes changed, reordered or invented */
    out_len += b->len;
    block_unref(b);
}

static void join_emit(void *ctx, block_t *b)
{
    (void)ctx;
    if (out_len + b->len > input_len || out_len + b->len > sizeof(joined))
        abort();
    memcpy(joined + out_len, b->data, b->len);
    out_len += b->len;
    block_unref(b);
}

/* The input as a relay's stream: the output is input[skip, skip + out_len) with skip 0 or a
 * frame header within what was held. */
static void run_joined(size_t piece)
{
    format_sink_t sink = {.emit = join_emit};
    format_t *f = format_new(&format_generic_ops, &sink);
    if (!f)
        return;
    f->join_midway = 1;
    out_len = 0;
    for (size_t i = 0; i < input_len; i += piece)
        f->ops->ingest(f, input + i, input_len - i < piece ? input_len - i : piece);
    f->ops->flush(f);
    format_free(f);
    if (out_len == 0 || memcmp(joined, input, out_len) == 0)
        return;
    mpeg_frame_t fr;
    for (size_t skip = 1; skip < JOIN_HELD && skip + out_len <= input_len; skip++) {
        size_t n = input_len - skip < MPEG_HEADER_MAX ? input_len - skip : MPEG_HEADER_MAX;
        if (mpeg_frame_parse(input + skip, n, &fr) == 1 &&
            memcmp(joined, input + skip, out_len) == 0)
            return;
    }
    abort(); /* not one slice of the input from a frame */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] * 37 + 1;
    input = data + 1;
    input_len = size - 1;
    out_len = 0;
    mpeg_frame_t fr;
    for (size_t i = 0; i < input_len; i++) {
        size_t n = input_len - i < MPEG_HEADER_MAX ? input_len - i : MPEG_HEADER_MAX;
        int r = mpeg_frame_parse(input + i, n, &fr);
        if (r == 1 && (fr.len < 4 || fr.len > 8191))
            abort();
    }
    (void)mpeg_id3v2_len(input, input_len);
    format_sink_t sink = {.emit = sink_emit};
    format_t *f = format_new(&format_generic_ops, &sink);
    if (!f)
        return 0;
    f->coalesce_ms = 0;
    for (size_t i = 0; i < input_len; i += piece)
        f->ops->ingest(f, input + i, input_len - i < piece ? input_len - i : piece);
    f->ops->flush(f);
    format_free(f);
    /* Bytes are lost only at the end: the incomplete last frame of a followed stream (a
     * source cut off mid-frame), which begins at a frame header, or at the start of one
     * whose bytes are not all there, and is shorter than the longest frame. */
    if (out_len != input_len) {
        size_t tail = input_len - out_len;
        if (tail >= 8191 + MPEG_HEADER_MAX)
            abort(); /* more than one frame lost */
        int r = mpeg_frame_parse(input + out_len, tail, &fr);
        if (r == 1 ? fr.len <= tail : r == 0)
            abort(); /* lost bytes that are not one incomplete frame */
    }
    run_joined(piece);
    return 0;
}
