/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_ads: ad breaks for HLS sessions (docs/ADS.md, "HLS sessions"). A creative is cut once
 * into HLS parts and segments of a window's geometry (hls_adcut.c: shared by every session,
 * named in URLs by a digest, <mount>/hls/ad/<id>/<n>.<ext>); a session in a break lists them in
 * its own playlist between discontinuities, at the pace of the live parts they stand in for,
 * then rejoins the live stream (hls_ads.c: the break, its numbering, its tracking;
 * hls_adview.c: the playlist). Only the files of src/hls/ include it, after hls/hls.h and
 * hls/hls_window_internal.h.
 */
#ifndef RIMECAST_HLS_ADS_H
#define RIMECAST_HLS_ADS_H

#ifndef RIMECAST_HLS_WINDOW_INTERNAL_H
#error "include hls/hls_window_internal.h before hls/hls_ads.h"
#endif

#include "ads/ads.h"


/* The CLASS of the EXT-X-DATERANGE that names each ad in a session's playlist, and of the
 * one that names its house ad (its intro, or the preroll its URL authentication named). */
#define HLS_AD_CLASS "com.rimecast.ad"
#define HLS_HOUSE_CLASS "com.rimecast.house"

/* ---- hls_adcut.c: creatives cut into parts and segments ---- */

typedef struct hls_adcut_part {
    const block_t *blk;  /* the creative's block holding start (the creative holds it); Opus:
                          * the part's fragment (the cut's chain holds it) */
    uint64_t start, end; /* bytes of the creative: whole frames; Opus: of the fragments' chain */
    uint32_t samples;
    uint64_t before;     /* samples of the creative before it */
} hls_adcut_part_t;

typedef struct hls_adcut {
    int refs;                  /* under the registry's lock */
    ads_creative_t *creative;  /* a reference: the bytes */
    char id[HLS_AD_ID_LEN + 1];
    uint32_t fpp;              /* frames a part, as the window's; Opus: the part target (ms) */
    int pps;                   /* parts a segment, as the window's */
    int nparts, nsegs;
    hls_adcut_part_t *parts;
    uint64_t samples;          /* of all its parts */
    int opus;                  /* an Ogg Opus creative: fragmented MP4 (hls_adopus.c) */
    block_t *init;             /* Opus: its init segment (of its OpusHead) */
    block_t *frags;            /* Opus: the chain of its parts' fragments (offsets from 0) */
    uint64_t unused_since_ms;  /* no session holds it since then (refs 0) */
    struct hls_adcut *next;
} hls_adcut_t;

/* Creative c cut into parts of fpp frames (an Ogg Opus creative: of at most fpp ms), pps a
 * segment: a new reference (made once for the creative and geometry, then shared), or NULL
 * without memory. */
hls_adcut_t *hls_adcut_get(ads_creative_t *c, uint32_t fpp, int pps);
void hls_adcut_unref(hls_adcut_t *a);
/* The parts of segment seg of a: how many, from part *first on. */
int hls_adcut_seg_parts(const hls_adcut_t *a, int seg, int *first);
#define HLS_AD_INIT UINT64_MAX /* an Opus cut's init segment, in place of a segment number */

/* Fills *p for segment seg (part -1) or part (seg, part) of the cut named id (seg HLS_AD_INIT:
 * an Opus cut's init segment), served with extension ext: HLS_READY (blk referenced), else
 * HLS_GONE (no such cut, piece or type). */
int hls_adcut_piece(const char *id, uint64_t seg, int part, const char *ext, hls_piece_t *p);
/* Appends the relative URI of a's segment seg (part -1) or part (seg, part): hls/ad/<id>/...;
 * of an Opus cut's init segment for seg < 0 (hls/ad/<id>/init.mp4). */
void hls_adcut_uri(const hls_adcut_t *a, int seg, int part, buf_t *out);
/* hls_adopus.c: an Ogg Opus creative's packets cut into a's parts (of at most a->fpp ms, as a
 * window's), each one fragment, after an init segment of its OpusHead; a->id named after
 * them and the geometry. 0, -EINVAL (no Opus stream) or -ENOMEM. */
int hls_adcut_opus(hls_adcut_t *a);
/* Drops every cut no session holds (at exit: registered with the first cut). */
void hls_adcut_clear(void);

/* ---- hls_ads.c: a session's breaks ---- */

typedef struct hls_sess_ads hls_sess_ads_t;

/* What hls_ads.c needs of a session (hls_session.c lends it, under h->lock). */
typedef struct hls_sess_ref {
    hls_sess_ads_t **ads;   /* its break state, NULL before its first break */
    uint64_t *ad_seen;      /* the mount's last break it took (hls_session.c sets it first) */
    uint64_t id;
    const char *token, *ip, *agent, *country;
    const hls_view_t *view; /* its intro view (view->intro NULL: none) */
    int first;              /* its first playlist request (a preroll may begin) */
} hls_sess_ref_t;

/* The session token names (token NULL: the one who's piece request counts to), under
 * h->lock: 1 with *ref filled, else 0. In hls_session.c. */
int hls_session_ref_locked(hls_t *h, const char *token, const hls_client_t *who,
                           hls_sess_ref_t *ref);

/* A session's playlist request, under h->lock: a break signalled on the mount since it last
 * looked (*ref->ad_seen) begins for it (its ads asked for on worker w). */
void hls_ads_poll_locked(hls_t *h, const hls_sess_ref_t *ref, worker_t *w);
/* Its first playlist request, under h->lock: with the mount's <preroll>, its preroll's ads
 * are asked for (on worker w), and its first playlist waits for them (hls_ads_waiting). */
void hls_ads_first_locked(hls_t *h, const hls_sess_ref_t *ref, worker_t *w);
/* 1 while the session's preroll is being decided and may still be waited for. */
int hls_ads_waiting(const hls_sess_ads_t *ads);
/* Its media playlist when it had a break (ads non-NULL), under h->lock: 0, -EAGAIN, -ENOMEM. */
int hls_ads_playlist_locked(hls_t *h, hls_sess_ads_t *ads, const hls_view_t *v, buf_t *out,
                            int ll);
/* A blocking reload of session `token` for its (*msn, *part): moved to the window's numbers. */
void hls_ads_reload_at(hls_t *h, const char *token, uint64_t *msn, int *part);
/* The ad piece u names went, whole, to who: its session's tracking moves on. */
void hls_ads_fetched(hls_t *h, const hls_client_t *who, const char *id, uint64_t seg, int part);
/* An upgrade: the numbering a session's breaks left it (one in progress counted as over: what
 * the new process keeps when the break cannot go on there), and the same in the new process
 * (NULL without memory). */
void hls_ads_numbering_locked(hls_t *h, const hls_sess_ads_t *ads, const hls_view_t *v,
                              int64_t *delta, int64_t *ddisc);
hls_sess_ads_t *hls_ads_numbered(hls_t *h, int64_t delta, int64_t ddisc);
/* A session's playlist request on worker w, under h->lock: a break carried by an upgrade has
 * its ads' creatives fetched again (hls_adcarry.c; its playlist waits meanwhile). */
void hls_ads_resume_locked(hls_t *h, const hls_sess_ref_t *ref, worker_t *w);
/* 1 once the session had a break: its playlist is its own (hls_ads_playlist_locked). */
int hls_ads_own(const hls_sess_ads_t *ads);
/* Where a session's preroll stands: HLS_PREROLL_NONE (it has no preroll ads), _LEFT (being
 * decided, or listed and not all fetched whole yet), _HEARD (every ad of it fetched whole). */
#define HLS_PREROLL_NONE 0
#define HLS_PREROLL_LEFT 1
#define HLS_PREROLL_HEARD 2
int hls_ads_preroll(const hls_sess_ads_t *ads);
/* 1 once the session's intro went into its preroll break (listed there, before its ads): its
 * view numbers nothing any more. */
int hls_ads_took_intro(const hls_sess_ads_t *ads);
/* Session `token`'s preroll ads were all fetched whole, or will not come, under h->lock (in
 * hls_session.c: its preroll counts as heard once its intro was too, if it has any). */
void hls_session_preroll_check_locked(hls_t *h, const char *token);
/* Frees a session's break state (a session of h ends). */
void hls_ads_free(hls_t *h, hls_sess_ads_t *ads);

/* ---- hls_adcarry.c: a break in progress across an upgrade ---- */

struct rec_reader;

/* Save, under h->lock: session `token`'s break in progress, if it can go on in the new process
 * (its ads, where they sit in its numbering, where it rejoins, what each ad's tracking fired
 * and which of its parts were fetched) as record fields: 1, else 0 (nothing written). */
int hls_ads_carry_save_locked(hls_t *h, const hls_sess_ads_t *ads, const char *token,
                              buf_t *out);
/* Restore, under h->lock: those fields (count first), each put back in its session's break
 * state (made by hls_ads_numbered: the numbering as after the break stays when it cannot),
 * when the window came whole with the upgrade (it numbers seq, the open segment of the old
 * process's save, as that did). */
void hls_ads_carry_restore_locked(hls_t *h, struct rec_reader *in, uint64_t seq);
/* A carried break whose ads cannot be had again (why: for the log line, rate-limited), under
 * h->lock: the session rejoins the live stream (from the newest complete segment, or where
 * its ads ended if they were all listed), numbered on after the ads' numbers; no event
 * fires. */
void hls_ads_abandon_locked(hls_t *h, hls_sess_ads_t *ads, const char *why);

/* ---- hls_adview.c ---- */

/* The break of a session as the playlist writer sees it (hls_ads.c keeps it). */
typedef struct hls_adbreak {
    uint64_t b;              /* the window's first live segment the ads replace */
    uint64_t r;              /* the window's segment the session rejoins at */
    int64_t delta_before;    /* session number - window number of live segments before b */
    int64_t ddisc_before;    /* discontinuities the session counts more than the window, before b */
    uint64_t base_b;         /* the discontinuities before b as the session's view counts them */
    int nads;
    hls_adcut_t *cut[ADS_POD_MAX];
    int first_part[ADS_POD_MAX]; /* the pod's parts before each ad */
    int first_seg[ADS_POD_MAX];  /* the pod's segments before each ad */
    int nparts, nsegs;       /* of the whole pod */
    int64_t pdt_b_ms;        /* the date of b's first sample, once known (0 before); a
                              * preroll's: the date its ads begin at */
    int preroll;             /* the ads come first, all listed, before live segment b = r:
                              * numbered just before it, as an intro is */
    int abandoned;           /* carried by an upgrade, its ads not had again: none listed, the
                              * live segments from r on numbered after them */
    const hls_intro_t *intro; /* a preroll's: the session's intro, listed before its ads, its
                               * nintro segments numbered just before theirs (a reference) */
    int nintro;
} hls_adbreak_t;

/* A session's break state (hls_ads.c; hls_adcarry.c carries it). */
struct hls_sess_ads {
    uint64_t asking;           /* the break whose ads are asked for, 0 none */
    uint64_t preroll_until_ms; /* a preroll asked for: its first playlist waits until then */
    int64_t delta, ddisc;      /* the numbering breaks behind it left */
    int preroll;               /* HLS_PREROLL_*: its preroll ads */
    int took_intro;            /* its intro went into its preroll break: its view is unused */
    hls_adbreak_t *brk;        /* the break its playlist lists, NULL none */
    ads_pod_t *pod;            /* brk's ads: their tracking */
    unsigned char *got[ADS_POD_MAX]; /* parts of each ad fetched whole (a bit each) */
    unsigned fired[ADS_POD_MAX]; /* each ad's tracking fired (ADS_FIRED_* bits) */
    /* a break carried by an upgrade: its cuts (brk->cut) are made again from the creatives
     * fetched again, and must be these */
    int carried;
    uint64_t refetch_until_ms; /* its creatives asked for: its playlist waits until then */
    uint64_t refetch_tag;
    struct {
        char id[HLS_AD_ID_LEN + 1];
        int nparts, nsegs;
    } want[ADS_POD_MAX];
};

/* hls_ads.c lends hls_adcarry.c: the frames a part (Opus: the part target) ads are cut to for
 * h; a new session break state (counted on h); the window's stream format. */
uint32_t hls_ads_cut_fpp(const hls_t *h);
hls_sess_ads_t *hls_ads_new(hls_t *h);
int hls_ads_window_format(hls_t *h, ads_format_t *fmt);

/* The playlist of a session with a break, or with breaks behind it (brk NULL): live segments
 * numbered delta more than the window's, counting ddisc more discontinuities. Under h->lock. */
int hls_adview_write_locked(hls_t *h, const hls_adbreak_t *brk, int64_t delta, int64_t ddisc,
                            const hls_view_t *v, buf_t *out, int ll, uint64_t *first_live);
/* Live parts the window has cut from segment b on (the ads listed stand in for as many). */
int hls_adview_live_parts_locked(hls_t *h, uint64_t b);
/* The discontinuities before live segment q as the session's view counts them (its intro). */
uint64_t hls_adview_base_disc_locked(hls_t *h, const hls_view_t *v, uint64_t q);

/* ---- what hls_playlist.c lends (under h->lock) ---- */

/* The first segment of the common playlist: 0, or -EAGAIN with no complete segment yet. */
int hls_playlist_first_locked(hls_t *h, uint64_t *first);
/* A media playlist's head, from #EXTM3U to #EXT-X-INDEPENDENT-SEGMENTS: its target, the
 * low-latency tags when ll, its media sequence seq and discontinuity sequence disc. */
void hls_playlist_head(buf_t *out, const hls_t *h, int ll, uint64_t seq, uint64_t disc);
void hls_playlist_date(buf_t *out, int64_t ms);
void hls_playlist_parts(buf_t *out, const hls_seg_t *s, const char *ext);
uint64_t hls_playlist_disc_before(const hls_t *h, uint64_t seq);
/* The discontinuity sequence of session view v's playlist from *first (set as it lists). */
uint64_t hls_playlist_view_first(const hls_t *h, const hls_view_t *v, uint64_t *first);

#endif
