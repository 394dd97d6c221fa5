/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads: a mount's <ads> settings with their defaults and the layer's counters (see ads.h; a
 * pod is fitted in what is left of a break, and freed, in ads_record.c, which writes its
 * record then).
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
