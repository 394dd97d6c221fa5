/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_adcut: an ad's creative (ads.h: whole frames in shared blocks) cut into HLS parts and
 * segments with the geometry of the window that plays it (its frames a part and parts a
 * segment, so that an ad's parts last what the live parts they stand in for last). Cut once
 * per creative and geometry and shared by every session hearing it; named in its URLs by a
 * digest of its audio and geometry, <mount>/hls/ad/<id>/<n>.<ext> and <n>.<part>.<ext>, the
 * same for every session and mount, so a cache keeps one copy. A piece is a byte range of the
 * creative's blocks behind an ID3 timestamp tag counting from the creative's start, served as
 * live pieces are (hls_pieces.c). An Ogg Opus creative is cut into fragmented MP4 instead, with
 * an init segment of its own, <id>/init.mp4 (hls_adopus.c). A cut no session holds is kept a
 * while for late requests.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "ads/ads_ogg.h"
#include "core/loop.h"
#include "format/mpeg.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_ads.h"

#define KEEP_UNUSED_MS (10 * 60 * 1000) /* a cut nobody holds answers this long */
#define KEEP_UNUSED_MAX 64              /* ... and at most this many of them */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static hls_adcut_t *cuts;

/* The name of c cut so: the first 16 bytes of SHA-256 over its bytes and the geometry, hex. */
static int digest(const ads_creative_t *c, uint32_t fpp, int pps, char *id)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (const block_t *b = c->blocks; ok && b; b = block_next(b))
        ok = EVP_DigestUpdate(ctx, b->data, b->len);
    char geo[32];
    int n = snprintf(geo, sizeof(geo), "/%u/%d", fpp, pps);
    ok = ok && EVP_DigestUpdate(ctx, geo, (size_t)n) && EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
    if (!ok || len < HLS_AD_ID_LEN / 2)
        return -ENOMEM;
    for (int i = 0; i < HLS_AD_ID_LEN / 2; i++)
        snprintf(id + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* Cuts a's creative into parts of a->fpp frames (the last one shorter). */
static int cut(hls_adcut_t *a)
{
    const ads_creative_t *c = a->creative;
    int cap = 16;
    a->parts = calloc((size_t)cap, sizeof(*a->parts));
    uint64_t before = 0;
    uint32_t frames = 0;
    hls_adcut_part_t *open = NULL;
    for (const block_t *b = c->blocks; a->parts && b; b = block_next(b)) {
        for (uint32_t pos = 0; pos < b->len;) {
            mpeg_frame_t f;
            if (mpeg_frame_parse(b->data + pos, b->len - pos, &f) != 1 || f.len > b->len - pos)
                return -EINVAL; /* cannot happen: the creative is whole frames */
            if (!open) {
                if (a->nparts == cap) {
                    hls_adcut_part_t *more = realloc(a->parts, 2 * (size_t)cap * sizeof(*more));
                    if (!more)
                        return -ENOMEM;
                    a->parts = more;
                    cap *= 2;
                }
                open = &a->parts[a->nparts++];
                *open = (hls_adcut_part_t){.blk = b, .start = b->offset + pos,
                                           .end = b->offset + pos, .before = before};
                frames = 0;
            }
            open->end += f.len;
            open->samples += f.samples;
            before += f.samples;
            pos += f.len;
            if (++frames == a->fpp)
                open = NULL;
        }
    }
    if (!a->parts || a->nparts == 0)
        return -ENOMEM;
    a->samples = before;
    a->nsegs = (a->nparts + a->pps - 1) / a->pps;
    return 0;
}

static void cut_free(hls_adcut_t *a)
{
    ads_creative_unref(a->creative);
    if (a->init)
        block_unref(a->init);
    if (a->frags)
        block_unref(a->frags);
    free(a->parts);
    free(a);
}

/* Drops the cuts nobody holds that were unused too long, or beyond KEEP_UNUSED_MAX (the
 * oldest first: the list is newest first). Under lock. */
static void prune(uint64_t now)
{
    int unused = 0;
    for (hls_adcut_t **pp = &cuts; *pp;) {
        hls_adcut_t *a = *pp;
        if (a->refs == 0 && (now - a->unused_since_ms > KEEP_UNUSED_MS ||
                             ++unused > KEEP_UNUSED_MAX)) {
            *pp = a->next;
            cut_free(a);
        } else {
            pp = &a->next;
        }
    }
}

static void clear_at_exit(void)
{
    hls_adcut_clear();
}

static void register_clear(void)
{
    atexit(clear_at_exit);
}

hls_adcut_t *hls_adcut_get(ads_creative_t *c, uint32_t fpp, int pps)
{
    if (!c || fpp == 0 || pps <= 0)
        return NULL;
    pthread_mutex_lock(&lock);
    hls_adcut_t *a = cuts;
    while (a && !(a->creative == c && a->fpp == fpp && a->pps == pps))
        a = a->next;
    if (a)
        a->refs++;
    pthread_mutex_unlock(&lock);
    if (a)
        return a;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_clear);
    /* cut outside the lock (a creative of a few MB is digested and walked once) */
    a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->creative = ads_creative_ref(c);
    a->fpp = fpp;
    a->pps = pps;
    a->refs = 1;
    a->opus = c->fmt.ogg == ADS_OGG_OPUS;
    if (a->opus ? hls_adcut_opus(a) < 0 : c->fmt.ogg || digest(c, fpp, pps, a->id) < 0 ||
                                              cut(a) < 0) {
        cut_free(a);
        return NULL;
    }
    pthread_mutex_lock(&lock);
    hls_adcut_t *o = cuts; /* cut meanwhile by another session? */
    while (o && strcmp(o->id, a->id) != 0)
        o = o->next;
    if (o) {
        o->refs++;
        cut_free(a);
        a = o;
    } else {
        prune(loop_now_ms());
        a->next = cuts;
        cuts = a;
    }
    pthread_mutex_unlock(&lock);
    return a;
}

void hls_adcut_unref(hls_adcut_t *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&lock);
    if (--a->refs == 0)
        a->unused_since_ms = loop_now_ms();
    pthread_mutex_unlock(&lock);
}

int hls_adcut_seg_parts(const hls_adcut_t *a, int seg, int *first)
{
    *first = seg * a->pps;
    int n = a->nparts - *first;
    return n < a->pps ? n : a->pps;
}

static const char *ext_of(const hls_adcut_t *a)
{
    return a->opus ? "mp4" : a->creative->fmt.adts ? "aac" : "mp3";
}

int hls_adcut_piece(const char *id, uint64_t seg, int part, const char *ext, hls_piece_t *p)
{
    int rc = HLS_GONE;
    pthread_mutex_lock(&lock);
    hls_adcut_t *a = cuts;
    while (a && strcmp(a->id, id) != 0)
        a = a->next;
    if (a && a->opus && seg == HLS_AD_INIT && part < 0 && strcmp(ext, "mp4") == 0) {
        *p = (hls_piece_t){.blk = block_ref(a->init), .start = a->init->offset,
                           .end = block_end(a->init), .fmp4 = 1};
        rc = HLS_READY;
    } else if (a && seg < (uint64_t)a->nsegs && strcmp(ext, ext_of(a)) == 0) {
        int first, n = hls_adcut_seg_parts(a, (int)seg, &first);
        if (part < n) {
            const hls_adcut_part_t *f = &a->parts[first + (part < 0 ? 0 : part)];
            const hls_adcut_part_t *l = &a->parts[part < 0 ? first + n - 1 : first + part];
            uint32_t rate = a->creative->fmt.samplerate;
            *p = (hls_piece_t){.blk = block_ref((block_t *)f->blk), .start = f->start,
                               .end = l->end, .adts = a->creative->fmt.adts, .fmp4 = a->opus};
            /* the ad's title goes with its first piece, as a title change does live */
            const char *title = f->before == 0 && a->creative->title && *a->creative->title
                                    ? a->creative->title : NULL;
            if (!a->opus) /* a fragment carries its time and title itself (emsg) */
                p->id3_len = hls_id3_tag(p->id3, (f->before * 90000 / rate) & ((1ull << 33) - 1),
                                         title);
            rc = HLS_READY;
        }
    }
    if (rc == HLS_READY && a->refs == 0)
        a->unused_since_ms = loop_now_ms();
    pthread_mutex_unlock(&lock);
    return rc;
}

void hls_adcut_uri(const hls_adcut_t *a, int seg, int part, buf_t *out)
{
    if (seg < 0)
        buf_appendf(out, "hls/ad/%s/init.mp4", a->id);
    else if (part < 0)
        buf_appendf(out, "hls/ad/%s/%d.%s", a->id, seg, ext_of(a));
    else
        buf_appendf(out, "hls/ad/%s/%d.%d.%s", a->id, seg, part, ext_of(a));
}

void hls_adcut_clear(void)
{
    pthread_mutex_lock(&lock);
    prune(UINT64_MAX / 2 + loop_now_ms());
    pthread_mutex_unlock(&lock);
}
