/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls: the HLS window of an MP3 or AAC (ADTS) mount: segments and low-latency parts cut on
 * frame boundaries from the mount's own blocks (a part is a reference to the block it starts
 * in and a byte range, never a copy), with their timestamps, program date and sequence. An
 * Ogg Opus mount's window cuts fragmented MP4 instead (hls_opus.c): each part one fragment
 * block built when it is cut, after an init segment per OpusHead.
 *
 * One hls_t per mount name, kept for the life of the process so that the media sequence never
 * goes back, across source reconnects too (a new source starts a discontinuity). The window
 * exists only while HLS clients ask: the first request (hls_touch) attaches it to the live
 * mount (catching up from the mount's burst point), the mount's publish hook advances it on
 * the source's worker as blocks arrive, and the 1 s timer on worker 0 drops it some time
 * after the last request (and follows a mount whose source was replaced). A station without
 * HLS clients pays one pointer test per published block.
 *
 * Requests that wait for a part or segment (a blocking playlist reload, the first playlist of
 * a window not yet one segment long) are hls_waiter_t: linked into the window and posted back
 * to their worker the moment the part exists. This file knows no HTTP: the router answers.
 * An upgrade hands the window, whole, to the new process with its mount (hls_carry.h).
 */
#ifndef RIMECAST_HLS_H
#define RIMECAST_HLS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/buf.h"
#include "core/list.h"
#include "format/mpeg.h"
#include "hls/hls_id3.h"
#include "hls/hls_token.h"

typedef struct hls hls_t; /* its fields: hls_window_internal.h */
typedef struct hls_session hls_session_t;
typedef struct mount mount_t;
typedef struct worker worker_t;
typedef struct config config_t;
typedef struct mount_conf mount_conf_t;

#define HLS_MAX_PARTS 30     /* parts in one segment */
#define HLS_AD_ID_LEN 32     /* hex digits naming a cut ad in its URLs (hls_ads.h) */

/* Where a part or segment stands in the window. */
enum {
    HLS_GONE = -1,    /* before the window (or a sequence never served) */
    HLS_READY = 0,    /* complete: it can be served */
    HLS_PENDING = 1,  /* not yet complete, but near enough to wait for */
    HLS_TOO_FAR = 2,  /* further ahead than a client may wait for */
    HLS_FILLING = 3,  /* the part being cut now: what it holds so far can be sent */
};

/* A request waiting for a part (part >= 0) or a whole segment (part -1) of sequence msn.
 * Owned by the requester (its connection's state); linked while `linked` is set (under the
 * window's lock). When the part exists, it is unlinked and fn(worker, arg) posted to worker. */
typedef struct hls_waiter {
    list_t link;
    hls_t *hls;
    uint64_t msn;
    int part;
    int follow;           /* follows the part as it fills: woken when it grows past seen_end */
    uint64_t seen_end;
    int linked;
    worker_t *worker;
    void (*fn)(worker_t *w, void *arg);
    void *arg;
} hls_waiter_t;

/* A piece of the window to send: the ID3 tag, then bytes [start, end) of the block chain
 * from blk (the caller owns the reference on blk). */
typedef struct hls_piece {
    block_t *blk;
    uint64_t start, end;
    unsigned char id3[HLS_ID3_MAX];
    uint32_t id3_len;     /* the tag's bytes: its time, and the title where it changes */
    int adts;             /* AAC in ADTS, else MPEG audio */
    int fmp4;             /* fragmented MP4 (Opus): no tag, the bytes are the piece */
} hls_piece_t;

/* The file extension and the content type of a piece. */
const char *hls_piece_ext(const hls_piece_t *p);
const char *hls_piece_type(const hls_piece_t *p);

/* The mount name's window, made on first use (kept for the process's life): it now counts as
 * asked for, and is attached to m (a live MP3/AAC mount) when it is not yet, or was fed by an
 * earlier source of that name. A window that cannot be made (out of memory): NULL. */
hls_t *hls_touch(mount_t *m);
/* The same for the window of mount name `name` served by m, the live fallback of a mount of
 * that name with no source: the window follows the mount's own source when it comes. */
hls_t *hls_touch_as(const char *name, mount_t *m);

/* The window of a mount name if one was ever made (it lives as long as the process), or NULL. */
hls_t *hls_find(const char *name);

/* The part being cut now, as far as it goes: HLS_FILLING with *p filled (blk referenced, or
 * NULL with start == end when its first frame has not come; the ID3 tag its time), or what
 * hls_locate says (HLS_READY: complete, use hls_piece; nothing taken). */
int hls_part_so_far(hls_t *h, uint64_t msn, int part, hls_piece_t *p);

/* Fills *p for the init segment `id` (the number in its URI) of an Opus window: HLS_READY, or
 * HLS_GONE when no segment the window holds uses it. */
int hls_init_piece(hls_t *h, uint64_t id, hls_piece_t *p);

/* Where (msn, part) stands (part -1: the whole segment). */
int hls_locate(hls_t *h, uint64_t msn, int part);

/* Fills *p for the complete segment msn (part -1) or part (msn, part): HLS_READY, else what
 * hls_locate says (nothing taken). */
int hls_piece(hls_t *h, uint64_t msn, int part, hls_piece_t *p);

/* The media playlist (appended to out). ll: with the low-latency parts, server control and
 * preload hint. Segment URIs end in .mp3, .aac or .mp4 (Opus, after the EXT-X-MAP of their
 * init segment). Returns 0, or -EAGAIN when there is no complete segment yet. */
int hls_playlist(hls_t *h, buf_t *out, int ll);

/* A session's own view of the playlist: its intro (hls_intro.h) before the live segments
 * from live_from on, with sequence numbers of its own (set by hls_view_begin, then fixed). */
typedef struct hls_intro hls_intro_t;
typedef struct hls_view {
    const hls_intro_t *intro;
    int nsegs;                 /* of the intro's segments, the ones played */
    uint64_t live_from;        /* the first live segment (after EXT-X-DISCONTINUITY) */
    uint64_t dseq_base;        /* the discontinuity sequence while the intro begins the list */
    uint64_t disc_before_next; /* the window's discontinuities before live_from + 1 */
} hls_view_t;
/* Fixes a new session's view with intro (its reference goes to v) from the window's state
 * now: the intro, then live from the newest complete segment. Under h->lock. */
void hls_view_begin_locked(hls_t *h, const hls_intro_t *intro, hls_view_t *v);
/* hls_playlist as session view v sees it (NULL: as everyone does). */
int hls_playlist_view(hls_t *h, buf_t *out, int ll, const hls_view_t *v);

/* The multivariant playlist that names this mount's media playlist for session `token`
 * (appended to out). 0 or -ENOMEM. */
int hls_multivariant(hls_t *h, buf_t *out, const char *token, const char *tail);

/* The next part to come (the one a preload hint names), for a blocking reload default. */
void hls_next_part(hls_t *h, uint64_t *msn, int *part);

/* Target duration in seconds and part target in milliseconds of the window now. */
int hls_target_duration(hls_t *h);
int hls_part_target_ms(hls_t *h);

/* Links w to wait for (w->msn, w->part): 1 linked, 0 when it is already there (or gone: ask
 * again), -1 when too far ahead. */
int hls_wait(hls_t *h, hls_waiter_t *w);
/* Unlinks w if it is still linked. */
void hls_unwait(hls_waiter_t *w);

/* 1 if the content type is one HLS serves as packed audio (MP3, AAC in ADTS); Ogg mounts are
 * served when their stream is Opus alone (hls_opus_headers). */
int hls_type_supported(const char *content_type);

/* Whether the live mount m is served as HLS: HLS_OFFERED, or why not. */
enum { HLS_OFFERED, HLS_DISABLED, HLS_WRONG_TYPE, HLS_NEEDS_AUTH, HLS_STARTING };
int hls_offered(mount_t *m);

/* The window's insides (struct hls, its segments and parts, the cutting helpers, the Opus
 * branch) are in hls_window_internal.h: only the files of this folder include it. */

/* ---- sessions (hls_session.c): an HLS listener is a listener ---- */

/* Who asks: the request's address, its agent and referer (raw, as long as given: views into
 * the request's head, NULL when absent), the playlist path as sent (for the access log, with
 * the session's token as its query), the connection it came by, the session token a piece's
 * URL carries (NULL: none), and the mount name whose listener authentication covers the
 * window now (NULL: an open mount; see hls_session_login_mount). */
/* The session one request found, kept with the request (across its wait too) so that its later
 * lookups (its playlist, its bytes, its poll once woken) need no other: good while the window's
 * index (gen) has not changed, nothing added to, moved in or removed from it (hls_session.c). */
typedef struct hls_sess_hint {
    const void *s;  /* the session, NULL none found yet */
    const void *h;  /* the window it was found in */
    uint64_t gen;   /* the window's index_gen then */
} hls_sess_hint_t;

typedef struct hls_client {
    const char *ip;
    const char *agent, *referer, *path;
    size_t agent_len, referer_len, path_len;
    uint64_t conn_id;
    const char *token;
    const char *login;
    const char *query;  /* the request's query (raw, query_len bytes; NULL: none): the listener
                         * id (<audience><listener-id-param>) a session begins with */
    size_t query_len;
    hls_sess_hint_t *hint; /* the request's session found before (NULL: none to keep) */
} hls_client_t;

/* 1 if mount name `name` hands out sessions (<hls><sessions>), else its hls.m3u8 is the
 * media playlist itself, the same for every client (a CDN's origin). */
int hls_sessions_wanted(const char *name);
/* The same in config snapshot cfg, where the caller found name's <mount> block mc
 * (config_find_mount: NULL for none). */
int hls_sessions_wanted_conf(const config_t *cfg, const char *name, const mount_conf_t *mc);
/* <hls><sessions-per-address> of mount name `name`: the sessions one address may hold, 0 no
 * limit, -1 unset (hls_session.c's default: half of max-listeners, at most 100). */
int hls_sessions_per_address(const char *name);
/* A media playlist request of session `token` (bytes: its answer): the session begins
 * (pending until it fetches audio: hls_session_piece) or goes on. 0; -EACCES a token this
 * server did not issue for h, or (who->login) a session of another address; -ENOSPC the mount
 * is full; -EDQUOT who's address holds its share of the mount; -EMFILE the server holds
 * <clients>; -EPERM a session killclient ended; -ETIME one past its time limit. */
int hls_session_poll(hls_t *h, const char *token, const hls_client_t *who, uint64_t bytes);
/* A segment or part of `bytes` went to `who` (uri unused): counted to the mount the window
 * follows (bytes_sent and hls_bytes_sent), and to the session whose last playlist came by the
 * same connection, else to one of the same address and agent. 1 if there is one, else 0. */
int hls_session_add_bytes(hls_t *h, const hls_client_t *who, uint64_t bytes);
/* May `who` have a piece (segment, part, init or intro segment) of h? On a mount with
 * listener authentication (who->login) only within a session its token names, from that
 * session's address, whose login covers the window now: else -EACCES (-EPERM: killclient
 * ended it). With audio (a GET, not a HEAD) the session found, if pending, becomes a
 * listener: -ENOSPC when the mount is full. 0: yes. */
int hls_session_piece(hls_t *h, const hls_client_t *who, int audio);
/* What listclients shows of a session. */
typedef struct hls_session_view {
    uint64_t id;             /* in the connections' id space (killclient) */
    const char *ip, *agent;
    long long connected;     /* seconds */
    const char *user;        /* the user its login named, NULL none */
} hls_session_view_t;
/* Calls fn for each listening session counted on the live mount named `name`: those of its
 * own window and of the windows of sourceless mounts it serves as their fallback, as its
 * listeners are (under the window's lock: fn must not call into hls). */
void hls_sessions_foreach(const char *name, void (*fn)(const hls_session_view_t *v, void *arg),
                          void *arg);
/* How many sessions hls_sessions_foreach would list for `name`: the mount's HLS listeners. */
int hls_listeners(const char *name);
/* Ends session `id`, one of those hls_sessions_foreach lists for `name`, now (its access-log
 * line is written, its listener slot given back); its token is refused (403) until it stops
 * polling. 1 if it was found. */
int hls_session_kill(const char *name, uint64_t id);

/* Ends the sessions that stopped polling (all: every one), each with its access-log line, for
 * at most 20 ms (all: without a bound): 1 when some are left for the next call. */
int hls_sessions_expire_locked(hls_t *h, uint64_t now, int all);
/* The window follows mount m now (a new source): its sessions count as m's listeners. */
void hls_sessions_follow_locked(hls_t *h, mount_t *m);

/* An upgrade: the live sessions of mount name `name` as record fields; and, in the new
 * process before its workers run, the same sessions on m's window (the one carried with m,
 * hls_carry.h; made now when none came: it fills from the carried queue, its first segment
 * marked as a discontinuity), each a listener of m again with its id, start and bytes
 * (*max_id: raised to the largest id). 0 or -errno. */
struct rec_reader;
void hls_sessions_save(const char *name, buf_t *out);
/* Windows made from now on number their segments after seq at least (an upgrade: after those
 * of the old process). Main thread, before the workers run. */
void hls_number_after(uint64_t seq);
int hls_sessions_restore(mount_t *m, struct rec_reader *in, uint64_t *max_id);

/* Registers the publish hook and the timer module (at start-up). */
void hls_register(void);

#endif
