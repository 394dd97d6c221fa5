/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_adcarry: an HLS session's ad break in progress across an upgrade (docs/ADS.md, "HLS
 * sessions"). The old process writes the break after the sessions' numbering: its ads by
 * creative URL and tracking URLs (ads_carry.h), the name and size of each ad's cut, where the
 * ads sit in the session's numbering and where it rejoins, the parts of each ad it fetched and
 * the events fired. The window comes whole with the upgrade (hls_carry.c), so those numbers
 * hold in the new process. There the session's next playlist request has each creative
 * fetched again (kept by URL, checked to be the same length in the mount's format) and cut
 * again: its cut's name is a digest of its audio, so the ad's URIs are the ones listed before.
 * The playlist waits for them (it is parked and asked again at each part, as a preroll's);
 * a creative not had again, or cut otherwise, ends the break: the session rejoins the live
 * stream, numbered on after the ads, and no event fires again.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_carry.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/record.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_ads.h"

#define REFETCH_SLACK_MS 1000 /* waited past the creative timeout for the answers */

/* ---- saving ---- */

int hls_ads_carry_save_locked(hls_t *h, const hls_sess_ads_t *a, const char *token,
                              buf_t *out)
{
    const hls_adbreak_t *brk = a->brk;
    (void)h;
    if (!brk || brk->abandoned || !a->pod || a->pod->n != brk->nads || brk->intro)
        return 0; /* a preroll after an intro: the session rejoins the live stream there */
    size_t mark = out->len;
    rec_str(out, token);
    rec_u64(out, brk->b);
    rec_u64(out, brk->r);
    rec_i64(out, brk->delta_before);
    rec_i64(out, brk->ddisc_before);
    rec_u64(out, brk->base_b);
    rec_i64(out, brk->pdt_b_ms);
    rec_u8(out, (uint8_t)brk->preroll);
    rec_i64(out, a->delta);
    rec_i64(out, a->ddisc);
    rec_u32(out, (uint32_t)brk->nads);
    for (int i = 0; i < brk->nads; i++) {
        const hls_adcut_t *c = brk->cut[i];
        int nparts = c ? c->nparts : a->want[i].nparts;
        rec_str(out, c ? c->id : a->want[i].id);
        rec_u32(out, (uint32_t)nparts);
        rec_u32(out, (uint32_t)(c ? c->nsegs : a->want[i].nsegs));
        rec_u32(out, a->fired[i]);
        rec_bytes(out, a->got[i], a->got[i] ? (size_t)(nparts + 7) / 8 : 0);
    }
    if (ads_pod_save(a->pod, 0, out) < 0) {
        out->len = mark; /* an ad without a creative URL: the break cannot go on there */
        return 0;
    }
    return 1;
}

/* ---- restoring ---- */

/* The ads' fields of a carried break into brk (their places in the pod) and a (their cuts'
 * names and sizes, parts fetched and events fired). */
static void load_ads(rec_reader_t *in, hls_adbreak_t *brk, hls_sess_ads_t *a)
{
    uint32_t n = rec_get_u32(in);
    if (n == 0 || n > ADS_POD_MAX)
        in->error = 1;
    for (uint32_t i = 0; i < n && !in->error; i++) {
        char *id = rec_get_str(in);
        snprintf(a->want[i].id, sizeof(a->want[i].id), "%s", id ? id : "");
        free(id);
        int np = a->want[i].nparts = (int)rec_get_u32(in);
        a->want[i].nsegs = (int)rec_get_u32(in);
        a->fired[i] = rec_get_u32(in);
        size_t len;
        const unsigned char *got = rec_get_bytes(in, &len);
        if (np <= 0 || np > 1 << 20 || a->want[i].nsegs <= 0 ||
            (len && len != (size_t)(np + 7) / 8))
            in->error = 1;
        else if (len && (a->got[i] = malloc(len)))
            memcpy(a->got[i], got, len);
        brk->first_part[i] = brk->nparts;
        brk->first_seg[i] = brk->nsegs;
        brk->nparts += np;
        brk->nsegs += a->want[i].nsegs;
        brk->nads++;
    }
}

/* One break's fields into the break state `into` of a session (NULL: read and dropped). 0, or
 * -1 when they do not read. */
static int load_break(rec_reader_t *in, hls_sess_ads_t *into)
{
    hls_adbreak_t *brk = calloc(1, sizeof(*brk));
    hls_sess_ads_t a = {0};
    if (!brk)
        return -1;
    brk->b = rec_get_u64(in);
    brk->r = rec_get_u64(in);
    brk->delta_before = rec_get_i64(in);
    brk->ddisc_before = rec_get_i64(in);
    brk->base_b = rec_get_u64(in);
    brk->pdt_b_ms = rec_get_i64(in);
    brk->preroll = rec_get_u8(in);
    a.delta = rec_get_i64(in);
    a.ddisc = rec_get_i64(in);
    load_ads(in, brk, &a);
    a.pod = in->error ? NULL : ads_pod_load(in);
    int ok = a.pod && a.pod->n == brk->nads && into;
    if (ok) {
        for (int i = 0; i < ADS_POD_MAX; i++) {
            free(into->got[i]);
            into->got[i] = a.got[i];
            into->fired[i] = a.fired[i];
            into->want[i] = a.want[i];
        }
        ads_pod_free(into->pod);
        free(into->brk);
        into->pod = a.pod;
        into->brk = brk;
        into->delta = a.delta;
        into->ddisc = a.ddisc;
        into->carried = 1;
        into->refetch_until_ms = 0;
        return 0;
    }
    for (int i = 0; i < ADS_POD_MAX; i++)
        free(a.got[i]);
    ads_pod_free(a.pod);
    free(brk);
    return in->error ? -1 : 0;
}

void hls_ads_carry_restore_locked(hls_t *h, rec_reader_t *in, uint64_t seq)
{
    uint32_t n = rec_get_u32(in);
    /* the window came whole (a window made again numbers its segments after seq): the numbers
     * the breaks were placed by hold here */
    int whole = h->segs && h->first_seq <= seq && seq <= h->open_seq;
    for (uint32_t i = 0; i < n && !in->error; i++) {
        char *token = rec_get_str(in);
        hls_sess_ref_t ref;
        hls_sess_ads_t *a = token && whole && hls_session_ref_locked(h, token, NULL, &ref)
                                ? *ref.ads : NULL;
        free(token);
        if (load_break(in, a) < 0)
            break; /* the rest does not read: those sessions rejoin the live stream */
    }
}

/* ---- fetching the creatives again ---- */

/* A refetch under way: which ad of which session's break (its address is the tag the answer
 * comes back with). */
typedef struct refetch {
    hls_t *h;                  /* windows are never freed */
    char token[HLS_TOKEN_LEN + 1];
    uint64_t tag, owner;
    int ad;
    ads_pod_t *pod;            /* the ad's URLs: a copy of the one to fetch (no lock held) */
    ads_format_t fmt;
    unsigned timeout_ms;
} refetch_t;

static _Atomic uint64_t tags = 1;

static void on_refetched(worker_t *w, uint64_t owner, uint64_t tag, ads_creative_t *c)
{
    (void)w;
    (void)owner;
    refetch_t *r = (refetch_t *)(uintptr_t)tag; /* its own record: this callback's alone */
    hls_t *h = r->h;
    pthread_mutex_lock(&h->lock);
    uint32_t fpp = hls_ads_cut_fpp(h);
    int pps = h->parts_per_seg;
    pthread_mutex_unlock(&h->lock);
    hls_adcut_t *cut = c ? hls_adcut_get(c, fpp, pps) : NULL; /* outside the lock */
    pthread_mutex_lock(&h->lock);
    hls_sess_ref_t ref;
    hls_sess_ads_t *a = hls_session_ref_locked(h, r->token, NULL, &ref) ? *ref.ads : NULL;
    if (a && a->carried && a->refetch_tag == r->tag && a->brk && !a->brk->cut[r->ad]) {
        int i = r->ad;
        if (!cut || strcmp(cut->id, a->want[i].id) != 0 || cut->nparts != a->want[i].nparts ||
            cut->nsegs != a->want[i].nsegs) {
            hls_ads_abandon_locked(h, a, c ? "a creative cut otherwise"
                                           : "a creative not fetched again");
        } else {
            a->brk->cut[i] = cut;
            cut = NULL;
            a->pod->ad[i].creative = ads_creative_ref(c);
            int left = 0;
            for (int k = 0; k < a->brk->nads; k++)
                left += !a->brk->cut[k];
            if (!left) { /* all back: the break goes on where it was */
                a->carried = 0;
                a->refetch_until_ms = 0;
            }
        }
    }
    pthread_mutex_unlock(&h->lock);
    hls_adcut_unref(cut);
    ads_creative_unref(c);
    ads_pod_free(r->pod);
    free(r);
}

/* Asks for r's creative, on its worker, with no window lock held (an answer that cannot be
 * posted runs at once). */
static void start_refetch(worker_t *w, void *arg)
{
    refetch_t *r = arg;
    ads_refetch(w, r->pod, 0, &r->fmt, r->timeout_ms, r->owner, (uint64_t)(uintptr_t)r,
                on_refetched);
}

/* A pod of one: ad i of pod, its URLs copied (its creative left out). */
static ads_pod_t *one_ad(const ads_pod_t *pod, int i)
{
    buf_t b = {0};
    ads_pod_t one = *pod;
    one.rec = NULL; /* a copy to fetch by: the pod's record stays the pod's */
    one.n = 1;
    one.ad[0] = pod->ad[i];
    one.ad[0].creative = NULL;
    ads_pod_t *copy = NULL;
    if (ads_pod_save(&one, 0, &b) == 0 && !b.error) {
        rec_reader_t in;
        rec_reader_init(&in, b.data, b.len);
        copy = ads_pod_load(&in);
    }
    buf_free(&b);
    return copy;
}

void hls_ads_resume_locked(hls_t *h, const hls_sess_ref_t *ref, worker_t *w)
{
    hls_sess_ads_t *a = *ref->ads;
    if (!a || !a->carried || a->refetch_until_ms)
        return; /* nothing carried, or fetched already */
    ads_settings_t set = ads_settings(h->mount ? config_find_mount(server_config(),
                                                                   h->mount->name) : NULL);
    ads_format_t fmt;
    if (!set.vast_url || hls_ads_window_format(h, &fmt) < 0 || !h->mount) {
        hls_ads_abandon_locked(h, a, "the mount has no ads or no format now");
        return;
    }
    a->refetch_until_ms = loop_now_ms() + set.creative_timeout_ms + REFETCH_SLACK_MS;
    a->refetch_tag = atomic_fetch_add(&tags, 1);
    for (int i = 0; i < a->brk->nads; i++) {
        refetch_t *r = calloc(1, sizeof(*r));
        if (r && !(r->pod = one_ad(a->pod, i))) {
            free(r);
            r = NULL;
        }
        if (r) {
            r->h = h;
            r->tag = a->refetch_tag;
            r->owner = ref->id;
            r->ad = i;
            r->fmt = fmt;
            r->timeout_ms = set.creative_timeout_ms;
            snprintf(r->token, sizeof(r->token), "%s", ref->token);
        }
        if (!r || worker_post(w, start_refetch, r) < 0) {
            if (r)
                ads_pod_free(r->pod);
            free(r);
            hls_ads_abandon_locked(h, a, "no memory");
            return;
        }
    }
}

void hls_ads_abandon_locked(hls_t *h, hls_sess_ads_t *a, const char *why)
{
    static log_ratelimit_t rl; /* a creative gone: the same line for each of its sessions */
    char esc[256];
    log_info_limited(&rl, 10000, "hls: %s: a session's ad break did not go on after the "
                     "upgrade (%s): it rejoins the live stream",
                     escape_log_utf8(esc, sizeof(esc), h->name, strlen(h->name)), why);
    hls_adbreak_t *brk = a->brk;
    a->carried = 0;
    a->refetch_until_ms = 0;
    a->refetch_tag = 0; /* answers still to come find nothing to do */
    if (!brk)
        return;
    for (int i = 0; i < brk->nads; i++) {
        hls_adcut_unref(brk->cut[i]);
        brk->cut[i] = NULL;
    }
    /* the live stream from the newest complete segment (one the session was not shown: b or
     * later), unless the ads were all listed: then the live segments from r were too */
    int listed = brk->preroll || hls_adview_live_parts_locked(h, brk->b) >= brk->nparts;
    if (!listed)
        brk->r = h->open_seq > brk->b + 1 ? h->open_seq - 1 : brk->b;
    brk->abandoned = 1;
}
