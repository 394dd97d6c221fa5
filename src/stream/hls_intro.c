/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_intro: intro files as HLS segments (see hls_intro.h). The cache is a short list under
 * one lock (a station has an intro or a few prerolls), looked up at a session's start and
 * per intro segment request; an entry is cut again when its file changed.
 */
#include "stream/hls_intro.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "core/url.h"
#include "format/mpeg.h"
#include "stream/webfile.h"

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
        if (cut(n, f) == 0) {
            atomic_fetch_add(&n->refs, 1); /* the cache's */
            n->next = cache;
            cache = n;
            pthread_mutex_unlock(&cache_lock);
            return n;
        }
        n->file = NULL;
        free(n->name);
    }
    free(n);
    pthread_mutex_unlock(&cache_lock);
    webfile_unref(f);
    return NULL;
}

int hls_intro_uri(const hls_intro_t *i, int n, buf_t *out)
{
    char *name = url_encode(i->name, strlen(i->name));
    if (!name)
        return -1;
    int rc = buf_appendf(out, "hls/intro/%d.%s?file=%s&v=%lld", n, i->adts ? "aac" : "mp3", name,
                         i->version);
    free(name);
    return rc;
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
