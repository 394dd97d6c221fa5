/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listener: a connection that streams a mount: a cursor (block, offset) into the mount's
 * shared queue, an optional header-chain cursor (Ogg codec headers), an optional intro cursor
 * (the mount's <intro> file, shared blocks, sent first) and ICY metadata state.
 *
 * The hot path is listener_flush(): one writev over the pending response head, headers and as
 * many queued blocks as fit, with ICY metadata spliced in as extra iovecs; no allocation, no
 * copy, no lock. A listener whose lag exceeds queue-size is closed and logged once.
 */
#ifndef RIMECAST_LISTENER_H
#define RIMECAST_LISTENER_H

#include <stdint.h>

#include "core/block.h"
#include "core/list.h"

typedef struct conn conn_t;
typedef struct mount mount_t;
typedef struct sub sub_t;
typedef struct http_request http_request_t;

typedef struct listener listener_t;
struct listener {
    conn_t *conn;
    mount_t *mount;         /* the subscription holds the mount reference */
    sub_t *sub;
    block_t *blk;           /* cursor: owned reference */
    uint32_t pos;
    block_t *hdr;           /* header chain cursor: owned reference, NULL when done */
    uint32_t hdr_pos;
    block_t *intro;         /* cursor in its preroll (its URL authentication named one) or the
                             * mount's <intro>: shared blocks, owned reference; NULL when done */
    uint32_t intro_pos;
    block_t *tail;          /* after a move: the rest of the block it was in on the mount it
                             * left (owned reference), sent before anything of the new mount so
                             * that no frame or Ogg page is cut; NULL when done */
    uint32_t tail_pos;
    int need_sync;          /* skip to the next sync block before sending stream data */
    int blocked;            /* socket buffer full: wait for EPOLLOUT */

    uint32_t metaint;       /* 0 = no ICY metadata */
    uint32_t since_meta;    /* audio bytes since the last metadata point */
    icy_meta_t *last_meta;  /* last metadata sent in full (owned reference) */
    icy_meta_t *meta_cur;   /* metadata being sent now (owned reference) or NULL */
    uint32_t meta_off;
    int meta_zero;          /* sending the single zero byte */

    char *home;             /* the mount it asked for while it is on a fallback, else NULL */
    char *asked;            /* the mount it asked for when it joined (whose authentication, if
                             * any, it passed), kept for good: see listener_move */

    list_t link;            /* in its subscription's listeners (sub.h) */

    int64_t start_ms;       /* when it joined (wall clock, ms): its session record */
    struct session_live *live; /* among the sessions going on (stream/session.h), or NULL */
    int preroll;            /* 1 once its preroll or intro was sent to its end */
    char country[8];        /* ISO code of its address's country, "" unknown (GeoIP) */
    int feed;               /* an upgrade's local feed (listener_start_feed): not counted */
    int end_reason;         /* how it is ending (session_end_t, stream/session.h): set where
                             * it is closed for a reason of the server's; 0 = the client left */
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

#endif
