/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads: a mount's <ads> settings with their defaults, the layer's counters, and a pod's
 * fitting in what is left of a break and its freeing (see ads.h).
 */
#include "ads/ads.h"

#include <stdlib.h>

#include "conf/config.h"

static atomic_ullong counters[ADS_C_COUNT];

ads_settings_t ads_settings(const mount_conf_t *mc)
{
    const ads_conf_t *a = mc ? &mc->ads : NULL;
    ads_settings_t s = {
        .vast_url = a ? a->vast_url : NULL,
        .preroll = a && a->preroll == 1,
        .preroll_ms = (unsigned)(a && a->preroll_seconds > 0 ? a->preroll_seconds : 30) * 1000u,
        .allow_private = a && a->allow_private == 1,
        .title_prefix = a && a->title_prefix ? a->title_prefix : ADS_TITLE_PREFIX,
        .request_timeout_ms = a && a->request_timeout_ms > 0 ? (unsigned)a->request_timeout_ms
                                                             : 2000,
        .creative_timeout_ms = a && a->creative_timeout_ms > 0
                                   ? (unsigned)a->creative_timeout_ms : 10000,
    };
    return s;
}

void ads_count(ads_counter_t which, unsigned long long n)
{
    atomic_fetch_add_explicit(&counters[which], n, memory_order_relaxed);
}

void ads_get_counters(ads_counters_t *out)
{
    unsigned long long v[ADS_C_COUNT];
    for (int i = 0; i < ADS_C_COUNT; i++)
        v[i] = atomic_load_explicit(&counters[i], memory_order_relaxed);
    *out = (ads_counters_t){
        .requests = v[ADS_C_REQUESTS], .fills = v[ADS_C_FILLS], .no_fills = v[ADS_C_NO_FILLS],
        .impressions = v[ADS_C_IMPRESSIONS], .completes = v[ADS_C_COMPLETES],
        .errors = v[ADS_C_ERRORS], .creatives = v[ADS_C_CREATIVES],
        .beacons_sent = v[ADS_C_BEACONS_SENT], .beacons_failed = v[ADS_C_BEACONS_FAILED],
        .beacons_dropped = v[ADS_C_BEACONS_DROPPED],
    };
}

static void ad_clear(ads_ad_t *a)
{
    ads_creative_unref(a->creative);
    free(a->media_url);
    free(a->carried_title);
    vast_urls_free(&a->impression);
    vast_urls_free(&a->error);
    for (int e = 0; e < VAST_EV_COUNT; e++)
        vast_urls_free(&a->track[e]);
}

void ads_pod_free(ads_pod_t *pod)
{
    if (!pod)
        return;
    for (int i = 0; i < pod->n; i++)
        ad_clear(&pod->ad[i]);
    free(pod);
}

ads_pod_t *ads_pod_fit(ads_pod_t *pod, unsigned room_ms)
{
    if (!pod)
        return NULL;
    int kept = 0;
    uint32_t ms = 0;
    for (int i = 0; i < pod->n; i++) {
        ads_ad_t *a = &pod->ad[i];
        uint32_t d = a->creative ? a->creative->duration_ms : UINT32_MAX;
        if (room_ms == 0 || d > room_ms - ms) {
            ad_clear(a);
            continue;
        }
        ms += d;
        if (kept != i)
            pod->ad[kept] = *a;
        kept++;
    }
    pod->n = kept;
    pod->duration_ms = ms;
    if (kept == 0) {
        ads_count(ADS_C_NO_FILLS, 1);
        free(pod);
        return NULL;
    }
    ads_count(ADS_C_FILLS, (unsigned long long)kept);
    return pod;
}

void ads_pod_drop(ads_pod_t *pod)
{
    ads_pod_free(ads_pod_fit(pod, 0));
}
