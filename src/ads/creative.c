/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * creative: an ad's audio file checked frame by frame (format/mpeg.h) and cut into shared
 * blocks (see ads.h), and the format an ad must share with a mount. Pure: bytes in, blocks
 * out; fetching and keeping creatives is ads_cache.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads.h"
#include "ads/ads_ogg.h"
#include "format/mpeg.h"

#define ICY_TITLE_MAX 120

int ads_format_of(const unsigned char *p, size_t n, ads_format_t *f)
{
    mpeg_frame_t fr;
    if (mpeg_frame_parse(p, n, &fr) != 1 || fr.samples == 0 || fr.samplerate == 0)
        return -1;
    *f = (ads_format_t){.key = fr.key, .samplerate = fr.samplerate, .channels = fr.channels,
                        .adts = fr.kind == MPEG_KIND_ADTS};
    return 0;
}

int ads_format_equal(const ads_format_t *a, const ads_format_t *b)
{
    return a->key == b->key && a->samplerate == b->samplerate && a->channels == b->channels &&
           a->adts == b->adts && a->ogg == b->ogg; /* an Ogg serial number is no format */
}

ads_creative_t *ads_creative_ref(ads_creative_t *c)
{
    if (c)
        atomic_fetch_add_explicit(&c->refcount, 1, memory_order_relaxed);
    return c;
}

void ads_creative_unref(ads_creative_t *c)
{
    if (!c || atomic_fetch_sub_explicit(&c->refcount, 1, memory_order_acq_rel) != 1)
        return;
    if (c->blocks)
        block_unref(c->blocks);
    ads_creative_unref(atomic_load_explicit(&c->alt, memory_order_acquire));
    free(c->title);
    free(c);
}

/* An MP3 file's first frame may be a Xing, Info or VBRI header (the file's length and seek
 * table): silence to a decoder, wrong in a stream; it is left out. */
static int is_info_frame(const unsigned char *p, const mpeg_frame_t *f)
{
    if (f->kind != MPEG_KIND_AUDIO || f->len < 40)
        return 0;
    size_t crc = (p[1] & 1) ? 0 : 2;
    static const size_t side[] = {9, 17, 32};
    for (size_t i = 0; i < 3; i++) {
        const unsigned char *t = p + 4 + crc + side[i];
        if (t + 4 <= p + f->len && (!memcmp(t, "Xing", 4) || !memcmp(t, "Info", 4)))
            return 1;
    }
    return !memcmp(p + 36, "VBRI", 4);
}

/* The title as ICY metadata may carry it: no control characters or quotes (a player reads
 * StreamTitle up to "';"), cut after a whole UTF-8 character within ICY_TITLE_MAX bytes. */
static char *icy_title(const char *title)
{
    size_t len = title ? strlen(title) : 0, j = 0;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)title[i];
        if (c >= 0x20 && c != 0x7f && c != '\'' && c != ';')
            out[j++] = (char)c;
    }
    if (j > ICY_TITLE_MAX) { /* back to the start of the character that crosses the limit */
        j = ICY_TITLE_MAX;
        while (j > 0 && ((unsigned char)out[j] & 0xC0) == 0x80)
            j--;
    }
    out[j] = '\0';
    return out;
}

/* Frames from data[start, end): each whole, of the first one's format. The number of frames
 * and their samples, or -1 (something else among them). */
static long frames_check(const unsigned char *data, size_t start, size_t end, ads_format_t *fmt,
                         uint64_t *samples)
{
    long n = 0;
    *samples = 0;
    for (size_t at = start; at < end; n++) {
        mpeg_frame_t f;
        ads_format_t ff;
        if (mpeg_frame_parse(data + at, end - at, &f) != 1 || f.len > end - at ||
            ads_format_of(data + at, end - at, &ff) < 0)
            return -1;
        if (n == 0)
            *fmt = ff;
        else if (!ads_format_equal(&ff, fmt))
            return -1;
        *samples += f.samples;
        at += f.len;
    }
    return n > 0 ? n : -1;
}

/* Cuts the frames of data[start, end) into the creative's blocks and sets its marks. */
static int cut_blocks(ads_creative_t *c, const unsigned char *data, size_t start, size_t end,
                      icy_meta_t *meta)
{
    uint64_t want[ADS_MARKS] = {
        (uint64_t)ADS_IMPRESSION_MS * c->fmt.samplerate, c->samples * 1000 / 4,
        c->samples * 1000 / 2, c->samples * 3000 / 4};
    uint64_t done = 0;
    block_t *tail = NULL;
    for (int i = 0; i < ADS_MARKS; i++)
        c->mark[i] = end - start;
    for (size_t at = start; at < end;) {
        size_t len = 0, take = 0;
        while (at + len < end) {
            mpeg_frame_t f;
            mpeg_frame_parse(data + at + len, end - at - len, &f); /* checked before */
            if (len > 0 && len + f.len > BLOCK_GATHER_MAX)
                break;
            len += f.len;
            done += f.samples;
            for (int i = 0; i < ADS_MARKS; i++)
                if (c->mark[i] == end - start && done * 1000 >= want[i])
                    c->mark[i] = at + len - start;
            take = len;
        }
        block_t *b = block_new_copy(data + at, take);
        if (!b)
            return -ENOMEM;
        b->flags = BLOCK_SYNC;
        b->offset = at - start;
        b->meta = icy_meta_ref(meta);
        if (tail)
            block_link(tail, b);
        else
            c->blocks = b;
        tail = b;
        at += take;
    }
    return 0;
}

int ads_creative_build(const unsigned char *data, size_t len, const char *title,
                       ads_creative_t **out)
{
    if (ads_ogg_is_ogg(data, len))
        return ads_ogg_creative_build(data, len, title, out);
    *out = NULL;
    if (len == 0 || len > ADS_CREATIVE_MAX)
        return VAST_ERR_MEDIA_BROKEN;
    size_t start = 0, end = len;
    long tag = mpeg_id3v2_len(data, len);
    if (tag > 0 && (size_t)tag >= len)
        return VAST_ERR_MEDIA_BROKEN; /* a tag and nothing after it (or a tag cut short) */
    if (tag > 0)
        start = (size_t)tag;
    if (end - start >= 128 && !memcmp(data + end - 128, "TAG", 3))
        end -= 128;
    mpeg_frame_t first;
    if (start < end && mpeg_frame_parse(data + start, end - start, &first) == 1 &&
        first.len <= end - start && is_info_frame(data + start, &first))
        start += first.len;
    ads_creative_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    atomic_init(&c->refcount, 1);
    if (start >= end || frames_check(data, start, end, &c->fmt, &c->samples) < 0) {
        free(c);
        return VAST_ERR_MEDIA_BROKEN;
    }
    c->bytes = end - start;
    c->duration_ms = (uint32_t)(c->samples * 1000 / c->fmt.samplerate);
    c->title = icy_title(title);
    icy_meta_t *meta = c->title && title ? icy_meta_new(c->title, NULL) : NULL;
    int rc = c->title && (meta || !title) ? cut_blocks(c, data, start, end, meta) : -ENOMEM;
    icy_meta_unref(meta);
    if (rc < 0) {
        ads_creative_unref(c);
        return rc;
    }
    *out = c;
    return 0;
}
