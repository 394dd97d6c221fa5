/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_ads: ad decision records for the store's queue, and the answer of the ads figures
 * (see audience_ads.h).
 */
#include "audience/audience_ads.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(offsetof(audience_record_t, text) % _Alignof(ads_record_t) == 0,
               "an ad record is placed at the start of text[]");

audience_record_t *audience_record_copy_ad(const ads_record_t *r, const char *server)
{
    size_t size = sizeof(ads_record_t) + strlen(r->mount ? r->mount : "") + 1 +
                  (server ? strlen(server) + 1 : 0);
    for (int i = 0; i < r->n; i++)
        size += r->ad[i].title ? strlen(r->ad[i].title) + 1 : 0;
    audience_record_t *e = malloc(sizeof(*e) + size);
    if (!e)
        return NULL;
    *e = (audience_record_t){0};
    ads_record_t *a = (ads_record_t *)(void *)e->text;
    *a = *r;
    char *p = e->text + sizeof(ads_record_t);
    size_t len = strlen(r->mount ? r->mount : "") + 1;
    memcpy(p, r->mount ? r->mount : "", len);
    a->mount = p;
    p += len;
    if (server) {
        len = strlen(server) + 1;
        memcpy(p, server, len);
        e->server = p;
        p += len;
    }
    for (int i = 0; i < r->n; i++) {
        if (!r->ad[i].title)
            continue;
        len = strlen(r->ad[i].title) + 1;
        memcpy(p, r->ad[i].title, len);
        a->ad[i].title = p;
        p += len;
    }
    a->carried = 0;
    e->ad = a;
    e->r = (session_record_t){.id = r->session, .mount = a->mount, .start_ms = r->asked_ms,
                              .end_ms = r->ended_ms, .hls = r->hls, .invalid = ""};
    return e;
}

void audience_ads_query_clear(audience_ads_query_t *q)
{
    for (size_t i = 0; i < q->nmounts; i++)
        free(q->mounts[i].mount);
    for (size_t i = 0; i < q->ncreatives; i++) {
        free(q->creatives[i].creative_id);
        free(q->creatives[i].ad_id);
        free(q->creatives[i].title);
    }
    free(q->mounts);
    free(q->creatives);
    free(q->mount);
    free(q->server);
    q->mounts = NULL;
    q->creatives = NULL;
    q->mount = q->server = NULL;
    q->nmounts = q->ncreatives = 0;
}

void audience_ads_period(const audience_ads_query_t *q, int64_t bucket, int64_t *from,
                         int64_t *to)
{
    if (!q->step_ms) {
        *from = q->from_ms;
        *to = q->to_ms;
        return;
    }
    *from = bucket * q->step_ms;
    *to = *from + q->step_ms;
    if (*from < q->from_ms)
        *from = q->from_ms;
    if (*to > q->to_ms)
        *to = q->to_ms;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int audience_ads_add_mount(audience_ads_query_t *q, const audience_ads_mount_t *row)
{
    audience_ads_mount_t *v = realloc(q->mounts, (q->nmounts + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    q->mounts = v;
    v[q->nmounts] = *row;
    v[q->nmounts].mount = dup_or_null(row->mount);
    if (row->mount && !v[q->nmounts].mount)
        return -ENOMEM;
    q->nmounts++;
    return 0;
}

int audience_ads_add_creative(audience_ads_query_t *q, const audience_ads_creative_t *row)
{
    audience_ads_creative_t *v = realloc(q->creatives, (q->ncreatives + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    q->creatives = v;
    audience_ads_creative_t *c = &v[q->ncreatives];
    *c = *row;
    c->creative_id = dup_or_null(row->creative_id ? row->creative_id : "");
    c->ad_id = dup_or_null(row->ad_id ? row->ad_id : "");
    c->title = dup_or_null(row->title);
    q->ncreatives++;
    if (!c->creative_id || !c->ad_id || (row->title && !c->title))
        return -ENOMEM;
    return 0;
}

int audience_ads_add_totals(audience_ads_query_t *q)
{
    if (q->mount) /* one mount's figures: no server row */
        return 0;
    size_t n = q->nmounts, out = 0;
    audience_ads_mount_t *v = malloc((2 * n + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < n;) {
        audience_ads_mount_t sum = {.from_ms = q->mounts[i].from_ms, .to_ms = q->mounts[i].to_ms};
        size_t j = i;
        for (; j < n && q->mounts[j].from_ms == sum.from_ms; j++) {
            const audience_ads_mount_t *m = &q->mounts[j];
            sum.requests += m->requests;
            sum.fills += m->fills;
            sum.impressions += m->impressions;
            sum.starts += m->starts;
            sum.completes += m->completes;
            sum.delivered_ms += m->delivered_ms;
        }
        v[out++] = sum;
        for (; i < j; i++)
            v[out++] = q->mounts[i];
    }
    free(q->mounts);
    q->mounts = v;
    q->nmounts = out;
    return 0;
}
