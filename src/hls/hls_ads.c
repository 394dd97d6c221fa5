/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_ads: a session's ad breaks (docs/ADS.md, "HLS sessions"). A break signalled on the
 * mount (the admin command, a title; stream/adbreak.c) reaches a session at its next playlist
 * request: its ads are asked for (ads.h) as a listener's are, and when they come, its
 * playlist leaves the common one at the first live segment it has not been shown (b): the
 * ads' segments (hls_adcut.c) are listed in place of the live ones, part by part as live parts
 * are cut, then the live stream again from segment r = b + the whole live segments the ads
 * last, numbered on from the ads' (delta more than the window's numbers from then on). When
 * the ads have left its playlist, the break is dropped and only the numbering stays. Nothing
 * answers late or undecided: a session whose ads do not come stays on the live stream.
 * A preroll (<preroll>1) is asked for at the session's first playlist with a segment and
 * listed first; after its intro when it has one (the intro's segments then go into the break,
 * before the ads), its session record's preroll flag once it fetched all of it.
 * Tracking: each ad's events fire by the parts of it the session fetched whole, from its start.
 * All under the window's lock but the asking (on a worker) and the cutting.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_ogg.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_ads.h"
#include "hls/hls_intro.h"

/* ---- the decisions under way: which session of which window each one is for ---- */

typedef struct pending {
    uint64_t owner, tag;
    hls_t *h;                  /* windows are never freed */
    char token[HLS_TOKEN_LEN + 1];
    struct pending *next;
} pending_t;

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pending_t *pendings;

static void break_free(hls_sess_ads_t *a)
{
    if (a->brk) {
        for (int i = 0; i < a->brk->nads; i++)
            hls_adcut_unref(a->brk->cut[i]);
        hls_intro_unref((hls_intro_t *)a->brk->intro);
    }
    free(a->brk);
    a->brk = NULL;
    ads_pod_free(a->pod);
    a->pod = NULL;
    for (int i = 0; i < ADS_POD_MAX; i++) {
        free(a->got[i]);
        a->got[i] = NULL;
        a->fired[i] = 0;
    }
    a->carried = 0;
    a->refetch_until_ms = 0;
}

int hls_ads_own(const hls_sess_ads_t *a)
{
    return a->brk || a->delta || a->ddisc || a->took_intro;
}

int hls_ads_preroll(const hls_sess_ads_t *a)
{
    return a ? a->preroll : HLS_PREROLL_NONE;
}

int hls_ads_took_intro(const hls_sess_ads_t *a)
{
    return a && a->took_intro;
}

hls_sess_ads_t *hls_ads_new(hls_t *h)
{
    hls_sess_ads_t *a = calloc(1, sizeof(*a));
    if (a)
        atomic_fetch_add(&h->ad_sessions, 1);
    return a;
}

void hls_ads_free(hls_t *h, hls_sess_ads_t *a)
{
    if (!a)
        return;
    atomic_fetch_sub(&h->ad_sessions, 1);
    break_free(a);
    free(a);
}

/* The format of the window's stream: of the frame its newest part begins with; an Opus
 * window's: of the mount's header pages (an Ogg Opus creative of its channels). */
int hls_ads_window_format(hls_t *h, ads_format_t *fmt)
{
    if (h->is_opus) {
        mount_t *m = h->mount;
        pthread_mutex_lock(&m->lock);
        int rc = m->headers ? ads_ogg_format_of(m->headers, fmt) : -1;
        pthread_mutex_unlock(&m->lock);
        return rc == 0 && fmt->ogg == ADS_OGG_OPUS ? 0 : -1;
    }
    for (uint64_t q = h->open_seq + 1; q-- > h->first_seq;) {
        const hls_seg_t *s = hls_seg_at(h, q);
        const hls_part_t *p = s && s->nparts ? &s->parts[s->nparts - 1] : NULL;
        if (p && p->blk && p->start >= p->blk->offset && p->start < block_end(p->blk))
            return ads_format_of(p->blk->data + (p->start - p->blk->offset),
                                 (size_t)(block_end(p->blk) - p->start), fmt);
        if (q == 0)
            break;
    }
    return -1;
}

/* ---- a break's ads come ---- */

/* The geometry the window's ads are cut to: its frames a part, an Opus window's part target. */
uint32_t hls_ads_cut_fpp(const hls_t *h)
{
    return h->is_opus ? (uint32_t)h->part_ms : h->frames_per_part;
}

/* 1 if brk's ads are cut for h as it is now (its geometry and its kind of segments). */
static int break_fits(const hls_t *h, const hls_adbreak_t *brk)
{
    for (int i = 0; i < brk->nads; i++)
        if (brk->cut[i]->fpp != hls_ads_cut_fpp(h) || brk->cut[i]->opus != h->is_opus)
            return 0;
    return 1;
}

/* The break of pod for a session of h: cut (outside the window's lock), then placed. */
static hls_adbreak_t *break_new(hls_t *h, ads_pod_t *pod)
{
    pthread_mutex_lock(&h->lock);
    uint32_t fpp = hls_ads_cut_fpp(h);
    int pps = h->parts_per_seg, live_pps = h->parts_per_seg;
    pthread_mutex_unlock(&h->lock);
    hls_adbreak_t *brk = calloc(1, sizeof(*brk));
    if (!brk || pps <= 0)
        goto fail;
    for (int i = 0; i < pod->n; i++) {
        if (!(brk->cut[i] = hls_adcut_get(pod->ad[i].creative, fpp, pps)))
            goto fail;
        brk->nads++;
        brk->first_part[i] = brk->nparts;
        brk->first_seg[i] = brk->nsegs;
        brk->nparts += brk->cut[i]->nparts;
        brk->nsegs += brk->cut[i]->nsegs;
    }
    brk->r = (uint64_t)(brk->nparts / live_pps); /* b is added when it is placed */
    return brk;
fail:
    for (int i = 0; brk && i < brk->nads; i++)
        hls_adcut_unref(brk->cut[i]);
    free(brk);
    return NULL;
}

/* The decision under way for (owner, tag), taken off the list; NULL none. */
static pending_t *pending_take(uint64_t owner, uint64_t tag)
{
    pending_t *p = NULL;
    pthread_mutex_lock(&pending_lock);
    for (pending_t **pp = &pendings; *pp; pp = &(*pp)->next)
        if ((*pp)->owner == owner && (*pp)->tag == tag) {
            p = *pp;
            *pp = p->next;
            break;
        }
    pthread_mutex_unlock(&pending_lock);
    return p;
}

/* Places brk (pod's ads, cut) in session a's playlist, under h->lock. */
static void place_locked(hls_t *h, hls_sess_ads_t *a, hls_adbreak_t *brk, ads_pod_t *pod,
                         const hls_sess_ref_t *ref, int preroll)
{
    const hls_view_t *v = ref->view && ref->view->intro ? ref->view : NULL;
    if (preroll) {
        /* the ads first, then live from the newest complete segment, as an intro; after the
         * session's intro when it has one, live from where its intro's view went live */
        uint64_t b = v ? v->live_from : h->open_seq - 1;
        const hls_seg_t *s = hls_seg_at(h, b);
        uint64_t ms = 0;
        for (int i = 0; i < brk->nads; i++)
            ms += brk->cut[i]->samples * 1000 / brk->cut[i]->creative->fmt.samplerate;
        brk->preroll = 1;
        if (v) {
            brk->intro = hls_intro_ref(v->intro);
            brk->nintro = v->nsegs;
            a->took_intro = 1;
            v = NULL; /* its discontinuities are the break's from now on */
        }
        brk->b = b;
        brk->r = brk->b;
        brk->delta_before = -(int64_t)brk->nsegs;
        brk->pdt_b_ms = s ? s->pdt_ms - (int64_t)ms : 0;
    } else {
        /* the ads go in after everything its playlist showed: the open segment's parts and
         * the preload hint's part are of h->open_seq */
        brk->b = h->open_seq + 1;
        brk->r += brk->b;
        brk->delta_before = a->delta;
    }
    brk->ddisc_before = a->ddisc;
    brk->base_b = hls_adview_base_disc_locked(h, a->took_intro ? NULL : v, brk->b);
    a->brk = brk;
    a->pod = pod;
    atomic_fetch_add_explicit(&h->mount->ad_fills, (unsigned long long)pod->n,
                              memory_order_relaxed);
    char esc[512];
    log_debug("hls: session %" PRIu64 " on %s: %d ads from segment %" PRIu64
              ", live again at %" PRIu64, ref->id,
              escape_log_utf8(esc, sizeof(esc), h->name, strlen(h->name)), brk->nads, brk->b,
              brk->r);
}

static void on_decided(worker_t *w, uint64_t owner, uint64_t tag, ads_pod_t *pod)
{
    (void)w;
    pending_t *p = pending_take(owner, tag);
    hls_t *h = p ? p->h : NULL;
    hls_adbreak_t *brk = h && pod ? break_new(h, pod) : NULL;
    hls_sess_ref_t ref;
    hls_sess_ads_t *a = NULL;
    if (h) {
        pthread_mutex_lock(&h->lock);
        if (hls_session_ref_locked(h, p->token, NULL, &ref) && *ref.ads &&
            (*ref.ads)->asking == tag)
            a = *ref.ads;
    }
    int preroll = a && a->preroll_until_ms, late = preroll && loop_now_ms() > a->preroll_until_ms;
    if (a)
        a->asking = a->preroll_until_ms = 0;
    if (a && preroll)
        a->preroll = HLS_PREROLL_NONE; /* unless its ads are placed */
    hls_sess_ads_t *had = a;
    if (late)
        a = NULL; /* its first playlist went without it: it is on the live stream */
    if (a && brk && h->mount && break_fits(h, brk) &&
        (!preroll || h->open_seq > h->first_seq)) {
        place_locked(h, a, brk, pod, &ref, preroll);
        if (preroll)
            a->preroll = HLS_PREROLL_LEFT;
        brk = NULL;
        pod = NULL;
    } else if (had && preroll) {
        hls_session_preroll_check_locked(h, ref.token); /* its intro alone, if it has one */
    }
    if (h)
        pthread_mutex_unlock(&h->lock);
    if (brk) {
        for (int i = 0; i < brk->nads; i++)
            hls_adcut_unref(brk->cut[i]);
        free(brk);
    }
    ads_pod_free(pod); /* none came, or the session is gone or in a break */
    free(p);
}

/* ---- a break reaches a session ---- */

/* Asks for the ads of break `tag` of session ref (break_ms long) on worker w: 0, or -1
 * (nothing asked: the session stays on the live stream). */
static int ask(hls_t *h, const hls_sess_ref_t *ref, worker_t *w, const ads_settings_t *set,
               const ads_format_t *fmt, uint64_t tag, unsigned break_ms)
{
    mount_t *m = h->mount;
    pending_t *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    *p = (pending_t){.owner = ref->id, .tag = tag, .h = h};
    snprintf(p->token, sizeof(p->token), "%s", ref->token);
    char session[24];
    snprintf(session, sizeof(session), "%" PRIu64, ref->id);
    ads_ask_t q = {.settings = set, .fmt = *fmt, .break_ms = break_ms, .mount = m->name, .hls = 1,
                   .vars = {.ip = ref->ip, .ua = ref->agent ? ref->agent : "",
                            .country = ref->country, .session = session, .mount = h->name,
                            .cachebuster = (uint32_t)rand()}};
    pthread_mutex_lock(&pending_lock);
    p->next = pendings;
    pendings = p;
    pthread_mutex_unlock(&pending_lock);
    if (ads_ask(w, &q, ref->id, tag, on_decided) < 0) {
        pthread_mutex_lock(&pending_lock);
        for (pending_t **pp = &pendings; *pp; pp = &(*pp)->next)
            if (*pp == p) {
                *pp = p->next;
                break;
            }
        pthread_mutex_unlock(&pending_lock);
        free(p);
        return -1;
    }
    atomic_fetch_add_explicit(&m->ad_asked, 1, memory_order_relaxed);
    return 0;
}

void hls_ads_poll_locked(hls_t *h, const hls_sess_ref_t *ref, worker_t *w)
{
    mount_t *m = h->mount;
    uint64_t id = m ? atomic_load(&m->adbreak_id) : 0;
    if (id == *ref->ad_seen)
        return; /* the one test a session pays on a mount without breaks */
    *ref->ad_seen = id;
    hls_sess_ads_t *a = *ref->ads;
    if (a && (a->asking || a->brk))
        return; /* in a break of its own: it stays in it */
    uint64_t first;
    if (hls_playlist_first_locked(h, &first) < 0 ||
        (ref->view && ref->view->intro && !(a && a->took_intro) &&
         first < ref->view->live_from + (uint64_t)ref->view->nsegs))
        return; /* its intro is still listed: that is its preroll */
    ads_settings_t set = ads_settings(config_find_mount(server_config(), m->name));
    ads_format_t fmt;
    if (!set.vast_url || hls_ads_window_format(h, &fmt) < 0)
        return;
    pthread_mutex_lock(&m->lock);
    unsigned ms = m->adbreak_ms;
    uint64_t at = m->adbreak_at_ms;
    pthread_mutex_unlock(&m->lock);
    if (loop_now_ms() > at + ms)
        return; /* over before it looked */
    if (!a && !(a = *ref->ads = hls_ads_new(h)))
        return;
    if (ask(h, ref, w, &set, &fmt, id, ms) == 0)
        a->asking = id;
}

void hls_ads_first_locked(hls_t *h, const hls_sess_ref_t *ref, worker_t *w)
{
    mount_t *m = h->mount;
    if (!m || !ref->first || *ref->ads)
        return; /* its intro (its view) plays first, and its preroll ads after it */
    ads_settings_t set = ads_settings(config_find_mount(server_config(), m->name));
    ads_format_t fmt;
    if (!set.vast_url || !set.preroll || hls_ads_window_format(h, &fmt) < 0 ||
        h->open_seq <= h->first_seq)
        return; /* a session that begins before the first segment: its format is not known */
    hls_sess_ads_t *a = *ref->ads = hls_ads_new(h);
    static _Atomic uint64_t tags = 1; /* odd: the mount's breaks are even */
    uint64_t tag = atomic_fetch_add(&tags, 2);
    if (a && ask(h, ref, w, &set, &fmt, tag, set.preroll_ms) == 0) {
        a->asking = tag;
        a->preroll = HLS_PREROLL_LEFT;
        a->preroll_until_ms = loop_now_ms() + set.request_timeout_ms;
    }
}

int hls_ads_waiting(const hls_sess_ads_t *a)
{
    uint64_t until = a->preroll_until_ms ? a->preroll_until_ms : a->refetch_until_ms;
    return until && loop_now_ms() <= until;
}

/* ---- its playlist ---- */

int hls_ads_playlist_locked(hls_t *h, hls_sess_ads_t *a, const hls_view_t *v, buf_t *out, int ll)
{
    if (a->took_intro)
        v = NULL; /* its intro is (was) listed by its preroll break */
    if (a->carried)
        hls_ads_abandon_locked(h, a, "its creatives not fetched again in time");
    hls_adbreak_t *brk = a->brk;
    const hls_seg_t *sb = brk ? hls_seg_at(h, brk->b) : NULL;
    if (sb && !brk->pdt_b_ms)
        brk->pdt_b_ms = sb->pdt_ms;
    uint64_t first_live;
    int rc = hls_adview_write_locked(h, brk, a->delta, a->ddisc, v, out, ll, &first_live);
    if (rc == 0 && brk && first_live != UINT64_MAX && first_live > brk->r &&
        brk->r >= h->first_seq) {
        /* the ads and the segment it rejoined at (its discontinuity) left its playlist: the
         * numbering they leave behind stays */
        a->ddisc = brk->ddisc_before + (int64_t)brk->base_b + brk->nads + 1 -
                   (int64_t)hls_adview_base_disc_locked(h, v, brk->r + 1);
        a->delta = brk->delta_before + (int64_t)brk->b + brk->nsegs - (int64_t)brk->r;
        break_free(a);
    }
    return rc;
}

void hls_ads_reload_at(hls_t *h, const char *token, uint64_t *msn, int *part)
{
    if (atomic_load_explicit(&h->ad_sessions, memory_order_relaxed) == 0)
        return; /* no session of the window had a break: the window's numbers */
    pthread_mutex_lock(&h->lock);
    hls_sess_ref_t ref;
    hls_sess_ads_t *a = hls_session_ref_locked(h, token, NULL, &ref) ? *ref.ads : NULL;
    const hls_adbreak_t *brk = a ? a->brk : NULL;
    int64_t m = (int64_t)*msn, sb = brk ? (int64_t)brk->b + brk->delta_before : 0;
    if (!a) {
        /* as everyone's */
    } else if (a->carried) {
        *msn = h->first_seq; /* its ads are being fetched again: asked again at the next part */
        *part = -1;
    } else if (!brk) {
        *msn = m >= a->delta ? (uint64_t)(m - a->delta) : 0;
    } else if (m < sb) {
        *msn = m >= brk->delta_before ? (uint64_t)(m - brk->delta_before) : 0;
    } else if (m < sb + brk->nsegs && (brk->preroll || brk->abandoned)) {
        *msn = brk->b; /* a preroll's ads are all listed: answered now */
        *part = -1;
    } else if (m < sb + brk->nsegs) {
        /* an ad's part is listed once the live part it stands in for is cut */
        int x = (int)(m - sb), i = 0;
        while (i + 1 < brk->nads && brk->first_seg[i + 1] <= x)
            i++;
        int first, np = hls_adcut_seg_parts(brk->cut[i], x - brk->first_seg[i], &first);
        int k = *part < 0 || *part >= np ? np - 1 : *part;
        int n = brk->first_part[i] + first + k, pps = h->parts_per_seg > 0 ? h->parts_per_seg : 1;
        *msn = brk->b + (uint64_t)(n / pps);
        *part = n % pps;
    } else {
        int64_t after = brk->delta_before + (int64_t)brk->b + brk->nsegs - (int64_t)brk->r;
        *msn = m >= after ? (uint64_t)(m - after) : 0;
    }
    pthread_mutex_unlock(&h->lock);
}

void hls_ads_numbering_locked(hls_t *h, const hls_sess_ads_t *a, const hls_view_t *v,
                              int64_t *delta, int64_t *ddisc)
{
    const hls_adbreak_t *brk = a->brk;
    if (a->took_intro)
        v = NULL;
    *delta = a->delta;
    *ddisc = a->ddisc;
    if (!brk)
        return;
    *ddisc = brk->ddisc_before + (int64_t)brk->base_b + brk->nads + 1 -
             (int64_t)hls_adview_base_disc_locked(h, v, brk->r + 1);
    *delta = brk->delta_before + (int64_t)brk->b + brk->nsegs - (int64_t)brk->r;
}

hls_sess_ads_t *hls_ads_numbered(hls_t *h, int64_t delta, int64_t ddisc)
{
    hls_sess_ads_t *a = hls_ads_new(h);
    if (a) {
        a->delta = delta;
        a->ddisc = ddisc;
    }
    return a;
}

/* ---- tracking ---- */

/* Fires what ad i's delivery reached: the bytes of its parts fetched from its start on. */
static void track(hls_t *h, hls_sess_ads_t *a, int i)
{
    const hls_adcut_t *c = a->brk->cut[i];
    const ads_ad_t *ad = &a->pod->ad[i];
    int n = 0;
    while (n < c->nparts && (a->got[i][n / 8] & (1u << (n % 8))))
        n++;
    uint64_t sent = n ? c->parts[n - 1].end : 0;
    unsigned now = ads_track_sent(ad, sent, &a->fired[i], a->pod->allow_private);
    if (h->mount && (now & ADS_FIRED_IMPRESSION))
        atomic_fetch_add_explicit(&h->mount->ad_impressions, 1, memory_order_relaxed);
    if (h->mount && (now & ADS_FIRED_COMPLETE))
        atomic_fetch_add_explicit(&h->mount->ad_completes, 1, memory_order_relaxed);
}

/* 1 if every part of every ad of a's break was fetched whole. */
static int all_fetched(const hls_sess_ads_t *a)
{
    for (int i = 0; i < a->brk->nads; i++)
        for (int n = 0; n < a->brk->cut[i]->nparts; n++)
            if (!a->got[i] || !(a->got[i][n / 8] & (1u << (n % 8))))
                return 0;
    return 1;
}

void hls_ads_fetched(hls_t *h, const hls_client_t *who, const char *id, uint64_t seg, int part)
{
    pthread_mutex_lock(&h->lock);
    hls_sess_ref_t ref;
    hls_sess_ads_t *a = hls_session_ref_locked(h, NULL, who, &ref) ? *ref.ads : NULL;
    for (int i = 0; a && a->brk && i < a->brk->nads; i++) {
        const hls_adcut_t *c = a->brk->cut[i];
        if (!c || strcmp(c->id, id) != 0 || seg >= (uint64_t)c->nsegs)
            continue;
        if (!a->got[i] && !(a->got[i] = calloc((size_t)(c->nparts + 7) / 8, 1)))
            break;
        int first, np = hls_adcut_seg_parts(c, (int)seg, &first);
        for (int k = part < 0 ? 0 : part; k < (part < 0 ? np : part + 1) && k < np; k++)
            a->got[i][(first + k) / 8] |= (unsigned char)(1u << ((first + k) % 8));
        track(h, a, i);
        if (a->preroll == HLS_PREROLL_LEFT && a->brk->preroll && all_fetched(a)) {
            a->preroll = HLS_PREROLL_HEARD;
            hls_session_preroll_check_locked(h, ref.token);
        }
        break; /* the same creative twice in a pod: the first one's */
    }
    pthread_mutex_unlock(&h->lock);
}
