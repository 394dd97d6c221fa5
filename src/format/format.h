/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * format: the vtable a source's bytes go through before they become blocks.
 *
 * A format handler is created per source connection from the Content-Type. It receives the raw
 * bytes read from the source (any split), and reports through its sink: finished blocks (in
 * stream order, with flags), the codec header data new listeners need first, stream tags
 * (title, artist, audio_info keys) and log lines. It never touches sockets, mounts or listeners.
 * Handlers: generic (pass-through; MPEG audio and ADTS followed frame by frame so that blocks
 * start at frames, anything else every block a sync point; inbound ICY stripping),
 * ogg (page sync via libogg, codecs behind ogg_codec_ops_t in one file each).
 */
#ifndef RIMECAST_FORMAT_H
#define RIMECAST_FORMAT_H

#include <stddef.h>

#include "core/block.h"

struct buf;        /* core/buf.h */
struct rec_reader; /* core/record.h */

typedef struct format_sink {
    void *ctx;
    /* A finished block in stream order; the sink takes the reference. b->offset is set by the
     * sink, the handler only fills data/len/flags. A block flagged BLOCK_HEADER (without
     * BLOCK_SYNC) carries the header pages of a chained Ogg stream inline: listeners already
     * playing need it, it is never a start point. */
    void (*emit)(void *ctx, block_t *b);
    /* New codec headers for listeners joining from now on (NULL: none). The sink takes the
     * reference. A block chain is allowed (b->next linked with block_link). The headers belong
     * to the blocks emitted after this call: a listener starting at an earlier block (a burst
     * point from before a chained stream's switch) needs the previous headers, so the sink
     * either keeps those for it or starts it at the first SYNC block emitted after this call. */
    void (*set_headers)(void *ctx, block_t *headers);
    /* A stream tag such as "title", "artist", "audio_channels", "audio_samplerate",
     * "audio_bitrate"; value NULL removes it. Strings are UTF-8, copied by the sink. */
    void (*set_tag)(void *ctx, const char *key, const char *value);
    /* Called once after a batch of tags changed (e.g. a new comment header): the sink may
     * rebuild ICY metadata / stats from the tags. */
    void (*tags_done)(void *ctx);
    /* level: LOG_ERROR..LOG_DEBUG (see core/log.h). Text is plain, the sink escapes it. */
    void (*log)(void *ctx, int level, const char *msg);
    /* The handler now holds `bytes` of audio that it read and will emit (the generic
     * handler's gathering), after the blocks it emitted: the sink counts them in the burst, so
     * that what is retained for new listeners and what waits add up to burst-size. May be
     * NULL; a handler that never calls it holds nothing worth counting. */
    void (*gathered)(void *ctx, size_t bytes);
} format_sink_t;

typedef struct format format_t;

typedef struct format_ops {
    const char *name; /* "generic", "ogg" */
    /* Allocates handler state in f->state. 0 or -errno. */
    int (*init)(format_t *f);
    /* Consumes len bytes of source data. Returns 0, or -errno if the source must be dropped
     * (only for unrecoverable conditions: broken pages are skipped, not fatal). len 0: nothing
     * new came and the source has been quiet for a while; the handler emits what is due (the
     * generic handler's gathering once it waited its coalescing time). */
    int (*ingest)(format_t *f, const unsigned char *data, size_t len);
    /* Source finished: flush anything pending, except an incomplete last MPEG/ADTS frame of a
     * followed stream or an incomplete Ogg page (never sent to listeners). May be NULL. */
    void (*flush)(format_t *f);
    void (*destroy)(format_t *f);
    /* A metadata update (/admin/metadata) the stream itself must carry: the handler puts title
     * and artist (UTF-8, NULL for none) into the stream at the next point it can (Ogg: a new
     * chain link whose comment header names them). NULL: the format carries none (MP3 and
     * AAC get ICY metadata from the mount). Strings are copied. */
    void (*set_meta)(format_t *f, const char *title, const char *artist);
    /* An upgrade (upgrade/): save writes what the handler holds (bytes not yet emitted, its
     * place in inbound framing) as record fields; restore, on a new handler of the same ops
     * whose sink is ready, takes them back so that the stream goes on as if nothing happened
     * (it may emit blocks). restore: 0 or -EINVAL (fields it cannot read). NULL: a handler
     * whose state cannot be carried. */
    void (*save)(format_t *f, struct buf *out);
    int (*restore)(format_t *f, struct rec_reader *in);
} format_ops_t;

struct format {
    const format_ops_t *ops;
    format_sink_t sink;
    void *state;
    int icy_metaint;        /* generic only: inbound ICY interval the source declared, 0 = none */
    const char *charset;    /* generic only: charset of inbound ICY titles (NULL = ISO-8859-1) */
    int coalesce_ms;        /* generic only: how long small reads may be gathered into one block
                             * (0 = every read becomes a block at once) */
    int opus_title_updates; /* ogg only: set_meta is carried into an Opus stream too (the
                             * mount's <opus-title-updates>); 0: left out of it, logged once */
    int join_midway;        /* generic only: the stream may begin anywhere (a relay joins its
                             * upstream's stream where it is): nothing is emitted before the
                             * first run of frames the sync locks on (a leading ID3v2 tag or
                             * partial frame is dropped); data that does not lock within 32 KB
                             * is emitted as it came */
};

/* Picks the handler for a Content-Type (case-insensitive, parameters ignored):
 * application/ogg, audio/ogg, video/ogg, application/x-ogg, audio/opus, audio/flac+ogg -> ogg;
 * everything else -> generic. */
const format_ops_t *format_for_content_type(const char *content_type);

/* The codec of Ogg header pages (a chain of whole pages, as set_headers gives them) holding
 * one logical stream: "Vorbis", "Opus", "FLAC", "Theora" or "Speex"; NULL for several
 * streams, another codec, or bytes that are not whole pages. Pure (format/ogg_comment.c). */
const char *format_ogg_codec(const block_t *headers);

/* Creates a handler; NULL on failure. sink is copied. */
format_t *format_new(const format_ops_t *ops, const format_sink_t *sink);
void format_free(format_t *f);

extern const format_ops_t format_generic_ops;
extern const format_ops_t format_ogg_ops;

#endif
