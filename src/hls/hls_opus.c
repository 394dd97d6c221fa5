/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_opus: the window's Opus branch (declared in hls.h, run under the window's lock on the
 * worker that advances it): the Ogg pages of the mount's blocks are walked, the Opus packets
 * taken out of their lacing, and each part's packets become one fragment block (moof + mdat,
 * hls_fmp4.h) when the part is cut. The packets of a part lie between Ogg page headers in the
 * mount's blocks, so its mdat is built once, for every client, when the part is cut; parts are
 * then served by reference to that block like any other piece (a private chain of fragment
 * blocks, so that a segment is its parts' bytes back to back). A new OpusHead (a new source, a
 * chained stream) makes a new init segment; a chained stream of another codec stops the
 * cutting. Each fragment begins with an emsg box carrying an ID3 tag of its time, with a TIT2
 * frame in the first fragment cut after the title changed. On an upgrade its state goes to the
 * new process as record fields (hls_opus_save_locked), the packets of the part being gathered
 * too. Does not decode audio.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/record.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_fmp4.h"
#include "stream/handover.h"

#define OPUS_HEAD_KEPT 512       /* bytes of an OpusHead compared to tell a new one */
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

/* The OpusHead of a header chain holding one logical stream, Opus: its packet (its length in
 * *len, the stream's serial in *serial), else NULL. */
static const unsigned char *headers_opus_head(const block_t *headers, size_t *len,
                                              uint32_t *serial)
{
    const unsigned char *head = NULL;
    int bos = 0;
    for (const block_t *b = headers; b; b = block_next(b)) {
        fmp4_page_t pg;
        for (size_t at = 0; at < b->len && fmp4_page_at(b->data + at, b->len - at, &pg);
             at += pg.len) {
            if (!(pg.flags & 0x02))
                continue;
            size_t n = fmp4_bos_packet(&pg);
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
    fmp4_frag_t f = {
        .seq = ++o->frag_seq, .tfdt = o->part_time, .durs = o->durs, .sizes = o->sizes,
        .n = o->n, .payload = (const unsigned char *)o->payload.data, .len = o->payload.len,
        .id3 = id3,
        .id3_len = hls_id3_tag(id3, hls_id3_time48(o->part_time), o->title ? o->title->title : NULL),
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
    return fmp4_sample_room(&o->durs, &o->sizes, &o->cap, o->n);
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
static void bos_page(hls_t *h, struct hls_opus *o, const fmp4_page_t *pg)
{
    size_t n = fmp4_bos_packet(pg);
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

static void data_page(hls_t *h, struct hls_opus *o, const fmp4_page_t *pg)
{
    int continued = pg->flags & 0x01;
    if (!continued && o->partial) { /* the rest of that packet was lost */
        o->partial = 0;
        o->pkt.len = 0;
    }
    fmp4_lacing_t w = {0, pg->body};
    const unsigned char *p;
    size_t len;
    int ended;
    for (int first = 1; fmp4_lacing_next(pg, &w, &p, &len, &ended); first = 0) {
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
    fmp4_page_t pg;
    size_t at = 0;
    o->cur = b;
    for (; at < b->len && fmp4_page_at(b->data + at, b->len - at, &pg); at += pg.len) {
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

/* ---- an upgrade ---- */

const block_t *hls_opus_tail(const hls_t *h)
{
    return h->opus ? h->opus->tail : NULL;
}

void hls_opus_save_locked(hls_t *h, handover_metas_t *t, buf_t *out)
{
    struct hls_opus *o = h->opus;
    rec_u8(out, o != NULL);
    if (!o)
        return;
    rec_bytes(out, o->head, o->head_len);
    rec_u32(out, o->serial);
    rec_u8(out, (uint8_t)o->following);
    rec_u32(out, (uint32_t)o->tags_left);
    rec_u8(out, (uint8_t)o->partial);
    rec_bytes(out, o->pkt.data, o->pkt.len);
    rec_bytes(out, o->payload.data, o->payload.len);
    rec_u32(out, o->n);
    for (uint32_t i = 0; i < o->n; i++) {
        rec_u32(out, o->durs[i]);
        rec_u32(out, o->sizes[i]);
    }
    rec_u64(out, o->time48);
    rec_u64(out, o->part_time);
    rec_u32(out, o->frag_seq);
    rec_u32(out, handover_meta_id(t, o->title));
}

int hls_opus_restore_locked(hls_t *h, const handover_metas_t *t, rec_reader_t *in,
                            block_t *tail)
{
    hls_opus_free_locked(h);
    if (!rec_get_u8(in)) {
        if (tail)
            block_unref(tail);
        return in->error ? -EINVAL : 0;
    }
    struct hls_opus *o = calloc(1, sizeof(*o));
    if (!o) {
        if (tail)
            block_unref(tail);
        return -ENOMEM;
    }
    h->opus = o;
    o->tail = tail;
    size_t n;
    const unsigned char *head = rec_get_bytes(in, &n);
    o->head_len = n < sizeof(o->head) ? n : sizeof(o->head);
    if (head)
        memcpy(o->head, head, o->head_len);
    o->serial = rec_get_u32(in);
    o->following = rec_get_u8(in);
    o->tags_left = (int)rec_get_u32(in);
    o->partial = rec_get_u8(in);
    const unsigned char *p = rec_get_bytes(in, &n);
    if (n)
        buf_append(&o->pkt, p, n);
    p = rec_get_bytes(in, &n);
    if (n)
        buf_append(&o->payload, p, n);
    uint32_t count = rec_get_u32(in);
    for (uint32_t i = 0; i < count && !in->error; i++) {
        if (gather_room(o) < 0)
            return -ENOMEM;
        o->durs[o->n] = rec_get_u32(in);
        o->sizes[o->n++] = rec_get_u32(in);
    }
    o->time48 = rec_get_u64(in);
    o->part_time = rec_get_u64(in);
    o->frag_seq = rec_get_u32(in);
    o->title = icy_meta_ref(handover_meta_of(t, rec_get_u32(in)));
    if (in->error)
        return -EINVAL;
    return o->pkt.error || o->payload.error ? -ENOMEM : 0;
}
