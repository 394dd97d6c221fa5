/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_mpeg: MPEG audio and ADTS frame headers (hand-made for each version and layer, and
 * real frames from ffmpeg), ID3v2 skipping, and the generic handler cutting blocks at frames:
 * only blocks that begin at a frame are sync points, the bytes never change (but for an
 * incomplete last frame, dropped at the end), and data that is not framed keeps every block a
 * sync point; a stream joined mid-way (a relay) comes out from its first whole frame.
 */
#include "format/format.h"
#include "format/mpeg.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpeg_samples.h"
#include "testlib.h"

static uint32_t frame_len(unsigned char b1, unsigned char b2)
{
    unsigned char h[4] = {0xFF, b1, b2, 0x00};
    mpeg_frame_t f;
    return mpeg_frame_parse(h, sizeof(h), &f) == 1 ? f.len : 0;
}

/* PCM samples per channel of the frame whose header starts 0xFF b1 b2; 0 if none. */
static uint32_t frame_samples(unsigned char b1, unsigned char b2)
{
    unsigned char h[4] = {0xFF, b1, b2, 0x00};
    mpeg_frame_t f;
    return mpeg_frame_parse(h, sizeof(h), &f) == 1 ? f.samples : 0;
}

static void test_headers_each_version_and_layer(void)
{
    /* b1 = 111VVLLP (P=1: no CRC); b2 = BBBBSSP0 */
    CHECK(frame_len(0xFB, 0x90) == 417); /* MPEG-1 Layer III 128k 44.1 kHz */
    CHECK(frame_len(0xFB, 0x92) == 418); /* ... padded */
    CHECK(frame_len(0xFD, 0xA4) == 576); /* MPEG-1 Layer II 192k 48 kHz */
    CHECK(frame_len(0xFF, 0xC0) == 416); /* MPEG-1 Layer I 384k 44.1 kHz: 104 slots of 4 */
    CHECK(frame_len(0xFF, 0xC2) == 420); /* ... padded by one slot */
    CHECK(frame_len(0xF3, 0x80) == 208); /* MPEG-2 Layer III 64k 22.05 kHz */
    CHECK(frame_len(0xF5, 0xE4) == 960); /* MPEG-2 Layer II 160k 24 kHz */
    CHECK(frame_len(0xF7, 0xE8) == 768); /* MPEG-2 Layer I 256k 16 kHz */
    CHECK(frame_len(0xE3, 0x18) == 72);  /* MPEG-2.5 Layer III 8k 8 kHz */
    CHECK(frame_len(0xE3, 0x10) == 72 * 8000 / 11025); /* MPEG-2.5 Layer III 8k 11.025 kHz */
    /* samples a frame decodes to: what HLS durations are counted in */
    CHECK(frame_samples(0xFB, 0x90) == 1152); /* MPEG-1 Layer III */
    CHECK(frame_samples(0xFD, 0xA4) == 1152); /* MPEG-1 Layer II */
    CHECK(frame_samples(0xFF, 0xC0) == 384);  /* MPEG-1 Layer I */
    CHECK(frame_samples(0xF3, 0x80) == 576);  /* MPEG-2 Layer III */
    CHECK(frame_samples(0xF5, 0xE4) == 1152); /* MPEG-2 Layer II */
    CHECK(frame_samples(0xF7, 0xE8) == 384);  /* MPEG-2 Layer I */
    CHECK(frame_samples(0xE3, 0x18) == 576);  /* MPEG-2.5 Layer III */
    /* not headers */
    CHECK(frame_len(0xEB, 0x90) == 0); /* reserved version */
    CHECK(frame_len(0xF9, 0x90) == 0); /* reserved layer */
    CHECK(frame_len(0xFB, 0x00) == 0); /* free format */
    CHECK(frame_len(0xFB, 0xF0) == 0); /* bad bitrate */
    CHECK(frame_len(0xFB, 0x9C) == 0); /* reserved sample rate */
    unsigned char emph[4] = {0xFF, 0xFB, 0x90, 0x02};
    mpeg_frame_t f;
    CHECK(mpeg_frame_parse(emph, 4, &f) == 0);
    unsigned char partial[4] = {0xFF, 0xFB, 0x90, 0x00};
    CHECK(mpeg_frame_parse(partial, 1, &f) == -EAGAIN);
    CHECK(mpeg_frame_parse(partial, 3, &f) == -EAGAIN);
    CHECK(mpeg_frame_parse((const unsigned char *)"\xFE\xFB", 2, &f) == 0);
}

static void test_adts_headers(void)
{
    /* AAC LC, 44.1 kHz, stereo, no CRC, frame of 371 bytes */
    unsigned len = 371;
    unsigned char h[7] = {0xFF, 0xF1, 0x50, (unsigned char)(0x80 | (len >> 11)),
                          (unsigned char)(len >> 3), (unsigned char)((len & 7) << 5 | 0x1F), 0xFC};
    mpeg_frame_t f;
    CHECK(mpeg_frame_parse(h, 7, &f) == 1 && f.kind == MPEG_KIND_ADTS && f.len == 371 &&
          f.samplerate == 44100 && f.samples == 1024);
    unsigned char two_blocks[7];
    memcpy(two_blocks, h, 7);
    two_blocks[6] = 0xFD; /* number_of_raw_data_blocks_in_frame 1: two blocks of 1024 */
    CHECK(mpeg_frame_parse(two_blocks, 7, &f) == 1 && f.samples == 2048);
    CHECK(mpeg_frame_parse(h, 6, &f) == -EAGAIN);
    unsigned char bad_rate[7];
    memcpy(bad_rate, h, 7);
    bad_rate[2] = 0x50 | (13 << 2);
    CHECK(mpeg_frame_parse(bad_rate, 7, &f) == 0);
    unsigned char short_frame[7];
    memcpy(short_frame, h, 7);
    short_frame[3] = 0x80;
    short_frame[4] = 0;
    short_frame[5] = 7 << 5; /* 7 bytes: a header and nothing else */
    CHECK(mpeg_frame_parse(short_frame, 7, &f) == 0);
}

static void test_real_frames(void)
{
    long tag = mpeg_id3v2_len(sample_mp3, sizeof(sample_mp3));
    CHECK(tag == 45);
    mpeg_frame_t f;
    size_t pos = (size_t)tag, frames = 0;
    while (pos + 4 <= sizeof(sample_mp3) && mpeg_frame_parse(sample_mp3 + pos, 4, &f) == 1) {
        CHECK(f.kind == MPEG_KIND_AUDIO && f.samplerate == 8000);
        CHECK(f.samples == 576); /* MPEG-2.5 Layer III */
        pos += f.len;
        frames++;
    }
    CHECK(pos == sizeof(sample_mp3) && frames == 17);
    pos = 0;
    frames = 0;
    while (pos + 7 <= sizeof(sample_adts) && mpeg_frame_parse(sample_adts + pos, 7, &f) == 1) {
        CHECK(f.kind == MPEG_KIND_ADTS && f.samplerate == 8000 && f.samples == 1024);
        pos += f.len;
        frames++;
    }
    CHECK(pos == sizeof(sample_adts) && frames == 9);
    CHECK(mpeg_id3v2_len((const unsigned char *)"ID", 2) == -EAGAIN);
    CHECK(mpeg_id3v2_len((const unsigned char *)"IDX", 3) == 0);
    CHECK(mpeg_id3v2_len(sample_adts, sizeof(sample_adts)) == 0);
}

/* ---- the generic handler ---- */

typedef struct rec {
    unsigned char out[1 << 16];
    size_t len;
    int blocks, sync, sync_not_at_frame;
    const unsigned char *frames; /* the input, to judge sync block starts */
    size_t first_frame;          /* offset of the first frame (after a tag) */
    int seen_sync;
    size_t first_sync;           /* offset of the first sync block */
    int room_short;              /* blocks with less room than bytes */
    uint32_t room[64];           /* the room of the first blocks */
    uint64_t pooled;             /* bit i: the block i came from a pool */
} rec_t;

static void rec_emit(void *ctx, block_t *b)
{
    rec_t *r = ctx;
    mpeg_frame_t f;
    if (b->flags & BLOCK_SYNC) {
        if (!r->seen_sync++)
            r->first_sync = r->len;
        r->sync++;
        if (r->len >= r->first_frame && mpeg_frame_parse(b->data, b->len, &f) != 1)
            r->sync_not_at_frame++;
    }
    memcpy(r->out + r->len, b->data, b->len);
    r->len += b->len;
    r->room_short += block_cap(b) < b->len;
    if (r->blocks < 64)
        r->room[r->blocks] = (uint32_t)block_cap(b);
    if (r->blocks < 64 && (b->cap & BLOCK_POOLED))
        r->pooled |= (uint64_t)1 << r->blocks;
    r->blocks++;
    block_unref(b);
}

static void run_generic_as(rec_t *r, const unsigned char *data, size_t len, size_t piece,
                           int coalesce_ms, int join_midway)
{
    format_sink_t sink = {.ctx = r, .emit = rec_emit};
    format_t *f = format_new(&format_generic_ops, &sink);
    f->coalesce_ms = coalesce_ms;
    f->join_midway = join_midway;
    for (size_t i = 0; i < len; i += piece)
        CHECK(f->ops->ingest(f, data + i, len - i < piece ? len - i : piece) == 0);
    f->ops->flush(f);
    format_free(f);
}

static void run_generic_gathering(rec_t *r, const unsigned char *data, size_t len, size_t piece,
                                  int coalesce_ms)
{
    run_generic_as(r, data, len, piece, coalesce_ms, 0);
}

static void run_generic(rec_t *r, const unsigned char *data, size_t len, size_t piece)
{
    run_generic_gathering(r, data, len, piece, 0);
}

static void test_generic_cuts_at_frames(void)
{
    static const size_t pieces[] = {1, 3, 7, 100, 417, 1000, 5000};
    for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
        static rec_t r;
        memset(&r, 0, sizeof(r));
        /* locked at the third frame's header: after the tag, a 216-byte info frame, one of 72 */
        r.first_frame = 45 + 216 + 72 + MPEG_HEADER_MAX;
        run_generic(&r, sample_mp3, sizeof(sample_mp3), pieces[k]);
        CHECK(r.len == sizeof(sample_mp3) && memcmp(r.out, sample_mp3, r.len) == 0);
        CHECK(r.sync_not_at_frame == 0);
        CHECK(pieces[k] < 100 || r.sync >= 2);
        memset(&r, 0, sizeof(r));
        r.first_frame = 246 + 232 + MPEG_HEADER_MAX; /* the third ADTS frame */
        run_generic(&r, sample_adts, sizeof(sample_adts), pieces[k]);
        CHECK(r.len == sizeof(sample_adts) && memcmp(r.out, sample_adts, r.len) == 0);
        CHECK(r.sync_not_at_frame == 0);
    }
}

/* Blocks of at least half the largest so far get its room (a freed one fits the next), from
 * its pool; a block that is the largest so far the room of the largest there can be, from its
 * pool; others their own size, from the heap. */
static void test_generic_blocks_near_the_largest_get_its_room(void)
{
    static unsigned char junk[4096 * 3 + 3904 * 2 + 1000 + 2100 + 2000];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (unsigned char)(i * 7 + (i >> 8));
    static const size_t reads[] = {3904, 4096, 3904, 4096, 1000, 2100, 2000, 4096};
    static rec_t r;
    memset(&r, 0, sizeof(r));
    format_sink_t sink = {.ctx = &r, .emit = rec_emit};
    format_t *f = format_new(&format_generic_ops, &sink); /* coalesce 0: a block per read */
    size_t at = 0;
    for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); at += reads[i++])
        CHECK(f->ops->ingest(f, junk + at, reads[i]) == 0);
    format_free(f);
    CHECK(r.blocks == 8 && r.len == sizeof(junk) && memcmp(r.out, junk, r.len) == 0);
    CHECK(r.room[0] == 4096 && r.room[1] == 4096 && r.room[2] == 4096 && r.room[3] == 4096);
    CHECK(r.room[4] == 1000 && r.room[5] == 4096 && r.room[6] == 2000 && r.room[7] == 4096);
    CHECK(r.room_short == 0);
    CHECK(r.pooled == (0xffu & ~((1u << 4) | (1u << 6))));
}

static void test_generic_unframed_data_is_all_sync(void)
{
    static unsigned char junk[20000];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof(junk); i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (unsigned char)(x >> 16);
    }
    static rec_t r;
    memset(&r, 0, sizeof(r));
    run_generic(&r, junk, sizeof(junk), 1000);
    CHECK(r.len == sizeof(junk) && r.blocks == 20 && r.sync == 20);
}

static void test_generic_relocks_after_garbage(void)
{
    /* frames, 500 garbage bytes, frames again: sync points come back at frames */
    static unsigned char mix[3 * sizeof(sample_mp3)];
    size_t body = sizeof(sample_mp3) - 45, n = 0;
    memcpy(mix, sample_mp3 + 45, body);
    n = body;
    for (int i = 0; i < 500; i++)
        mix[n++] = (unsigned char)(i * 7);
    memcpy(mix + n, sample_mp3 + 45, body);
    n += body;
    static rec_t r;
    memset(&r, 0, sizeof(r));
    r.first_frame = 216 + 72 + MPEG_HEADER_MAX;
    run_generic(&r, mix, n, 144);
    CHECK(r.len == n && memcmp(r.out, mix, n) == 0);
    CHECK(r.sync_not_at_frame == 0);
    CHECK(r.sync > 10);
}

/* The ID3v2 tag a stream begins with is a block of its own and no start point: the first sync
 * block begins at the first frame, whatever the reads and the gathering. */
static void test_generic_leading_tag_is_no_start_point(void)
{
    static const size_t pieces[] = {1, 3, 9, 10, 11, 44, 45, 46, 100, 5000};
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        for (int coalesce = 0; coalesce <= 60000; coalesce += 60000) {
            static rec_t r;
            memset(&r, 0, sizeof(r));
            r.first_frame = SIZE_MAX;
            run_generic_gathering(&r, sample_mp3, sizeof(sample_mp3), pieces[i], coalesce);
            CHECK(r.len == sizeof(sample_mp3) && memcmp(r.out, sample_mp3, r.len) == 0);
            CHECK(r.seen_sync && r.first_sync == 45);
        }
    }
    /* no tag: the first block is a start point */
    static rec_t r;
    memset(&r, 0, sizeof(r));
    r.first_frame = SIZE_MAX;
    run_generic(&r, sample_mp3 + 45, sizeof(sample_mp3) - 45, 3);
    CHECK(r.seen_sync && r.first_sync == 0);
}

/* Offset of the last frame of a sample that is nothing but frames after `first`. */
static size_t last_frame_at(const unsigned char *p, size_t len, size_t first)
{
    mpeg_frame_t f;
    size_t pos = first, last = first;
    while (pos + MPEG_HEADER_MAX <= len && mpeg_frame_parse(p + pos, len - pos, &f) == 1) {
        last = pos;
        pos += f.len;
    }
    return last;
}

/* A source cut off mid-frame (or mid-header): the incomplete last frame never comes out, every
 * frame before it does, whatever the reads and the gathering. */
static void test_generic_drops_an_incomplete_last_frame(void)
{
    static const size_t pieces[] = {1, 7, 100, 5000};
    static const int gathering[] = {0, 60000};
    const struct {
        const unsigned char *p;
        size_t len, first;
    } samples[] = {{sample_mp3, sizeof(sample_mp3), 45}, {sample_adts, sizeof(sample_adts), 0}};
    for (size_t k = 0; k < 2; k++) {
        size_t last = last_frame_at(samples[k].p, samples[k].len, samples[k].first);
        CHECK(last > samples[k].first);
        const size_t cuts[] = {1, 2, MPEG_HEADER_MAX, (samples[k].len - last) / 2,
                               samples[k].len - last - 1};
        for (size_t c = 0; c < sizeof(cuts) / sizeof(cuts[0]); c++) {
            for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
                for (size_t g = 0; g < 2; g++) {
                    static rec_t r;
                    memset(&r, 0, sizeof(r));
                    r.first_frame = SIZE_MAX; /* sync points are judged elsewhere */
                    run_generic_gathering(&r, samples[k].p, last + cuts[c], pieces[i],
                                          gathering[g]);
                    CHECK(r.len == last && memcmp(r.out, samples[k].p, last) == 0);
                }
            }
        }
    }
    /* data that is not followed as frames keeps its last byte */
    static rec_t r;
    memset(&r, 0, sizeof(r));
    run_generic(&r, sample_mp3 + 45, 290, 100); /* two frames and half a header: no lock yet */
    CHECK(r.len == 290);
}

/* A relay joins a stream mid-way: its tag and the partial frame it begins with never come
 * out; the first block is a start point at the first frame of the run the sync locked on, and
 * every byte from there does; data that is no frames comes out whole (past the 32 KB held, or
 * at the end). */
static void test_generic_join_midway_starts_at_a_frame(void)
{
    static const size_t pieces[] = {1, 7, 45, 100, 5000};
    static unsigned char joined[sizeof(sample_mp3)];
    size_t first = 45 + 216 + 72; /* the frame after the partial one */
    memcpy(joined, sample_mp3, 45);
    memcpy(joined + 45, sample_mp3 + 45 + 216 + 30, sizeof(sample_mp3) - (45 + 216 + 30));
    size_t jlen = sizeof(sample_mp3) - 216 - 30;
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
        for (int coalesce = 0; coalesce <= 60000; coalesce += 60000) {
            static rec_t r;
            memset(&r, 0, sizeof(r));
            run_generic_as(&r, joined, jlen, pieces[i], coalesce, 1);
            CHECK(r.len == sizeof(sample_mp3) - first);
            CHECK(memcmp(r.out, sample_mp3 + first, r.len) == 0);
            CHECK(r.seen_sync && r.first_sync == 0 && r.sync_not_at_frame == 0);
            CHECK(r.room_short == 0);
        }
    }
    static rec_t r;
    memset(&r, 0, sizeof(r));
    run_generic_as(&r, sample_adts + 100, sizeof(sample_adts) - 100, 13, 0, 1);
    CHECK(r.len == sizeof(sample_adts) - 246 && memcmp(r.out, sample_adts + 246, r.len) == 0);
    CHECK(r.first_sync == 0 && r.sync_not_at_frame == 0);
    static unsigned char junk[40000];
    uint32_t x = 777;
    for (size_t i = 0; i < sizeof(junk); i++) {
        x = x * 1103515245u + 12345u;
        junk[i] = (unsigned char)(x >> 16);
    }
    const size_t sizes[] = {sizeof(junk), 20000}; /* past what is held, and ended before */
    for (size_t k = 0; k < 2; k++) {
        memset(&r, 0, sizeof(r));
        r.first_frame = SIZE_MAX;
        run_generic_as(&r, junk, sizes[k], 1000, 0, 1);
        CHECK(r.len == sizes[k] && memcmp(r.out, junk, r.len) == 0 && r.first_sync == 0);
    }
}

/* Frames with zeroed bodies: MPEG-1 Layer III at 44.1 kHz, the bitrate index given (9 = 128,
 * 10 = 160 kbit/s), padded or not. Returns the bytes written. */
static size_t put_mp3_frame(unsigned char *p, unsigned br_idx, int pad)
{
    static const unsigned kbps[15] = {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224,
                                      256, 320};
    size_t len = 144 * kbps[br_idx] * 1000 / 44100 + (size_t)pad;
    memset(p, 0, len);
    p[0] = 0xFF;
    p[1] = 0xFB;
    p[2] = (unsigned char)(br_idx << 4 | (unsigned)pad << 1);
    p[3] = 0x00;
    return len;
}

/* An ADTS frame (AAC LC, 44.1 kHz, stereo, no CRC) of len bytes, header included. */
static size_t put_adts_frame(unsigned char *p, size_t len)
{
    memset(p, 0, len);
    p[0] = 0xFF;
    p[1] = 0xF1;
    p[2] = 1 << 6 | 4 << 2;
    p[3] = (unsigned char)(2 << 6 | len >> 11);
    p[4] = (unsigned char)(len >> 3);
    p[5] = (unsigned char)((len & 7) << 5 | 0x1F);
    p[6] = 0xFC;
    return len;
}

static unsigned kbps_of(const unsigned char *p, size_t len)
{
    mpeg_sync_t s;
    mpeg_sync_init(&s);
    mpeg_sync_feed(&s, p, len);
    return mpeg_sync_kbps(&s);
}

static void test_bitrate_from_frames(void)
{
    static unsigned char buf[200000];
    size_t n = 0;
    /* CBR 128k, padded as an encoder does (every frame averages 417.96 bytes) */
    for (int i = 0; i < 30; i++)
        n += put_mp3_frame(buf + n, 9, i % 25 != 0);
    CHECK(kbps_of(buf, n) == 0); /* under a second (30 x 1152 samples) */
    for (int i = 30; i < 60; i++)
        n += put_mp3_frame(buf + n, 9, i % 25 != 0);
    CHECK(kbps_of(buf, n) == 128);
    /* VBR: half 128k, half 160k frames average 144 (rounded) */
    n = 0;
    for (int i = 0; i < 80; i++)
        n += put_mp3_frame(buf + n, i % 2 ? 10 : 9, 0);
    unsigned v = kbps_of(buf, n);
    CHECK(v >= 143 && v <= 144);
    /* ADTS: 279 bytes of payload per 1024 samples at 44.1 kHz = 96.1 kbit/s; the 7-byte
     * headers do not count */
    n = 0;
    for (int i = 0; i < 60; i++)
        n += put_adts_frame(buf + n, 7 + 279);
    CHECK(kbps_of(buf, n) == 96);
    /* not framed: nothing */
    memset(buf, 0x55, 100000);
    CHECK(kbps_of(buf, 100000) == 0);
}

int main(void)
{
    RUN(test_headers_each_version_and_layer);
    RUN(test_adts_headers);
    RUN(test_real_frames);
    RUN(test_generic_cuts_at_frames);
    RUN(test_generic_blocks_near_the_largest_get_its_room);
    RUN(test_generic_unframed_data_is_all_sync);
    RUN(test_generic_relocks_after_garbage);
    RUN(test_generic_drops_an_incomplete_last_frame);
    RUN(test_generic_leading_tag_is_no_start_point);
    RUN(test_generic_join_midway_starts_at_a_frame);
    RUN(test_bitrate_from_frames);
    return testlib_done();
}
