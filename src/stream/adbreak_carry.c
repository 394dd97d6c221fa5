/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * adbreak_carry: a listener's ad break across an upgrade (declared in listener.h; docs/ADS.md,
 * docs/UPGRADE.md). The old process writes where the listener is in its break: the ads still
 * to play (ads/ads_carry.h: ids, creative URLs, tracking URLs), the offset in the one playing
 * (the end of the creative block it was in: the rest of that block goes as its tail, whole
 * frames or pages), the events already fired, and how far its live cursor still skips. The new
 * process fetches each creative again when its turn comes (AD_FETCH) and goes on from there;
 * an ad whose creative cannot be had is passed over, and with none left the listener rejoins
 * the live stream where its cursor is (a frame or page boundary), no event fired twice.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_carry.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/adbreak_internal.h"
#include "stream/listener.h"
#include "stream/mount.h"

/* What a carried break is at: its ads not begun, one playing, or all played (the live cursor
 * still skipping). */
enum { CARRY_NOT_BEGUN = 1, CARRY_PLAYING, CARRY_REJOIN };

static int carry_kind(const adplay_t *a)
{
    if (a->asking)
        return 0; /* a preroll's ads are being decided: as below */
    switch (a->state) {
    case AD_READY:
        return CARRY_NOT_BEGUN;
    case AD_PLAYING:
        return CARRY_PLAYING;
    case AD_FETCH:
        return a->pending_start ? CARRY_NOT_BEGUN : CARRY_PLAYING;
    case AD_REJOIN:
        return CARRY_REJOIN;
    default:
        return 0; /* its ads are being decided: the request stays with the old process */
    }
}

/* The rest of the creative block the listener is partway through (or of the page ending the
 * live link before an Ogg ad), or NULL. */
static block_t *ad_tail(const adplay_t *a, uint32_t *pos)
{
    if (a->state == AD_PLAYING && a->eos && a->eos_pos > 0) { /* Ogg: the live link's end */
        *pos = a->eos_pos;
        return a->eos;
    }
    if (a->state != AD_PLAYING || a->eos || !a->blk || a->pos == 0 || a->pos >= a->blk->len)
        return NULL;
    *pos = a->pos;
    return a->blk;
}

int adbreak_carried(const listener_t *l)
{
    const adplay_t *a = l->ad;
    uint32_t pos;
    if (!a || !carry_kind(a) || (l->tail && ad_tail(a, &pos)))
        return 0;
    if (carry_kind(a) == CARRY_REJOIN)
        return 1;
    for (int i = a->cur; i < a->pod->n; i++)
        if (!a->pod->ad[i].media_url)
            return 0;
    return 1;
}

block_t *adbreak_carry_tail(const listener_t *l, uint32_t *pos)
{
    return l->ad ? ad_tail(l->ad, pos) : NULL;
}

void adbreak_save(const listener_t *l, buf_t *out)
{
    const adplay_t *a = l->ad;
    int kind = carry_kind(a);
    uint64_t skip = a->skip, resume = 0;
    if (a->state == AD_READY) /* play() has not added the ads' samples yet */
        for (int i = 0; i < a->pod->n; i++)
            skip += adbreak_ad_samples(a, a->pod->ad[i].creative);
    if (a->state == AD_PLAYING)
        resume = a->pos > 0 ? block_end(a->blk) : a->blk->offset;
    else if (a->state == AD_FETCH)
        resume = a->resume;
    rec_u8(out, (uint8_t)kind);
    rec_u8(out, (uint8_t)a->preroll);
    rec_u8(out, (uint8_t)a->ogg);
    rec_u64(out, a->start);
    rec_u64(out, skip);
    rec_i64(out, a->granule);
    rec_u32(out, kind == CARRY_PLAYING ? a->fired : 0);
    rec_u64(out, resume);
    rec_u32(out, a->rate);
    if (kind != CARRY_REJOIN)
        ads_pod_save(a->pod, a->cur, out); /* adbreak_carried checked its URLs */
}

int adbreak_restore(listener_t *l, rec_reader_t *in)
{
    adplay_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -ENOMEM;
    int kind = rec_get_u8(in);
    a->preroll = rec_get_u8(in);
    a->ogg = rec_get_u8(in);
    a->start = rec_get_u64(in);
    a->skip = rec_get_u64(in);
    a->granule = rec_get_i64(in);
    a->fired = rec_get_u32(in);
    a->resume = rec_get_u64(in);
    a->state = kind == CARRY_REJOIN ? AD_REJOIN : AD_FETCH;
    a->rate = rec_get_u32(in);
    a->pending_start = kind == CARRY_NOT_BEGUN;
    if (kind != CARRY_REJOIN && !in->error)
        a->pod = ads_pod_load(in);
    if (in->error || kind < CARRY_NOT_BEGUN || kind > CARRY_REJOIN ||
        (kind != CARRY_REJOIN && !a->pod)) {
        ads_pod_free(a->pod);
        free(a);
        return -EINVAL;
    }
    l->ad = a;
    return 0;
}

/* ---- AD_FETCH ---- */

/* The ad playing cannot be had: the next one is fetched, or with none left the live stream
 * goes on from where the cursor is (the rest of the ads' time is not waited for). */
static void give_up(listener_t *l)
{
    adplay_t *a = l->ad;
    static log_ratelimit_t rl; /* a creative gone: the same line for each of its listeners */
    char id[128], mesc[128];
    log_info_limited(&rl, 10000, "listener %" PRIu64 " on %s: ad %s not fetched again after "
                     "the upgrade, passed over", l->conn->id,
                     escape_log(mesc, sizeof(mesc), l->mount->name, strlen(l->mount->name)),
                     escape_log(id, sizeof(id), a->pod->ad[a->cur].id,
                                strlen(a->pod->ad[a->cur].id)));
    a->fetching = 0;
    adbreak_next_ad(a);
    if (a->state == AD_REJOIN)
        a->skip = 0;
}

static void on_refetched(worker_t *w, uint64_t owner, uint64_t tag, ads_creative_t *c)
{
    conn_t *cn = worker_find_conn(w, owner);
    listener_t *l = cn ? listener_of(cn) : NULL;
    adplay_t *a = l ? l->ad : NULL;
    if (!a || a->tag != tag || a->state != AD_FETCH || !a->fetching) {
        ads_creative_unref(c); /* gone, or gave up waiting */
        return;
    }
    a->fetching = 0;
    if (!c) {
        give_up(l);
        return;
    }
    a->pod->ad[a->cur].creative = c;
    block_t *b = c->blocks;
    while (b && b->offset < a->resume)
        b = block_next(b);
    if (a->resume >= c->bytes) { /* it was in the last block: all delivered now */
        adbreak_track(a, c->bytes, l->mount);
        adbreak_next_ad(a);
        if (a->state == AD_REJOIN && a->preroll)
            adbreak_preroll_played(l);
    } else if (!b || b->offset != a->resume) {
        give_up(l); /* cut otherwise than it was: not where it left off */
    } else {
        a->blk = block_ref(b);
        a->pos = 0;
        a->state = AD_PLAYING;
        adbreak_track(a, a->resume, l->mount); /* what its tail delivered */
    }
    /* written by the fan-out's next pass, as a decision is */
}

int adbreak_fetch(listener_t *l)
{
    adplay_t *a = l->ad;
    while (a->state == AD_FETCH) {
        if (a->fetching) {
            if (loop_now_ms() < a->deadline_ms)
                return 1;
            give_up(l);
            continue;
        }
        ads_settings_t set = ads_settings(config_find_mount(server_config(), l->mount->name));
        ads_format_t fmt;
        if (adbreak_stream_format(l->mount, &fmt) < 0) {
            give_up(l);
            continue;
        }
        a->fetching = 1;
        a->tag = adbreak_new_tag();
        a->deadline_ms = loop_now_ms() + set.creative_timeout_ms + 1000;
        const ads_ad_t *ad = &a->pod->ad[a->cur];
        if (ad->house) { /* the station's own file, made a creative here again */
            ads_creative_t *c = adhouse_again(ad->media_url, &fmt, l->mount->name);
            if (c && c->bytes != ad->carried_bytes) {
                ads_creative_unref(c); /* the file changed meanwhile */
                c = NULL;
            }
            on_refetched(l->conn->worker, l->conn->id, a->tag, c);
            continue;
        }
        ads_refetch(l->conn->worker, a->pod, a->cur, &fmt, set.creative_timeout_ms, l->conn->id,
                    a->tag, on_refetched);
    }
    return 0;
}
