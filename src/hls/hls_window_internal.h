/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_window_internal: the inside of an HLS window (see hls.h): its fields, segments and
 * parts, the helpers that cut it, and its Opus branch. Only the files of src/hls/ include it:
 * hls.c (which cuts it), hls_opus.c, hls_playlist.c and hls_query.c (which read it),
 * hls_carry.c (which hands it to the next process on an upgrade) and hls_session.c (the
 * sessions it holds). Other folders use hls.h.
 */
#ifndef RIMECAST_HLS_WINDOW_INTERNAL_H
#define RIMECAST_HLS_WINDOW_INTERNAL_H

/* after hls/hls.h (its types: hls_t, HLS_MAX_PARTS, the waiting lists); not included from
 * here, so that hls.c, whose header hls.h is, and this one are no ring of includes */
#ifndef RIMECAST_HLS_H
#error "include hls/hls.h before hls/hls_window_internal.h"
#endif

/* ---- the inside of a window: only hls.c (which cuts it), hls_opus.c (its Opus branch),
 * hls_playlist.c (which writes it out) and hls_carry.c (which hands it to the next process on
 * an upgrade) touch these, under hls_t.lock ---- */

typedef struct hls_part {
    block_t *blk;       /* reference on the block holding `start` */
    uint64_t start, end; /* stream offsets: whole frames */
    uint32_t frames, samples;
    uint64_t ts90;      /* 90 kHz timestamp of its first sample (33 bits) */
    int done;
    int titled;         /* the title changed since the part before: its ID3 tag carries the
                         * title of blk (TIT2), so players raise it as a cue where it changes */
} hls_part_t;

typedef struct hls_seg {
    int used, complete;
    uint64_t seq;
    int discontinuity;  /* the stream broke before it */
    uint32_t rate;
    uint64_t samples;   /* of its complete parts */
    int64_t pdt_ms;     /* wall clock of its first sample */
    uint32_t epoch;
    uint64_t epoch_samples; /* samples of its epoch before it */
    int nparts;
    block_t *init;      /* Opus: its init segment (a reference), named init_id */
    uint64_t init_id;
    hls_part_t parts[HLS_MAX_PARTS];
    hls_part_t open;    /* the part being cut (the open segment only) */
} hls_seg_t;

enum { SCAN_SEEK, SCAN_HEAD, SCAN_BODY };

struct hls {
    char *name;
    pthread_mutex_t lock;
    hls_t *next;              /* registry */
    mount_t *mount;           /* the mount it follows (a reference), NULL when idle */
    _Atomic(hls_t *) next_on_mount; /* the next window following the same mount */
    uint64_t last_request_ms;
    list_t waiters;           /* hls_waiter_t */
    uint64_t followers_sent_ms; /* when parts followed as they fill were last sent more */
    /* Moves on with every change a playlist shows (a part or segment added, a segment opened,
     * a source attached, the window dropped): the media playlist everyone without an intro
     * gets is rendered once a version (hls_playlist.c), [ll] at playlist_at - 1 (0: none). */
    uint64_t version;
    buf_t playlist_text[2];
    uint64_t playlist_at[2];
    hls_session_t *sessions;  /* its HLS listeners */
    int nsessions;
    hls_session_t **session_index; /* by token, then by connection (hls_session.c) */
    atomic_int ad_sessions;   /* sessions with ad break state (hls_ads.c): 0, and a blocking
                               * reload needs no look at its session's numbering */
    size_t index_size;        /* buckets of each of the two halves */
    uint64_t index_gen;       /* moves on with every session added to, moved in or removed
                               * from the index: a request's hls_sess_hint_t is good while it
                               * has not */

    /* geometry, fixed while the window exists */
    int target;               /* seconds */
    int part_ms;
    int parts_per_seg;
    int listed;
    uint32_t frames_per_part;

    /* segments: a ring of nsegs, by sequence; open_seq is being cut (or comes next) */
    hls_seg_t *segs;
    int nsegs;
    uint64_t first_seq, open_seq;
    int have_open;
    int disc_next;            /* the next segment starts a discontinuity */
    uint64_t disc_dropped;    /* discontinuities that left the window */
    int ever;                 /* a segment was ever cut for this name */

    /* the scan of the mount's blocks */
    block_t *scan;            /* reference on the block being read */
    uint64_t pos;             /* next stream offset to read */
    int state;
    unsigned char hdr[MPEG_HEADER_MAX];
    unsigned have;
    uint64_t frame_at, frame_end;
    uint32_t frame_samples;
    int frames_known;
    uint32_t key, rate;
    int adts;

    /* clocks */
    uint64_t clock90;         /* 90 kHz time at the last rate change */
    uint64_t clock_samples;   /* samples since */
    uint32_t epoch;           /* a new epoch at each source (re)start or rate change */
    uint64_t epoch_samples;
    int64_t anchor_ms;        /* wall clock of the epoch's first sample */
    int64_t redate_until_ms;  /* the anchor may still move earlier until then (redate_locked) */
    icy_meta_t *last_meta;    /* the title parts announced last (a reference), NULL none */

    /* Opus in fragmented MP4 (hls_opus.c): the scan walks Ogg pages instead of frames */
    int is_opus;
    struct hls_opus *opus;    /* its state, NULL before the first Opus source */
    block_t *init;            /* the init segment new segments get (a reference), or NULL */
    uint64_t init_id;
};

/* The segment of sequence seq if the window holds it, else NULL. */
hls_seg_t *hls_seg_at(hls_t *h, uint64_t seq);

/* The cutting helpers hls.c lends to the Opus branch (under h->lock): the open segment's
 * open part begins (the segment opens if needed); the open part is complete (close: the
 * stream breaks after it); the stream breaks; the clock starts for a stream at `rate`. */
hls_seg_t *hls_part_begin(hls_t *h);
/* 1 if m's title is not the one parts announced last (it becomes that one), and not empty. */
int hls_title_changed(hls_t *h, icy_meta_t *m);
void hls_part_close(hls_t *h, int close);
void hls_stream_break(hls_t *h);
void hls_clock_begin(hls_t *h, uint32_t rate);

/* What hls.c lends an upgrade (hls_carry.c): the window of mount name `name`, made empty (not
 * attached) when there is none (NULL without memory); under h->lock, the window follows m (a
 * new reference) from now on, and the window dropped (its segments, scan and Opus state
 * freed, following no mount). */
hls_t *hls_registry_get(const char *name);
void hls_follow_locked(hls_t *h, mount_t *m);
void hls_window_drop_locked(hls_t *h);

/* ---- the Opus branch (hls_opus.c), under h->lock ---- */

/* 1 if a mount's codec headers are one logical stream, Opus (its window cuts fMP4). */
int hls_opus_headers(const block_t *headers);
/* The window follows a new Opus source whose codec headers are `headers`: a new init
 * segment. 0, -EINVAL (not Opus) or -ENOMEM. */
int hls_opus_attach_locked(hls_t *h, const block_t *headers);
/* Walks the Ogg pages of block b from h->pos (to its end): the Opus packets go into parts. */
void hls_opus_scan_locked(hls_t *h, const block_t *b);
/* The packets gathered become the open part's fragment (before the part closes). 0, or
 * -ENOMEM (the part is dropped). */
int hls_opus_cut_locked(hls_t *h);
/* Frees the Opus state and the init segment. */
void hls_opus_free_locked(hls_t *h);
/* An upgrade: the Opus state as record fields (its fragment blocks are carried by the caller
 * as a chain ending at hls_opus_tail), and back in the new process on the carried chain's last
 * block `tail` (a reference given, NULL none). 0, -EINVAL or -ENOMEM. */
struct handover_metas;
struct rec_reader;
const block_t *hls_opus_tail(const hls_t *h);
void hls_opus_save_locked(hls_t *h, struct handover_metas *t, buf_t *out);
int hls_opus_restore_locked(hls_t *h, const struct handover_metas *t, struct rec_reader *in,
                            block_t *tail);

#endif
