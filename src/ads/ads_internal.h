/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_internal: what the files of src/ads share and nothing else includes: the bounded GETs
 * (ads_http.c), the creative cache (ads_cache.c) and the tracking queue (beacon.c).
 */
#ifndef RIMECAST_ADS_INTERNAL_H
#define RIMECAST_ADS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "ads/ads.h"
#include "http/fetch.h"

/* ---- ads_http.c: GETs through http/fetch.h, bounded per kind ---- */

typedef enum { ADS_HTTP_VAST, ADS_HTTP_CREATIVE, ADS_HTTP_BEACON, ADS_HTTP_KINDS } ads_http_kind_t;

typedef struct ads_get {
    ads_http_kind_t kind;
    const char *url;
    size_t max_body;        /* bytes of the body kept (at least 1: a GET) */
    unsigned timeout_ms;    /* the exchange, once sent */
    uint64_t deadline_ms;   /* loop_now_ms() after which it is not sent any more; 0: none */
    int public_only;        /* never to an internal address (fetch_request_t) */
    worker_t *reply_to;     /* as fetch_request_t */
    fetch_done_fn done;
    void *arg;
} ads_get_t;

/* Sends g now if fewer than its kind's limit run, else queues it (FIFO, bounded per kind). One
 * still queued at its deadline completes with -ETIMEDOUT unsent. 0 (done runs once), or
 * -EBUSY (its queue is full), -ENOMEM: done does not run. Any thread. */
int ads_http_get(const ads_get_t *g);
/* Running and queued per kind, for tests and /metrics. */
void ads_http_load(ads_http_kind_t kind, unsigned *active, unsigned *queued);

/* ---- ads_cache.c: creatives fetched once, kept by URL ---- */

/* c: a new reference, or NULL with err a VAST error code (401 not found, 402 timeout,
 * 405 broken or too large). Runs on the asking worker. */
typedef void (*ads_creative_fn)(worker_t *w, ads_creative_t *c, int err, void *arg);

/* The creative at url: at once (posted to w) when kept, after the fetch that is under way or
 * that this starts. title names it in ICY metadata if this fetch makes it. A failure is kept
 * for ADS_CACHE_FAILED_MS, so a broken creative is not fetched for every listener. */
void ads_cache_get(const char *url, const char *title, unsigned timeout_ms, int allow_private,
                   worker_t *w, ads_creative_fn cb, void *arg);
/* Frees every kept creative (shutdown). */
void ads_cache_clear(void);

/* ---- beacon.c ---- */

/* Queues one GET of url (macros already replaced), retried on failure. */
void ads_beacon(const char *url, int allow_private);

#endif
