/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_intro: intro files as HLS segments (see hls_intro.h). The cache is a short list under
 * one lock (a station has an intro or a few prerolls), looked up at a session's start and
 * per intro segment request; an entry is cut again when its file changed. An Ogg Opus file's
 * fragments are built with its entry: a request copies their bytes, it builds nothing.
 */
#include "hls/hls_intro.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "core/url.h"
#include "format/mpeg.h"
#include "hls/hls_fmp4.h"
#include "hls/hls_id3.h"
#include "stream/webfile.h"

#define LOG_EVERY_MS 60000 /* a bad or mismatched intro is logged once a minute at most */

/* singly linked: a handful of entries, walked whole under the lock, freed at exit */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static hls_intro_t *cache;

hls_intro_t *hls_intro_ref(const hls_intro_t *i)
{
    hls_intro_t *w = (hls_intro_t *)i; /* the count is the one field that changes */
    atomic_fetch_add(&w->refs, 1);
    return w;
}

void hls_intro_unref(hls_intro_t *i)
{
    if (!i || atomic_fetch_sub(&i->refs, 1) != 1)
        return;
    webfile_unref(i->file);
    if (i->init)
        block_unref(i->init);
    for (int n = 0; n < i->nsegs; n++)
        if (i->segs[n].frag)
            block_unref(i->segs[n].frag);
    free(i->name);
    free(i);
}

/* Cuts f's frames into segments of at most target seconds: 0, or -1 when f has no frames
 * (or changes format in the middle: the intro stops there). */
static int cut(hls_intro_t *i, const webfile_t *f)
{
    const unsigned char *d = f->data;
    size_t pos = 0, end = f->len;
    long tag = mpeg_id3v2_len(d, end);
    if (tag > 0 && (size_t)tag < end)
        pos = (size_t)tag;
    uint32_t key = 0;
    hls_intro_seg_t *s = NULL;
    mpeg_frame_t fr;
    while (pos < end && mpeg_frame_parse(d + pos, end - pos, &fr) == 1 && fr.samples &&
           pos + fr.len <= end && (!key || fr.key == key)) {
        if (!key) {
            key = fr.key;
            i->rate = fr.samplerate;
            i->adts = fr.kind == MPEG_KIND_ADTS;
        }
        if (!s || (s->samples + fr.samples) > (uint64_t)i->target * i->rate) {
            if (i->nsegs == HLS_INTRO_MAX_SEGS)
                break;
            s = &i->segs[i->nsegs++];
            s->start = s->end = pos;
        }
        s->samples += fr.samples;
        s->end = pos += fr.len;
    }
    return i->nsegs ? 0 : -1;
}

/* An Ogg Opus file being cut: the packets of the segment being gathered. */
typedef struct opus_cut {
    hls_intro_t *i;
    buf_t payload;
    uint32_t *durs, *sizes;
    uint32_t n, cap;
    uint64_t time; /* 48 kHz ticks before the segment being gathered */
} opus_cut_t;

/* The gathered packets become the last segment's fragment: 0, or -1 (no memory). */
static int opus_seal(opus_cut_t *c)
{
    hls_intro_seg_t *s = &c->i->segs[c->i->nsegs - 1];
    /* an emsg box with the fragment's time, as live fragments have: hls.js makes its metadata
     * track when metadata first comes, and the browser clears the cues of a track just made,
     * so the live titles that follow the intro stay cues only if the intro made it */
    unsigned char id3[HLS_ID3_MAX];
    fmp4_frag_t f = {
        .seq = (uint32_t)c->i->nsegs, .tfdt = c->time, .durs = c->durs, .sizes = c->sizes,
        .n = c->n, .payload = (const unsigned char *)c->payload.data, .len = c->payload.len,
        .id3 = id3, .id3_len = hls_id3_tag(id3, hls_id3_time48(c->time), NULL),
    };
    s->frag = c->payload.error ? NULL : fmp4_fragment(&f);
    c->time += s->samples;
    c->n = 0;
    c->payload.len = 0;
    return s->frag ? 0 : -1;
}

static int opus_packet(void *arg, const unsigned char *p, size_t len, uint32_t samples)
{
    opus_cut_t *c = arg;
    hls_intro_t *i = c->i;
    hls_intro_seg_t *s = i->nsegs ? &i->segs[i->nsegs - 1] : NULL;
    if (!s || s->samples + samples > (uint64_t)i->target * FMP4_TIMESCALE) {
        if ((s && opus_seal(c) < 0) || i->nsegs == HLS_INTRO_MAX_SEGS)
            return 1;
        s = &i->segs[i->nsegs++];
    }
    if (fmp4_sample_room(&c->durs, &c->sizes, &c->cap, c->n) < 0 ||
        buf_append(&c->payload, p, len) < 0)
        return 1;
    c->durs[c->n] = samples;
    c->sizes[c->n++] = (uint32_t)len;
    s->samples += samples;
    return 0;
}

/* Cuts the Ogg Opus file f into fragments of at most target seconds, after an init segment
 * of its OpusHead: 0, or -1 when f is no Ogg Opus stream (or memory ran out first). */
static int cut_opus(hls_intro_t *i, const webfile_t *f)
{
    opus_cut_t c = {.i = i};
    const unsigned char *head = NULL;
    size_t head_len = 0;
    i->rate = FMP4_TIMESCALE;
    if (fmp4_ogg_opus_walk(f->data, f->len, &head, &head_len, opus_packet, &c) == 0 &&
        i->nsegs && !i->segs[i->nsegs - 1].frag)
        opus_seal(&c);
    /* only whole segments: one whose fragment could not be built ends the intro */
    while (i->nsegs && !i->segs[i->nsegs - 1].frag)
        i->nsegs--;
    buf_free(&c.payload);
    free(c.durs);
    free(c.sizes);
    if (i->nsegs && !(i->init = fmp4_init_segment(head, head_len)))
        return -1;
    return i->nsegs ? 0 : -1;
}

hls_intro_t *hls_intro_get(const char *name, int target)
{
    webfile_t *f = webfile_get(name);
    if (!f)
        return NULL;
    pthread_mutex_lock(&cache_lock);
    hls_intro_t **pp = &cache, *i;
    for (; (i = *pp); pp = &i->next)
        if (i->target == target && strcmp(i->name, name) == 0)
            break;
    if (i && i->file == f) {
        atomic_fetch_add(&i->refs, 1);
        pthread_mutex_unlock(&cache_lock);
        webfile_unref(f);
        return i;
    }
    if (i) { /* the file changed: cut again */
        *pp = i->next;
        hls_intro_unref(i);
    }
    hls_intro_t *n = calloc(1, sizeof(*n));
    if (n && (n->name = str_dup(name))) {
        n->file = f;
        n->version = (long long)f->mtime;
        n->target = target;
        atomic_init(&n->refs, 1);
        int ogg = f->len >= 4 && memcmp(f->data, "OggS", 4) == 0;
        if ((ogg ? cut_opus(n, f) : cut(n, f)) == 0) {
            atomic_fetch_add(&n->refs, 1); /* the cache's */
            n->next = cache;
            cache = n;
            pthread_mutex_unlock(&cache_lock);
            return n;
        }
        n->file = NULL;
        hls_intro_unref(n);
        n = NULL;
    }
    free(n);
    pthread_mutex_unlock(&cache_lock);
    webfile_unref(f);
    static log_ratelimit_t unusable;
    char esc[512];
    escape_log_utf8(esc, sizeof(esc), name, strlen(name));
    log_warn_limited(&unusable, LOG_EVERY_MS, "hls: intro %s has no MP3, AAC or Ogg Opus audio "
                     "to cut, not played", esc);
    return NULL;
}

int hls_intro_fits(const hls_intro_t *i, const char *mount, int opus, int adts, uint32_t rate)
{
    if (opus ? i->init != NULL : !i->init && i->adts == adts && i->rate == rate)
        return 1;
    static log_ratelimit_t mismatch;
    char esc[512], m[256];
    escape_log_utf8(esc, sizeof(esc), i->name, strlen(i->name));
    escape_log_utf8(m, sizeof(m), mount, strlen(mount));
    log_warn_limited(&mismatch, LOG_EVERY_MS, "hls: %s: intro %s is not in the stream's format "
                     "(%s), not played", m, esc, opus ? "Ogg Opus" : adts ? "AAC" : "MPEG audio");
    return 0;
}

int hls_intro_uri(const hls_intro_t *i, int n, buf_t *out)
{
    char *name = url_encode(i->name, strlen(i->name));
    if (!name)
        return -1;
    const char *ext = i->init ? "mp4" : i->adts ? "aac" : "mp3";
    int rc = n == HLS_INTRO_INIT
                 ? buf_appendf(out, "hls/intro/init.mp4?file=%s&v=%lld", name, i->version)
                 : buf_appendf(out, "hls/intro/%d.%s?file=%s&v=%lld", n, ext, name, i->version);
    free(name);
    return rc;
}

int hls_intro_map(const hls_intro_t *i, buf_t *out)
{
    if (!i->init)
        return 0;
    buf_append_str(out, "#EXT-X-MAP:URI=\"");
    hls_intro_uri(i, HLS_INTRO_INIT, out);
    return buf_append_str(out, "\"\n");
}

void hls_intro_cache_clear(void)
{
    pthread_mutex_lock(&cache_lock);
    while (cache) {
        hls_intro_t *i = cache;
        cache = i->next;
        hls_intro_unref(i);
    }
    pthread_mutex_unlock(&cache_lock);
}
