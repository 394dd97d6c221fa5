/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listener: a connection that streams a mount: a cursor (block, offset) into the mount's
 * shared queue, an optional header-chain cursor (Ogg codec headers), ICY metadata state, and
 * its ad break (the creatives' shared blocks read instead of the mount's, stream/adbreak.c),
 * which is also how it hears its preroll: the mount's <intro> or the file its URL
 * authentication named (a house ad, stream/adhouse.c), and the ad server's preroll ads.
 *
 * The hot path is listener_flush(): one writev over the pending response head, headers and as
 * many queued blocks as fit, with ICY metadata spliced in as extra iovecs; no allocation, no
 * copy, no lock. A listener whose lag exceeds queue-size is closed and logged once.
 */
#ifndef RIMECAST_LISTENER_H
#define RIMECAST_LISTENER_H

#include <stdint.h>

#include "core/block.h"
#include "core/buf.h"
#include "core/list.h"
#include "core/record.h"
#include "stream/session.h"

typedef struct conn conn_t;
typedef struct mount mount_t;
typedef struct sub sub_t;
typedef struct http_request http_request_t;
typedef struct worker worker_t;

typedef struct listener listener_t;
struct listener {
    /* What a write pass reads of every listener comes first (its first two cache lines): the
     * pass finds it out of the caches, and fetches it ahead (stream/fanout.c) */
    list_t link;            /* in its subscription's listeners (sub.h) */
    conn_t *conn;
    block_t *blk;           /* cursor: owned reference */
    uint32_t pos;
    int blocked;            /* socket buffer full: wait for EPOLLOUT */
    block_t *tail;          /* after a move: the rest of the block it was in on the mount it
                             * left (owned reference), sent before anything of the new mount so
                             * that no frame or Ogg page is cut; NULL when done */
    uint32_t tail_pos;
    int need_sync;          /* skip to the next sync block before sending stream data */
    block_t *hdr;           /* header chain cursor: owned reference, NULL when done */
    uint32_t hdr_pos;
    uint32_t metaint;       /* 0 = no ICY metadata */
    struct adplay *ad;      /* its ad break (below), NULL when it is in none */
    sub_t *sub;
    uint32_t since_meta;    /* audio bytes since the last metadata point */
    uint32_t meta_off;
    icy_meta_t *last_meta;  /* last metadata sent in full (owned reference) */
    icy_meta_t *meta_cur;   /* metadata being sent now (owned reference) or NULL */
    int meta_zero;          /* sending the single zero byte */
    int preroll;            /* 1 once its preroll (its intro, its ads) was sent to its end */

    mount_t *mount;         /* the subscription holds the mount reference */
    char *home;             /* the mount it asked for while it is on a fallback, else NULL */
    char *asked;            /* the mount it asked for when it joined (whose authentication, if
                             * any, it passed), kept for good: see listener_move */

    int64_t start_ms;       /* when it joined (wall clock, ms): its session record */
    struct session_live *live; /* among the sessions going on (stream/session.h), or NULL */
    int probe;              /* it asked for bytes 0-1 (or 0-0): a probe if it ends soon */
    int feed;               /* an upgrade's local feed (listener_start_feed): not counted */
    int end_reason;         /* how it is ending (session_end_t, stream/session.h): set where
                             * it is closed for a reason of the server's; 0 = the client left */
    char country[8];        /* ISO code of its address's country, "" unknown (GeoIP) */
    char key[SESSION_KEY_LEN + 1]; /* its listener key from the listener id it sent
                                    * (<listener-id-param>); "": from address and agent */
};

/* Starts streaming mount m to c after a GET (checks limits, sends the head), or for a HEAD
 * answers the head a GET would get. home: the mount c asked for when m serves it instead (a
 * fallback: c goes back to home with <fallback-override>), else NULL. Returns 0 when c was
 * answered (started, or an error page sent), having taken the caller's reference on m; or
 * LISTENER_FULL when m has max-listeners listeners: nothing was sent and the reference is still
 * the caller's, who decides where c goes instead (router/dispatch.c: <fallback-when-full>, a
 * sibling server, or 403). */
#define LISTENER_FULL 1
int listener_start(conn_t *c, const http_request_t *req, mount_t *m, const char *home);
/* An upgrade's local feed (router/dispatch.c checked its token): c streams m from the live edge
 * (no burst, no intro) for the old process, which serves TLS listeners of m. It takes no slot
 * and is not counted or listed anywhere (listeners, clients, sessions, events, max-listeners,
 * max-listener-duration; the admin's listclients, moveclients and killclient pass it by) and is
 * never moved (listener_move: -EPERM); takes the reference. */
void listener_start_feed(conn_t *c, const http_request_t *req, mount_t *m);
/* Writes as much pending data as the socket takes. Returns 0, or -1 if the listener was
 * closed. Worker thread only. */
int listener_flush(listener_t *l);
/* Moves l to mount dest (worker thread only) like a new listener: it takes a slot on dest and
 * starts at dest's burst point after dest's codec headers; the connection and its ICY interval
 * are kept (the framing promised in the response head), and dest's title is sent at the next
 * metadata point. A listener partway through a block (or a header block) first gets the rest of
 * it: blocks end at a frame (MPEG audio, ADTS) or page (Ogg) boundary, so the client sees whole
 * frames and pages on both sides of the switch. The slot on the old mount is given back at
 * once; the old block stays referenced until it is sent (or the listener closes, e.g. by the
 * lag rules of dest). dest's authentication applies: a mount with authentication takes only a
 * listener that passed it (it asked for that mount when it joined) or that logged in against
 * the same htpasswd file (its user is one of dest's users); credentials are not checked again.
 * Returns 0; -EPERM for a feed (listener_start_feed); -EPROTO if dest is not of l's family (Ogg / non-Ogg), -EACCES if dest's
 * authentication refuses l, -ENOSPC if dest has max-listeners listeners: then nothing changed
 * and l stays where it was. */
int listener_move(listener_t *l, mount_t *dest);
/* May a listener that asked for mount `asked` (user: the user its login there named, NULL
 * when it did not log in) have dest's audio without logging in again? Yes for the mount it
 * asked for, for a mount without authentication, and for one of the same htpasswd file when
 * it logged in: the rule of listener_move, and of a <fallback-when-full> (router/dispatch.c). */
int listener_may_enter(const char *asked, const char *user, const mount_t *dest);

/* Ends c's session `seconds` from now if c is (still) a streaming listener: a time limit
 * from its authentication. 0 = none. Worker thread only. */
void listener_set_time_limit(conn_t *c, unsigned seconds);

/* Closes a blocked listener that lags more than queue-size behind `head`, the mount's head at
 * the previous pass (data it has had a whole write window to take). -1 if closed. */
int listener_check_lag(listener_t *l, uint64_t head);

/* An upgrade (stream/handover.h): the listener c streams as, or NULL when c is no (live)
 * listener; and a listener rebuilt in the new process made c's role (it joins its worker's
 * subscription to l->mount, whose reference it holds, and is counted; no join event: it was
 * there all along). Worker thread, or before the worker runs. */
listener_t *listener_of(conn_t *c);
void listener_adopt(conn_t *c, listener_t *l);

/* ---- ad breaks (stream/adbreak.c; docs/ADS.md) ----
 * A break is signalled on a mount (the admin command, a title starting with the mount's
 * <title-prefix>): it begins at the live edge (a frame boundary) and lasts a given time. Each
 * worker's fan-out notices it once per subscription and asks the ad layer (ads/ads.h) for the
 * ads of each listener there; a listener joining a mount with <preroll> asks for a break of its
 * own. A listener goes on with the live stream through the break's start while its ads are
 * decided (a preroll's waits for them, until the ad server's deadline at most); once they come
 * it reads, from the next block boundary (a frame or page boundary), the creatives' shared
 * blocks that fit in what is left of the break instead of the mount's, one after the other, while its cursor in the mount's queue skips as much audio as
 * the ads last, frame by frame; then it goes on from there, at a frame boundary. Without ads
 * (none came, none fit, a failure) it stays on the live stream. Tracking fires by bytes
 * delivered (impression once two seconds of an ad were taken by the socket, start,
 * quartiles, complete). Worker thread only, but adbreak_signal. A listener not in a break
 * costs nothing here but a NULL test in its write. */
#define ADBREAK_MAX_MS 600000 /* the longest break */

/* Starts a break of duration_ms on m now (any thread); why names the signal in the log.
 * 0; -ENOENT: m has no ad server (<ads><vast-url>); -EINVAL: m's stream is not MP3 or AAC
 * frames nor one Ogg Vorbis or Opus stream (or has no audio or headers yet); -ERANGE:
 * duration_ms is not 1 ms to ADBREAK_MAX_MS. */
int adbreak_signal(mount_t *m, unsigned duration_ms, const char *why);

/* The fan-out, when s->adbreak_seen differs from its mount's adbreak_id: the break begins for
 * each listener of s. */
void adbreak_sub_begin(worker_t *w, sub_t *s);

/* A new listener: its preroll, a break of its own, when it has one: its house ad (the preroll
 * file its URL authentication named, else its mount's <intro>), then the ad server's ads when
 * its mount has <ads><preroll>; each spliced as a break's ads are, the live stream's time
 * skipped meanwhile (it joins as near the live edge as without them). */
void adbreak_preroll(listener_t *l);

/* What a listener in a break (l->ad) sends now, from its write's plan: */
enum {
    ADBREAK_LIVE,       /* the mount's stream, as usual (the break is over for it) */
    ADBREAK_LIVE_UNTIL, /* the mount's stream up to offset *stop, where the ads go in */
    ADBREAK_AD,         /* the creative's blocks from (*b, *pos) */
    ADBREAK_HOLD,       /* nothing yet (a preroll's ads are being decided, or the live stream
                         * has not reached the point it rejoins at) */
};
int adbreak_where(listener_t *l, block_t **b, uint32_t *pos, uint64_t *stop);
/* The socket took a creative's bytes up to (b, pos). */
void adbreak_commit(listener_t *l, block_t *b, uint32_t pos);
/* A blocked listener's lag check: its cursor in the mount's queue keeps skipping. */
void adbreak_follow(listener_t *l);
/* The listener leaves, or moves to another mount: its break ends. A creative's block it was
 * partway through becomes its tail (l->tail), so that no frame is cut. */
void adbreak_end(listener_t *l);

/* Start-up: the title signal (mount_set_title_hook). */
void adbreak_register(void);

/* An upgrade (stream/adbreak_carry.c, stream/handover.h). Save: is l's break carried (its ads
 * decided, each with a creative URL; not while a move's tail is pending too)? Then the rest of
 * the creative block it is partway through (or NULL) goes as its tail, and adbreak_save writes
 * the break's fields after the listener's. Restore: those fields make l's break again (its
 * creatives fetched again when their turn comes): 0, or -EINVAL / -ENOMEM. */
int adbreak_carried(const listener_t *l);
block_t *adbreak_carry_tail(const listener_t *l, uint32_t *pos);
void adbreak_save(const listener_t *l, buf_t *out);
int adbreak_restore(listener_t *l, rec_reader_t *in);

#endif
