/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_fmp4: Opus mounts as HLS in fragmented MP4 (RFC 8216 3.3). Two halves:
 * - the box writer (hls_fmp4.h): init segments and fragments, pure functions;
 * - the window's Opus branch (declared in hls.h, run under the window's lock on the worker
 *   that advances it): the Ogg pages of the mount's blocks are walked, the Opus packets taken
 *   out of their lacing, and each part's packets become one fragment block (moof + mdat) when
 *   the part is cut. The packets of a part lie between Ogg page headers in the mount's blocks,
 *   so its mdat is built once, for every client, when the part is cut; parts are then served
 *   by reference to that block like any other piece (a private chain of fragment blocks, so
 *   that a segment is its parts' bytes back to back). A new OpusHead (a new source, a chained
 *   stream) makes a new init segment; a chained stream of another codec stops the cutting.
 * Each fragment begins with an emsg box carrying an ID3 tag of its time, with a TIT2 frame in
 * the first fragment cut after the title changed. Does not decode audio.
 */
#include "stream/hls_fmp4.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "stream/hls.h"

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

/* ---- the window's Opus branch ---- */

#define OPUS_HEAD_KEPT 512       /* bytes of an OpusHead compared to tell a new one */
#define OPUS_PACKET_MAX 65536    /* a longer packet is not Opus (48 frames of 1275 bytes) */
#define PART_BYTES_MAX (1u << 20) /* a part's packets: over 5 s at Opus's 510 kbit/s */

struct hls_opus {
    unsigned char head[OPUS_HEAD_KEPT]; /* the OpusHead the current init segment describes */
    size_t head_len;
    uint32_t serial;         /* the Opus stream's pages */
    int following;           /* an Opus stream is being cut */
    int tags_left;           /* header packets still to skip (OpusTags) */
    buf_t pkt;               /* the start of a packet continued on the next page */
    int partial;
    buf_t payload;           /* the packets of the part being gathered, back to back */
    uint32_t *durs, *sizes;
    uint32_t n, cap;
    uint64_t time48;         /* decode time of the next packet (48 kHz) */
    uint64_t part_time;      /* of the part being gathered */
    uint32_t frag_seq;
    block_t *tail;           /* the newest fragment block (a reference): the next links to it */
    const block_t *cur;      /* the block being scanned */
    icy_meta_t *title;       /* the part being gathered announces this title (a reference) */
};

/* An Ogg page in p[0..len): 1 with its fields, 0 if there is no whole page there. */
typedef struct ogg_page_view {
    int flags;
    uint32_t serial;
    int nsegs;
    const unsigned char *lacing, *body;
    size_t len; /* the whole page */
} page_t;

static int page_at(const unsigned char *p, size_t len, page_t *pg)
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

/* The first packet of a BOS page when it ends on the page: its length, else 0. */
static size_t bos_packet(const page_t *pg)
{
    size_t n = 0;
    for (int i = 0; i < pg->nsegs; i++) {
        n += pg->lacing[i];
        if (pg->lacing[i] < 255)
            return n;
    }
    return 0;
}

/* The OpusHead of a header chain holding one logical stream, Opus: its packet (its length in
 * *len, the stream's serial in *serial), else NULL. */
static const unsigned char *headers_opus_head(const block_t *headers, size_t *len,
                                              uint32_t *serial)
{
    const unsigned char *head = NULL;
    int bos = 0;
    for (const block_t *b = headers; b; b = block_next(b)) {
        page_t pg;
        for (size_t at = 0; at < b->len && page_at(b->data + at, b->len - at, &pg); at += pg.len) {
            if (!(pg.flags & 0x02))
                continue;
            size_t n = bos_packet(&pg);
            bos++;
            if (fmp4_opus_head_valid(pg.body, n)) {
                head = pg.body;
                *len = n;
                *serial = pg.serial;
            }
        }
    }
    return bos == 1 ? head : NULL;
}

int hls_opus_headers(const block_t *headers)
{
    size_t len;
    uint32_t serial;
    return headers_opus_head(headers, &len, &serial) != NULL;
}

/* A new init segment for head[0..len), named after the next segment's sequence number. */
static void new_init(hls_t *h, struct hls_opus *o, const unsigned char *head, size_t len)
{
    o->head_len = len < sizeof(o->head) ? len : sizeof(o->head);
    memcpy(o->head, head, o->head_len);
    if (h->init)
        block_unref(h->init);
    h->init = fmp4_init_segment(head, len);
    h->init_id = h->open_seq;
    if (!h->init)
        log_warn("hls: %s: no memory for an init segment", h->name);
}

int hls_opus_attach_locked(hls_t *h, const block_t *headers)
{
    struct hls_opus *o = h->opus;
    if (!o) {
        if (!(o = calloc(1, sizeof(*o))))
            return -ENOMEM;
        h->opus = o;
    }
    size_t len = 0;
    uint32_t serial = 0;
    const unsigned char *head = headers_opus_head(headers, &len, &serial);
    if (!head)
        return -EINVAL;
    /* a new source: a new init segment, even with the same OpusHead (a new map follows the
     * discontinuity) */
    new_init(h, o, head, len);
    o->following = 1;
    o->serial = serial;
    o->tags_left = 0; /* the attach point is past the headers */
    o->partial = 0;
    o->pkt.len = 0;
    return 0;
}

/* Ready to gather the next part. */
static void gather_reset(struct hls_opus *o)
{
    o->n = 0;
    o->payload.len = 0;
    if (o->title)
        icy_meta_unref(o->title);
    o->title = NULL;
}

/* The packets gathered for the open part are lost (no memory): the part is dropped. */
static void gather_drop(hls_t *h, struct hls_opus *o)
{
    hls_seg_t *s = h->have_open ? hls_seg_at(h, h->open_seq) : NULL;
    gather_reset(o);
    o->payload.error = 0;
    if (s) {
        s->open.frames = 0;
        s->open.samples = 0;
    }
}

int hls_opus_cut_locked(hls_t *h)
{
    struct hls_opus *o = h->opus;
    hls_seg_t *s = hls_seg_at(h, h->open_seq);
    if (!o || !o->n || !s || !h->have_open)
        return 0;
    /* Every fragment carries its time in an emsg ID3 tag, as every packed-audio piece does,
     * and the title where it changed. hls.js makes its metadata track (a <track> element,
     * whose cues the browser clears when it loads its empty source) when metadata first
     * comes: with a title only, the first title's cue was made with the track and lost. */
    unsigned char id3[HLS_ID3_MAX];
    uint64_t ts90 = o->part_time / FMP4_TIMESCALE * 90000 +
                    o->part_time % FMP4_TIMESCALE * 90000 / FMP4_TIMESCALE;
    fmp4_frag_t f = {
        .seq = ++o->frag_seq, .tfdt = o->part_time, .durs = o->durs, .sizes = o->sizes,
        .n = o->n, .payload = (const unsigned char *)o->payload.data, .len = o->payload.len,
        .id3 = id3,
        .id3_len = hls_id3_tag(id3, ts90 & ((1ull << 33) - 1), o->title ? o->title->title : NULL),
    };
    block_t *b = o->payload.error ? NULL : fmp4_fragment(&f);
    if (!b) {
        /* the part is lost: what follows starts after a discontinuity */
        log_warn("hls: %s: no memory for a fragment, part dropped", h->name);
        gather_drop(h, o);
        return -ENOMEM;
    }
    gather_reset(o);
    b->offset = o->tail ? block_end(o->tail) : 0;
    s->open.blk = block_ref(b);
    s->open.start = b->offset;
    s->open.end = block_end(b);
    if (o->tail) {
        block_link(o->tail, block_ref(b));
        block_unref(o->tail);
    }
    o->tail = b;
    return 0;
}

static int gather_room(struct hls_opus *o)
{
    if (o->n < o->cap)
        return 0;
    uint32_t cap = o->cap ? 2 * o->cap : 64;
    uint32_t *d = realloc(o->durs, cap * sizeof(*d));
    if (d)
        o->durs = d;
    uint32_t *z = d ? realloc(o->sizes, cap * sizeof(*z)) : NULL;
    if (z)
        o->sizes = z;
    if (!d || !z)
        return -ENOMEM;
    o->cap = cap;
    return 0;
}

/* The part being gathered is cut; close: the stream breaks there. */
static void part_cut(hls_t *h)
{
    if (hls_opus_cut_locked(h) < 0)
        hls_stream_break(h);
    else
        hls_part_close(h, 0);
}

/* One Opus packet of `samples` samples joins the part being gathered. Parts are cut before
 * they would exceed the part target, and as soon as the next packet, if as long as this one,
 * would: a part is complete when its last packet comes. */
static void packet_add(hls_t *h, struct hls_opus *o, const unsigned char *p, size_t len,
                       uint32_t samples)
{
    uint32_t limit = (uint32_t)h->part_ms * (FMP4_TIMESCALE / 1000);
    if (!h->frames_known)
        hls_clock_begin(h, FMP4_TIMESCALE);
    hls_seg_t *s = h->have_open ? hls_seg_at(h, h->open_seq) : NULL;
    if (o->n && s && (s->open.samples + samples > limit ||
                      o->payload.len + len > PART_BYTES_MAX))
        part_cut(h);
    if (gather_room(o) < 0 || buf_append(&o->payload, p, len) < 0) {
        log_warn("hls: %s: no memory for a part's packets, part dropped", h->name);
        gather_drop(h, o);
        hls_stream_break(h);
        return;
    }
    s = hls_part_begin(h);
    if (o->n == 0) {
        o->part_time = o->time48;
        /* where the title changed, the part's fragment carries it (emsg) */
        icy_meta_t *meta = o->cur ? o->cur->meta : NULL;
        s->open.titled = hls_title_changed(h, meta);
        o->title = s->open.titled ? icy_meta_ref(meta) : NULL;
    }
    o->durs[o->n] = samples;
    o->sizes[o->n++] = (uint32_t)len;
    s->open.frames++;
    s->open.samples += samples;
    h->epoch_samples += samples;
    h->clock_samples += samples;
    o->time48 += samples;
    if (s->open.samples + samples > limit)
        part_cut(h);
}

static void packet_in(hls_t *h, struct hls_opus *o, const unsigned char *p, size_t len)
{
    if (o->tags_left > 0) {
        o->tags_left--;
        if (len >= 8 && memcmp(p, "OpusTags", 8) == 0)
            return;
    }
    uint32_t samples = fmp4_opus_packet_samples(p, len);
    if (samples && len <= OPUS_PACKET_MAX)
        packet_add(h, o, p, len, samples);
}

/* A BOS page: an Opus stream (re)starts, or another codec's stream ends the Opus one. */
static void bos_page(hls_t *h, struct hls_opus *o, const page_t *pg)
{
    size_t n = bos_packet(pg);
    if (!fmp4_opus_head_valid(pg->body, n)) {
        if (o->following) {
            hls_stream_break(h);
            log_info("hls: %s: the Ogg stream chained to another codec, no segments until "
                     "an Opus stream comes again", h->name);
        }
        o->following = 0;
        return;
    }
    size_t kept = n < sizeof(o->head) ? n : sizeof(o->head);
    if (!o->following || kept != o->head_len || memcmp(o->head, pg->body, kept) != 0) {
        hls_stream_break(h); /* another OpusHead: a discontinuity and a new init segment */
        new_init(h, o, pg->body, n);
    }
    o->following = 1;
    o->serial = pg->serial;
    o->tags_left = 1;
    o->partial = 0;
}

/* Appends a piece of a packet spread over pages; 0, or -1 when it grew too long. */
static int partial_add(struct hls_opus *o, const unsigned char *p, size_t n)
{
    if (o->pkt.len + n > OPUS_PACKET_MAX || buf_append(&o->pkt, p, n) < 0) {
        o->pkt.len = 0;
        o->pkt.error = 0;
        o->partial = 0;
        return -1;
    }
    return 0;
}

static void data_page(hls_t *h, struct hls_opus *o, const page_t *pg)
{
    int continued = pg->flags & 0x01;
    if (!continued && o->partial) { /* the rest of that packet was lost */
        o->partial = 0;
        o->pkt.len = 0;
    }
    const unsigned char *at = pg->body;
    for (int i = 0, first = 1; i < pg->nsegs; first = 0) {
        size_t len = 0;
        int ended = 0;
        while (i < pg->nsegs && !ended) {
            len += pg->lacing[i];
            ended = pg->lacing[i++] < 255;
        }
        const unsigned char *p = at;
        at += len;
        if (first && continued) {
            if (!o->partial || partial_add(o, p, len) < 0 || !ended)
                continue; /* the tail of a packet whose start is not here, or more to come */
            o->partial = 0;
            packet_in(h, o, (const unsigned char *)o->pkt.data, o->pkt.len);
            o->pkt.len = 0;
            continue;
        }
        if (!ended) {
            o->pkt.len = 0;
            o->partial = partial_add(o, p, len) == 0;
            continue;
        }
        packet_in(h, o, p, len);
    }
}

void hls_opus_scan_locked(hls_t *h, const block_t *b)
{
    struct hls_opus *o = h->opus;
    if (h->pos >= block_end(b) || !o)
        return;
    if (h->pos > b->offset) { /* joined inside a block: its pages are not whole here */
        h->pos = block_end(b);
        o->partial = 0;
        return;
    }
    page_t pg;
    size_t at = 0;
    o->cur = b;
    for (; at < b->len && page_at(b->data + at, b->len - at, &pg); at += pg.len) {
        if (pg.flags & 0x02)
            bos_page(h, o, &pg);
        else if (o->following && pg.serial == o->serial)
            data_page(h, o, &pg);
    }
    if (at < b->len) { /* not Ogg pages: skipped, and the stream breaks there */
        log_debug("hls: %s: a block of the mount is not whole Ogg pages, skipped", h->name);
        o->partial = 0;
        hls_stream_break(h);
    }
    o->cur = NULL;
    h->pos = block_end(b);
}

void hls_opus_free_locked(hls_t *h)
{
    struct hls_opus *o = h->opus;
    if (h->init)
        block_unref(h->init);
    h->init = NULL;
    if (!o)
        return;
    gather_reset(o);
    buf_free(&o->pkt);
    buf_free(&o->payload);
    free(o->durs);
    free(o->sizes);
    if (o->tail)
        block_unref(o->tail);
    free(o);
    h->opus = NULL;
}

int hls_init_piece(hls_t *h, uint64_t id, hls_piece_t *p)
{
    int rc = HLS_GONE;
    pthread_mutex_lock(&h->lock);
    block_t *init = h->init && h->init_id == id ? h->init : NULL;
    for (uint64_t q = h->first_seq; !init && h->segs && q <= h->open_seq; q++) {
        const hls_seg_t *s = hls_seg_at(h, q);
        if (s && s->init && s->init_id == id)
            init = s->init;
    }
    if (init) {
        memset(p, 0, sizeof(*p));
        p->blk = block_ref(init);
        p->start = init->offset;
        p->end = block_end(init);
        p->fmp4 = 1;
        rc = HLS_READY;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}
