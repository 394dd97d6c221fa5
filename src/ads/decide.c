/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * decide: one listener's ads for one break (ads_ask in ads.h). The ad server's answer names
 * ads (a pod in sequence order, else the stand-alone ads in document order); each becomes a
 * slot that follows its wrappers (at most ADS_WRAPPER_DEPTH, their impression, error and
 * tracking URLs carried down to the inline ad), then tries the ad's media files of the mount's
 * type in order until one is a creative in the mount's format. When no slot waits any more,
 * the slots that are ready and fit the break, in order, make the pod.
 *
 * A request and its slots belong to the asking worker: every answer (fetch, creative) is
 * posted there, so nothing here takes a lock. A failure is reported to the ad's error URLs
 * with its VAST code and said in the log (rate-limited); the listener stays on the live stream.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_internal.h"
#include "ads/ads_ogg.h"
#include "ads/ads_record.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"

#define MEDIA_TRY 4 /* media files of an ad tried, in the order the answer lists them */

enum { S_WRAPPER, S_INLINE, S_CREATIVE, S_READY, S_FAILED };

typedef struct req req_t;

typedef struct slot {
    req_t *req;
    int state;
    int depth;             /* wrappers followed */
    int last_err;          /* the VAST code of the last media file that failed */
    int failed_code;       /* the VAST code it failed with (its record) */
    char id[64];
    char creative_id[64];
    char *title;
    vast_urls_t impression, error, track[VAST_EV_COUNT];
    int nmedia, media_next;
    char *media[MEDIA_TRY];
    ads_creative_t *creative;
} slot_t;

struct req {
    worker_t *w;
    uint64_t owner, tag;
    ads_done_fn done;
    ads_format_t fmt;
    unsigned break_ms, creative_timeout_ms;
    int allow_private;
    int fit_later;         /* a pod is counted when the caller places it (ads_pod_fit) */
    char *mount;
    uint64_t deadline_ms;  /* the ad server and its wrappers answer by then */
    ads_record_t *rec;     /* what the figures keep of it (ads_record.h); NULL without memory */
    int top_code;          /* the ad server's answer: 0 read, else a VAST code */
    int top_timeout;       /* the ad server did not answer in time */
    int outstanding;       /* answers still to come */
    int nslots;
    slot_t slots[];
};

static log_ratelimit_t said;

/* One rate-limited line about a request: what the ad server (or a creative) did. */
#define SAY(r, fmt, ...)                                                                       \
    do {                                                                                       \
        char esc_[256];                                                                        \
        log_warn_limited(&said, 10000, "ads on %s: " fmt,                                      \
                         escape_log(esc_, sizeof(esc_), (r)->mount, strlen((r)->mount)),       \
                         __VA_ARGS__);                                                         \
    } while (0)

static void slot_clear(slot_t *s)
{
    free(s->title);
    vast_urls_free(&s->impression);
    vast_urls_free(&s->error);
    for (int e = 0; e < VAST_EV_COUNT; e++)
        vast_urls_free(&s->track[e]);
    for (int i = 0; i < s->nmedia; i++)
        free(s->media[i]);
    ads_creative_unref(s->creative);
}

static void req_free(req_t *r)
{
    for (int i = 0; i < r->nslots; i++)
        slot_clear(&r->slots[i]);
    ads_record_free(r->rec);
    free(r->mount);
    free(r);
}

static void fail_slot(slot_t *s, int code)
{
    s->state = S_FAILED;
    s->failed_code = code;
    ads_report_error(&s->error, code, s->req->allow_private);
}

/* The MIME types of a file in the mount's format (MPEG audio, AAC in ADTS, or Ogg of the
 * mount's codec: an Ogg type may have parameters, "audio/ogg; codecs=opus"). */
static int type_fits(const char *type, const ads_format_t *fmt)
{
    static const char *const mpeg[] = {"audio/mpeg", "audio/mp3", "audio/mpeg3", "audio/x-mpeg",
                                       "audio/x-mp3", "audio/x-mpeg-3", NULL};
    static const char *const aac[] = {"audio/aac", "audio/aacp", "audio/x-aac", "audio/adts",
                                      "audio/vnd.dlna.adts", NULL};
    static const char *const ogg[] = {"audio/ogg", "application/ogg", "audio/x-ogg", NULL};
    static const char *const vorbis[] = {"audio/vorbis", "audio/x-vorbis+ogg", NULL};
    static const char *const opus[] = {"audio/opus", "audio/x-opus+ogg", NULL};
    const char *const *lists[2] = {fmt->ogg ? ogg : fmt->adts ? aac : mpeg,
                                   fmt->ogg == ADS_OGG_VORBIS ? vorbis :
                                   fmt->ogg == ADS_OGG_OPUS ? opus : NULL};
    size_t len = fmt->ogg ? strcspn(type, "; ") : strlen(type);
    for (int i = 0; i < 2; i++)
        for (const char *const *t = lists[i]; t && *t; t++)
            if (strlen(*t) == len && strncmp(type, *t, len) == 0)
                return 1;
    return 0;
}

static int start_wrapper(slot_t *s, const char *uri);

/* Takes what ad says into slot s: its URLs (added to its wrappers'), then its wrapper's next
 * answer or, for an inline ad, its title and the media files of the mount's type. */
static void slot_take(slot_t *s, const vast_ad_t *ad)
{
    int oom = vast_urls_extend(&s->impression, &ad->impression) < 0 ||
              vast_urls_extend(&s->error, &ad->error) < 0;
    for (int e = 0; e < VAST_EV_COUNT; e++)
        oom |= vast_urls_extend(&s->track[e], &ad->track[e]) < 0;
    if (oom) {
        s->state = S_FAILED;
        return;
    }
    if (ad->wrapper) {
        if (s->depth >= ADS_WRAPPER_DEPTH)
            fail_slot(s, VAST_ERR_WRAPPER_LIMIT);
        else if (start_wrapper(s, ad->tag_uri) < 0)
            fail_slot(s, VAST_ERR_WRAPPER);
        return;
    }
    snprintf(s->id, sizeof(s->id), "%s", ad->id);
    snprintf(s->creative_id, sizeof(s->creative_id), "%s", ad->creative_id);
    s->title = strdup(ad->title ? ad->title : ad->id);
    for (int i = 0; i < ad->nmedia && s->nmedia < MEDIA_TRY; i++)
        if (type_fits(ad->media[i].type, &s->req->fmt) &&
            (s->media[s->nmedia] = strdup(ad->media[i].url)))
            s->nmedia++;
    s->state = S_INLINE;
    if (s->nmedia == 0)
        fail_slot(s, VAST_ERR_MEDIA_UNSUPPORTED);
}

static void advance(req_t *r);

static void on_creative(worker_t *w, ads_creative_t *c, int err, void *arg)
{
    slot_t *s = arg;
    req_t *r = s->req;
    r->outstanding--;
    if (c && c->fmt.ogg && ads_format_equal(&c->fmt, &r->fmt)) {
        ads_creative_t *own = ads_ogg_creative_for(c, r->fmt.serial); /* never the mount's */
        ads_creative_unref(c);
        c = own;
    }
    if (c && ads_format_equal(&c->fmt, &r->fmt)) {
        s->creative = c;
        s->state = S_READY;
    } else {
        s->last_err = c ? VAST_ERR_MEDIA_UNSUPPORTED : err;
        ads_creative_unref(c);
        s->state = S_INLINE; /* the next media file, if any */
    }
    advance(r);
}

/* The next media file of an inline slot, or its failure when none is left. */
static void next_media(slot_t *s)
{
    req_t *r = s->req;
    if (s->media_next >= s->nmedia) {
        char id[128];
        SAY(r, "ad %s has no media file in the stream's format (VAST error %d)",
            escape_log(id, sizeof(id), s->id, strlen(s->id)),
            s->last_err ? s->last_err : VAST_ERR_MEDIA_UNSUPPORTED);
        fail_slot(s, s->last_err ? s->last_err : VAST_ERR_MEDIA_UNSUPPORTED);
        return;
    }
    s->state = S_CREATIVE;
    r->outstanding++;
    ads_cache_get(s->media[s->media_next++], s->title, r->creative_timeout_ms, r->allow_private,
                  r->w, on_creative, s);
}

/* The pod: the ready slots that fit the break, in order. NULL when none does. */
static ads_pod_t *make_pod(req_t *r)
{
    ads_pod_t *pod = calloc(1, sizeof(*pod));
    if (!pod)
        return NULL;
    pod->allow_private = r->allow_private;
    const char *urls[ADS_POD_MAX], *cids[ADS_POD_MAX], *titles[ADS_POD_MAX];
    for (int i = 0; i < r->nslots; i++) {
        slot_t *s = &r->slots[i];
        if (s->state != S_READY || pod->duration_ms + s->creative->duration_ms > r->break_ms)
            continue;
        urls[pod->n] = s->media[s->media_next - 1];
        cids[pod->n] = s->creative_id;
        titles[pod->n] = s->title;
        ads_ad_t *a = &pod->ad[pod->n++];
        pod->duration_ms += s->creative->duration_ms;
        a->creative = s->creative;
        s->creative = NULL;
        a->media_url = strdup(s->media[s->media_next - 1]); /* NULL: not carried by an upgrade */
        snprintf(a->id, sizeof(a->id), "%s", s->id);
        a->impression = s->impression;
        a->error = s->error;
        memcpy(a->track, s->track, sizeof(a->track));
        memset(&s->impression, 0, sizeof(s->impression));
        memset(&s->error, 0, sizeof(s->error));
        memset(s->track, 0, sizeof(s->track));
    }
    if (pod->n == 0) {
        free(pod);
        return NULL;
    }
    if (r->rec) {
        ads_record_attach(r->rec, pod, urls, cids, titles);
        r->rec = NULL;
    }
    return pod;
}

/* What a decision without ads came to: the ad server's failure, or its ads' (no match when
 * none was in the stream's format or fit the break, else the first one's error). */
static void no_fill(req_t *r, ads_record_t *rec)
{
    if (r->top_timeout) {
        rec->outcome = ADS_OUT_TIMEOUT;
    } else if (r->top_code == VAST_ERR_WRAPPER_EMPTY || (!r->top_code && !r->nslots)) {
        rec->outcome = ADS_OUT_EMPTY;
        rec->vast_code = VAST_ERR_WRAPPER_EMPTY;
    } else if (r->top_code) {
        rec->outcome = ADS_OUT_ERROR;
        rec->vast_code = r->top_code;
    } else {
        rec->outcome = ADS_OUT_NO_MATCH;
        for (int i = 0; i < r->nslots; i++) {
            int code = r->slots[i].failed_code;
            if (code && code != VAST_ERR_MEDIA_UNSUPPORTED) {
                rec->outcome = ADS_OUT_ERROR;
                rec->vast_code = code;
                break;
            }
            if (code && !rec->vast_code)
                rec->vast_code = code;
        }
    }
}

static void finish(req_t *r)
{
    ads_pod_t *pod = make_pod(r);
    if (pod && pod->rec && loop_now_ms() > pod->rec->deadline_ms)
        pod->rec->outcome = ADS_OUT_TIMEOUT; /* its listener may have gone on (ads_record_end) */
    if (!pod && r->rec) {
        no_fill(r, r->rec);
        ads_record_end(r->rec);
        r->rec = NULL;
    }
    if (!pod || !r->fit_later) /* else counted where it is placed (ads_pod_fit) */
        ads_count(pod ? ADS_C_FILLS : ADS_C_NO_FILLS, pod ? (unsigned long long)pod->n : 1);
    r->done(r->w, r->owner, r->tag, pod);
    req_free(r);
}

/* Moves every slot on as far as it goes; when nothing is awaited, the decision. */
static void advance(req_t *r)
{
    for (int i = 0; i < r->nslots; i++)
        if (r->slots[i].state == S_INLINE)
            next_media(&r->slots[i]);
    if (r->outstanding == 0)
        finish(r);
}

/* An answer of the ad server or a wrapper's: its document, or 0 with a code. */
static int read_answer(req_t *r, const fetch_result_t *res, vast_doc_t *doc, const char *what)
{
    if (res->error) {
        char why[256];
        SAY(r, "%s did not answer (%s)", what,
            escape_log(why, sizeof(why), res->error_text, strlen(res->error_text)));
        return res->error == -ETIMEDOUT ? VAST_ERR_WRAPPER_TIMEOUT : VAST_ERR_WRAPPER;
    }
    if (res->status != 200 && res->status != 204) {
        SAY(r, "%s answered %ld", what, res->status);
        return VAST_ERR_WRAPPER;
    }
    if (res->status == 204)
        return VAST_ERR_WRAPPER_EMPTY;
    int rc = vast_parse(res->body, res->body_len, doc);
    if (rc)
        SAY(r, "%s's answer is not VAST it reads (VAST error %d)", what, rc);
    return rc;
}

static void on_wrapper(worker_t *w, const fetch_result_t *res, void *arg)
{
    slot_t *s = arg;
    req_t *r = s->req;
    if (!w) /* its worker is gone (shutdown): nobody waits for it */
        return;
    r->outstanding--;
    vast_doc_t *doc = calloc(1, sizeof(*doc));
    int rc = doc ? read_answer(r, res, doc, "a wrapper's ad server") : VAST_ERR_UNDEFINED;
    if (rc == 0 && doc->nads == 0)
        rc = VAST_ERR_WRAPPER_EMPTY;
    if (rc)
        fail_slot(s, rc);
    else
        slot_take(s, &doc->ads[0]);
    if (doc)
        vast_free(doc);
    free(doc);
    advance(r);
}

static int get_vast(req_t *r, const char *url, fetch_done_fn done, void *arg)
{
    uint64_t now = loop_now_ms();
    if (now >= r->deadline_ms)
        return -ETIMEDOUT;
    ads_get_t g = {.kind = ADS_HTTP_VAST, .url = url, .max_body = VAST_MAX_BYTES + 1,
                   .timeout_ms = (unsigned)(r->deadline_ms - now), .deadline_ms = r->deadline_ms,
                   .public_only = !r->allow_private, .reply_to = r->w, .done = done, .arg = arg};
    int rc = ads_http_get(&g);
    if (rc == 0) {
        r->outstanding++;
        ads_count(ADS_C_REQUESTS, 1);
    }
    return rc;
}

static int start_wrapper(slot_t *s, const char *uri)
{
    s->depth++;
    s->state = S_WRAPPER;
    return get_vast(s->req, uri, on_wrapper, s);
}

/* The ads an answer names, in the order they are played: a pod's by sequence, else the
 * stand-alone ones as listed. Writes their indexes; returns how many. */
static int pick_ads(const vast_doc_t *doc, int *pick)
{
    int n = 0;
    for (int seq = 1; seq < 1000 && n < doc->nads; seq++) /* a pod, by its sequence */
        for (int i = 0; i < doc->nads; i++)
            if (doc->ads[i].sequence == seq)
                pick[n++] = i;
    if (n == 0)
        for (int i = 0; i < doc->nads; i++)
            pick[n++] = i;
    return n;
}

/* Grows the request to hold n slots (it is the only reference: realloc moves it). */
static req_t *with_slots(req_t *r, int n)
{
    req_t *nr = realloc(r, sizeof(*r) + (size_t)n * sizeof(slot_t));
    if (!nr)
        return NULL;
    memset(nr->slots, 0, (size_t)n * sizeof(slot_t));
    for (int i = 0; i < n; i++)
        nr->slots[i].req = nr;
    nr->nslots = n;
    return nr;
}

static void on_top(worker_t *w, const fetch_result_t *res, void *arg)
{
    req_t *r = arg;
    if (!w) {
        req_free(r);
        return;
    }
    r->outstanding--;
    vast_doc_t *doc = calloc(1, sizeof(*doc));
    int rc = doc ? read_answer(r, res, doc, "the ad server") : VAST_ERR_UNDEFINED;
    int pick[VAST_MAX_ADS], n = rc == 0 ? pick_ads(doc, pick) : 0;
    r->top_code = rc;
    r->top_timeout = res->error == -ETIMEDOUT;
    if (rc == 0 && n == 0)
        ads_report_error(&doc->error, VAST_ERR_WRAPPER_EMPTY, r->allow_private);
    else if (rc && rc != VAST_ERR_WRAPPER_EMPTY)
        ads_count(ADS_C_ERRORS, 1);
    req_t *nr = n > 0 ? with_slots(r, n) : r;
    if (nr) {
        r = nr;
        for (int i = 0; i < n; i++)
            slot_take(&r->slots[i], &doc->ads[pick[i]]);
    }
    if (doc)
        vast_free(doc);
    free(doc);
    advance(r);
}

int ads_ask(worker_t *w, const ads_ask_t *ask, uint64_t owner, uint64_t tag, ads_done_fn done)
{
    req_t *r = calloc(1, sizeof(*r));
    if (!r || !(r->mount = strdup(ask->mount ? ask->mount : ""))) {
        free(r);
        return -ENOMEM;
    }
    *r = (req_t){.w = w, .owner = owner, .tag = tag, .done = done, .fmt = ask->fmt,
                 .break_ms = ask->break_ms, .mount = r->mount,
                 .creative_timeout_ms = ask->settings->creative_timeout_ms,
                 .allow_private = ask->settings->allow_private, .fit_later = ask->fit_later,
                 .deadline_ms = loop_now_ms() + ask->settings->request_timeout_ms};
    r->rec = ads_record_new(ask);
    ads_url_vars_t v = ask->vars;
    v.duration = ask->break_ms / 1000;
    char *url = ads_url_expand(ask->settings->vast_url, &v);
    int rc = url ? get_vast(r, url, on_top, r) : -ENOMEM;
    free(url);
    if (rc < 0) {
        SAY(r, "the ad server is not asked (%s)", rc == -EBUSY ? "too many requests waiting"
                                                               : "out of memory");
        ads_count(ADS_C_ERRORS, 1);
        if (r->rec) {
            r->rec->outcome = ADS_OUT_ERROR; /* not asked: its record says so all the same */
            ads_record_end(r->rec);
            r->rec = NULL;
        }
        req_free(r);
    }
    return rc;
}
