/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_adview: the media playlist of a session that had an ad break (docs/ADS.md, "HLS
 * sessions"). Its segments are rows numbered in a sequence of its own: the live segments
 * before the break (the window's numbers, plus what earlier breaks added), the ads' segments
 * (after an EXT-X-DISCONTINUITY each ad, listed part by part as the live parts they stand in
 * for are cut, so the session stays as far behind the live edge as it was), then, after an
 * EXT-X-DISCONTINUITY, the live segments from the one it rejoins at. It lists as many complete
 * rows as the common playlist lists segments, with the parts of the last two and of the row
 * being filled, and a preload hint of the next part. URIs are the window's and the ads' own,
 * the same for every session. On an Opus window (fragmented MP4) an EXT-X-MAP names the init
 * segment of what follows wherever it changes: an ad's own after its discontinuity, the
 * window's again at the rejoin. A preroll of a session with an intro lists the intro's
 * segments first (its house ad, named by a date range of its own class), then the ads. Under
 * the window's lock.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_ads.h"
#include "hls/hls_intro.h"

#define PARTS_LISTED_ROWS 2 /* complete rows whose parts stay listed, as in hls_playlist.c */

typedef struct row {
    int intro;         /* the intro's segment seg (a preroll's, before its ads) */
    int ad;            /* an ad's segment, else a live one */
    uint64_t q;        /* live: the window's segment */
    int ai, seg;       /* ad: the pod's ad and its segment */
    int listed;        /* ad: parts listed (all of them: complete) */
    int complete;
    uint64_t seq;      /* the session's number */
} row_t;

int hls_adview_live_parts_locked(hls_t *h, uint64_t b)
{
    int n = 0;
    for (uint64_t q = b; q <= h->open_seq; q++) {
        const hls_seg_t *s = hls_seg_at(h, q);
        n += s ? s->nparts : 0;
    }
    return n;
}

uint64_t hls_adview_base_disc_locked(hls_t *h, const hls_view_t *v, uint64_t q)
{
    if (!v || !v->intro)
        return hls_playlist_disc_before(h, q);
    uint64_t f = q;
    return hls_playlist_view_first(h, v, &f);
}

/* Adds a live row for each segment of [from, to] the window holds (the open one if begun). */
static int live_rows(hls_t *h, uint64_t from, uint64_t to, int64_t delta, row_t *rows, int n)
{
    for (uint64_t q = from; q <= to && q <= h->open_seq; q++) {
        const hls_seg_t *s = hls_seg_at(h, q);
        if (!s || (!s->complete && s->nparts == 0))
            continue;
        rows[n++] = (row_t){.q = q, .complete = s->complete, .seq = (uint64_t)((int64_t)q + delta)};
    }
    return n;
}

/* The ad rows listed: the pod's parts up to `listed` (as many as live parts were cut). */
static int ad_rows(const hls_adbreak_t *brk, int listed, uint64_t seq0, row_t *rows, int n)
{
    for (int i = 0; i < brk->nads; i++)
        for (int j = 0; j < brk->cut[i]->nsegs; j++) {
            int first, np = hls_adcut_seg_parts(brk->cut[i], j, &first);
            int at = brk->first_part[i] + first, shown = listed - at;
            if (shown <= 0)
                return n;
            shown = shown < np ? shown : np;
            rows[n++] = (row_t){.ad = 1, .ai = i, .seg = j, .listed = shown,
                                .complete = shown == np,
                                .seq = seq0 + (uint64_t)(brk->first_seg[i] + j)};
        }
    return n;
}

/* The discontinuity sequence of the playlist that begins with row f. */
static uint64_t first_disc(hls_t *h, const hls_adbreak_t *brk, int64_t ddisc,
                           const hls_view_t *v, const row_t *f)
{
    if (!brk)
        return (uint64_t)((int64_t)hls_adview_base_disc_locked(h, v, f->q) + ddisc);
    int64_t d = brk->ddisc_before;
    if (f->intro)
        return (uint64_t)(d + (int64_t)brk->base_b);
    if (!f->ad && f->q < brk->b)
        return (uint64_t)(d + (int64_t)hls_adview_base_disc_locked(h, v, f->q));
    d += (int64_t)brk->base_b;
    if (f->ad)
        return (uint64_t)(d + f->ai + (f->seg > 0));
    d += brk->nads;
    if (f->q > brk->r)
        d += 1 + (int64_t)hls_adview_base_disc_locked(h, v, f->q) -
             (int64_t)hls_adview_base_disc_locked(h, v, brk->r + 1);
    return (uint64_t)d;
}

/* Samples of the pod before part `part` of ad ai. */
static uint64_t pod_samples_before(const hls_adbreak_t *brk, int ai, int part)
{
    uint64_t n = 0;
    for (int i = 0; i < ai; i++)
        n += brk->cut[i]->samples;
    return n + brk->cut[ai]->parts[part].before;
}

/* An EXT-X-DATERANGE naming an ad (or a house ad) of class cls from date pdt (ms). */
static void write_daterange(buf_t *out, const char *id, const char *cls, int64_t pdt,
                            double duration)
{
    char date[40];
    time_t t = (time_t)(pdt / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    buf_appendf(out, "#EXT-X-DATERANGE:ID=\"%s\",CLASS=\"%s\",START-DATE=\"%s.%03dZ\","
                "DURATION=%.3f\n", id, cls, date, (int)(pdt % 1000), duration);
}
/* The init segment the rows written last follow (an Opus window's): an ad's cut, or the
 * window's init segment of that number. */
typedef struct map {
    const hls_adcut_t *ad;
    uint64_t id;
    int any;
} map_t;

static void write_ad_row(buf_t *out, const hls_adbreak_t *brk, const row_t *w, int parts,
                         int64_t pdt_b_ms, map_t *map)
{
    const hls_adcut_t *a = brk->cut[w->ai];
    uint32_t rate = a->creative->fmt.samplerate;
    int first;
    hls_adcut_seg_parts(a, w->seg, &first);
    int64_t pdt = pdt_b_ms + (int64_t)(pod_samples_before(brk, w->ai, first) * 1000 / rate);
    if (w->seg == 0)
        buf_append_str(out, "#EXT-X-DISCONTINUITY\n");
    if (a->opus && (!map->any || map->ad != a)) { /* the ad's own init segment */
        buf_append_str(out, "#EXT-X-MAP:URI=\"");
        hls_adcut_uri(a, -1, -1, out);
        buf_append_str(out, "\"\n");
        *map = (map_t){.ad = a, .any = 1};
    }
    if (pdt_b_ms)
        hls_playlist_date(out, pdt);
    if (w->seg == 0 && pdt_b_ms) { /* the ad, named as a date range of its class */
        char id[48];
        snprintf(id, sizeof(id), "ad-%" PRIu64 "-%d", brk->b, w->ai);
        write_daterange(out, id, HLS_AD_CLASS, pdt, (double)a->samples / rate);
    }
    uint64_t samples = 0;
    for (int p = 0; p < w->listed; p++) {
        samples += a->parts[first + p].samples;
        if (!parts)
            continue;
        buf_appendf(out, "#EXT-X-PART:DURATION=%.5f,URI=\"",
                    (double)a->parts[first + p].samples / rate);
        hls_adcut_uri(a, w->seg, p, out);
        buf_append_str(out, "\",INDEPENDENT=YES\n");
    }
    if (!w->complete)
        return;
    buf_appendf(out, "#EXTINF:%.5f,\n", (double)samples / rate);
    hls_adcut_uri(a, w->seg, -1, out);
    buf_append_str(out, "\n");
}

/* A preroll's intro segment: dated to end where the ads begin. */
static void write_intro_row(buf_t *out, const hls_adbreak_t *brk, const row_t *w,
                            int64_t pdt_b_ms, map_t *map)
{
    const hls_intro_t *in = brk->intro;
    uint64_t left = 0;
    for (int k = w->seg; k < brk->nintro; k++)
        left += in->segs[k].samples;
    int64_t pdt = pdt_b_ms - (int64_t)(left * 1000 / in->rate);
    if (in->init && (!map->any || map->ad || map->id != UINT64_MAX)) {
        hls_intro_map(in, out); /* an Opus intro's own init segment */
        *map = (map_t){.id = UINT64_MAX, .any = 1};
    }
    if (pdt_b_ms)
        hls_playlist_date(out, pdt);
    if (w->seg == 0 && pdt_b_ms) { /* the house ad, named as a date range of its own class */
        uint64_t all = 0;
        for (int k = 0; k < brk->nintro; k++)
            all += in->segs[k].samples;
        char id[48];
        snprintf(id, sizeof(id), "house-%" PRIu64, brk->b);
        write_daterange(out, id, HLS_HOUSE_CLASS, pdt, (double)all / in->rate);
    }
    buf_appendf(out, "#EXTINF:%.5f,\n", (double)in->segs[w->seg].samples / in->rate);
    hls_intro_uri(in, w->seg, out);
    buf_append_str(out, "\n");
}

static void write_live_row(hls_t *h, buf_t *out, const row_t *w, int parts, int disc,
                           const char *ext, map_t *map)
{
    const hls_seg_t *s = hls_seg_at(h, w->q);
    if (s->discontinuity || disc)
        buf_append_str(out, "#EXT-X-DISCONTINUITY\n");
    if (s->init && (!map->any || map->ad || map->id != s->init_id)) {
        buf_appendf(out, "#EXT-X-MAP:URI=\"hls/%" PRIu64 ".init.mp4\"\n", s->init_id);
        *map = (map_t){.id = s->init_id, .any = 1};
    }
    hls_playlist_date(out, s->pdt_ms);
    if (parts)
        hls_playlist_parts(out, s, ext);
    if (w->complete)
        buf_appendf(out, "#EXTINF:%.5f,\nhls/%" PRIu64 ".%s\n", (double)s->samples / s->rate,
                    s->seq, ext);
}

/* The preload hint: the part after the last row's. */
static void write_hint(hls_t *h, buf_t *out, const hls_adbreak_t *brk, const row_t *last,
                       int listed, const char *ext)
{
    if (last->ad && brk && listed < brk->nparts) {
        int i = last->ai, at = listed - brk->first_part[i];
        if (at >= brk->cut[i]->nparts) { /* the next ad's first part */
            i++;
            at = 0;
        }
        buf_append_str(out, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"");
        hls_adcut_uri(brk->cut[i], at / brk->cut[i]->pps, at % brk->cut[i]->pps, out);
        buf_append_str(out, "\"\n");
        return;
    }
    uint64_t msn = last->ad ? brk->r : h->open_seq;
    const hls_seg_t *s = hls_seg_at(h, msn);
    int next = !last->ad && s && !s->complete ? s->nparts : 0;
    buf_appendf(out, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"hls/%" PRIu64 ".%d.%s\"\n", msn, next,
                ext);
}

/* The rows of the session's playlist from the common playlist's first segment `first` on
 * (*listed: the ads' parts listed); how many. */
static int make_rows(hls_t *h, const hls_adbreak_t *brk, int64_t delta, uint64_t first,
                     row_t *rows, int *listed)
{
    int n = 0;
    *listed = 0;
    if (!brk)
        return live_rows(h, first, h->open_seq, delta, rows, n);
    int64_t after = brk->delta_before + (int64_t)brk->b + brk->nsegs - (int64_t)brk->r;
    if (brk->abandoned) { /* its ads are not had: the live stream from r only */
        *listed = brk->nparts;
        return live_rows(h, brk->r > first ? brk->r : first, h->open_seq, after, rows, n);
    }
    if (first < brk->b && !brk->preroll)
        n = live_rows(h, first, brk->b - 1, brk->delta_before, rows, n);
    uint64_t seq0 = (uint64_t)((int64_t)brk->b + brk->delta_before);
    for (int k = 0; brk->preroll && k < brk->nintro; k++)
        rows[n++] = (row_t){.intro = 1, .seg = k, .complete = 1,
                            .seq = seq0 - (uint64_t)(brk->nintro - k)};
    int l = brk->preroll ? brk->nparts : hls_adview_live_parts_locked(h, brk->b);
    *listed = l < brk->nparts ? l : brk->nparts;
    n = ad_rows(brk, *listed, seq0, rows, n);
    if (*listed == brk->nparts)
        n = live_rows(h, brk->r > h->first_seq ? brk->r : h->first_seq, h->open_seq, after,
                      rows, n);
    return n;
}

/* The first row listed: as many complete rows as the common playlist lists segments (its
 * first is `first`); a preroll's ads stay, as an intro does, until the common playlist's
 * first is as many segments past them. *complete: the complete rows from it on. */
static int first_row(const hls_t *h, const hls_adbreak_t *brk, uint64_t first,
                     const row_t *rows, int n, int *complete)
{
    int keep = (int)(h->open_seq - first), from = 0;
    *complete = 0;
    for (int i = 0; i < n; i++)
        *complete += rows[i].complete;
    uint64_t wanted = first, ahead = brk ? (uint64_t)(brk->nsegs + brk->nintro) : 0;
    if (brk && brk->preroll && first < brk->b + ahead)
        wanted = (first > brk->b ? first : brk->b) - ahead;
    while (from < n - 1 && rows[from].complete &&
           (brk && brk->preroll ? rows[from].seq < wanted : *complete > keep)) {
        (*complete)--;
        from++;
    }
    return from;
}

int hls_adview_write_locked(hls_t *h, const hls_adbreak_t *brk, int64_t delta, int64_t ddisc,
                            const hls_view_t *v, buf_t *out, int ll, uint64_t *first_live)
{
    *first_live = UINT64_MAX;
    uint64_t first;
    if (hls_playlist_first_locked(h, &first) < 0)
        return -EAGAIN;
    const char *ext = h->is_opus ? "mp4" : h->adts ? "aac" : "mp3";
    /* live rows: of the window (those before b and those from r are apart), then the ads' */
    size_t cap = (size_t)(h->open_seq - h->first_seq) + 2 +
                 (brk ? (size_t)(brk->nsegs + brk->nintro) : 0);
    row_t *rows = malloc(cap * sizeof(*rows));
    if (!rows)
        return -ENOMEM;
    int listed, complete, n = make_rows(h, brk, delta, first, rows, &listed);
    if (n == 0) {
        free(rows);
        return -EAGAIN;
    }
    int from = first_row(h, brk, first, rows, n, &complete);
    const row_t *f = &rows[from];
    if (!f->ad && !f->intro && (!brk || f->q >= brk->r))
        *first_live = f->q;
    hls_playlist_head(out, h, ll, f->seq, first_disc(h, brk, ddisc, v, f));
    if (brk && brk->preroll && (f->ad || f->intro) && f->ai == 0 && f->seg == 0 &&
        (f->intro || !brk->nintro))
        buf_append_str(out, "#EXT-X-START:TIME-OFFSET=0\n"); /* the preroll is played first */
    int done = 0; /* complete rows written */
    map_t map = {0};
    for (int i = from; i < n; i++) {
        const row_t *w = &rows[i];
        int parts = ll && (!w->complete || complete - done <= PARTS_LISTED_ROWS);
        if (w->intro)
            write_intro_row(out, brk, w, brk->pdt_b_ms, &map);
        else if (w->ad)
            write_ad_row(out, brk, w, parts, brk->pdt_b_ms, &map);
        else
            write_live_row(h, out, w, parts, brk && w->q == brk->r, ext, &map);
        done += w->complete;
    }
    if (ll)
        write_hint(h, out, brk, &rows[n - 1], listed, ext);
    free(rows);
    return out->error;
}
