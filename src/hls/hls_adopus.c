/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_adopus: an Ogg Opus creative cut for the HLS sessions of an Opus mount (docs/ADS.md,
 * "HLS sessions"): its Opus packets (the Ogg pages walked once, as an Opus intro's are) go into
 * parts cut as a window cuts its own (before one would pass the part target, and as soon as
 * the next packet as long as the last would), each part one fragmented MP4 fragment (emsg with
 * its ID3 time counted from the ad's start, the ad's title in the first; moof; mdat), chained
 * so that a segment is its parts back to back; an init segment of the creative's OpusHead goes
 * before them. The cut is named by a digest of its init segment, fragments and geometry: not
 * of the Ogg pages, whose serial number may be another in another process. Built once, outside
 * every lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_ads.h"
#include "hls/hls_fmp4.h"
#include "hls/hls_id3.h"

/* The parts being gathered. */
typedef struct gather {
    hls_adcut_t *a;
    int cap;
    buf_t payload;
    uint32_t *durs, *sizes;
    uint32_t n, ncap;
    uint64_t part_samples, before; /* of the part being gathered; of the parts before it */
    block_t *tail;
    int failed;
} gather_t;

/* The gathered packets become the next part's fragment, linked after the one before. */
static int seal(gather_t *g)
{
    hls_adcut_t *a = g->a;
    if (!g->n)
        return 0;
    if (a->nparts == g->cap) {
        int cap = g->cap ? 2 * g->cap : 16;
        hls_adcut_part_t *more = realloc(a->parts, (size_t)cap * sizeof(*more));
        if (!more)
            return -ENOMEM;
        a->parts = more;
        g->cap = cap;
    }
    const char *title = !a->nparts && a->creative->title && *a->creative->title
                            ? a->creative->title : NULL;
    unsigned char id3[HLS_ID3_MAX];
    fmp4_frag_t f = {
        .seq = (uint32_t)a->nparts + 1, .tfdt = g->before, .durs = g->durs, .sizes = g->sizes,
        .n = g->n, .payload = (const unsigned char *)g->payload.data, .len = g->payload.len,
        .id3 = id3, .id3_len = hls_id3_tag(id3, hls_id3_time48(g->before), title),
    };
    block_t *b = g->payload.error ? NULL : fmp4_fragment(&f);
    if (!b)
        return -ENOMEM;
    b->offset = g->tail ? block_end(g->tail) : 0;
    if (g->tail)
        block_link(g->tail, b); /* the chain holds it */
    else
        a->frags = b;
    g->tail = b;
    a->parts[a->nparts++] = (hls_adcut_part_t){.blk = b, .start = b->offset, .end = block_end(b),
                                               .samples = (uint32_t)g->part_samples,
                                               .before = g->before};
    g->before += g->part_samples;
    g->part_samples = 0;
    g->n = 0;
    g->payload.len = 0;
    return 0;
}

static int packet(void *arg, const unsigned char *p, size_t len, uint32_t samples)
{
    gather_t *g = arg;
    uint64_t limit = (uint64_t)g->a->fpp * (FMP4_TIMESCALE / 1000);
    if ((g->n && g->part_samples + samples > limit && seal(g) < 0) ||
        fmp4_sample_room(&g->durs, &g->sizes, &g->ncap, g->n) < 0 ||
        buf_append(&g->payload, p, len) < 0) {
        g->failed = 1;
        return 1;
    }
    g->durs[g->n] = samples;
    g->sizes[g->n++] = (uint32_t)len;
    g->part_samples += samples;
    if (g->part_samples + samples > limit && seal(g) < 0) {
        g->failed = 1;
        return 1;
    }
    return 0;
}

/* a's name: the first 16 bytes of SHA-256 over its init segment, its fragments and the
 * geometry, hex. */
static int digest(hls_adcut_t *a)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
             EVP_DigestUpdate(ctx, a->init->data, a->init->len);
    for (const block_t *b = a->frags; ok && b; b = block_next(b))
        ok = EVP_DigestUpdate(ctx, b->data, b->len);
    char geo[48];
    int n = snprintf(geo, sizeof(geo), "/opus/%u/%d", a->fpp, a->pps);
    ok = ok && EVP_DigestUpdate(ctx, geo, (size_t)n) && EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    if (!ok || len < HLS_AD_ID_LEN / 2)
        return -ENOMEM;
    for (int i = 0; i < HLS_AD_ID_LEN / 2; i++)
        snprintf(a->id + 2 * i, 3, "%02x", md[i]);
    return 0;
}

int hls_adcut_opus(hls_adcut_t *a)
{
    const ads_creative_t *c = a->creative;
    unsigned char *data = c->bytes ? malloc(c->bytes) : NULL;
    size_t len = 0;
    if (!data)
        return -ENOMEM;
    for (const block_t *b = c->blocks; b && len + b->len <= c->bytes; b = block_next(b)) {
        memcpy(data + len, b->data, b->len);
        len += b->len;
    }
    gather_t g = {.a = a};
    const unsigned char *head = NULL;
    size_t head_len = 0;
    int rc = fmp4_ogg_opus_walk(data, len, &head, &head_len, packet, &g) < 0 ||
             !fmp4_opus_head_valid(head, head_len) ? -EINVAL : 0;
    if (rc == 0 && (g.failed || seal(&g) < 0 || !(a->init = fmp4_init_segment(head, head_len))))
        rc = -ENOMEM;
    free(data);
    buf_free(&g.payload);
    free(g.durs);
    free(g.sizes);
    if (rc == 0 && a->nparts == 0)
        rc = -EINVAL;
    if (rc < 0)
        return rc;
    for (int i = 0; i < a->nparts; i++)
        a->samples += a->parts[i].samples;
    a->nsegs = (a->nparts + a->pps - 1) / a->pps;
    return digest(a);
}
