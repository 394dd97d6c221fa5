/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_cache: creatives fetched once and kept by URL (see ads_internal.h). The first listener
 * that needs a creative starts its fetch; those that need it meanwhile wait on the entry and
 * are each told on their own worker when it is built. At most ADS_CACHE_MAX creatives and
 * ADS_CACHE_BYTES of them are kept; the least recently used go first (their blocks live on
 * while listeners play them). A URL is kept apart for mounts that allow internal addresses
 * and those that do not, so one mount's permission never serves another.
 *
 * One mutex guards the table; building a creative and every callback run outside it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_internal.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/worker.h"

#define ADS_CACHE_MAX 64
#define ADS_CACHE_BYTES (128u << 20)
#define ADS_CACHE_FAILED_MS 60000

enum { C_FETCHING, C_READY, C_FAILED };

typedef struct waiter {
    worker_t *w;
    ads_creative_fn cb;
    void *arg;
    struct waiter *next; /* singly linked: pushed while fetching, taken whole when done */
} waiter_t;

typedef struct centry {
    char *url;
    char *title;
    int allow_private;
    int state;
    ads_creative_t *c;   /* C_READY: the cache's reference */
    int err;             /* C_FAILED: the VAST error code */
    uint64_t until_ms;   /* C_FAILED: retried after this */
    uint64_t used_ms;
    waiter_t *waiters;
    list_t link;
} centry_t;

static struct {
    pthread_mutex_t lock;
    list_t entries;
    unsigned count;
    uint64_t bytes;
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER, .entries = LIST_INIT(cache.entries)};

typedef struct answer {
    ads_creative_fn cb;
    void *arg;
    ads_creative_t *c;
    int err;
} answer_t;

static void deliver(worker_t *w, void *arg)
{
    answer_t *a = arg;
    a->cb(w, a->c, a->err, a->arg);
    free(a);
}

/* Tells one asker on its worker (c: a new reference for it, or NULL). */
static void answer(worker_t *w, ads_creative_fn cb, void *arg, ads_creative_t *c, int err)
{
    answer_t *a = malloc(sizeof(*a));
    if (a) {
        *a = (answer_t){cb, arg, ads_creative_ref(c), err};
        if (worker_post(w, deliver, a) == 0)
            return;
        ads_creative_unref(a->c);
        free(a);
    }
    log_error("ads: a creative's answer cannot reach its worker (out of memory)");
}

static void entry_free(centry_t *e)
{
    ads_creative_unref(e->c);
    free(e->url);
    free(e->title);
    free(e);
}

/* Drops the least recently used entries that are not being fetched until there is room for
 * one more of `more` bytes. Under the lock. */
static void make_room(uint64_t more)
{
    while (cache.count >= ADS_CACHE_MAX || cache.bytes + more > ADS_CACHE_BYTES) {
        centry_t *old = NULL, *e;
        list_foreach(e, &cache.entries, centry_t, link)
            if (e->state != C_FETCHING && (!old || e->used_ms < old->used_ms))
                old = e;
        if (!old)
            return;
        list_remove(&old->link);
        cache.count--;
        if (old->c)
            cache.bytes -= old->c->bytes;
        entry_free(old);
    }
}

static centry_t *find(const char *url, int allow_private)
{
    centry_t *e;
    list_foreach(e, &cache.entries, centry_t, link)
        if (e->allow_private == allow_private && strcmp(e->url, url) == 0)
            return e;
    return NULL;
}

/* What a fetch brought: a creative, or the VAST error code of its failure. */
static int build(const fetch_result_t *r, const char *title, ads_creative_t **c)
{
    *c = NULL;
    if (r->error == -ETIMEDOUT)
        return VAST_ERR_MEDIA_TIMEOUT;
    if (r->error || r->status != 200)
        return VAST_ERR_MEDIA_NOT_FOUND;
    if (r->body_len > ADS_CREATIVE_MAX)
        return VAST_ERR_MEDIA_BROKEN;
    int rc = ads_creative_build((const unsigned char *)r->body, r->body_len, title, c);
    return rc == -ENOMEM ? VAST_ERR_UNDEFINED : rc;
}

static void on_fetched(worker_t *w, const fetch_result_t *r, void *arg)
{
    centry_t *e = arg;
    ads_creative_t *c;
    int err = build(r, e->title, &c);
    char esc[256], why[256];
    if (err) {
        static log_ratelimit_t rl;
        const char *text = r->error ? r->error_text : "not whole frames of one MP3/AAC format";
        log_warn_limited(&rl, 10000, "ads: creative %s not kept (VAST error %d: %s)",
                         escape_log(esc, sizeof(esc), e->url, strlen(e->url)), err,
                         escape_log(why, sizeof(why), text, strlen(text)));
        ads_count(ADS_C_ERRORS, 1);
    } else {
        ads_count(ADS_C_CREATIVES, 1);
    }
    pthread_mutex_lock(&cache.lock);
    waiter_t *wl = e->waiters;
    e->waiters = NULL;
    e->used_ms = loop_now_ms();
    e->state = c ? C_READY : C_FAILED;
    e->c = c;
    e->err = err;
    e->until_ms = e->used_ms + ADS_CACHE_FAILED_MS;
    if (c) {
        list_remove(&e->link); /* not its own victim */
        cache.count--;
        make_room(c->bytes);
        list_insert_head(&cache.entries, &e->link);
        cache.count++;
        cache.bytes += c->bytes;
    }
    ads_creative_ref(c); /* for the waiters, dropped below */
    pthread_mutex_unlock(&cache.lock);
    while (wl) {
        waiter_t *next = wl->next;
        answer(wl->w, wl->cb, wl->arg, c, err);
        free(wl);
        wl = next;
    }
    ads_creative_unref(c);
}

static int start_fetch(centry_t *e, unsigned timeout_ms, worker_t *w)
{
    ads_get_t g = {.kind = ADS_HTTP_CREATIVE, .url = e->url, .max_body = ADS_CREATIVE_MAX + 1,
                   .timeout_ms = timeout_ms, .public_only = !e->allow_private, .reply_to = w,
                   .done = on_fetched, .arg = e};
    return ads_http_get(&g);
}

void ads_cache_get(const char *url, const char *title, unsigned timeout_ms, int allow_private,
                   worker_t *w, ads_creative_fn cb, void *arg)
{
    waiter_t *wt = malloc(sizeof(*wt));
    if (!wt) {
        answer(w, cb, arg, NULL, VAST_ERR_UNDEFINED);
        return;
    }
    *wt = (waiter_t){w, cb, arg, NULL};
    uint64_t now = loop_now_ms();
    pthread_mutex_lock(&cache.lock);
    centry_t *e = find(url, allow_private);
    if (e && (e->state == C_READY || (e->state == C_FAILED && now < e->until_ms))) {
        ads_creative_t *c = ads_creative_ref(e->c);
        int err = e->err;
        e->used_ms = now;
        pthread_mutex_unlock(&cache.lock);
        free(wt);
        answer(w, cb, arg, c, err);
        ads_creative_unref(c);
        return;
    }
    int start = !e || e->state == C_FAILED;
    if (!e) {
        make_room(0);
        e = calloc(1, sizeof(*e));
        if (e && (!(e->url = strdup(url)) || !(e->title = strdup(title ? title : "")))) {
            entry_free(e);
            e = NULL;
        }
        if (e) {
            e->allow_private = allow_private;
            list_insert_head(&cache.entries, &e->link);
            cache.count++;
        }
    }
    if (e) {
        e->state = C_FETCHING;
        e->used_ms = now;
        wt->next = e->waiters;
        e->waiters = wt;
    }
    pthread_mutex_unlock(&cache.lock);
    if (!e) {
        free(wt);
        answer(w, cb, arg, NULL, VAST_ERR_UNDEFINED);
    } else if (start && start_fetch(e, timeout_ms, w) < 0) {
        fetch_result_t busy = {.error = -EIO, .error_text = "too many creatives being fetched",
                               .headers = "", .body = ""};
        on_fetched(w, &busy, e);
    }
}

void ads_cache_clear(void)
{
    pthread_mutex_lock(&cache.lock);
    centry_t *e, *n;
    list_foreach_safe(e, n, &cache.entries, centry_t, link) {
        if (e->state == C_FETCHING)
            continue; /* its fetch completes (cancelled) and keeps it */
        list_remove(&e->link);
        cache.count--;
        entry_free(e);
    }
    cache.bytes = 0;
    pthread_mutex_unlock(&cache.lock);
}
