/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_ads: the ad decisions of listeners and HLS sessions (ads/ads_record.h) in the
 * audience store, and the ads figures made from them (docs/AUDIENCE.md, "Ads"): per period
 * and mount, ad requests (decisions), fills (ads placed), impressions, starts, completes and
 * the seconds of ads delivered; per period and creative, impressions, starts, each quartile
 * and completes. A decision is one record through the store's queue and spool (its ads with
 * it), stored as one row per ad placed (a decision without ads: one row without an ad), with
 * the record's id, so a record written twice is there once. Net figures leave out the ads of
 * sessions recorded invalid (joined on the session's server, id and mount). Computed by SQL on
 * the store's thread, on SQLite (audience_sqlite_ads.c) and PostgreSQL (audience_pg_ads.c).
 */
#ifndef RIMECAST_AUDIENCE_ADS_H
#define RIMECAST_AUDIENCE_ADS_H

#include <stddef.h>
#include <stdint.h>

#include "ads/ads_record.h"
#include "audience/audience_record.h"

typedef struct audience_ads_mount {
    int64_t from_ms, to_ms;    /* the period (cut at from and to) */
    char *mount;               /* NULL: every mount together (the server's) */
    uint64_t requests;         /* decisions asked */
    uint64_t fills;            /* ads placed */
    uint64_t impressions, starts, completes;
    uint64_t delivered_ms;     /* of ads delivered */
} audience_ads_mount_t;

typedef struct audience_ads_creative {
    int64_t from_ms, to_ms;
    char *creative_id, *ad_id, *title; /* title: NULL none */
    uint64_t impressions, starts, q1, mid, q3, completes;
} audience_ads_creative_t;

typedef struct audience_ads_query {
    /* asked */
    int64_t from_ms, to_ms;    /* decisions asked in [from, to) */
    int64_t step_ms;           /* periods: 3600000, 86400000, or 0 (the whole span) */
    char *mount;               /* NULL: every mount */
    char *server;              /* NULL: every server sharing the store */
    int gross;                 /* 1: every session's ads; 0: those of valid sessions */
    /* answered: periods in order, mounts in byte order (the server's first), creatives by id */
    audience_ads_mount_t *mounts;
    size_t nmounts;
    audience_ads_creative_t *creatives;
    size_t ncreatives;
    int err;                   /* 0, -ENODEV, -EAGAIN, -EIO, -ENOMEM */
} audience_ads_query_t;

void audience_ads_query_clear(audience_ads_query_t *q);

/* The period a bucket number (asked_ms / step_ms, or 0) stands for, cut at from and to. */
void audience_ads_period(const audience_ads_query_t *q, int64_t bucket, int64_t *from,
                         int64_t *to);
/* Appends a mount row (mount copied; NULL: the server's) or a creative row; 0 or -ENOMEM. */
int audience_ads_add_mount(audience_ads_query_t *q, const audience_ads_mount_t *row);
int audience_ads_add_creative(audience_ads_query_t *q, const audience_ads_creative_t *row);
/* Adds each period's server row (the sum of its mounts) before its mounts' rows. */
int audience_ads_add_totals(audience_ads_query_t *q);

/* A copy of r for the store's queue, with the server's name (NULL: none); NULL without
 * memory. Freed with free() as any record. */
audience_record_t *audience_record_copy_ad(const ads_record_t *r, const char *server);

#endif
