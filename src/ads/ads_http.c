/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_http: the ad layer's GETs, bounded per kind (see ads_internal.h). A break that starts
 * for 5 000 listeners at once asks the ad server 5 000 times, and fires six tracking URLs for
 * each of them: at most active_max of each kind run at a time on the fetch thread (outside its
 * own bound, so URL authentication and the directories keep theirs; connections to an ad
 * server or a tracker are kept for the next request), the rest wait here in order, and those
 * whose listener stopped waiting are dropped unsent.
 *
 * One mutex guards the queues and counts; no callback runs under it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_internal.h"
#include "core/list.h"
#include "core/loop.h"
#include "net/worker.h"

static const unsigned active_max[ADS_HTTP_KINDS] = {32, 4, 64};
static const unsigned queued_max[ADS_HTTP_KINDS] = {20000, 256, 32768};

typedef struct entry {
    ads_get_t g;        /* url points at url_copy */
    char *url_copy;
    fetch_result_t expired;
    list_t link;
} entry_t;

static struct {
    pthread_mutex_t lock;
    list_t queue[ADS_HTTP_KINDS];
    unsigned queued[ADS_HTTP_KINDS], active[ADS_HTTP_KINDS];
} st = {.lock = PTHREAD_MUTEX_INITIALIZER,
        .queue = {LIST_INIT(st.queue[0]), LIST_INIT(st.queue[1]), LIST_INIT(st.queue[2])}};

static void entry_free(entry_t *e)
{
    free(e->url_copy);
    free(e);
}

static void pump(ads_http_kind_t kind);

/* The fetch's answer: the slot is given back (and the next one sent) before the callback. */
static void on_done(worker_t *w, const fetch_result_t *r, void *arg)
{
    entry_t *e = arg;
    pthread_mutex_lock(&st.lock);
    st.active[e->g.kind]--;
    pthread_mutex_unlock(&st.lock);
    pump(e->g.kind);
    if (e->g.done)
        e->g.done(w, r, e->g.arg);
    entry_free(e);
}

static void deliver_expired(worker_t *w, void *arg)
{
    entry_t *e = arg;
    if (e->g.done)
        e->g.done(w, &e->expired, e->g.arg);
    entry_free(e);
}

/* Completes e unsent with error (on its worker). */
static void fail(entry_t *e, int error, const char *why)
{
    e->expired = (fetch_result_t){.error = error, .error_text = why, .headers = "", .body = ""};
    if (!e->g.reply_to || worker_post(e->g.reply_to, deliver_expired, e) < 0)
        deliver_expired(NULL, e);
}

static int submit(entry_t *e)
{
    uint64_t now = loop_now_ms();
    unsigned timeout = e->g.timeout_ms;
    if (e->g.deadline_ms && e->g.deadline_ms - now < timeout)
        timeout = (unsigned)(e->g.deadline_ms - now);
    fetch_request_t req = {.url = e->url_copy, .max_body = e->g.max_body ? e->g.max_body : 1,
                           .timeout_ms = timeout ? timeout : 1,
                           .public_only = e->g.public_only, .self_bounded = 1,
                           .reply_to = e->g.reply_to,
                           .done = on_done, .arg = e};
    return fetch_submit(&req);
}

/* Sends queued GETs of kind while slots are free; those past their deadline fail unsent. */
static void pump(ads_http_kind_t kind)
{
    for (;;) {
        entry_t *e = NULL;
        int late = 0;
        pthread_mutex_lock(&st.lock);
        if (st.active[kind] < active_max[kind] && !list_empty(&st.queue[kind])) {
            e = list_first_entry(&st.queue[kind], entry_t, link);
            list_remove(&e->link);
            st.queued[kind]--;
            late = e->g.deadline_ms && loop_now_ms() >= e->g.deadline_ms;
            if (!late)
                st.active[kind]++;
        }
        pthread_mutex_unlock(&st.lock);
        if (!e)
            return;
        if (late) {
            fail(e, -ETIMEDOUT, "waited past its deadline");
            continue;
        }
        int rc = submit(e);
        if (rc < 0) {
            pthread_mutex_lock(&st.lock);
            st.active[kind]--;
            pthread_mutex_unlock(&st.lock);
            fail(e, rc == -EBUSY ? -EBUSY : -EIO, "the HTTP client cannot take it");
        }
    }
}

int ads_http_get(const ads_get_t *g)
{
    entry_t *e = calloc(1, sizeof(*e));
    if (!e || !(e->url_copy = strdup(g->url))) {
        free(e);
        return -ENOMEM;
    }
    e->g = *g;
    e->g.url = e->url_copy;
    pthread_mutex_lock(&st.lock);
    int full = st.queued[g->kind] >= queued_max[g->kind];
    if (!full) {
        list_insert_tail(&st.queue[g->kind], &e->link);
        st.queued[g->kind]++;
    }
    pthread_mutex_unlock(&st.lock);
    if (full) {
        entry_free(e);
        return -EBUSY;
    }
    pump(g->kind);
    return 0;
}

void ads_http_load(ads_http_kind_t kind, unsigned *active, unsigned *queued)
{
    pthread_mutex_lock(&st.lock);
    *active = st.active[kind];
    *queued = st.queued[kind];
    pthread_mutex_unlock(&st.lock);
}
