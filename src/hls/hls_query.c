/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_query: what a request asks of a window (see hls.h), each under the window's lock: where
 * a segment or part stands, a reference to its bytes with the ID3 tag that goes in front of
 * them, the part being cut so far, the next part, the window's geometry. The window itself
 * (cutting the mount's blocks, the waiters, the registry) is in hls.c.
 */
#include "hls/hls.h"
#include "hls/hls_window_internal.h"

#include <pthread.h>

int hls_locate(hls_t *h, uint64_t msn, int part)
{
    if (!h->segs || msn < h->first_seq)
        return HLS_GONE;
    hls_seg_t *s = hls_seg_at(h, msn);
    if (msn < h->open_seq || (s && s->complete)) {
        if (!s || !s->complete)
            return HLS_GONE;
        return part < s->nparts ? HLS_READY : HLS_GONE;
    }
    /* the open segment or later: a blocking request may wait for the next two segments */
    if (msn > h->open_seq + 2 || part >= h->parts_per_seg)
        return HLS_TOO_FAR;
    if (msn == h->open_seq && s && part >= 0 && part < s->nparts)
        return HLS_READY;
    return HLS_PENDING;
}

/* The title a part announces (it changed there), or NULL. */
static const char *part_title(const hls_part_t *p)
{
    return p->titled && p->blk && p->blk->meta ? p->blk->meta->title : NULL;
}

int hls_piece(hls_t *h, uint64_t msn, int part, hls_piece_t *p)
{
    pthread_mutex_lock(&h->lock);
    int rc = hls_locate(h, msn, part);
    if (rc == HLS_READY) {
        hls_seg_t *s = hls_seg_at(h, msn);
        const hls_part_t *first = &s->parts[part < 0 ? 0 : part];
        const hls_part_t *last = &s->parts[part < 0 ? s->nparts - 1 : part];
        p->blk = block_ref(first->blk);
        p->start = first->start;
        p->end = last->end;
        p->adts = h->adts;
        p->fmp4 = h->is_opus;
        const char *title = NULL; /* a segment: the last title change among its parts */
        for (const hls_part_t *q = first; q <= last; q++)
            if (part_title(q))
                title = part_title(q);
        p->id3_len = h->is_opus ? 0 : hls_id3_tag(p->id3, first->ts90, title);
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

const char *hls_piece_ext(const hls_piece_t *p)
{
    return p->fmp4 ? "mp4" : p->adts ? "aac" : "mp3";
}

const char *hls_piece_type(const hls_piece_t *p)
{
    return p->fmp4 ? "audio/mp4" : p->adts ? "audio/aac" : "audio/mpeg";
}

void hls_next_part(hls_t *h, uint64_t *msn, int *part)
{
    pthread_mutex_lock(&h->lock);
    hls_seg_t *s = hls_seg_at(h, h->open_seq);
    *msn = h->open_seq;
    *part = s && !s->complete ? s->nparts : 0;
    pthread_mutex_unlock(&h->lock);
}

int hls_target_duration(hls_t *h)
{
    pthread_mutex_lock(&h->lock);
    int t = h->target;
    pthread_mutex_unlock(&h->lock);
    return t;
}

int hls_part_target_ms(hls_t *h)
{
    pthread_mutex_lock(&h->lock);
    int t = h->part_ms;
    pthread_mutex_unlock(&h->lock);
    return t;
}

int hls_part_so_far(hls_t *h, uint64_t msn, int part, hls_piece_t *p)
{
    pthread_mutex_lock(&h->lock);
    int rc = hls_locate(h, msn, part);
    const hls_seg_t *s = hls_seg_at(h, msn);
    int open = s ? !s->complete && s->nparts == part : h->have_open == 0 && part == 0;
    /* an Opus part is one fragment, whose moof needs all its packets: sent once complete */
    if (rc == HLS_PENDING && msn == h->open_seq && open && h->rate && !h->is_opus) {
        uint64_t ts = s && s->open.blk ? s->open.ts90
                                       : h->clock90 + h->clock_samples * 90000 / h->rate;
        p->id3_len = hls_id3_tag(p->id3, ts & ((1ull << 33) - 1),
                             s && s->open.blk ? part_title(&s->open) : NULL);
        p->blk = s && s->open.blk ? block_ref(s->open.blk) : NULL;
        p->start = s && s->open.blk ? s->open.start : 0;
        p->end = s && s->open.blk ? s->open.end : 0;
        p->adts = h->adts;
        rc = HLS_FILLING;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}
