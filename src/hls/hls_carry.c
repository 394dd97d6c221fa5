/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_carry: a mount's HLS windows handed to the new process on an upgrade (hls_carry.h). A
 * window goes whole: geometry, numbering, discontinuities, the 90 kHz clock and the wall
 * clock its segments are dated by, where its scan of the mount's blocks stands (inside a frame
 * header even), the title announced last, its init segments, and every segment and part. A
 * part references a chain of blocks: the mount's queue (carried by stream/handover.c from the
 * oldest block a window lists), the queue of a source the window followed before, or an Opus
 * window's own fragments (both carried here, from the oldest block a part is in); it goes as
 * its chain's index and its block's offset, and finds the same bytes in the new process. So
 * every URI the window listed answers the same bytes there, and the next part follows on.
 */
#include "hls/hls_carry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "stream/mount.h"

#define NO_INDEX UINT32_MAX
#define NO_OFFSET UINT64_MAX

/* The chains of blocks a window's parts are in, each known by the block it ends at (the
 * workers are parked: none grows meanwhile). Chain 0 is the mount's queue. */
typedef struct chains {
    const block_t **tail, **first; /* first: the oldest block a part is in */
    uint32_t n, cap;
    uint32_t *of_slot;             /* each ring slot's chain (NO_INDEX: none) */
} chains_t;

static void chains_free(chains_t *c)
{
    free(c->tail);
    free(c->first);
    free(c->of_slot);
    memset(c, 0, sizeof(*c));
}

/* The chain that ends at `end`, added with b its first block when new: its index, or NO_INDEX
 * without memory. */
static uint32_t chain_add(chains_t *c, const block_t *end, const block_t *b)
{
    uint32_t i = 0;
    while (i < c->n && c->tail[i] != end)
        i++;
    if (i == c->n) {
        if (c->n == c->cap)
            return NO_INDEX;
        c->tail[c->n++] = end;
    }
    c->first[i] = b;
    return i;
}

/* The chain of block b, walking from b to `stop` (the first block of the newer segment looked
 * at before, on chain stop_chain) or else to the end of its chain; b is its oldest so far. */
static uint32_t chain_of(chains_t *c, const block_t *b, const block_t *stop, uint32_t stop_chain)
{
    const block_t *x = b, *next;
    while (x != stop && (next = block_next(x)))
        x = next;
    if (x == stop && stop_chain != NO_INDEX) {
        c->first[stop_chain] = b;
        return stop_chain;
    }
    return chain_add(c, x, b);
}

static const block_t *seg_block(const hls_seg_t *s)
{
    return s->nparts ? s->parts[0].blk : s->open.blk;
}

/* The chains of window h (under its lock): 0 the mount's, from the scan; then, newest segment
 * first, each segment's (segments of one chain come in the chain's order). 0 or -ENOMEM. */
static int chains_of(hls_t *h, chains_t *c)
{
    uint32_t cap = (uint32_t)h->nsegs + 2;
    c->tail = calloc(cap, sizeof(*c->tail));
    c->first = calloc(cap, sizeof(*c->first));
    c->of_slot = malloc((size_t)h->nsegs * sizeof(*c->of_slot));
    c->cap = cap;
    if (!c->tail || !c->first || !c->of_slot)
        return -ENOMEM;
    chain_of(c, h->scan, NULL, NO_INDEX);
    if (hls_opus_tail(h))
        chain_of(c, hls_opus_tail(h), NULL, NO_INDEX);
    const block_t *stop = NULL;
    uint32_t stop_chain = NO_INDEX;
    for (uint64_t q = h->open_seq + 1; q-- > h->first_seq;) {
        hls_seg_t *s = hls_seg_at(h, q);
        const block_t *b = s ? seg_block(s) : NULL;
        if (!b)
            continue;
        uint32_t i = chain_of(c, b, stop, stop_chain);
        if (i == NO_INDEX)
            return -ENOMEM;
        c->of_slot[q % (uint64_t)h->nsegs] = i;
        stop = b;
        stop_chain = i;
    }
    return 0;
}

/* The windows following m that can be carried, in turn, locked: fn(h, arg). */
static void each_window(mount_t *m, void (*fn)(hls_t *h, void *arg), void *arg)
{
    for (hls_t *h = atomic_load(&m->hls); h; h = atomic_load(&h->next_on_mount)) {
        pthread_mutex_lock(&h->lock);
        if (h->mount == m && h->segs && h->scan)
            fn(h, arg);
        pthread_mutex_unlock(&h->lock);
    }
}

static void oldest_of(hls_t *h, void *arg)
{
    const block_t **oldest = arg;
    chains_t c = {0};
    if (chains_of(h, &c) == 0 && (!*oldest || c.first[0]->offset < (*oldest)->offset))
        *oldest = c.first[0];
    chains_free(&c);
}

const block_t *hls_carry_oldest(mount_t *m)
{
    const block_t *oldest = NULL;
    each_window(m, oldest_of, &oldest);
    return oldest;
}

/* ---- saving ---- */

static void save_part(const hls_part_t *p, buf_t *out)
{
    rec_u64(out, p->blk ? p->blk->offset : NO_OFFSET);
    rec_u64(out, p->start);
    rec_u64(out, p->end);
    rec_u32(out, p->frames);
    rec_u32(out, p->samples);
    rec_u64(out, p->ts90);
    rec_u8(out, (uint8_t)p->done);
    rec_u8(out, (uint8_t)p->titled);
}

/* The index of init segment b among those saved (added when new), NO_INDEX for none. */
static uint32_t init_index(const block_t **v, uint32_t *n, const block_t *b)
{
    if (!b)
        return NO_INDEX;
    for (uint32_t i = 0; i < *n; i++)
        if (v[i] == b)
            return i;
    v[*n] = b;
    return (*n)++;
}

/* The init segments (each once: its bytes), then the window's own, then each segment. */
static int save_segments(hls_t *h, const chains_t *c, buf_t *out)
{
    const block_t **inits = calloc((size_t)h->nsegs + 1, sizeof(*inits));
    uint32_t ninits = 0, nsegs = 0;
    if (!inits)
        return -ENOMEM;
    init_index(inits, &ninits, h->init);
    for (uint64_t q = h->first_seq; q <= h->open_seq; q++) {
        hls_seg_t *s = hls_seg_at(h, q);
        if (s)
            init_index(inits, &ninits, s->init), nsegs++;
    }
    rec_u32(out, ninits);
    for (uint32_t i = 0; i < ninits; i++) {
        rec_u64(out, inits[i]->offset);
        rec_bytes(out, inits[i]->data, inits[i]->len);
    }
    rec_u32(out, init_index(inits, &ninits, h->init));
    rec_u64(out, h->init_id);
    rec_u32(out, nsegs);
    for (uint64_t q = h->first_seq; q <= h->open_seq; q++) {
        hls_seg_t *s = hls_seg_at(h, q);
        if (!s)
            continue;
        rec_u64(out, s->seq);
        rec_u8(out, (uint8_t)s->complete);
        rec_u8(out, (uint8_t)s->discontinuity);
        rec_u32(out, s->rate);
        rec_u64(out, s->samples);
        rec_i64(out, s->pdt_ms);
        rec_u32(out, s->epoch);
        rec_u64(out, s->epoch_samples);
        rec_u32(out, init_index(inits, &ninits, s->init));
        rec_u64(out, s->init_id);
        rec_u32(out, seg_block(s) ? c->of_slot[q % (uint64_t)h->nsegs] : NO_INDEX);
        rec_u32(out, (uint32_t)s->nparts);
        for (int i = 0; i < s->nparts; i++)
            save_part(&s->parts[i], out);
        save_part(&s->open, out);
    }
    free(inits);
    return 0;
}

/* The numbering, the scan and the clock. */
static void save_state(hls_t *h, handover_metas_t *t, buf_t *out)
{
    int geometry[] = {h->target, h->part_ms, h->parts_per_seg, h->listed,
                      (int)h->frames_per_part, h->nsegs};
    for (size_t i = 0; i < sizeof(geometry) / sizeof(geometry[0]); i++)
        rec_u32(out, (uint32_t)geometry[i]);
    rec_u64(out, h->first_seq);
    rec_u64(out, h->open_seq);
    rec_u8(out, (uint8_t)h->have_open);
    rec_u8(out, (uint8_t)h->disc_next);
    rec_u64(out, h->disc_dropped);
    rec_u8(out, (uint8_t)h->ever);
    uint64_t now = loop_now_ms();
    rec_u64(out, now > h->last_request_ms ? now - h->last_request_ms : 0);
    rec_u64(out, h->scan->offset);
    rec_u64(out, h->pos);
    rec_u32(out, (uint32_t)h->state);
    rec_bytes(out, h->hdr, h->have);
    rec_u64(out, h->frame_at);
    rec_u64(out, h->frame_end);
    rec_u32(out, h->frame_samples);
    rec_u8(out, (uint8_t)h->frames_known);
    rec_u32(out, h->key);
    rec_u32(out, h->rate);
    rec_u8(out, (uint8_t)h->adts);
    rec_u64(out, h->clock90);
    rec_u64(out, h->clock_samples);
    rec_u32(out, h->epoch);
    rec_u64(out, h->epoch_samples);
    rec_i64(out, h->anchor_ms);
    rec_i64(out, h->redate_until_ms);
    rec_u32(out, handover_meta_id(t, h->last_meta));
    rec_u8(out, (uint8_t)h->is_opus);
}

typedef struct save_ctx {
    handover_metas_t *t;
    buf_t *out;
    uint32_t n;
} save_ctx_t;

static void save_window(hls_t *h, void *arg)
{
    save_ctx_t *x = arg;
    chains_t c = {0};
    size_t mark = x->out->len;
    if (chains_of(h, &c) < 0) {
        chains_free(&c);
        return; /* without memory: this window is made again in the new process */
    }
    rec_str(x->out, h->name);
    save_state(h, x->t, x->out);
    rec_u32(x->out, c.n);
    for (uint32_t i = 1; i < c.n; i++) /* chain 0 is the mount's queue */
        handover_chain_save(c.first[i], 0, x->t, x->out);
    uint32_t frags = NO_INDEX;
    for (uint32_t i = 0; hls_opus_tail(h) && i < c.n; i++)
        if (c.tail[i] == hls_opus_tail(h))
            frags = i;
    rec_u32(x->out, frags);
    hls_opus_save_locked(h, x->t, x->out);
    if (save_segments(h, &c, x->out) < 0)
        x->out->len = mark;
    else
        x->n++;
    chains_free(&c);
}

void hls_carry_save(mount_t *m, handover_metas_t *t, buf_t *out)
{
    size_t at = out->len;
    rec_u32(out, 0); /* the number of windows, written once known */
    save_ctx_t x = {t, out, 0};
    each_window(m, save_window, &x);
    if (!out->error)
        for (int i = 0; i < 4; i++)
            out->data[at + (size_t)i] = (char)(x.n >> (8 * i));
}

/* ---- restoring ---- */

/* The blocks the carried parts are in: each chain's first block (a reference) and where the
 * last search ended. */
typedef struct found {
    block_t **head, **cur;
    uint32_t n;
    block_t *frags_tail;  /* the last block of the Opus fragments' chain (borrowed) */
    block_t **inits;
    uint32_t ninits;
    int missing;          /* a part's block was not found */
} found_t;

static void found_free(found_t *f)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->head[i])
            block_unref(f->head[i]);
    for (uint32_t i = 0; i < f->ninits; i++)
        if (f->inits[i])
            block_unref(f->inits[i]);
    free(f->head);
    free(f->cur);
    free(f->inits);
    memset(f, 0, sizeof(*f));
}

/* The block at `offset` of chain i (a new reference), NULL for none (NO_OFFSET) or when it is
 * not there (f->missing set). */
static block_t *find_block(found_t *f, uint32_t i, uint64_t offset)
{
    if (offset == NO_OFFSET)
        return NULL;
    block_t *b = i < f->n ? f->cur[i] : NULL;
    if (i < f->n && (!b || b->offset > offset))
        b = f->head[i];
    while (b && b->offset < offset)
        b = block_next(b);
    if (!b || b->offset != offset) {
        f->missing = 1;
        return NULL;
    }
    f->cur[i] = b;
    return block_ref(b);
}

static void load_part(hls_part_t *p, rec_reader_t *in, found_t *f, uint32_t chain)
{
    p->blk = find_block(f, chain, rec_get_u64(in));
    p->start = rec_get_u64(in);
    p->end = rec_get_u64(in);
    p->frames = rec_get_u32(in);
    p->samples = rec_get_u32(in);
    p->ts90 = rec_get_u64(in);
    p->done = rec_get_u8(in);
    p->titled = rec_get_u8(in);
    if (p->blk && (p->start < p->blk->offset || p->end < p->start))
        f->missing = 1;
}

static block_t *init_at(const found_t *f, uint32_t i)
{
    return i < f->ninits ? block_ref(f->inits[i]) : NULL;
}

static int load_inits(const hls_t *h, rec_reader_t *in, found_t *f)
{
    uint32_t n = rec_get_u32(in);
    if (in->error || n > (uint32_t)h->nsegs + 1)
        return -EINVAL;
    if (n && !(f->inits = calloc(n, sizeof(*f->inits))))
        return -ENOMEM;
    for (; f->ninits < n && !in->error; f->ninits++) {
        uint64_t offset = rec_get_u64(in);
        size_t len;
        const unsigned char *data = rec_get_bytes(in, &len);
        if (!data || !(f->inits[f->ninits] = block_new_copy(data, len)))
            return in->error ? -EINVAL : -ENOMEM;
        f->inits[f->ninits]->offset = offset;
    }
    return in->error ? -EINVAL : 0;
}

static int load_segments(hls_t *h, rec_reader_t *in, found_t *f)
{
    int rc = load_inits(h, in, f);
    if (rc < 0)
        return rc;
    h->init = init_at(f, rec_get_u32(in));
    h->init_id = rec_get_u64(in);
    uint32_t n = rec_get_u32(in);
    for (uint32_t k = 0; k < n && !in->error; k++) {
        uint64_t seq = rec_get_u64(in);
        hls_seg_t *s = &h->segs[seq % (uint64_t)h->nsegs];
        if (seq < h->first_seq || seq > h->open_seq || s->used)
            return -EINVAL;
        s->used = 1;
        s->seq = seq;
        s->complete = rec_get_u8(in);
        s->discontinuity = rec_get_u8(in);
        s->rate = rec_get_u32(in);
        s->samples = rec_get_u64(in);
        s->pdt_ms = rec_get_i64(in);
        s->epoch = rec_get_u32(in);
        s->epoch_samples = rec_get_u64(in);
        s->init = init_at(f, rec_get_u32(in));
        s->init_id = rec_get_u64(in);
        uint32_t chain = rec_get_u32(in), nparts = rec_get_u32(in);
        if (nparts > HLS_MAX_PARTS || !s->rate)
            return -EINVAL;
        for (s->nparts = 0; s->nparts < (int)nparts; s->nparts++)
            load_part(&s->parts[s->nparts], in, f, chain);
        load_part(&s->open, in, f, chain);
    }
    return in->error ? -EINVAL : 0;
}

/* The numbering, the scan and the clock (the scan's block is found later). */
static int load_state(hls_t *h, rec_reader_t *in, const handover_metas_t *t, uint64_t *scan_at)
{
    int *geometry[] = {&h->target, &h->part_ms, &h->parts_per_seg, &h->listed};
    for (size_t i = 0; i < sizeof(geometry) / sizeof(geometry[0]); i++)
        *geometry[i] = (int)rec_get_u32(in);
    h->frames_per_part = rec_get_u32(in);
    h->nsegs = (int)rec_get_u32(in);
    h->first_seq = rec_get_u64(in);
    h->open_seq = rec_get_u64(in);
    h->have_open = rec_get_u8(in);
    h->disc_next = rec_get_u8(in);
    h->disc_dropped = rec_get_u64(in);
    h->ever = rec_get_u8(in);
    h->last_request_ms = loop_now_ms() - rec_get_u64(in);
    *scan_at = rec_get_u64(in);
    h->pos = rec_get_u64(in);
    h->state = (int)rec_get_u32(in);
    size_t have;
    const unsigned char *hdr = rec_get_bytes(in, &have);
    if (have > sizeof(h->hdr))
        return -EINVAL;
    if (have)
        memcpy(h->hdr, hdr, have);
    h->have = (unsigned)have;
    h->frame_at = rec_get_u64(in);
    h->frame_end = rec_get_u64(in);
    h->frame_samples = rec_get_u32(in);
    h->frames_known = rec_get_u8(in);
    h->key = rec_get_u32(in);
    h->rate = rec_get_u32(in);
    h->adts = rec_get_u8(in);
    h->clock90 = rec_get_u64(in);
    h->clock_samples = rec_get_u64(in);
    h->epoch = rec_get_u32(in);
    h->epoch_samples = rec_get_u64(in);
    h->anchor_ms = rec_get_i64(in);
    h->redate_until_ms = rec_get_i64(in);
    h->last_meta = icy_meta_ref(handover_meta_of(t, rec_get_u32(in)));
    h->is_opus = rec_get_u8(in);
    int odd = h->nsegs < 2 || h->nsegs > 1000 || h->part_ms <= 0 || h->parts_per_seg <= 0 ||
              h->parts_per_seg > HLS_MAX_PARTS || h->open_seq < h->first_seq ||
              h->open_seq - h->first_seq >= (uint64_t)h->nsegs;
    return in->error || odd ? -EINVAL : 0;
}

/* The chains the parts are in: 0 the mount's queue from its first carried block, then those
 * carried in the record. */
static int load_chains(mount_t *m, rec_reader_t *in, const handover_metas_t *t, found_t *f)
{
    uint32_t n = rec_get_u32(in);
    if (in->error || n == 0 || n > 1002)
        return -EINVAL;
    f->head = calloc(n, sizeof(*f->head));
    f->cur = calloc(n, sizeof(*f->cur));
    if (!f->head || !f->cur)
        return -ENOMEM;
    f->n = n;
    pthread_mutex_lock(&m->lock);
    f->head[0] = block_ref(m->oldest);
    pthread_mutex_unlock(&m->lock);
    for (uint32_t i = 1; i < n; i++) {
        int bad = 0;
        block_t *last;
        f->head[i] = handover_chain_load(in, t, &last, &bad);
        if (!f->head[i])
            return in->error ? -EINVAL : -ENOMEM;
    }
    uint32_t frags = rec_get_u32(in);
    if (frags != NO_INDEX && frags < n) {
        block_t *b = f->head[frags];
        while (block_next(b))
            b = block_next(b);
        f->frags_tail = b;
    }
    return in->error ? -EINVAL : 0;
}

/* One window's fields: it follows m. 0, -EINVAL (the fields do not read), -ENOENT (read
 * whole, but a part's block is not among the carried ones: dropped) or -ENOMEM (dropped, the
 * fields read only in part). */
static int restore_window(mount_t *m, rec_reader_t *in, const handover_metas_t *t,
                          const char *name)
{
    hls_t *h = hls_registry_get(name);
    if (!h)
        return -ENOMEM;
    pthread_mutex_lock(&h->lock);
    hls_window_drop_locked(h);
    found_t f = {0};
    uint64_t scan_at = 0;
    int rc = load_state(h, in, t, &scan_at);
    if (rc == 0)
        rc = load_chains(m, in, t, &f);
    if (rc == 0)
        rc = hls_opus_restore_locked(h, t, in, f.frags_tail ? block_ref(f.frags_tail) : NULL);
    if (rc == 0 && !(h->segs = calloc((size_t)h->nsegs, sizeof(hls_seg_t))))
        rc = -ENOMEM;
    if (rc == 0)
        rc = load_segments(h, in, &f);
    if (rc == 0 && !(h->scan = find_block(&f, 0, scan_at)))
        f.missing = 1;
    if (rc == 0 && f.missing)
        rc = -ENOENT;
    found_free(&f);
    if (rc == 0) {
        h->followers_sent_ms = loop_now_ms();
        h->version++;
        hls_follow_locked(h, m);
    } else {
        hls_window_drop_locked(h);
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int hls_carry_restore(mount_t *m, rec_reader_t *in, const handover_metas_t *t)
{
    uint32_t n = rec_get_u32(in);
    for (uint32_t i = 0; i < n && !in->error; i++) {
        char *name = rec_get_str(in);
        int rc = name ? restore_window(m, in, t, name) : -EINVAL;
        if (rc == -ENOENT || rc == -ENOMEM)
            log_warn("hls: %s: its window did not come whole with the upgrade: made again "
                     "when asked for", name);
        free(name);
        if (rc == -EINVAL)
            return -EINVAL;
        if (rc == -ENOMEM)
            return 0; /* the rest of the record cannot be read: those windows are made again */
    }
    return in->error ? -EINVAL : 0;
}
