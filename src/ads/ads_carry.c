/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_carry: a pod's ads as record fields and their creatives fetched again in the new process
 * (see ads_carry.h). The length each creative had is carried so that a creative changed at its
 * URL meanwhile is not spliced in its place.
 */
#include "ads/ads_carry.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_internal.h"
#include "ads/ads_ogg.h"
#include "ads/ads_record.h"

static void urls_save(const vast_urls_t *l, buf_t *out)
{
    rec_u32(out, (uint32_t)l->n);
    for (int i = 0; i < l->n; i++)
        rec_str(out, l->v[i]);
}

static void urls_load(rec_reader_t *in, vast_urls_t *l)
{
    uint32_t n = rec_get_u32(in);
    if (n > VAST_MAX_URLS) {
        in->error = 1;
        return;
    }
    for (uint32_t i = 0; i < n && !in->error; i++) {
        char *u = rec_get_str(in);
        if (u)
            l->v[l->n++] = u;
    }
}

int ads_pod_save(const ads_pod_t *pod, int from, buf_t *out)
{
    for (int i = from; i < pod->n; i++)
        if (!pod->ad[i].media_url)
            return -ENOTSUP;
    ads_record_save(pod, out); /* first, marked: a process from before writes none */
    rec_u8(out, (uint8_t)pod->allow_private);
    rec_u32(out, pod->duration_ms);
    rec_u32(out, (uint32_t)(pod->n - from));
    for (int i = from; i < pod->n; i++) {
        const ads_ad_t *a = &pod->ad[i];
        rec_str(out, a->id);
        rec_str(out, a->media_url);
        /* an ad carried before and not fetched again yet has what it was carried with */
        rec_str(out, a->creative ? a->creative->title : a->carried_title);
        rec_u64(out, a->creative ? a->creative->bytes : a->carried_bytes);
        urls_save(&a->impression, out);
        urls_save(&a->error, out);
        for (int e = 0; e < VAST_EV_COUNT; e++)
            urls_save(&a->track[e], out);
    }
    return 0;
}

ads_pod_t *ads_pod_load(rec_reader_t *in)
{
    ads_record_t *rec = ads_record_read(in);
    ads_pod_t *pod = calloc(1, sizeof(*pod));
    if (!pod) {
        ads_record_free(rec);
        return NULL;
    }
    pod->allow_private = rec_get_u8(in);
    pod->duration_ms = rec_get_u32(in);
    uint32_t n = rec_get_u32(in);
    if (n == 0 || n > ADS_POD_MAX)
        in->error = 1;
    for (uint32_t i = 0; i < n && !in->error; i++) {
        ads_ad_t *a = &pod->ad[pod->n++];
        char *id = rec_get_str(in);
        snprintf(a->id, sizeof(a->id), "%s", id ? id : "");
        free(id);
        a->media_url = rec_get_str(in);
        a->carried_title = rec_get_str(in);
        a->carried_bytes = rec_get_u64(in);
        urls_load(in, &a->impression);
        urls_load(in, &a->error);
        for (int e = 0; e < VAST_EV_COUNT; e++)
            urls_load(in, &a->track[e]);
        if (!a->media_url)
            in->error = 1;
        else
            a->house = !strncmp(a->media_url, ADS_HOUSE_PREFIX, strlen(ADS_HOUSE_PREFIX));
    }
    if (!in->error)
        ads_record_link(pod, rec);
    else
        ads_record_free(rec);
    if (in->error) {
        ads_pod_free(pod);
        return NULL;
    }
    return pod;
}

/* A refetch in flight: what done needs (freed when it runs). */
typedef struct refetch {
    ads_refetch_fn done;
    uint64_t owner, tag, bytes;
    ads_format_t fmt;
} refetch_t;

static void on_refetched(worker_t *w, ads_creative_t *c, int err, void *arg)
{
    refetch_t *r = arg;
    (void)err;
    ads_creative_t *got = NULL;
    if (c && ads_format_equal(&c->fmt, &r->fmt) && c->bytes == r->bytes)
        got = c->fmt.ogg ? ads_ogg_creative_for(c, r->fmt.serial) : ads_creative_ref(c);
    ads_creative_unref(c);
    r->done(w, r->owner, r->tag, got);
    free(r);
}

void ads_refetch(worker_t *w, const ads_pod_t *pod, int i, const ads_format_t *fmt,
                 unsigned timeout_ms, uint64_t owner, uint64_t tag, ads_refetch_fn done)
{
    const ads_ad_t *a = &pod->ad[i];
    refetch_t *r = malloc(sizeof(*r));
    if (!r) {
        done(w, owner, tag, NULL);
        return;
    }
    *r = (refetch_t){done, owner, tag, a->carried_bytes, *fmt};
    ads_cache_get(a->media_url, a->carried_title, timeout_ms, pod->allow_private, w,
                  on_refetched, r);
}
