/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * generic: pass-through handler for MP3, AAC and every type without a parser of its own.
 * Audio bytes are never altered. Small reads are gathered until they make GENERIC_BLOCK bytes
 * or the first byte waited f->coalesce_ms (0: every read is a block at once), so a paced source
 * sending 400-byte chunks costs one block header per few KB and listeners fewer iovecs. They
 * are gathered in chunks of 512 bytes taken and given back as they fill and empty
 * (block_gather_t: a source holds what it gathered, not a block's room, between blocks) and
 * copied into a block of their size when emitted: a block is never grown or cut down, which
 * would leave holes beside the blocks (the queue of every source) that no later block fits. A
 * block of at least half the largest the source emitted gets that size, so that a source's
 * blocks come in one size and a freed one fits the next; those come from the pool of that size
 * (block_new_pooled), apart from the heap's small allocations (a block cut short by the
 * coalescing time wastes some room there; in the heap, it split a freed block's room). MPEG audio and ADTS streams are followed
 * frame by frame (format/mpeg.h): a block is cut at the last frame start it holds (the rest,
 * less than a frame, begins the next block) and only blocks that begin at a frame are sync
 * points; an ID3v2 tag the stream begins with is a block of its own and no sync point; when
 * the source ends, an incomplete last frame is dropped. Data not recognized as frames keeps every block a sync point and
 * every byte. A relay's stream (join_midway) begins wherever its upstream's stream was: its
 * bytes are only followed until the sync locks on a run of frames, and emitting starts at the
 * run's first frame (a tag or partial frame before it is dropped; data that does not lock
 * within GENERIC_JOIN_MAX bytes is emitted as it came).
 * When the source declared icy-metaint: N, the metadata blocks it interleaves every N bytes
 * are cut out of the stream (across any split of the input) and their StreamTitle/StreamUrl
 * reported as the "title"/"url" tags, converted to UTF-8, before the frames are followed.
 * The bitrate the followed frames show (format/mpeg.h) is reported as the "audio_bitrate" tag
 * (bit/s): after a second of audio, then when it changes, at most once per
 * GENERIC_RATE_EVERY seconds of audio.
 * After each ingest the sink learns how many bytes wait gathered (format_sink_t.gathered: they
 * count in the mount's burst); an ingest of no bytes (the source went quiet) emits the
 * gathering once it waited its coalescing time, as a read would.
 */
#include "format/format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/record.h"
#include "core/loop.h"
#include "core/utf8.h"
#include "format/icy.h"
#include "format/mpeg.h"

#define GENERIC_META_MAX (255 * 16)
#define GENERIC_BLOCK BLOCK_GATHER_MAX /* the largest block gathered */
#define GENERIC_JOIN_MAX 32768 /* join_midway: bytes held while looking for frames */
#define GENERIC_RATE_EVERY 10

enum { GENERIC_AUDIO, GENERIC_META_LEN, GENERIC_META };

typedef struct generic_state {
    int started;
    size_t metaint;    /* 0: no inbound ICY metadata */
    int phase;
    size_t audio_left; /* audio bytes before the next length byte */
    size_t meta_need, meta_have;
    unsigned char *meta; /* GENERIC_META_MAX bytes, only when metaint > 0 */
    unsigned char *last; /* previous metadata, to report changes only */
    size_t last_len;
    int url_set;
    int gathering;       /* audio is being gathered (pending_at and the rest below hold) */
    block_gather_t gather; /* the audio gathered but not yet emitted */
    uint32_t block_room; /* the largest block emitted: the room of every block near its size */
    uint64_t pending_since_ms;
    uint64_t pending_at;  /* audio offset of the first byte gathered */
    int pending_probe;    /* pending began while frames were not followed: a sync point */
    mpeg_sync_t sync;
    unsigned char *held;  /* join_midway: the bytes followed before frames were found */
    size_t held_len;
    unsigned rate_kbps;   /* the bitrate last reported, 0 none */
    unsigned rate_at;     /* mpeg_sync_rate_seconds() when it was */
} generic_state_t;

static int generic_init(format_t *f)
{
    generic_state_t *st = calloc(1, sizeof(generic_state_t));
    if (!st)
        return -ENOMEM;
    mpeg_sync_init(&st->sync);
    f->state = st;
    return 0;
}

static void generic_destroy(format_t *f)
{
    generic_state_t *st = f->state;
    if (st) {
        block_gather_truncate(&st->gather, 0);
        free(st->meta);
        free(st->last);
        free(st->held);
    }
    free(st);
    f->state = NULL;
}

/* Starts gathering at the stream's current position. */
static void new_pending(generic_state_t *st)
{
    st->gathering = 1;
    st->pending_at = st->sync.pos;
    st->pending_probe = st->sync.mode == MPEG_SYNC_START || st->sync.mode == MPEG_SYNC_PROBE;
    mpeg_sync_mark(&st->sync, st->pending_at);
}

/* A followed stream's last frame (or header) is not all there yet. */
static int generic_frame_open(const mpeg_sync_t *s)
{
    return s->mode == MPEG_SYNC_LOCKED && (s->pos < s->next || s->have > 0);
}

/* Of have bytes gathered from pending_at on, how many begin at the last frame start they hold
 * (a followed stream's block ends there): 0 when they hold none past their first byte. */
static size_t generic_frame_tail(const generic_state_t *st, size_t have)
{
    uint64_t frame = st->sync.frame_start;
    if (st->sync.mode == MPEG_SYNC_LOCKED && frame > st->pending_at &&
        frame < st->pending_at + have)
        return (size_t)(st->pending_at + have - frame);
    return 0;
}

/* A block of len bytes, not filled: blocks of at least half the largest size get that room, so
 * that a freed one fits the next exactly, and come from the pool of that room once an earlier
 * block set it. A source's first blocks, growing to their size, take the room of the largest
 * block there can be from its pool (that of the gathering's slabs, always there): in the heap
 * they would leave, when the queue frees them, holes between the structures of the sources
 * that came after, which only blocks fit. */
static block_t *generic_block(generic_state_t *st, size_t len)
{
    int grew = len > st->block_room && len <= GENERIC_BLOCK; /* not a relay's first bytes */
    if (grew)
        st->block_room = (uint32_t)len;
    if (len > st->block_room || len < st->block_room / 2)
        return block_new(len);
    if (grew)
        return len >= BLOCK_POOL_MIN ? block_new_pooled(GENERIC_BLOCK) : block_new(len);
    return block_new_pooled(st->block_room);
}

/* Emits out, the len bytes gathered from pending_at on (NULL: none), with keep bytes after them
 * that stay gathered: the gathering goes on at the frame they begin with, or ends. */
static void generic_emit(format_t *f, generic_state_t *st, block_t *out, size_t len, size_t keep)
{
    /* the stream's leading ID3v2 tag is no start point: a listener moved here would get it in
     * the middle of its stream, where decoders take it for a broken frame */
    int sync = st->pending_at >= st->sync.tag_end && (st->pending_probe || st->sync.mark_ok);
    if (keep) {
        st->pending_at += len;
        mpeg_sync_mark(&st->sync, st->pending_at);
        st->pending_since_ms = f->coalesce_ms > 0 ? loop_now_ms() : 0;
    } else {
        st->gathering = 0;
    }
    if (out) {
        out->flags = sync ? BLOCK_SYNC : 0;
        f->sink.emit(f->sink.ctx, out);
    }
}

/* Emits what is gathered as a block of its size. With cut, a followed stream's block ends at
 * the last frame start it holds and the bytes from there stay gathered, moved to the front;
 * what holds nothing but the beginning of one frame waits for the rest (unless it is a whole
 * block: a frame larger than a block). */
static int generic_emit_pending(format_t *f, generic_state_t *st, int cut)
{
    if (!st->gathering)
        return 0;
    size_t have = st->gather.len;
    if (cut && have < GENERIC_BLOCK &&
        (st->sync.mode == MPEG_SYNC_START ||
         (st->sync.frame_start == st->pending_at && generic_frame_open(&st->sync))))
        return 0;
    size_t keep = cut ? generic_frame_tail(st, have) : 0, len = have - keep;
    block_t *out = len ? generic_block(st, len) : NULL;
    if (out) {
        block_gather_copy(&st->gather, 0, out->data, len);
        out->len = (uint32_t)len;
    }
    if (len && !out)
        return -ENOMEM; /* nothing lost: emitted whole next time */
    if (keep)
        block_gather_drop(&st->gather, len);
    else
        block_gather_truncate(&st->gather, 0);
    generic_emit(f, st, out, len, keep);
    return 0;
}

/* join_midway ends: the held bytes from `from` on become the pending block (a sync point:
 * frames start there), or, with from past them all, are emitted as they came (no frames). */
static int generic_joined(format_t *f, generic_state_t *st, uint64_t from)
{
    uint64_t held_at = st->sync.pos - st->held_len;
    size_t skip = from > held_at ? (size_t)(from - held_at) : 0;
    size_t keep = skip < st->held_len ? st->held_len - skip : st->held_len;
    const unsigned char *data = st->held + (st->held_len - keep);
    new_pending(st);
    st->pending_at = st->sync.pos - keep;
    st->pending_probe = 1;
    st->pending_since_ms = f->coalesce_ms > 0 ? loop_now_ms() : 0;
    mpeg_sync_mark(&st->sync, st->pending_at);
    /* more than a block: emitted now, cut at frames (each block takes at least one frame) */
    while (keep > GENERIC_BLOCK) {
        size_t rest = generic_frame_tail(st, keep), len = keep - rest;
        block_t *out = generic_block(st, len);
        if (!out)
            return -ENOMEM;
        memcpy(out->data, data, len);
        out->len = (uint32_t)len;
        generic_emit(f, st, out, len, rest);
        data += len;
        keep = rest;
    }
    if (keep && block_gather_append(&st->gather, data, keep) < 0)
        return -ENOMEM;
    free(st->held);
    st->held = NULL;
    st->held_len = 0;
    if (st->gather.len == GENERIC_BLOCK)
        return generic_emit_pending(f, st, 1);
    return 0;
}

/* The source ended. A followed stream whose last frame (or header) is incomplete, a source cut
 * off mid-frame, loses those bytes: listeners moving on to a fallback would get a cut frame
 * before the fallback's first one, and a decoder reads the fallback's bytes as its rest. Only
 * a frame begun in the pending block can go; one begun in a block already emitted (a frame
 * larger than a block) keeps its rest. */
static void generic_flush(format_t *f)
{
    generic_state_t *st = f->state;
    if (f->join_midway && st->held_len) { /* ended before any frames: what came, as it came */
        f->join_midway = 0;
        if (generic_joined(f, st, st->sync.pos - st->held_len) < 0)
            return;
    }
    const mpeg_sync_t *s = &st->sync;
    size_t have = st->gather.len;
    if (st->gathering && generic_frame_open(s) && s->frame_start >= st->pending_at &&
        s->frame_start < st->pending_at + have) {
        size_t cut = (size_t)(st->pending_at + have - s->frame_start);
        block_gather_truncate(&st->gather, have - cut);
        if (f->sink.log) {
            char msg[128];
            snprintf(msg, sizeof(msg),
                     "%zu bytes of an incomplete frame at end of stream dropped", cut);
            f->sink.log(f->sink.ctx, LOG_DEBUG, msg);
        }
    }
    (void)generic_emit_pending(f, st, 0);
}

static int generic_report(format_t *f, const char *tag, const char *raw)
{
    char *v = utf8_from_text(raw, strlen(raw), f->charset);
    if (!v)
        return -ENOMEM;
    if (f->sink.set_tag)
        f->sink.set_tag(f->sink.ctx, tag, v);
    free(v);
    return 0;
}

/* A complete metadata body arrived: report its fields if it changed. */
static int generic_metadata(format_t *f, generic_state_t *st)
{
    if (st->meta_have == st->last_len && memcmp(st->meta, st->last, st->last_len) == 0)
        return 0;
    memcpy(st->last, st->meta, st->meta_have);
    st->last_len = st->meta_have;
    char *title, *url;
    if (icy_parse((const char *)st->meta, st->meta_have, &title, &url) < 0)
        return -ENOMEM;
    int rc = 0, changed = title || url || st->url_set;
    if (title)
        rc = generic_report(f, "title", title);
    if (rc == 0 && url)
        rc = generic_report(f, "url", url);
    else if (rc == 0 && st->url_set && f->sink.set_tag)
        f->sink.set_tag(f->sink.ctx, "url", NULL);
    st->url_set = url != NULL;
    if (rc == 0 && changed && f->sink.tags_done)
        f->sink.tags_done(f->sink.ctx);
    free(title);
    free(url);
    return rc;
}

/* How many of n bytes to copy at once so that a leading ID3v2 tag ends a block: while the
 * first bytes may still begin one, only what the sync needs to decide; within it, up to its
 * end. */
static size_t generic_tag_limit(const mpeg_sync_t *s, size_t n)
{
    if (s->mode == MPEG_SYNC_START && n > sizeof(s->hdr) - s->have)
        return sizeof(s->hdr) - s->have;
    if (s->pos < s->tag_end && n > s->tag_end - s->pos)
        return (size_t)(s->tag_end - s->pos);
    return n;
}

/* join_midway: follows (and holds) up to GENERIC_JOIN_MAX bytes until the sync locks on a run
 * of frames; what came before the run (a tag, a partial frame) is dropped. Returns how many
 * of len bytes it took, or -ENOMEM. */
static long generic_join(format_t *f, generic_state_t *st, const unsigned char *data,
                         size_t len)
{
    if (!st->held && !(st->held = malloc(GENERIC_JOIN_MAX)))
        return -ENOMEM;
    size_t n = GENERIC_JOIN_MAX - st->held_len;
    if (n > len)
        n = len;
    uint64_t held_at = st->sync.pos - st->held_len;
    memcpy(st->held + st->held_len, data, n);
    st->held_len += n;
    mpeg_sync_feed(&st->sync, data, n);
    int rc = 0;
    if (st->sync.mode == MPEG_SYNC_LOCKED && st->sync.run_start >= held_at)
        rc = generic_joined(f, st, st->sync.run_start);
    else if (st->held_len == GENERIC_JOIN_MAX)
        rc = generic_joined(f, st, held_at); /* no frames: every byte, as it came */
    else
        return (long)n;
    f->join_midway = 0;
    return rc < 0 ? rc : (long)n;
}

/* Reports the frames' bitrate when it is first known or changed (see the file header). */
static void generic_rate(format_t *f, generic_state_t *st)
{
    unsigned kbps = mpeg_sync_kbps(&st->sync), at = mpeg_sync_rate_seconds(&st->sync);
    if (kbps == 0 || kbps == st->rate_kbps ||
        (st->rate_kbps && at < st->rate_at + GENERIC_RATE_EVERY && at >= st->rate_at))
        return;
    st->rate_kbps = kbps;
    st->rate_at = at;
    char v[16];
    snprintf(v, sizeof(v), "%u", kbps * 1000);
    if (f->sink.set_tag)
        f->sink.set_tag(f->sink.ctx, "audio_bitrate", v);
}

/* Copies audio into the pending block, following frames, emitting blocks as they fill up (and
 * at the end of a leading ID3v2 tag, so that the first frame begins a block). */
static int generic_audio(format_t *f, generic_state_t *st, const unsigned char *data, size_t len)
{
    while (len > 0 && f->join_midway) {
        long n = generic_join(f, st, data, len);
        if (n < 0)
            return (int)n;
        data += n;
        len -= (size_t)n;
    }
    while (len > 0) {
        if (!st->gathering) {
            new_pending(st);
            st->pending_since_ms = f->coalesce_ms > 0 ? loop_now_ms() : 0;
        }
        size_t room = GENERIC_BLOCK - st->gather.len;
        size_t n = generic_tag_limit(&st->sync, room < len ? room : len);
        if (block_gather_append(&st->gather, data, n) < 0)
            return -ENOMEM;
        mpeg_sync_feed(&st->sync, data, n);
        data += n;
        len -= n;
        int tag_done = st->pending_at < st->sync.tag_end && st->sync.pos == st->sync.tag_end;
        if ((st->gather.len == GENERIC_BLOCK || tag_done) && generic_emit_pending(f, st, 1) < 0)
            return -ENOMEM;
    }
    if (st->sync.mode == MPEG_SYNC_LOCKED)
        generic_rate(f, st);
    return 0;
}

/* Splits data into audio (to the pending block) and metadata (collected in st). */
static int generic_demux(format_t *f, generic_state_t *st, const unsigned char *data,
                         size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (st->phase == GENERIC_AUDIO) {
            size_t n = len - i < st->audio_left ? len - i : st->audio_left;
            int rc = generic_audio(f, st, data + i, n);
            if (rc < 0)
                return rc;
            i += n;
            st->audio_left -= n;
            if (st->audio_left == 0)
                st->phase = GENERIC_META_LEN;
        } else if (st->phase == GENERIC_META_LEN) {
            st->meta_need = (size_t)data[i++] * 16;
            st->meta_have = 0;
            st->phase = st->meta_need ? GENERIC_META : GENERIC_AUDIO;
            st->audio_left = st->metaint;
        } else {
            size_t n = st->meta_need - st->meta_have;
            if (n > len - i)
                n = len - i;
            memcpy(st->meta + st->meta_have, data + i, n);
            st->meta_have += n;
            i += n;
            if (st->meta_have < st->meta_need)
                continue;
            st->phase = GENERIC_AUDIO;
            int rc = generic_metadata(f, st);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int generic_ingest(format_t *f, const unsigned char *data, size_t len)
{
    generic_state_t *st = f->state;
    if (!st->started) {
        /* icy_metaint is set by the caller after format_new(), so it is read here. */
        st->started = 1;
        st->metaint = f->icy_metaint > 0 ? (size_t)f->icy_metaint : 0;
        st->audio_left = st->metaint;
        if (st->metaint && (!(st->meta = malloc(GENERIC_META_MAX)) ||
                            !(st->last = malloc(GENERIC_META_MAX))))
            return -ENOMEM;
    }
    /* len 0: nothing new (the source went quiet): what waited its coalescing time goes out */
    int rc = 0;
    if (len > 0)
        rc = st->metaint ? generic_demux(f, st, data, len) : generic_audio(f, st, data, len);
    if (rc == 0 && st->gathering && (f->coalesce_ms == 0 ||
                        loop_now_ms() - st->pending_since_ms >= (uint64_t)f->coalesce_ms))
        rc = generic_emit_pending(f, st, 1);
    if (f->sink.gathered)
        f->sink.gathered(f->sink.ctx, st->gathering ? st->gather.len : 0);
    return rc;
}

/* The state as fields: the inbound ICY framing where it is, the last metadata, and the audio
 * not yet emitted (a relay's bytes held while joining, or the pending block). Frames are
 * followed again from scratch on restore: the pending block begins at a frame. */
static void generic_save(format_t *f, buf_t *out)
{
    generic_state_t *st = f->state;
    rec_u8(out, (uint8_t)st->started);
    rec_u64(out, st->metaint);
    rec_u8(out, (uint8_t)st->phase);
    rec_u64(out, st->audio_left);
    rec_u64(out, st->meta_need);
    rec_bytes(out, st->meta, st->meta ? st->meta_have : 0);
    rec_bytes(out, st->last, st->last ? st->last_len : 0);
    rec_u8(out, (uint8_t)st->url_set);
    rec_u8(out, (uint8_t)f->join_midway);
    rec_bytes(out, st->held, st->held_len);
    unsigned char gathered[GENERIC_BLOCK];
    block_gather_copy(&st->gather, 0, gathered, st->gather.len);
    rec_bytes(out, gathered, st->gather.len);
}

static int generic_restore(format_t *f, rec_reader_t *in)
{
    generic_state_t *st = f->state;
    st->started = rec_get_u8(in);
    st->metaint = rec_get_u64(in);
    st->phase = rec_get_u8(in);
    st->audio_left = rec_get_u64(in);
    st->meta_need = rec_get_u64(in);
    size_t meta_len, last_len, held_len, pending_len;
    const unsigned char *meta = rec_get_bytes(in, &meta_len);
    const unsigned char *last = rec_get_bytes(in, &last_len);
    st->url_set = rec_get_u8(in);
    f->join_midway = rec_get_u8(in);
    const unsigned char *held = rec_get_bytes(in, &held_len);
    const unsigned char *pending = rec_get_bytes(in, &pending_len);
    if (in->error || st->phase > GENERIC_META || st->meta_need > GENERIC_META_MAX ||
        meta_len > GENERIC_META_MAX || last_len > GENERIC_META_MAX ||
        held_len > GENERIC_JOIN_MAX || (st->metaint && st->audio_left > st->metaint))
        return -EINVAL;
    if (st->metaint) {
        if (!(st->meta = malloc(GENERIC_META_MAX)) || !(st->last = malloc(GENERIC_META_MAX)))
            return -ENOMEM;
        memcpy(st->meta, meta, meta_len);
        st->meta_have = meta_len;
        memcpy(st->last, last, last_len);
        st->last_len = last_len;
    }
    if (held_len && generic_audio(f, st, held, held_len) < 0)
        return -ENOMEM;
    if (pending_len && generic_audio(f, st, pending, pending_len) < 0)
        return -ENOMEM;
    return 0;
}

const format_ops_t format_generic_ops = {
    .name = "generic",
    .init = generic_init,
    .ingest = generic_ingest,
    .flush = generic_flush,
    .destroy = generic_destroy,
    .save = generic_save,
    .restore = generic_restore,
};
