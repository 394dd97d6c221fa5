/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * adbreak: ad breaks on a mount, spliced per listener (declared in listener.h, whose write
 * asks adbreak_where what to send; docs/ADS.md).
 *
 * A listener in a break has an adplay_t (allocated when its break begins, freed when it ends:
 * per break, never per write). Its states: ASKED (the ad layer decides; the listener goes on
 * with the live stream, through the break's start: no gap), READY (its pod is here, cut to
 * what is left of the break; the live cursor has not reached the point the ads go in: the
 * break's start, or the block boundary after where it was when they came), PLAYING (the
 * creatives' blocks are sent, the live cursor skips meanwhile), REJOIN (all sent; the live
 * cursor still skips until the ads' duration is made up). The creatives' blocks are shared by
 * every listener playing them; a listener holds one reference on the block it is in, as in the
 * mount's queue.
 * On an Ogg mount the ads are chain links of their own (ads/ads_ogg.h): the live cursor skips
 * pages by their granule positions, and the listener rejoins at a page a listener may start on,
 * after the mount's header pages (a new link, as a new listener starts).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads.h"
#include "ads/ads_ogg.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "format/mpeg.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/adbreak_internal.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/sub.h"

static uint64_t next_tag = 1; /* prerolls' tags: odd (breaks' are even) */

uint64_t adbreak_new_tag(void)
{
    return __atomic_add_fetch(&next_tag, 2, __ATOMIC_RELAXED); /* odd */
}

/* ---- signalling ---- */

/* The format of the mount's stream now: of the frame that begins its newest sync block (the
 * newest block may be none: the ID3v2 tag a source begins with). Walks the queue (a few hundred
 * blocks at most) under the mount's lock: once per break and worker, or per preroll. */
int adbreak_stream_format(mount_t *m, ads_format_t *fmt)
{
    int rc = -1;
    pthread_mutex_lock(&m->lock);
    if (atomic_load(&m->is_ogg)) { /* the header pages new listeners get: one Vorbis or Opus */
        rc = m->headers ? ads_ogg_format_of(m->headers, fmt) : -1;
        pthread_mutex_unlock(&m->lock);
        return rc;
    }
    for (const block_t *b = m->oldest; b; b = block_next(b))
        if ((b->flags & BLOCK_SYNC) && ads_format_of(b->data, b->len, fmt) == 0)
            rc = 0;
    pthread_mutex_unlock(&m->lock);
    return rc;
}

void adbreak_stream_kind(mount_t *m, ads_format_t *fmt)
{
    *fmt = (ads_format_t){0};
    const mount_info_t *info = mount_info(m);
    const char *type = info && info->content_type ? info->content_type : "";
    if (atomic_load(&m->is_ogg))
        fmt->ogg = ADS_OGG_VORBIS | ADS_OGG_OPUS; /* either: not known */
    else if (strstr(type, "aac"))
        fmt->adts = 1;
}

int adbreak_signal(mount_t *m, unsigned duration_ms, const char *why)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (!mc || !mc->ads.vast_url)
        return -ENOENT;
    if (duration_ms == 0 || duration_ms > ADBREAK_MAX_MS)
        return -ERANGE;
    ads_format_t fmt;
    if (adbreak_stream_format(m, &fmt) < 0)
        return -EINVAL;
    static _Atomic uint64_t ids;
    pthread_mutex_lock(&m->lock);
    m->adbreak_start = m->next_offset;
    m->adbreak_ms = duration_ms;
    m->adbreak_at_ms = loop_now_ms();
    uint64_t id = (atomic_fetch_add(&ids, 1) + 1) * 2; /* even: prerolls' tags are odd */
    atomic_store(&m->adbreak_id, id);
    uint64_t start = m->adbreak_start;
    pthread_mutex_unlock(&m->lock);
    char esc[256];
    log_info("ad break of %u ms on %s from byte %" PRIu64 " (%s)", duration_ms,
             escape_log(esc, sizeof(esc), m->name, strlen(m->name)), start, why);
    mount_wake_workers(m);
    return 0;
}

/* A title "<prefix><milliseconds>" on a mount with an ad server. */
static void on_title(mount_t *m, const char *title)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (!mc || !mc->ads.vast_url)
        return;
    ads_settings_t s = ads_settings(mc);
    size_t plen = strlen(s.title_prefix);
    if (strncmp(title, s.title_prefix, plen) != 0)
        return;
    const char *digits = title + plen;
    char *end;
    unsigned long ms = strtoul(digits, &end, 10);
    if (end == digits || *end || *digits == '-' || *digits == '+' || ms > ADBREAK_MAX_MS) {
        static log_ratelimit_t rl;
        char esc[256];
        log_warn_limited(&rl, 10000, "ad break title on %s has no length in ms it takes "
                         "(1..%u): ignored", escape_log(esc, sizeof(esc), m->name,
                                                        strlen(m->name)), ADBREAK_MAX_MS);
        return;
    }
    adbreak_signal(m, (unsigned)ms, "title");
}

/* At shutdown, on worker 0: the house ads' kept creatives go (adhouse.c). */
static void house_fini(worker_t *w)
{
    if (w->id == 0)
        adhouse_cache_clear();
}

static const worker_module_t house_module = {.name = "adhouse", .fini = house_fini};

void adbreak_register(void)
{
    mount_set_title_hook(on_title);
    worker_register(&house_module);
}

/* ---- asking ---- */

static void on_decided(worker_t *w, uint64_t owner, uint64_t tag, ads_pod_t *pod);

/* l's ads are asked for (its break's tag, of break_ms); 0, or < 0 (not asked). */
static int ask(listener_t *l, const ads_settings_t *set, const ads_format_t *fmt, uint64_t tag,
               unsigned break_ms)
{
    conn_t *c = l->conn;
    char session[24];
    snprintf(session, sizeof(session), "%" PRIu64, c->id);
    ads_ask_t ask = {.settings = set, .fmt = *fmt, .break_ms = break_ms, .mount = l->mount->name,
                     .vars = {.ip = c->ip, .ua = client_of(c)->log_agent, .country = l->country,
                              .session = session, .mount = l->asked ? l->asked : l->mount->name,
                              .cachebuster = (uint32_t)rand()},
                     .fit_later = 1};
    int rc = ads_ask(c->worker, &ask, c->id, tag, on_decided);
    if (rc == 0)
        atomic_fetch_add_explicit(&l->mount->ad_asked, 1, memory_order_relaxed);
    return rc;
}

/* l's break begins: its ads are asked for. */
static void begin(listener_t *l, const ads_settings_t *set, const ads_format_t *fmt,
                  uint64_t tag, uint64_t start, unsigned break_ms, uint64_t at_ms)
{
    adplay_t *a = calloc(1, sizeof(*a));
    if (!a)
        return;
    *a = (adplay_t){.state = AD_ASKED, .tag = tag, .start = start,
                    .deadline_ms = at_ms + set->request_timeout_ms, .ogg = fmt->ogg != 0,
                    .granule = -1, .break_ms = break_ms, .rate = fmt->samplerate};
    l->ad = a;
    if (ask(l, set, fmt, tag, break_ms) < 0) {
        l->ad = NULL;
        free(a);
    }
}

void adbreak_sub_begin(worker_t *w, sub_t *s)
{
    mount_t *m = s->mount;
    pthread_mutex_lock(&m->lock);
    uint64_t id = atomic_load(&m->adbreak_id), start = m->adbreak_start, at = m->adbreak_at_ms;
    unsigned ms = m->adbreak_ms;
    pthread_mutex_unlock(&m->lock);
    s->adbreak_seen = id;
    ads_settings_t set = ads_settings(config_find_mount(server_config(), m->name));
    ads_format_t fmt;
    if (!set.vast_url || adbreak_stream_format(m, &fmt) < 0)
        return;
    listener_t *l;
    list_foreach(l, &s->listeners, listener_t, link)
        if (!l->feed && !l->ad && !l->conn->closing && l->blk->offset + l->pos <= start)
            begin(l, &set, &fmt, id, start, ms, at);
}

/* A listener's preroll is one break of its own: its house ad (the preroll its URL
 * authentication named, else the mount's <intro>: adhouse.c) at once, and the ad server's ads
 * (<ads><preroll>) after it, or alone; the live stream's time is skipped meanwhile. */
void adbreak_preroll(listener_t *l)
{
    if (l->feed)
        return;
    ads_settings_t set = ads_settings(config_find_mount(server_config(), l->mount->name));
    ads_format_t fmt;
    int known = adbreak_stream_format(l->mount, &fmt) == 0;
    if (!known) /* no audio yet: its kind from what the source said it sends */
        adbreak_stream_kind(l->mount, &fmt);
    ads_pod_t *house = adhouse_pod(l, &fmt);
    int asks = set.vast_url && set.preroll && known;
    if (!house && !asks)
        return;
    adplay_t *a = calloc(1, sizeof(*a));
    if (!a) {
        ads_pod_free(house);
        return;
    }
    const ads_creative_t *hc = house ? house->ad[0].creative : NULL;
    *a = (adplay_t){.state = house ? AD_READY : AD_ASKED, .preroll = 1, .tag = adbreak_new_tag(),
                    .deadline_ms = loop_now_ms() + set.request_timeout_ms,
                    .ogg = atomic_load(&l->mount->is_ogg) != 0, .granule = -1,
                    .break_ms = set.preroll_ms, .rate = known ? fmt.samplerate
                                                              : hc->fmt.samplerate,
                    .pod = house};
    l->ad = a;
    if (asks && ask(l, &set, &fmt, a->tag, set.preroll_ms) == 0)
        a->asking = house != NULL;
    else if (!house)
        adbreak_free_play(l);
}

void adbreak_free_play(listener_t *l)
{
    adplay_t *a = l->ad;
    if (a->blk)
        block_unref(a->blk);
    if (a->eos)
        block_unref(a->eos);
    if (a->mark)
        block_unref(a->mark);
    ads_pod_free(a->pod);
    free(a);
    l->ad = NULL;
}

/* Samples (Ogg: granule units) of the live stream from the break's start (a->mark) to offset
 * `to`, frame by frame (Ogg: by the granule positions of its pages, a lower one than the one
 * before counting from 0, as skip_live_ogg counts them). The blocks are all there: the mark
 * holds them, and `to` is at most the end of the listener's block. */
static uint64_t live_since_start(const adplay_t *a, uint64_t to)
{
    const block_t *b = a->mark;
    uint32_t p = a->mark_pos;
    int64_t last = a->ogg && p > 0 && p >= b->len ? ads_ogg_page_granule(b->data, b->len) : -1;
    uint64_t n = 0;
    while (b && b->offset + p < to) {
        if (p >= b->len) {
            b = block_next(b);
            p = 0;
            continue;
        }
        if (a->ogg) { /* data blocks are one page each */
            int64_t g = ads_ogg_page_granule(b->data, b->len);
            if (g >= 0) {
                n += last < 0 ? 0 : g >= last ? (uint64_t)(g - last) : (uint64_t)g;
                last = g;
            }
            p = b->len;
            continue;
        }
        mpeg_frame_t f;
        if (mpeg_frame_parse(b->data + p, b->len - p, &f) == 1 && f.len <= b->len - p) {
            n += f.samples;
            p += f.len;
        } else {
            p = b->len; /* not a frame: the next block begins at one */
        }
    }
    return n;
}

static log_ratelimit_t late_said; /* a late decision: the same line for many listeners */

/* l's pod, cut to what is left of its break where the ads go in: the break's start when the
 * listener has not passed it, else the end of the block its cursor is in (a frame or page
 * boundary; an MP3 or AAC cursor at a block's start goes in there, an Ogg one sends that page
 * first, the one its link's end page follows), the break's time up to there gone by. NULL
 * (counted as no fill, said in the log) when no ad fits in what is left. */
static ads_pod_t *place(listener_t *l, ads_pod_t *pod)
{
    adplay_t *a = l->ad;
    unsigned room = a->break_ms;
    uint64_t at = l->blk->offset + l->pos;
    if (!a->preroll && at > a->start) {
        uint64_t s = l->pos == 0 && !a->ogg ? l->blk->offset : block_end(l->blk);
        uint64_t gone = a->mark && a->rate ? live_since_start(a, s) * 1000 / a->rate : 0;
        room = gone < room ? room - (unsigned)gone : 0;
        a->start = s;
    }
    if (a->mark) {
        block_unref(a->mark);
        a->mark = NULL;
    }
    unsigned decided = pod->duration_ms;
    pod = ads_pod_fit(pod, room);
    if (!pod || pod->duration_ms < decided) {
        char esc[256];
        log_info_limited(&late_said, 10000, "ads on %s: %u ms of the break were left when the "
                         "ads came (%u ms): %s", escape_log(esc, sizeof(esc), l->mount->name,
                                                            strlen(l->mount->name)),
                         room, decided, pod ? "those that fit are played"
                                            : "none fits, the listener stays on the live stream");
    }
    return pod;
}

/* A preroll's ads decided while its house ad plays (or was played, the listener held for
 * them): they follow it in its pod, those that fit the preroll's length. */
static void follow_house(listener_t *l, ads_pod_t *pod)
{
    adplay_t *a = l->ad;
    a->asking = 0;
    pod = ads_pod_fit(pod, a->break_ms);
    if (!pod)
        return;
    ads_pod_t *h = a->pod;
    uint64_t samples = 0;
    int first = h->n;
    for (int i = 0; i < pod->n && h->n < ADS_POD_MAX; i++) {
        samples += adbreak_ad_samples(a, pod->ad[i].creative);
        h->ad[h->n++] = pod->ad[i];
        memset(&pod->ad[i], 0, sizeof(pod->ad[i]));
    }
    atomic_fetch_add_explicit(&l->mount->ad_fills, (unsigned long long)(h->n - first),
                              memory_order_relaxed);
    h->duration_ms += pod->duration_ms;
    h->allow_private = pod->allow_private; /* their tracking's */
    h->rec = pod->rec; /* the decision's record: the ad server's ads only */
    pod->rec = NULL;
    ads_pod_free(pod);
    if (a->state == AD_PLAYING) {
        a->skip += samples;
    } else if (a->state == AD_REJOIN) { /* the house ad was all sent: on to the first ad */
        a->skip += samples;
        a->state = AD_PLAYING;
        adbreak_start_ad(a);
    }
}

static void on_decided(worker_t *w, uint64_t owner, uint64_t tag, ads_pod_t *pod)
{
    conn_t *c = worker_find_conn(w, owner);
    listener_t *l = c ? listener_of(c) : NULL;
    if (l && l->ad && l->ad->tag == tag && l->ad->asking) { /* its house ad plays first */
        if (pod)
            follow_house(l, pod);
        else
            l->ad->asking = 0; /* none: the live stream follows the house ad */
        return;
    }
    if (!l || !l->ad || l->ad->tag != tag || l->ad->state != AD_ASKED) {
        ads_pod_drop(pod); /* gone, or its break is over (adbreak_where): it is live, no fill */
        return;
    }
    if (pod)
        pod = place(l, pod);
    if (pod) {
        l->ad->pod = pod;
        l->ad->state = AD_READY;
        atomic_fetch_add_explicit(&l->mount->ad_fills, (unsigned long long)pod->n,
                                  memory_order_relaxed);
    } else {
        adbreak_free_play(l);
    }
    /* Its next write is the fan-out's next pass (within a write window), in its slice: the
     * decisions of a break arrive together, and writing them all here would be one long turn. */
}

/* ---- playing ---- */

/* The live cursor moves on by the ads' duration, frame by frame, as far as the mount's queue
 * goes (blocks of a followed stream begin at frames; where one does not, the next block). */
static void skip_live_ogg(listener_t *l);

void adbreak_skip_live(listener_t *l)
{
    adplay_t *a = l->ad;
    if (a->ogg) {
        skip_live_ogg(l);
        return;
    }
    while (a->skip > 0) {
        block_t *b = l->blk;
        uint32_t p = l->pos;
        mpeg_frame_t f;
        if (p < b->len && mpeg_frame_parse(b->data + p, b->len - p, &f) == 1 &&
            f.len <= b->len - p && f.samples > 0) {
            if (a->skip < f.samples / 2) { /* the nearest frame boundary */
                a->skip = 0;
                return;
            }
            a->skip = a->skip > f.samples ? a->skip - f.samples : 0;
            l->pos = p + f.len;
            continue;
        }
        block_t *n = block_next(b);
        if (!n) {
            if (atomic_load(&l->mount->ended))
                a->skip = 0; /* nothing more will come: what there was is the rest */
            return;
        }
        block_ref(n);
        block_unref(b);
        l->blk = n;
        l->pos = 0;
    }
}

/* The live cursor on to the next block; 0, or -1 when there is none yet (the skip ends when
 * the mount ended: what there was is the rest). */
static int next_live_block(listener_t *l)
{
    block_t *n = block_next(l->blk);
    if (!n) {
        if (atomic_load(&l->mount->ended))
            l->ad->skip = 0;
        return -1;
    }
    block_ref(n);
    block_unref(l->blk);
    l->blk = n;
    l->pos = 0;
    return 0;
}

/* Ogg: the live cursor moves on by whole blocks (pages) until their granule positions have
 * gone as far as the ads last. A granule position lower than the one before is a new link's
 * (a header page, or the mount's own new link on a metadata update): it counts from 0. */
static void skip_live_ogg(listener_t *l)
{
    adplay_t *a = l->ad;
    while (a->skip > 0) {
        block_t *b = l->blk;
        if (l->pos >= b->len) {
            if (next_live_block(l) < 0)
                return;
            continue;
        }
        int64_t g = ads_ogg_page_granule(b->data, b->len); /* data blocks are one page each */
        if (g >= 0) {
            uint64_t d = a->granule < 0 ? 0 : g >= a->granule ? (uint64_t)(g - a->granule)
                                                                : (uint64_t)g;
            a->granule = g;
            a->skip = d >= a->skip ? 0 : a->skip - d;
        }
        l->pos = b->len;
    }
}

/* Ogg: the rejoin is a new link, from a page a listener may start on, after the header pages
 * that apply there. 0 when the cursor is there (l->hdr set), -1 while the stream has not
 * reached one. */
static int rejoin_ogg(listener_t *l)
{
    for (;;) {
        if (l->pos >= l->blk->len && next_live_block(l) < 0)
            return atomic_load(&l->mount->ended) ? 0 : -1;
        block_t *h = NULL;
        if (l->pos == 0 && (l->blk->flags & BLOCK_SYNC) &&
            mount_headers_at(l->mount, l->blk->offset, &h) == 0) {
            if (l->hdr)
                block_unref(l->hdr);
            l->hdr = h;
            l->hdr_pos = 0;
            return 0;
        }
        l->pos = l->blk->len;
    }
}

void adbreak_follow(listener_t *l)
{
    adplay_t *a = l->ad;
    if (a && (a->state == AD_PLAYING || a->state == AD_REJOIN ||
              (a->state == AD_FETCH && !a->pending_start)))
        adbreak_skip_live(l);
}

void adbreak_start_ad(adplay_t *a)
{
    ads_creative_t *c = a->pod->ad[a->cur].creative;
    a->fired = 0;
    a->pos = 0;
    if (c) {
        a->blk = block_ref(c->blocks);
        return;
    }
    a->blk = NULL; /* an ad carried by an upgrade: its creative is fetched again first */
    a->state = AD_FETCH;
    a->resume = 0;
    a->fetching = 0;
}

void adbreak_next_ad(adplay_t *a)
{
    if (a->blk)
        block_unref(a->blk);
    a->blk = NULL;
    if (++a->cur < a->pod->n)
        adbreak_start_ad(a);
    else
        a->state = AD_REJOIN;
}

/* Ogg: the granule position the live cursor's skip counts from (the last page sent), and the
 * page that ends the live link before the ads' link (not when the listener has no live link
 * going: a preroll, or headers not sent yet; nor when its last page is not known). */
static void mark_start(listener_t *l)
{
    adplay_t *a = l->ad;
    if (!a->ogg || l->pos == 0 || l->pos < l->blk->len)
        return;
    a->granule = ads_ogg_page_granule(l->blk->data, l->blk->len);
    if (!a->preroll && !l->hdr && !a->eos) {
        a->eos = ads_ogg_eos_after(l->blk); /* once per break; without memory, none */
        a->eos_pos = 0;
    }
}

static void play(listener_t *l)
{
    adplay_t *a = l->ad;
    a->state = AD_PLAYING;
    mark_start(l);
    a->cur = 0;
    for (int i = 0; i < a->pod->n; i++)
        a->skip += adbreak_ad_samples(a, a->pod->ad[i].creative);
    adbreak_start_ad(a);
    char ids[256] = "", esc[256], mesc[256];
    for (int i = 0; i < a->pod->n; i++)
        snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s", i ? " " : "",
                 a->pod->ad[i].id);
    log_debug("listener %" PRIu64 " on %s: ads %s, %u ms", l->conn->id,
              escape_log(mesc, sizeof(mesc), l->mount->name, strlen(l->mount->name)),
              escape_log(esc, sizeof(esc), ids, strlen(ids)), a->pod->duration_ms);
}

/* ASKED past the break's start: the live stream goes on until the ads come. Its place at the
 * start is marked (what of the break has gone by is counted from there when they come); at the
 * break's end, in time from then, the break is over for it. */
static void wait_live(listener_t *l)
{
    adplay_t *a = l->ad;
    if (!a->mark) {
        a->mark = block_ref(l->blk);
        a->mark_pos = l->pos;
        a->deadline_ms = loop_now_ms() + a->break_ms;
    } else if (loop_now_ms() >= a->deadline_ms) {
        char esc[256];
        log_info_limited(&late_said, 10000, "ads on %s: no ads decided by the break's end: the "
                         "listener stays on the live stream",
                         escape_log(esc, sizeof(esc), l->mount->name, strlen(l->mount->name)));
        adbreak_free_play(l); /* its decision, when it comes, is a no fill */
    }
}

int adbreak_where(listener_t *l, block_t **b, uint32_t *pos, uint64_t *stop)
{
    adplay_t *a = l->ad;
    switch (a->state) {
    case AD_ASKED:
    case AD_READY:
        if (!a->preroll && l->blk->offset + l->pos < a->start) {
            *stop = a->start;
            return ADBREAK_LIVE_UNTIL;
        }
        if (a->state == AD_ASKED && a->preroll) { /* no audio yet: it waits for its ads */
            if (loop_now_ms() < a->deadline_ms)
                return ADBREAK_HOLD;
            adbreak_free_play(l); /* undecided in time: the live stream goes on */
            return ADBREAK_LIVE;
        }
        if (a->state == AD_ASKED) {
            wait_live(l);
            return ADBREAK_LIVE;
        }
        if (a->ogg && l->hdr && l->hdr_pos > 0) {
            adbreak_free_play(l); /* partway through its header pages: a link cannot begin there */
            return ADBREAK_LIVE;
        }
        play(l);
        /* fall through */
    case AD_PLAYING:
        adbreak_skip_live(l);
        *b = a->eos ? a->eos : a->blk; /* Ogg: the live link's end page first */
        *pos = a->eos ? a->eos_pos : a->pos;
        return ADBREAK_AD;
    case AD_FETCH: /* carried by an upgrade: its creative is fetched again */
        if (a->pending_start && !a->preroll && l->blk->offset + l->pos < a->start) {
            *stop = a->start;
            return ADBREAK_LIVE_UNTIL;
        }
        if (a->pending_start) {
            a->pending_start = 0;
            mark_start(l);
        }
        adbreak_skip_live(l);
        if (adbreak_fetch(l) > 0)
            return ADBREAK_HOLD;
        if (a->state == AD_PLAYING) {
            *b = a->eos ? a->eos : a->blk;
            *pos = a->eos ? a->eos_pos : a->pos;
            return ADBREAK_AD;
        }
        /* no ad left to fetch */
        /* fall through */
    default: /* AD_REJOIN */
        adbreak_skip_live(l);
        if (a->asking && loop_now_ms() < a->deadline_ms)
            return ADBREAK_HOLD; /* its house ad was played: its ads are still being decided */
        a->asking = 0; /* undecided in time: when they come, they are a no fill */
        if (a->skip > 0 || (a->ogg && rejoin_ogg(l) < 0))
            return ADBREAK_HOLD;
        adbreak_free_play(l);
        return ADBREAK_LIVE;
    }
}

uint64_t adbreak_ad_samples(const adplay_t *a, const ads_creative_t *c)
{
    if (!a->rate || c->fmt.samplerate == a->rate)
        return c->samples;
    return (uint64_t)c->duration_ms * a->rate / 1000;
}

void adbreak_preroll_played(listener_t *l)
{
    if (l->preroll)
        return;
    l->preroll = 1; /* one impression: the preroll was played through */
    session_live_preroll(l->live);
}

/* Tracking of the ad playing, now that `sent` of its bytes were delivered (counted on m); a
 * house ad has none. */
void adbreak_track(adplay_t *a, uint64_t sent, mount_t *m)
{
    if (a->pod->ad[a->cur].house)
        return;
    unsigned now = ads_track_sent(&a->pod->ad[a->cur], sent, &a->fired, a->pod->allow_private);
    if (now & ADS_FIRED_IMPRESSION)
        atomic_fetch_add_explicit(&m->ad_impressions, 1, memory_order_relaxed);
    if (now & ADS_FIRED_COMPLETE)
        atomic_fetch_add_explicit(&m->ad_completes, 1, memory_order_relaxed);
}

void adbreak_commit(listener_t *l, block_t *b, uint32_t pos)
{
    adplay_t *a = l->ad;
    if (b == a->eos) { /* a block of its own, before the creative's */
        a->eos_pos = pos;
        if (pos >= b->len) {
            block_unref(a->eos);
            a->eos = NULL;
        }
        return;
    }
    if (b != a->blk) {
        block_ref(b);
        block_unref(a->blk);
        a->blk = b;
    }
    a->pos = pos;
    adbreak_track(a, b->offset + pos, l->mount);
    if (pos < b->len || block_next(b))
        return;
    adbreak_next_ad(a); /* this ad is all delivered */
    if (a->state == AD_REJOIN && a->preroll)
        adbreak_preroll_played(l);
}

void adbreak_end(listener_t *l)
{
    adplay_t *a = l->ad;
    if (!a)
        return;
    if (a->state == AD_PLAYING && a->blk && a->pos > 0 && a->pos < a->blk->len && !l->tail) {
        l->tail = block_ref(a->blk); /* the rest of its frames first, wherever it goes */
        l->tail_pos = a->pos;
    }
    adbreak_free_play(l);
}
