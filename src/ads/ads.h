/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads: what the ad layer offers the stream layer (docs/ADS.md). For one listener in a break,
 * ads_ask() asks the mount's ad server (VAST, wrappers followed), picks the audio media files
 * in the mount's format, fetches each creative once (kept by URL, checked frame by frame, cut
 * into shared blocks) and hands back a pod: whole ads that fit the break, each with the URLs
 * to count it by. ads_track() fires those URLs through a bounded, retrying queue.
 *
 * Every request leaves through the outbound HTTP client thread (http/fetch.h), bounded per
 * kind (ad server, creatives, tracking) and never on a worker's time; answers come back to
 * the asking worker. The layer knows no mount, listener or connection: the stream layer
 * splices the pod's blocks (stream/adbreak.h). Everything an ad server says is untrusted: see
 * vast.h for the reader, and no URL it names reaches an internal address unless the mount
 * allows it (<allow-private>).
 */
#ifndef RIMECAST_ADS_H
#define RIMECAST_ADS_H

#include <stdatomic.h>
#include <stdint.h>

#include "ads/ads_url.h"
#include "ads/vast.h"
#include "core/block.h"

typedef struct worker worker_t;
typedef struct mount_conf mount_conf_t;

#define ADS_POD_MAX (VAST_MAX_ADS + 1) /* an ad server's ads, and a house ad before them */
#define ADS_WRAPPER_DEPTH 3             /* wrappers followed, one below the other */
#define ADS_CREATIVE_MAX (8 << 20)      /* bytes of one creative */
#define ADS_IMPRESSION_MS 2000          /* an impression: this much of the ad delivered */
#define ADS_TITLE_PREFIX "ADBREAK_LENGTH_"
#define ADS_HOUSE_PREFIX "house:"       /* a house ad's media URL: "house:" and its webroot path */

/* A mount's <ads> with the defaults filled in. */
typedef struct ads_settings {
    const char *vast_url;   /* NULL: the mount has no ads */
    int preroll;
    unsigned preroll_ms;
    int allow_private;
    const char *title_prefix;
    unsigned request_timeout_ms;
    unsigned creative_timeout_ms;
} ads_settings_t;

/* mc's settings (mc NULL: none, vast_url NULL). The strings point into mc. */
ads_settings_t ads_settings(const mount_conf_t *mc);

/* An MPEG audio, ADTS or Ogg stream's format: what an ad must share with the mount to be
 * spliced in without transcoding (codec, version and layer or profile, sample rate, channels).
 * Ogg (ads_ogg.h): the codec of its one logical stream, the rate its granule positions count
 * (48 kHz for Opus) and its serial number, which is not compared. */
typedef struct ads_format {
    uint32_t key;        /* format/mpeg.h mpeg_frame_t.key; 0 for Ogg */
    uint32_t samplerate;
    uint8_t channels;
    uint8_t adts;        /* 1: AAC in ADTS, 0: MPEG audio */
    uint8_t ogg;         /* ADS_OGG_VORBIS, ADS_OGG_OPUS; 0: not Ogg */
    uint32_t serial;     /* Ogg: the logical stream's serial number */
} ads_format_t;

/* The format of the frame header at p (n bytes): 0, or -1 when p starts none. */
int ads_format_of(const unsigned char *p, size_t n, ads_format_t *f);
int ads_format_equal(const ads_format_t *a, const ads_format_t *b);

/* Byte marks of a creative at which tracking fires (the end of the frame that reaches them). */
enum { ADS_MARK_IMPRESSION, ADS_MARK_Q1, ADS_MARK_MID, ADS_MARK_Q3, ADS_MARKS };

/* A creative: an ad's audio checked frame by frame and cut into blocks (at most
 * BLOCK_GATHER_MAX bytes, whole frames, each a sync point carrying the ad's ICY metadata).
 * Shared by every listener hearing it; immutable once built; freed with its last reference. */
typedef struct ads_creative {
    atomic_int refcount;
    ads_format_t fmt;
    block_t *blocks;        /* the chain (owned reference); offsets count from 0 */
    uint64_t bytes;
    uint64_t samples;
    uint32_t duration_ms;
    uint64_t mark[ADS_MARKS];
    char *title;            /* as the ICY metadata names it (plain, sanitized) */
    _Atomic(struct ads_creative *) alt; /* Ogg: its copy under another serial number, made
                                         * once when a mount's serial clashes (ads_ogg.h) */
} ads_creative_t;

/* Checks len bytes of an audio file and cuts them into a creative: an ID3v2 tag at the start,
 * an MP3 Xing/Info/VBRI frame and an ID3v1 tag at the end are left out; everything else must
 * be whole frames of one format (ads_format_t) with nothing between them. title names the ad
 * in ICY metadata (cleaned: control characters and quotes dropped, cut at 120 bytes); NULL: its
 * blocks carry no metadata (a house ad: the listener's title does not change), and its title is
 * "". Returns 0 with *out (one reference), VAST_ERR_MEDIA_BROKEN, or -ENOMEM. */
int ads_creative_build(const unsigned char *data, size_t len, const char *title,
                       ads_creative_t **out);
ads_creative_t *ads_creative_ref(ads_creative_t *c);
void ads_creative_unref(ads_creative_t *c);

struct ads_record_ad; /* ads_record.h: what the audience figures keep of this ad */

/* One ad of a listener's pod. A house ad is the station's own audio (a mount's <intro>, a
 * preroll a listener's URL authentication named; stream/adhouse.c): no ad server, no tracking,
 * no record, not counted among the ads; its media_url is ADS_HOUSE_PREFIX and its path. */
typedef struct ads_ad {
    ads_creative_t *creative;   /* owned reference */
    char *media_url;            /* where the creative was fetched (an upgrade fetches it again) */
    char *carried_title;        /* an ad carried by an upgrade (ads_carry.h): its creative's */
    uint64_t carried_bytes;     /* title and length, until the creative is fetched again */
    char id[64];
    vast_urls_t impression, error; /* the inline ad's and its wrappers' */
    vast_urls_t track[VAST_EV_COUNT];
    struct ads_record_ad *rec;  /* its entry in the pod's record (ads_track_sent updates it);
                                 * NULL: none */
    int house;                  /* a house ad (above) */
} ads_ad_t;

typedef struct ads_pod {
    int n;
    struct ads_record *rec; /* the decision's record (ads_record.h), written when the pod is
                             * freed; NULL: none */
    int allow_private;      /* the mount's: its tracking URLs may reach internal addresses */
    uint32_t duration_ms;   /* of the n ads together */
    ads_ad_t ad[ADS_POD_MAX];
} ads_pod_t;

void ads_pod_free(ads_pod_t *pod);

/* A listener's pod placed where its ads go in (ads_ask_t.fit_later): keeps the ads that fit in
 * room_ms, whole and in order as the decision chose them (an ad too long for what is left is
 * passed over, the next one tried), and counts the break: a fill for each ad kept, or one no
 * fill when none is (then the pod is freed and NULL returned). */
ads_pod_t *ads_pod_fit(ads_pod_t *pod, unsigned room_ms);
/* A decided pod never placed (its listener left, or its break was over): counted as a no fill
 * and freed. NULL: nothing (a decision without ads was counted when it was made). */
void ads_pod_drop(ads_pod_t *pod);

/* What one listener's ads are asked with. */
typedef struct ads_ask {
    const ads_settings_t *settings;
    ads_url_vars_t vars;    /* the listener's values ({duration} is set from break_ms) */
    ads_format_t fmt;       /* the mount's */
    unsigned break_ms;      /* the ads together last at most this */
    const char *mount;      /* for log lines */
    int fit_later;          /* a pod decided is counted by ads_pod_fit or ads_pod_drop (the
                             * caller places it later, in what is left of the break); 0: its
                             * ads are counted as fills when it is decided */
    int hls;                /* 1: an HLS session's ads, 0: a listener's over HTTP (its record) */
} ads_ask_t;

/* The decision: runs once on the asking worker, with the pod (the caller owns it) or NULL
 * (no ads: none came, none fit, or the ad server failed; said in the log, rate-limited).
 * owner and tag are the caller's, handed back as given. */
typedef void (*ads_done_fn)(worker_t *w, uint64_t owner, uint64_t tag, ads_pod_t *pod);

/* Asks for a listener's ads (worker thread w). 0 (done will run), or -EBUSY (too many
 * requests waiting: done will not run), -ENOMEM. Everything in ask is copied. */
int ads_ask(worker_t *w, const ads_ask_t *ask, uint64_t owner, uint64_t tag, ads_done_fn done);

/* Tracking: what a listener's delivery reached. */
enum { ADS_EV_IMPRESSION = VAST_EV_COUNT, ADS_EV_KINDS };

/* Fires the URLs of event ev (VAST_EV_START ... VAST_EV_COMPLETE, ADS_EV_IMPRESSION) of ad:
 * queued, retried, never blocking (a full queue drops and counts). Any thread. */
void ads_track(const ads_ad_t *ad, int ev, int allow_private);

/* The bits of what a listener's tracking of one ad fired, in the order they fire. */
enum {
    ADS_FIRED_START = 1, ADS_FIRED_IMPRESSION = 2, ADS_FIRED_Q1 = 4, ADS_FIRED_MID = 8,
    ADS_FIRED_Q3 = 16, ADS_FIRED_COMPLETE = 32,
};
/* Once `sent` bytes of ad's creative were delivered to a listener: fires (ads_track) each
 * event due then that *fired does not hold yet, in order, and adds them to *fired; returns the
 * bits fired now (the caller counts impressions and completes). */
unsigned ads_track_sent(const ads_ad_t *ad, uint64_t sent, unsigned *fired, int allow_private);
/* (It also notes in the ad's record, ads_record.h, how far its delivery went.) */
/* Reports error code (VAST_ERR_*) to the URLs of list (their [ERRORCODE] replaced). */
void ads_report_error(const vast_urls_t *list, int code, int allow_private);

/* Counters (for /metrics), summed over every mount. */
typedef struct ads_counters {
    unsigned long long requests;      /* ad server requests, wrappers' included */
    unsigned long long fills;         /* ads placed in listeners' pods */
    unsigned long long no_fills;      /* listeners' breaks without an ad */
    unsigned long long impressions;   /* impressions counted (fired) */
    unsigned long long completes;
    unsigned long long errors;        /* failures: ad server, wrapper, creative, reported codes */
    unsigned long long creatives;     /* creatives fetched and kept */
    unsigned long long beacons_sent, beacons_failed, beacons_dropped;
} ads_counters_t;
void ads_get_counters(ads_counters_t *out);

/* Internal to src/ads: counting. */
typedef enum {
    ADS_C_REQUESTS, ADS_C_FILLS, ADS_C_NO_FILLS, ADS_C_IMPRESSIONS, ADS_C_COMPLETES,
    ADS_C_ERRORS, ADS_C_CREATIVES, ADS_C_BEACONS_SENT, ADS_C_BEACONS_FAILED,
    ADS_C_BEACONS_DROPPED, ADS_C_COUNT
} ads_counter_t;
void ads_count(ads_counter_t which, unsigned long long n);

/* The beacon queue's retry timer (a worker module on worker 0): registered at start-up. */
void ads_register(void);

#endif
