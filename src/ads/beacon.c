/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * beacon: VAST tracking and error URLs fired by the server (see ads.h). Each is one GET
 * through ads_http (BEACON kind: a few at a time, a bounded queue), answered on the fetch
 * thread; one that fails (no answer, or a status of 400 or more) is tried again after 1, 2 and
 * 4 s from a retry list that a timer on worker 0 empties. A full queue or list drops the
 * beacon and counts it (rimecast_ads_beacons_total{result="dropped"}): counting never slows
 * a listener. What is queued is the URL only; its macros were replaced by the caller. The
 * retry list goes over an upgrade (ads_carry.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ads/ads_carry.h"
#include "ads/ads_internal.h"
#include "ads/ads_record.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/worker.h"

#define BEACON_TRIES 4
#define BEACON_RETRY_MAX 4096
#define BEACON_TIMEOUT_MS 5000
#define BEACON_TICK_MS 250

typedef struct beacon {
    char *url;
    int allow_private;
    int tries;
    uint64_t due_ms;
    list_t link;
} beacon_t;

static struct {
    pthread_mutex_t lock;
    list_t retry; /* waiting to be tried again, in due order (equal delays: appended) */
    unsigned nretry;
} bq = {.lock = PTHREAD_MUTEX_INITIALIZER, .retry = LIST_INIT(bq.retry)};

static void beacon_free(beacon_t *b)
{
    free(b->url);
    free(b);
}

static void send_beacon(beacon_t *b);

/* b into the retry list, due in `ms` (or dropped and counted when the list is full). */
static void retry_in(beacon_t *b, unsigned ms)
{
    b->due_ms = loop_now_ms() + ms;
    pthread_mutex_lock(&bq.lock);
    int room = bq.nretry < BEACON_RETRY_MAX;
    if (room) {
        list_t *at = bq.retry.prev; /* after the last one due no later */
        while (at != &bq.retry && container_of(at, beacon_t, link)->due_ms > b->due_ms)
            at = at->prev;
        list_link(&b->link, at, at->next);
        bq.nretry++;
    }
    pthread_mutex_unlock(&bq.lock);
    if (!room) {
        ads_count(ADS_C_BEACONS_DROPPED, 1);
        beacon_free(b);
    }
}

static void on_answer(worker_t *w, const fetch_result_t *r, void *arg)
{
    beacon_t *b = arg;
    (void)w;
    if (r->error == 0 && r->status > 0 && r->status < 400) {
        ads_count(ADS_C_BEACONS_SENT, 1);
        beacon_free(b);
        return;
    }
    if (++b->tries >= BEACON_TRIES || r->error == -EACCES || r->error == -ECANCELED) {
        static log_ratelimit_t rl;
        char esc[256], why[256];
        const char *text = r->error ? r->error_text : "an error status";
        log_warn_limited(&rl, 10000, "ads: tracking URL %s failed %d times (%s), dropped",
                         escape_log(esc, sizeof(esc), b->url, strlen(b->url)), b->tries,
                         escape_log(why, sizeof(why), text, strlen(text)));
        ads_count(ADS_C_BEACONS_FAILED, 1);
        beacon_free(b);
        return;
    }
    retry_in(b, 1000u << (b->tries - 1));
}

static void send_beacon(beacon_t *b)
{
    ads_get_t g = {.kind = ADS_HTTP_BEACON, .url = b->url, .max_body = 1,
                   .timeout_ms = BEACON_TIMEOUT_MS, .public_only = !b->allow_private,
                   .done = on_answer, .arg = b};
    if (ads_http_get(&g) < 0) {
        ads_count(ADS_C_BEACONS_DROPPED, 1);
        beacon_free(b);
    }
}

void ads_beacon(const char *url, int allow_private)
{
    beacon_t *b = calloc(1, sizeof(*b));
    if (!b || !(b->url = strdup(url))) {
        free(b);
        ads_count(ADS_C_BEACONS_DROPPED, 1);
        return;
    }
    b->allow_private = allow_private;
    send_beacon(b);
}

static void fire_list(const vast_urls_t *list, int code, int allow_private)
{
    for (int i = 0; i < list->n; i++) {
        char *u = ads_url_macros(list->v[i], code, (uint32_t)rand(), (int64_t)time(NULL));
        if (u)
            ads_beacon(u, allow_private);
        else
            ads_count(ADS_C_BEACONS_DROPPED, 1);
        free(u);
    }
}

void ads_track(const ads_ad_t *ad, int ev, int allow_private)
{
    if (ev == ADS_EV_IMPRESSION)
        ads_count(ADS_C_IMPRESSIONS, 1);
    else if (ev == VAST_EV_COMPLETE)
        ads_count(ADS_C_COMPLETES, 1);
    fire_list(ev == ADS_EV_IMPRESSION ? &ad->impression : &ad->track[ev], 0, allow_private);
}

void ads_report_error(const vast_urls_t *list, int code, int allow_private)
{
    ads_count(ADS_C_ERRORS, 1);
    fire_list(list, code, allow_private);
}

/* ---- across an upgrade ---- */

unsigned ads_beacons_waiting(void)
{
    pthread_mutex_lock(&bq.lock);
    unsigned n = bq.nretry;
    pthread_mutex_unlock(&bq.lock);
    return n;
}

void ads_beacons_save(buf_t *out)
{
    uint64_t now = loop_now_ms();
    pthread_mutex_lock(&bq.lock);
    rec_u32(out, bq.nretry);
    beacon_t *b;
    list_foreach(b, &bq.retry, beacon_t, link) {
        rec_str(out, b->url);
        rec_u8(out, (uint8_t)b->allow_private);
        rec_u8(out, (uint8_t)b->tries);
        rec_u32(out, b->due_ms > now ? (uint32_t)(b->due_ms - now) : 0);
    }
    pthread_mutex_unlock(&bq.lock);
}

int ads_beacons_load(rec_reader_t *in)
{
    uint32_t n = rec_get_u32(in);
    int taken = 0;
    for (uint32_t i = 0; i < n && !in->error; i++) {
        char *url = rec_get_str(in);
        int allow_private = rec_get_u8(in) == 1;
        int tries = rec_get_u8(in);
        uint32_t due_in = rec_get_u32(in);
        beacon_t *b = url && !in->error ? calloc(1, sizeof(*b)) : NULL;
        if (!b || tries < 1 || tries >= BEACON_TRIES || due_in > (1000u << BEACON_TRIES)) {
            if (url && !in->error) /* not a retry this binary makes: not sent */
                ads_count(ADS_C_BEACONS_DROPPED, 1);
            free(url);
            free(b);
            continue;
        }
        *b = (beacon_t){.url = url, .allow_private = allow_private, .tries = tries};
        retry_in(b, due_in);
        taken++;
    }
    return in->error ? -1 : taken;
}

void ads_beacons_forget(void)
{
    pthread_mutex_lock(&bq.lock);
    list_t all;
    list_take_all(&all, &bq.retry);
    bq.nretry = 0;
    pthread_mutex_unlock(&bq.lock);
    beacon_t *b, *n;
    list_foreach_safe(b, n, &all, beacon_t, link) {
        list_remove(&b->link);
        beacon_free(b);
    }
}

/* Worker 0's timer: the retries that are due. */
static void on_tick(worker_t *w, void *arg)
{
    uint64_t now = loop_now_ms();
    for (;;) {
        beacon_t *b = NULL;
        pthread_mutex_lock(&bq.lock);
        if (!list_empty(&bq.retry)) {
            b = list_first_entry(&bq.retry, beacon_t, link);
            if (b->due_ms <= now) {
                list_remove(&b->link);
                bq.nretry--;
            } else {
                b = NULL;
            }
        }
        pthread_mutex_unlock(&bq.lock);
        if (!b)
            return;
        send_beacon(b);
    }
}

static int beacon_init(worker_t *w)
{
    return w->id == 0 ? worker_timer_add(w, BEACON_TICK_MS, on_tick, NULL) : 0;
}

static void beacon_fini(worker_t *w)
{
    if (w->id != 0)
        return;
    ads_beacons_forget();
    ads_cache_clear();
}

static const worker_module_t beacon_module = {
    .name = "ads",
    .init = beacon_init,
    .fini = beacon_fini,
};

void ads_register(void)
{
    worker_register(&beacon_module);
}

unsigned ads_track_sent(const ads_ad_t *ad, uint64_t sent, unsigned *fired, int allow_private)
{
    static const struct { unsigned bit; int ev, mark; } steps[] = {
        {ADS_FIRED_START, VAST_EV_START, -1},
        {ADS_FIRED_IMPRESSION, ADS_EV_IMPRESSION, ADS_MARK_IMPRESSION},
        {ADS_FIRED_Q1, VAST_EV_FIRST_QUARTILE, ADS_MARK_Q1},
        {ADS_FIRED_MID, VAST_EV_MIDPOINT, ADS_MARK_MID},
        {ADS_FIRED_Q3, VAST_EV_THIRD_QUARTILE, ADS_MARK_Q3},
        {ADS_FIRED_COMPLETE, VAST_EV_COMPLETE, -2},
    };
    const ads_creative_t *c = ad->creative;
    unsigned now = 0;
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        uint64_t at = steps[i].mark == -1 ? 1 : steps[i].mark == -2 ? c->bytes
                                                                     : c->mark[steps[i].mark];
        if ((*fired & steps[i].bit) || sent < at)
            continue;
        *fired |= steps[i].bit;
        now |= steps[i].bit;
        ads_track(ad, steps[i].ev, allow_private);
    }
    if (ad->rec) {
        ad->rec->events |= *fired;
        ads_record_sent(ad, sent);
    }
    return now;
}
