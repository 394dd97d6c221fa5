/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * adbreak_internal: what adbreak.c (a listener's break), adbreak_carry.c (the break across an
 * upgrade) and adhouse.c (the station's own audio as a preroll) share and nothing else
 * includes: the break's state and its steps.
 */
#ifndef RIMECAST_ADBREAK_INTERNAL_H
#define RIMECAST_ADBREAK_INTERNAL_H

#include <stdint.h>

#include "ads/ads.h"
#include "core/block.h"
#include "stream/listener.h"

/* AD_FETCH: an ad carried by an upgrade whose creative is being fetched again (the rest of
 * the block it was in went as the listener's tail; it resumes at the next block). */
enum { AD_ASKED, AD_READY, AD_PLAYING, AD_REJOIN, AD_FETCH };

typedef struct adplay {
    int state;
    int preroll;          /* its own break, as it joined: no start point to wait for */
    uint64_t tag;         /* the break's id (its decision is matched by it) */
    uint64_t start;       /* stream offset the ads go in at (not for a preroll): the break's
                           * start, or the block boundary after it where a decision that came
                           * later is spliced in */
    uint64_t deadline_ms; /* ASKED: a preroll held at most until then, a break's listener on
                           * the live stream at most until its end; AD_FETCH: the fetch */
    unsigned break_ms;    /* the break's length */
    uint32_t rate;        /* the mount's samples (Ogg: granule units) a second */
    block_t *mark;        /* ASKED past the start: where the break began in the live stream (a
                           * reference), to count what of the break has gone by when the
                           * decision comes; NULL otherwise */
    uint32_t mark_pos;
    ads_pod_t *pod;
    int cur;              /* the ad playing */
    block_t *blk;         /* cursor in its creative (a reference), NULL once all are sent */
    uint32_t pos;
    unsigned fired;       /* the tracking fired (ADS_FIRED_* bits, ads/ads.h) */
    uint64_t skip;        /* samples of the mount's stream still to skip (Ogg: granule units) */
    int ogg;              /* an Ogg mount: pages are skipped, the rejoin is a new link */
    int64_t granule;      /* Ogg: the granule position of the last live page passed, -1 none */
    block_t *eos;         /* Ogg: the page that ends the live link, sent before the ads (its own
                           * block, a reference), NULL once sent or when none is needed */
    uint32_t eos_pos;
    /* AD_FETCH */
    uint64_t resume;      /* the offset in the creative it goes on from (a block's start) */
    int fetching;         /* the fetch was sent (its answer matched by tag) */
    int pending_start;    /* the ads had not begun: the live stream goes on to `start` first */
    int asking;           /* a preroll whose house ad (adhouse.c) plays while the ad server's
                           * ads are decided: they follow it, until deadline_ms at most */
} adplay_t;

/* adbreak.c: the format of m's stream now (0, or -1 when it has no audio or headers yet), and
 * without audio its kind alone (samplerate 0: MPEG audio, AAC in ADTS by its content type, or
 * Ogg: ogg ADS_OGG_VORBIS | ADS_OGG_OPUS, either). */
int adbreak_stream_format(mount_t *m, ads_format_t *fmt);
void adbreak_stream_kind(mount_t *m, ads_format_t *fmt);
uint64_t adbreak_new_tag(void);
void adbreak_free_play(listener_t *l);
void adbreak_skip_live(listener_t *l);
/* Begins ad a->cur (AD_FETCH when its creative is not here); the next one, or AD_REJOIN. */
void adbreak_start_ad(adplay_t *a);
void adbreak_next_ad(adplay_t *a);
/* Fires the tracking of the ad playing that `sent` of its bytes reached (counted on m). */
void adbreak_track(adplay_t *a, uint64_t sent, mount_t *m);

/* The live samples (Ogg: granule units) ad a's creative stands for: its own, or at another
 * rate than the mount's (a house ad played as it is), its time's. */
uint64_t adbreak_ad_samples(const adplay_t *a, const ads_creative_t *c);
/* The listener's preroll was all delivered: its session record says so. */
void adbreak_preroll_played(listener_t *l);

/* adhouse.c: a listener's house ad (the preroll its URL authentication named, else its mount's
 * <intro>) as a pod of its own, for a stream of format fmt (or kind); NULL when it
 * has none (or it cannot be played: said once). adhouse_again: the creative of a house ad's
 * media URL (ADS_HOUSE_PREFIX and its path) again, after an upgrade (a new reference), or
 * NULL. adhouse_cache_clear: the kept creatives let go (at shutdown). */
ads_pod_t *adhouse_pod(listener_t *l, const ads_format_t *fmt);
ads_creative_t *adhouse_again(const char *media_url, const ads_format_t *fmt, const char *mount);
void adhouse_cache_clear(void);

/* adbreak_carry.c: AD_FETCH's step. 1 while the creative is on its way (hold), 0 once the
 * listener is PLAYING it or none is left (AD_REJOIN). */
int adbreak_fetch(listener_t *l);

#endif
