/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mpeg: MPEG audio and ADTS frame headers, and a stream follower (see mpeg.h).
 * Work is per source byte range, never per listener: between headers it only counts bytes.
 */
#include "format/mpeg.h"

#include <errno.h>
#include <string.h>

/* kbit/s by [table][index 1..14]: MPEG-1 Layer I, II, III; MPEG-2/2.5 Layer I, Layer II+III */
static const uint16_t bitrates[5][15] = {
    {0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
    {0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
    {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
    {0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
    {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
};

/* by [version bits: 0 = 2.5, 2 = 2, 3 = 1][index] */
static const uint32_t samplerates[4][3] = {
    {11025, 12000, 8000}, {0, 0, 0}, {22050, 24000, 16000}, {44100, 48000, 32000}};

static const uint32_t adts_rates[13] = {96000, 88200, 64000, 48000, 44100, 32000, 24000,
                                        22050, 16000, 12000, 11025, 8000, 7350};

static int parse_mpeg_audio(const unsigned char *p, size_t n, mpeg_frame_t *f)
{
    unsigned version = (p[1] >> 3) & 3, layer = (p[1] >> 1) & 3;
    if (version == 1 || layer == 0)
        return 0;
    if (n < 3)
        return -EAGAIN;
    unsigned br_idx = p[2] >> 4, sr_idx = (p[2] >> 2) & 3, pad = (p[2] >> 1) & 1;
    if (br_idx == 0 || br_idx == 15 || sr_idx == 3)
        return 0;
    if (n < 4)
        return -EAGAIN;
    if ((p[3] & 3) == 2) /* reserved emphasis */
        return 0;
    int mpeg1 = version == 3;
    unsigned table = mpeg1 ? 3 - layer : (layer == 3 ? 3 : 4);
    uint32_t br = bitrates[table][br_idx] * 1000u, sr = samplerates[version][sr_idx];
    uint32_t len;
    if (layer == 3)
        len = (12 * br / sr + pad) * 4;
    else if (layer == 1 && !mpeg1)
        len = 72 * br / sr + pad;
    else
        len = 144 * br / sr + pad;
    f->kind = MPEG_KIND_AUDIO;
    f->len = len;
    f->samplerate = sr;
    f->samples = layer == 3 ? 384 : (layer == 1 && !mpeg1) ? 576 : 1152;
    f->payload = len;
    f->kbps = bitrates[table][br_idx];
    f->channels = (p[3] >> 6) == 3 ? 1 : 2;
    f->key = ((uint32_t)(p[1] & 0xFE) << 8) | (p[2] & 0x0C);
    return 1;
}

static int parse_adts(const unsigned char *p, size_t n, mpeg_frame_t *f)
{
    if (n < 3)
        return -EAGAIN;
    unsigned sf = (p[2] >> 2) & 0xF;
    if (sf >= 13)
        return 0;
    if (n < 7)
        return -EAGAIN;
    uint32_t len = ((uint32_t)(p[3] & 3) << 11) | ((uint32_t)p[4] << 3) | (p[5] >> 5);
    uint32_t head = (p[1] & 1) ? 7 : 9; /* protection_absent = 0: a CRC follows */
    if (len <= head)
        return 0;
    f->kind = MPEG_KIND_ADTS;
    f->len = len;
    f->samplerate = adts_rates[sf];
    f->samples = 1024u * ((p[6] & 3) + 1u); /* raw data blocks in the frame */
    f->payload = len - head;
    f->kbps = 0;
    unsigned config = ((p[2] & 1u) << 2) | (p[3] >> 6);
    f->channels = (uint8_t)(config == 7 ? 8 : config);
    f->key = 0x10000u | ((uint32_t)(p[2] & 0xFD) << 8) | (p[3] & 0xC0);
    return 1;
}

int mpeg_frame_parse(const unsigned char *p, size_t n, mpeg_frame_t *f)
{
    if (n == 0)
        return -EAGAIN;
    if (p[0] != 0xFF)
        return 0;
    if (n < 2)
        return -EAGAIN;
    if ((p[1] & 0xF6) == 0xF0)
        return parse_adts(p, n, f);
    if ((p[1] & 0xE0) == 0xE0)
        return parse_mpeg_audio(p, n, f);
    return 0;
}

long mpeg_id3v2_len(const unsigned char *p, size_t n)
{
    static const char magic[3] = {'I', 'D', '3'};
    for (size_t i = 0; i < 3; i++) {
        if (i >= n)
            return -EAGAIN;
        if (p[i] != (unsigned char)magic[i])
            return 0;
    }
    if (n < 10)
        return -EAGAIN;
    if (p[3] == 0xFF || p[4] == 0xFF || (p[6] | p[7] | p[8] | p[9]) & 0x80)
        return 0;
    long size = ((long)p[6] << 21) | ((long)p[7] << 14) | ((long)p[8] << 7) | p[9];
    return 10 + size + ((p[5] & 0x10) ? 10 : 0);
}

void mpeg_sync_init(mpeg_sync_t *s)
{
    memset(s, 0, sizeof(*s));
    s->mode = MPEG_SYNC_START;
    s->confirmed = UINT64_MAX;
}

void mpeg_sync_mark(mpeg_sync_t *s, uint64_t offset)
{
    s->mark = offset;
    s->mark_ok = s->mode == MPEG_SYNC_LOCKED && s->confirmed == offset;
}

/* A locked frame counts toward the bitrate. */
static void rate_count(mpeg_sync_t *s, const mpeg_frame_t *f)
{
    if (f->key != s->rate_key || s->rate_samples == 0) {
        s->rate_key = f->key;
        s->rate_samplerate = f->samplerate;
        s->rate_bytes = s->rate_samples = 0;
        s->rate_kbps = f->kbps;
    }
    if (f->kbps != s->rate_kbps)
        s->rate_kbps = 0;
    s->rate_bytes += f->payload;
    s->rate_samples += f->samples;
}

unsigned mpeg_sync_rate_seconds(const mpeg_sync_t *s)
{
    return s->rate_samplerate ? (unsigned)(s->rate_samples / s->rate_samplerate) : 0;
}

unsigned mpeg_sync_kbps(const mpeg_sync_t *s)
{
    if (mpeg_sync_rate_seconds(s) < 1)
        return 0;
    if (s->rate_kbps)
        return s->rate_kbps;
    uint64_t bits_per_s = s->rate_bytes * 8 * s->rate_samplerate / s->rate_samples;
    return (unsigned)((bits_per_s + 500) / 1000);
}

/* The header in s->hdr was judged: follow the frame or start searching again. */
static void header_done(mpeg_sync_t *s, int valid, const mpeg_frame_t *f)
{
    if (valid && (s->run == 0 || f->key == s->key)) {
        if (s->run == 0)
            s->run_start = s->frame_start;
        s->key = f->key;
        s->run++;
        s->next = s->frame_start + f->len;
        s->have = 0;
        if (s->mode != MPEG_SYNC_LOCKED && s->run >= MPEG_LOCK_FRAMES)
            s->mode = MPEG_SYNC_LOCKED;
        if (s->mode == MPEG_SYNC_LOCKED) {
            rate_count(s, f);
            s->confirmed = s->frame_start;
            if (s->frame_start == s->mark)
                s->mark_ok = 1;
        }
        return;
    }
    if (s->mode == MPEG_SYNC_LOCKED) {
        s->mode = MPEG_SYNC_LOST;
        s->lost_at = s->frame_start;
    }
    s->run = 0;
    /* search again from the byte after this false header's first one */
    unsigned char again[sizeof(s->hdr)];
    unsigned n = s->have - 1;
    memcpy(again, s->hdr + 1, n);
    s->have = 0;
    s->pos -= n;
    s->next = s->pos;
    mpeg_sync_feed(s, again, n);
}

static void feed_start(mpeg_sync_t *s, const unsigned char *p, size_t n, size_t *i)
{
    while (*i < n && s->have < 10) {
        s->hdr[s->have++] = p[(*i)++];
        s->pos++;
        long tag = mpeg_id3v2_len(s->hdr, s->have);
        if (tag == -EAGAIN)
            continue;
        s->mode = MPEG_SYNC_PROBE;
        if (tag > 0) {
            s->have = 0;
            s->next = (uint64_t)tag;
            s->tag_end = (uint64_t)tag;
            return;
        }
        unsigned char again[10];
        unsigned k = s->have;
        memcpy(again, s->hdr, k);
        s->have = 0;
        s->pos -= k;
        s->next = s->pos;
        mpeg_sync_feed(s, again, k);
        return;
    }
}

void mpeg_sync_feed(mpeg_sync_t *s, const unsigned char *p, size_t n)
{
    size_t i = 0;
    if (s->mode == MPEG_SYNC_START)
        feed_start(s, p, n, &i);
    while (i < n) {
        if (s->mode == MPEG_SYNC_LOST && s->pos - s->lost_at > MPEG_LOST_LIMIT)
            s->mode = MPEG_SYNC_PROBE;
        if (s->pos < s->next) { /* inside a frame (or a tag): only count */
            uint64_t skip = s->next - s->pos;
            size_t k = skip < n - i ? (size_t)skip : n - i;
            i += k;
            s->pos += k;
            continue;
        }
        if (s->have == 0) {
            if (s->run == 0) { /* searching: jump to the next 0xFF */
                const unsigned char *ff = memchr(p + i, 0xFF, n - i);
                size_t k = ff ? (size_t)(ff - (p + i)) : n - i;
                i += k;
                s->pos += k;
                s->next = s->pos;
                if (!ff)
                    break;
            }
            s->frame_start = s->pos;
        }
        s->hdr[s->have++] = p[i++];
        s->pos++;
        s->next = s->pos;
        mpeg_frame_t f;
        int r = mpeg_frame_parse(s->hdr, s->have, &f);
        if (r == -EAGAIN)
            continue;
        header_done(s, r == 1, &f);
    }
}
