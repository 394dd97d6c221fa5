/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_record: what the audience figures keep of one listener's (or HLS session's) ad decision
 * in a break or preroll (docs/AUDIENCE.md, "Ads"): when it was asked, for which session and
 * mount, what came of it, and for each ad placed its ids, title, length, the time of it
 * delivered and the tracking events it reached. Made by the decision (decide.c), kept with
 * the pod while the ads play (ads_track_sent updates it) and handed to the sink the layer
 * above registered (the audience store) once: when the decision places no ad, else when the
 * pod is freed (the ads completed, the listener left, the server stopped). A pod carried by an
 * upgrade carries its record (ads_carry.h): the new process writes it, not the old one.
 */
#ifndef RIMECAST_ADS_RECORD_H
#define RIMECAST_ADS_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ads/ads.h"
#include "core/buf.h"
#include "core/record.h"

/* What a decision came to. */
typedef enum ads_outcome {
    ADS_OUT_FILLED = 0, /* ads placed */
    ADS_OUT_EMPTY,      /* the ad server answered no ad (an empty VAST, 204) */
    ADS_OUT_ERROR,      /* the ad server, a wrapper or the creatives failed (vast_code says) */
    ADS_OUT_TIMEOUT,    /* no answer in time, or the ads came after the listener went on */
    ADS_OUT_NO_MATCH,   /* ads came, none in the stream's format or short enough to fit */
    ADS_OUT_KINDS
} ads_outcome_t;

#define ADS_RECORD_TEXT 201 /* an ad's title: VAST_TITLE_MAX bytes and a NUL */

typedef struct ads_record_ad {
    char ad_id[64];           /* the VAST <Ad>'s id ("" none) */
    char creative_id[64];     /* its <Creative>'s id, else "url:" and 16 hex digits of the
                               * SHA-256 of its media file's URL */
    char *title;              /* <AdTitle> as the ad server sent it (valid UTF-8); NULL none */
    uint32_t duration_ms;     /* of the creative */
    uint32_t delivered_ms;    /* of it delivered to the listener (by bytes) */
    unsigned events;          /* tracking reached: ADS_FIRED_* bits (ads.h) */
} ads_record_ad_t;

typedef struct ads_record {
    uint64_t session;         /* the session's id (its record's id: the connection's, or the
                               * HLS session's) */
    char *mount;              /* the mount it asked for */
    int hls;                  /* 1: an HLS session, 0: a listener over HTTP */
    int64_t asked_ms;         /* wall clock, ms since the epoch: the decision was asked */
    int64_t ended_ms;         /* its ads ended (or the decision, without ads) */
    uint64_t deadline_ms;     /* loop_now_ms() by which the decision was due */
    ads_outcome_t outcome;
    int vast_code;            /* the VAST error code of an error or no match; 0 none */
    uint32_t break_ms;        /* the break's length */
    int carried;              /* saved for an upgrade: the next process writes it */
    int n;                    /* ads placed */
    ads_record_ad_t ad[ADS_POD_MAX];
} ads_record_t;

/* The names of the outcomes, in their order: "filled", "empty", "error", "timeout",
 * "no_match" (inline: the store's spool reads them without the rest of the layer). */
static const char *const ads_outcome_names[ADS_OUT_KINDS] = {"filled", "empty", "error",
                                                             "timeout", "no_match"};

static inline const char *ads_outcome_name(ads_outcome_t o)
{
    return o >= 0 && o < ADS_OUT_KINDS ? ads_outcome_names[o] : "error";
}

/* The outcome of a name, or -1. */
static inline int ads_outcome_of(const char *name)
{
    for (int i = 0; i < ADS_OUT_KINDS; i++)
        if (strcmp(name, ads_outcome_names[i]) == 0)
            return i;
    return -1;
}

/* The furthest event of `events` (ADS_FIRED_* bits) in the order none, impression, start,
 * firstQuartile, midpoint, thirdQuartile, complete. */
static inline const char *ads_reached_name(unsigned events)
{
    static const struct { unsigned bit; const char *name; } order[] = {
        {ADS_FIRED_COMPLETE, "complete"}, {ADS_FIRED_Q3, "thirdQuartile"},
        {ADS_FIRED_MID, "midpoint"}, {ADS_FIRED_Q1, "firstQuartile"},
        {ADS_FIRED_START, "start"}, {ADS_FIRED_IMPRESSION, "impression"},
    };
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
        if (events & order[i].bit)
            return order[i].name;
    return "none";
}

/* The sink records go to (NULL: none). It must copy what it keeps and never block. Set at
 * start-up before the workers run, or NULL after they stopped. */
void ads_set_record_sink(void (*sink)(const ads_record_t *r));

/* decide.c: a new record of a decision (NULL without memory). */
ads_record_t *ads_record_new(const ads_ask_t *ask);
/* Fills in the ads of pod (their record entries linked to pod's ads) and attaches rec. */
void ads_record_attach(ads_record_t *rec, ads_pod_t *pod, const char *const *media_urls,
                       const char *const *creative_ids, const char *const *titles);
/* Hands rec to the sink (unless carried) with its end time, then frees it. */
void ads_record_end(ads_record_t *rec);
void ads_record_free(ads_record_t *rec);
/* ads_track_sent: `sent` bytes of ad were delivered and `events` fired (bits). */
void ads_record_sent(const ads_ad_t *ad, uint64_t sent);

/* ads_carry.c: the record of a pod saved for an upgrade (marked carried: the next process
 * writes it), written before the pod's own fields and led by ADS_RECORD_MAGIC (a pod's own
 * first byte is 0 or 1), so a pod a process from before saved reads as one without a record;
 * read back (NULL: none there, malformed: in->error set, or without memory) and linked to a
 * loaded pod (its ads, from the one playing on, are the record's last ones). */
#define ADS_RECORD_MAGIC 0xa7
void ads_record_save(const ads_pod_t *pod, buf_t *out);
ads_record_t *ads_record_read(rec_reader_t *in);
void ads_record_link(ads_pod_t *pod, ads_record_t *r);

#endif
