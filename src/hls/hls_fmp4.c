/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_fmp4: the box writer of Opus HLS in fragmented MP4 (RFC 8216 3.3) and the Ogg page and
 * packet reading it is fed by (hls_fmp4.h): pure functions, used by the window's Opus branch
 * (hls_opus.c) and by Opus intros (hls_intro.c). Does not decode audio.
 */
#include "hls/hls_fmp4.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"

/* ---- the box writer ---- */

#define INIT_MAX 2048 /* an init segment with a 255-channel mapping table fits */

typedef struct writer {
    unsigned char *p;
    size_t len, cap;
    int overflow;
} writer_t;

static void put(writer_t *w, const void *s, size_t n)
{
    if (w->len + n > w->cap) {
        w->overflow = 1;
        return;
    }
    if (s)
        memcpy(w->p + w->len, s, n);
    else
        memset(w->p + w->len, 0, n);
    w->len += n;
}

static void put_be(writer_t *w, uint64_t v, int bytes)
{
    unsigned char b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (unsigned char)(v >> (8 * (bytes - 1 - i)));
    put(w, b, (size_t)bytes);
}

static void put_zero(writer_t *w, size_t n) { put(w, NULL, n); }

/* Opens a box (its size is written by box_close); full: with version and flags. */
static size_t box_open(writer_t *w, const char *type, int full, unsigned version, uint32_t flags)
{
    size_t at = w->len;
    put_be(w, 0, 4);
    put(w, type, 4);
    if (full)
        put_be(w, (uint64_t)version << 24 | flags, 4);
    return at;
}

static void box_close(writer_t *w, size_t at)
{
    if (w->overflow)
        return;
    uint32_t size = (uint32_t)(w->len - at);
    for (int i = 0; i < 4; i++)
        w->p[at + (size_t)i] = (unsigned char)(size >> (24 - 8 * i));
}

static void put_matrix(writer_t *w)
{
    static const uint32_t unity[9] = {0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000};
    for (int i = 0; i < 9; i++)
        put_be(w, unity[i], 4);
}

uint32_t fmp4_opus_packet_samples(const unsigned char *p, size_t len)
{
    if (len == 0)
        return 0;
    unsigned config = p[0] >> 3;
    uint32_t frame;
    if (config < 12) /* SILK: 10, 20, 40, 60 ms */
        frame = (uint32_t[]){480, 960, 1920, 2880}[config & 3];
    else if (config < 16) /* hybrid: 10, 20 ms */
        frame = config & 1 ? 960 : 480;
    else /* CELT: 2.5, 5, 10, 20 ms */
        frame = 120u << (config & 3);
    uint32_t frames;
    switch (p[0] & 3) {
    case 0:
        frames = 1;
        break;
    case 1:
    case 2:
        frames = 2;
        break;
    default:
        if (len < 2)
            return 0;
        frames = p[1] & 0x3f;
    }
    uint32_t samples = frames * frame;
    return samples <= 5760 ? samples : 0; /* at most 120 ms */
}

int fmp4_opus_head_valid(const unsigned char *h, size_t len)
{
    if (len < OPUS_HEAD_MIN || memcmp(h, "OpusHead", 8) != 0 || (h[8] >> 4) != 0 || h[9] == 0)
        return 0;
    if (h[18] == 0)
        return h[9] <= 2;
    return len >= 21u + h[9] && h[19] > 0 && h[20] <= h[19];
}

static void put_dops(writer_t *w, const unsigned char *h)
{
    size_t box = box_open(w, "dOps", 0, 0, 0);
    put_be(w, 0, 1);                                        /* Version */
    put_be(w, h[9], 1);                                     /* OutputChannelCount */
    put_be(w, (uint32_t)h[10] | (uint32_t)h[11] << 8, 2);   /* PreSkip */
    put_be(w, (uint32_t)h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 |
                  (uint32_t)h[15] << 24, 4);                /* InputSampleRate */
    put_be(w, (uint32_t)h[16] | (uint32_t)h[17] << 8, 2);   /* OutputGain (Q7.8) */
    put_be(w, h[18], 1);                                    /* ChannelMappingFamily */
    if (h[18] != 0)
        put(w, h + 19, 2u + h[9]); /* StreamCount, CoupledCount, ChannelMapping */
    box_close(w, box);
}

static void put_sample_table(writer_t *w, const unsigned char *head)
{
    size_t stbl = box_open(w, "stbl", 0, 0, 0);
    size_t stsd = box_open(w, "stsd", 1, 0, 0);
    put_be(w, 1, 4);
    size_t entry = box_open(w, "Opus", 0, 0, 0);
    put_zero(w, 6);
    put_be(w, 1, 2);              /* data_reference_index */
    put_zero(w, 8);
    put_be(w, head[9], 2);        /* channelcount */
    put_be(w, 16, 2);             /* samplesize */
    put_zero(w, 4);
    put_be(w, (uint64_t)FMP4_TIMESCALE << 16, 4);
    put_dops(w, head);
    box_close(w, entry);
    box_close(w, stsd);
    static const char *const empty[] = {"stts", "stsc", "stco"};
    for (int i = 0; i < 3; i++) {
        size_t b = box_open(w, empty[i], 1, 0, 0);
        put_be(w, 0, 4);
        box_close(w, b);
    }
    size_t stsz = box_open(w, "stsz", 1, 0, 0);
    put_be(w, 0, 8); /* sample_size, sample_count */
    box_close(w, stsz);
    box_close(w, stbl);
}

static void put_media(writer_t *w, const unsigned char *head)
{
    size_t mdia = box_open(w, "mdia", 0, 0, 0);
    size_t mdhd = box_open(w, "mdhd", 1, 0, 0);
    put_be(w, 0, 8);                       /* creation, modification */
    put_be(w, FMP4_TIMESCALE, 4);
    put_be(w, 0, 4);                       /* duration: fragments say */
    put_be(w, (21u << 10) | (14u << 5) | 4u, 2); /* "und" */
    put_be(w, 0, 2);
    box_close(w, mdhd);
    size_t hdlr = box_open(w, "hdlr", 1, 0, 0);
    put_be(w, 0, 4);
    put(w, "soun", 4);
    put_zero(w, 12);
    put(w, "SoundHandler", 13);
    box_close(w, hdlr);
    size_t minf = box_open(w, "minf", 0, 0, 0);
    size_t smhd = box_open(w, "smhd", 1, 0, 0);
    put_be(w, 0, 4);
    box_close(w, smhd);
    size_t dinf = box_open(w, "dinf", 0, 0, 0);
    size_t dref = box_open(w, "dref", 1, 0, 0);
    put_be(w, 1, 4);
    box_close(w, box_open(w, "url ", 1, 0, 1)); /* self-contained */
    box_close(w, dref);
    box_close(w, dinf);
    put_sample_table(w, head);
    box_close(w, minf);
    box_close(w, mdia);
}

block_t *fmp4_init_segment(const unsigned char *head, size_t len)
{
    if (!fmp4_opus_head_valid(head, len))
        return NULL;
    unsigned char out[INIT_MAX];
    writer_t w = {out, 0, sizeof(out), 0};
    size_t ftyp = box_open(&w, "ftyp", 0, 0, 0);
    put(&w, "iso6", 4);
    put_be(&w, 0, 4);
    put(&w, "iso6cmfcmp41", 12);
    box_close(&w, ftyp);
    size_t moov = box_open(&w, "moov", 0, 0, 0);
    size_t mvhd = box_open(&w, "mvhd", 1, 0, 0);
    put_be(&w, 0, 8);
    put_be(&w, FMP4_TIMESCALE, 4);
    put_be(&w, 0, 4);
    put_be(&w, 0x10000, 4);  /* rate 1.0 */
    put_be(&w, 0x100, 2);    /* volume 1.0 */
    put_zero(&w, 10);
    put_matrix(&w);
    put_zero(&w, 24);
    put_be(&w, 2, 4);        /* next_track_ID */
    box_close(&w, mvhd);
    size_t trak = box_open(&w, "trak", 0, 0, 0);
    size_t tkhd = box_open(&w, "tkhd", 1, 0, 3); /* enabled, in movie */
    put_be(&w, 0, 8);
    put_be(&w, 1, 4);        /* track_ID */
    put_zero(&w, 4);
    put_be(&w, 0, 4);        /* duration */
    put_zero(&w, 8);
    put_be(&w, 0, 4);        /* layer, alternate_group */
    put_be(&w, 0x100, 2);    /* volume */
    put_zero(&w, 2);
    put_matrix(&w);
    put_be(&w, 0, 8);        /* width, height */
    box_close(&w, tkhd);
    put_media(&w, head);
    box_close(&w, trak);
    size_t mvex = box_open(&w, "mvex", 0, 0, 0);
    size_t trex = box_open(&w, "trex", 1, 0, 0);
    put_be(&w, 1, 4);        /* track_ID */
    put_be(&w, 1, 4);        /* default_sample_description_index */
    put_zero(&w, 12);        /* duration, size, flags: each fragment gives them */
    box_close(&w, trex);
    box_close(&w, mvex);
    box_close(&w, moov);
    if (w.overflow)
        return NULL;
    return block_new_copy(out, w.len);
}

int fmp4_sample_room(uint32_t **durs, uint32_t **sizes, uint32_t *cap, uint32_t n)
{
    if (n < *cap)
        return 0;
    uint32_t want = *cap ? 2 * *cap : 64;
    uint32_t *d = realloc(*durs, want * sizeof(*d));
    if (d)
        *durs = d;
    uint32_t *z = d ? realloc(*sizes, want * sizeof(*z)) : NULL;
    if (z)
        *sizes = z;
    if (!z)
        return -ENOMEM;
    *cap = want;
    return 0;
}

#define EMSG_SCHEME "https://aomedia.org/emsg/ID3"

block_t *fmp4_fragment(const fmp4_frag_t *f)
{
    size_t emsg_len = f->id3 ? 32 + sizeof(EMSG_SCHEME) + 1 + f->id3_len : 0;
    size_t moof_len = 88 + 8 * (size_t)f->n;
    size_t total = emsg_len + moof_len + 8 + f->len;
    if (total > UINT32_MAX)
        return NULL;
    block_t *b = block_new(total);
    if (!b)
        return NULL;
    writer_t w = {b->data, 0, total, 0};
    if (f->id3) {
        size_t emsg = box_open(&w, "emsg", 1, 1, 0);
        put_be(&w, FMP4_TIMESCALE, 4);
        put_be(&w, f->tfdt, 8);      /* presentation_time */
        put_be(&w, 0xffffffffu, 4); /* event_duration: unknown (until the next title) */
        put_be(&w, f->seq, 4);       /* id */
        put(&w, EMSG_SCHEME, sizeof(EMSG_SCHEME));
        put(&w, "", 1);              /* value */
        put(&w, f->id3, f->id3_len);
        box_close(&w, emsg);
    }
    size_t moof = box_open(&w, "moof", 0, 0, 0);
    size_t mfhd = box_open(&w, "mfhd", 1, 0, 0);
    put_be(&w, f->seq, 4);
    box_close(&w, mfhd);
    size_t traf = box_open(&w, "traf", 0, 0, 0);
    size_t tfhd = box_open(&w, "tfhd", 1, 0, 0x020000); /* default-base-is-moof */
    put_be(&w, 1, 4);
    box_close(&w, tfhd);
    size_t box = box_open(&w, "tfdt", 1, 1, 0);
    put_be(&w, f->tfdt, 8);
    box_close(&w, box);
    /* data offset, sample durations and sizes present */
    size_t trun = box_open(&w, "trun", 1, 0, 0x000301);
    put_be(&w, f->n, 4);
    put_be(&w, moof_len + 8, 4);
    for (uint32_t i = 0; i < f->n; i++) {
        put_be(&w, f->durs[i], 4);
        put_be(&w, f->sizes[i], 4);
    }
    box_close(&w, trun);
    box_close(&w, traf);
    box_close(&w, moof);
    put_be(&w, 8 + f->len, 4);
    put(&w, "mdat", 4);
    put(&w, f->payload, f->len);
    if (w.overflow || w.len != total) {
        block_unref(b);
        return NULL;
    }
    b->len = (uint32_t)total;
    return b;
}

/* ---- Ogg pages and Opus packets ---- */

int fmp4_page_at(const unsigned char *p, size_t len, fmp4_page_t *pg)
{
    if (len < 27 || memcmp(p, "OggS", 4) != 0 || p[4] != 0)
        return 0;
    pg->nsegs = p[26];
    if (len < 27u + (size_t)pg->nsegs)
        return 0;
    pg->flags = p[5];
    pg->serial = (uint32_t)p[14] | (uint32_t)p[15] << 8 | (uint32_t)p[16] << 16 |
                 (uint32_t)p[17] << 24;
    pg->lacing = p + 27;
    pg->body = pg->lacing + pg->nsegs;
    size_t body = 0;
    for (int i = 0; i < pg->nsegs; i++)
        body += pg->lacing[i];
    pg->len = 27u + (size_t)pg->nsegs + body;
    return pg->len <= len;
}

size_t fmp4_bos_packet(const fmp4_page_t *pg)
{
    size_t n = 0;
    for (int i = 0; i < pg->nsegs; i++) {
        n += pg->lacing[i];
        if (pg->lacing[i] < 255)
            return n;
    }
    return 0;
}

int fmp4_lacing_next(const fmp4_page_t *pg, fmp4_lacing_t *w, const unsigned char **p,
                     size_t *len, int *ended)
{
    if (w->i >= pg->nsegs)
        return 0;
    *len = 0;
    *ended = 0;
    while (w->i < pg->nsegs && !*ended) {
        *len += pg->lacing[w->i];
        *ended = pg->lacing[w->i++] < 255;
    }
    *p = w->at;
    w->at += *len;
    return 1;
}

int fmp4_ogg_opus_walk(const unsigned char *d, size_t len, const unsigned char **head,
                       size_t *head_len, fmp4_packet_fn fn, void *arg)
{
    buf_t pkt = BUF_INIT; /* a packet spread over pages, so far */
    int partial = 0, headers = 1, stop = 0;
    uint32_t serial = 0;
    fmp4_page_t pg;
    *head = NULL;
    for (size_t at = 0; !stop && at < len && fmp4_page_at(d + at, len - at, &pg); at += pg.len) {
        if (pg.flags & 0x02) {
            size_t n = fmp4_bos_packet(&pg);
            if (*head || !fmp4_opus_head_valid(pg.body, n))
                break; /* a chained link, or not Opus */
            *head = pg.body;
            *head_len = n;
            serial = pg.serial;
            continue;
        }
        if (!*head || pg.serial != serial)
            continue;
        fmp4_lacing_t w = {0, pg.body};
        const unsigned char *p;
        size_t n;
        int ended;
        for (int first = 1; !stop && fmp4_lacing_next(&pg, &w, &p, &n, &ended); first = 0) {
            int cont = first && (pg.flags & 0x01);
            if (!cont)
                partial = 0;
            if (cont || !ended) { /* a piece of a packet spread over pages */
                if (cont && !partial)
                    continue; /* the tail of a packet whose start is not here */
                if (!cont)
                    pkt.len = 0;
                partial = !ended;
                if (pkt.len + n > OPUS_PACKET_MAX || buf_append(&pkt, p, n) < 0) {
                    partial = 0;
                    pkt.error = 0;
                    continue;
                }
                if (!ended)
                    continue;
                p = (const unsigned char *)pkt.data;
                n = pkt.len;
            }
            if (headers-- > 0)
                continue; /* OpusTags */
            uint32_t samples = fmp4_opus_packet_samples(p, n);
            if (samples && n <= OPUS_PACKET_MAX)
                stop = fn(arg, p, n, samples) != 0;
        }
    }
    buf_free(&pkt);
    return *head ? 0 : -1;
}
