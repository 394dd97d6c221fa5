/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_route_internal: the request value (hls_request_t) and what the files answering HLS URLs
 * call in each other: hls_request.c (the request read once: URL, mount name, query, headers;
 * kept while it waits), hls_route.c (the mount and window found, the entry points),
 * hls_playlists.c (media playlists, parked requests), hls_admit.c (sessions: the multivariant
 * playlist, polls, logins, bytes counted), hls_pieces.c (segments and parts) and hls_intros.c
 * (intro segments). Each receives the request value, never the raw request to read again.
 * Nothing outside src/hls/ includes it; the API is hls_route.h.
 */
#ifndef RIMECAST_HLS_ROUTE_INTERNAL_H
#define RIMECAST_HLS_ROUTE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/auth_url.h"
#include "conf/config.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"
#include "hls/hls.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"

#define PLAYLIST_TYPE "application/vnd.apple.mpegurl"
#define SEGMENT_MAX_AGE 3600
#define HLS_TEXT_(x) #x
#define HLS_TEXT(x) HLS_TEXT_(x)
/* the line a segment or part is cached by: it never changes; a protected mount's is for the
 * session's client only */
#define SEGMENT_CACHE_CONTROL \
    "Cache-Control: public, max-age=" HLS_TEXT(SEGMENT_MAX_AGE) ", immutable\r\n"
#define SEGMENT_CACHE_CONTROL_PRIVATE \
    "Cache-Control: private, max-age=" HLS_TEXT(SEGMENT_MAX_AGE) ", immutable\r\n"

/* A mount name taken from a URL path, or the name of the mount whose login covers a window:
 * a buffer on the stack of whoever answers the request (no allocation a request). */
typedef char hls_name_t[HTTP_MAX_URI + 1];

/* What an HLS URL names. */
typedef struct hls_url {
    int playlist;     /* <mount>/hls.m3u8, the media playlist; else a piece */
    uint64_t seq;     /* the segment (part, init segment) <mount>/hls/<seq>... names */
    int part;         /* -1: the whole segment */
    int init;         /* the init segment seq names (an Opus window's) */
    int intro;        /* an intro segment, <mount>/hls/intro/<n>.<ext> or intro/init.mp4 */
    int intro_seg;    /* ... its number n, HLS_INTRO_INIT for init.mp4 */
    const char *ext;  /* a segment's or part's "mp3", "aac" or "mp4": a static string (a parked
                       * request answers again after the path is gone) */
    int ad;           /* an ad's segment or part, <mount>/hls/ad/<id>/<seq>[.<part>].<ext> */
    char ad_id[HLS_AD_ID_LEN + 1];
} hls_url_t;

/* A query parameter read once: absent (or not decodable), there, or there but malformed. */
enum { HLS_ARG_ABSENT, HLS_ARG_SET, HLS_ARG_BAD };

/* The request value: an HLS request read once by the router (hls_route), then handed to the
 * admission (hls_admit_*), the playlists (hls_playlists_*), the pieces (hls_pieces_answer) and
 * the intros (hls_intros_answer), which neither decode its path nor look its mount up again.
 * Plain data with no allocation of its own: on the router's stack while it is answered; a
 * request that waits (a blocking reload, a piece not there yet, a login, an on-demand relay)
 * is kept as a copy (hls_request_keep) where the wait keeps its state, and answered again from
 * that copy. Pointers reach only what outlives the wait: the head (c's request, kept while it
 * is answered), the window and its name (never freed), the config snapshot (retired, not
 * freed); login_buf is the answerer's stack and is left behind by a copy. */
typedef struct hls_request {
    conn_t *c;                   /* the connection it came by */
    const http_request_t *http;  /* its head (client_of(c)->req), in c's read buffer */
    hls_url_t url;
    const char *mount;           /* the mount name (decoded, alias applied): in the router's
                                  * hls_name_t, then the window's name; NULL in a copy kept
                                  * before the window was found (an on-demand relay's) */
    const mount_conf_t *conf;    /* the <mount> block of mount (config_find_mount), NULL none */
    int sessions;                /* mount hands out sessions (hls_sessions_wanted) */
    hls_t *window;               /* the window, once found (then mount is its name) */
    int private_;                /* a protected mount's piece: Cache-Control private (set by
                                  * hls_admit_piece) */
    /* The login, read from the window by hls_admit when asked first (hls_admit_login_of):
     * the mount name whose listener authentication covers the window now, and its block. A
     * kept request reads it again when it is answered again: the window may serve another
     * mount by then. */
    int login_known;
    const char *login;           /* in login_buf or the window's name; NULL: it did not fit */
    const mount_conf_t *login_conf; /* its block when that has authentication, else NULL */
    char *login_buf;             /* an hls_name_t of the answerer's stack */
    /* the query and headers */
    int token_arg;               /* session=: HLS_ARG_SET when it has a token's form */
    char token[HLS_TOKEN_LEN + 1];
    int msn_arg, part_arg;       /* _HLS_msn, _HLS_part: read for a playlist only (no
                                  * _HLS_skip: no playlist offers CAN-SKIP-UNTIL) */
    uint64_t msn, hls_part;
    const char *agent, *referer; /* User-Agent, Referer as sent (in the head), NULL: none */
    size_t agent_len, referer_len;
    /* The session its lookups found (hls_session.c): written by lookups of a request passed
     * as const (the one thing in it that they change), kept in its copy while it waits. */
    hls_sess_hint_t hint;
} hls_request_t;

/* The session token of r (a token's form), or NULL. */
static inline const char *hls_request_token(const hls_request_t *r)
{
    return r->token_arg == HLS_ARG_SET ? r->token : NULL;
}

/* The lines of a head built without printf (each request has some): s, or a number, put at
 * p (the caller's buffer has room); the end of what was put. */
static inline char *hls_put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}
static inline char *hls_put_number(char *p, unsigned long long v, int hex)
{
    return p + response_number(p, v, hex);
}

/* ---- hls_request.c: reading a request, keeping it while it waits ---- */

/* Reads "<digits>" into *v; returns the end or NULL. */
const char *hls_request_number(const char *p, uint64_t *v);
/* 1 if path (decoded, normalised) has the form of an HLS URL of some mount name. */
int hls_request_names(const char *path);
/* Reads the HLS request req on c for path (req's path decoded, normalised, alias applied) into
 * r: its URL, the mount name (copied into name), the query (session, and for a playlist
 * _HLS_msn and _HLS_part) and the headers admission reads. Looks nothing up: conf, sessions,
 * window are left for the router. 1, or 0 when path is no HLS URL. */
int hls_request_read(hls_request_t *r, conn_t *c, const http_request_t *req, const char *path,
                     char *name);
/* The same for what a request's head holds, its URL known otherwise (an upgrade's carried
 * request: its window and URL come in the record): r's query and headers, r->url set. */
void hls_request_read_head(hls_request_t *r, conn_t *c, const http_request_t *req);
/* A decimal query parameter of req (one only some requests read: an intro's version) into
 * *v: HLS_ARG_*. */
int hls_request_query_number(const http_request_t *req, const char *name, uint64_t *v);
/* The copy of r that a waiting request keeps (*kept; it does not point into r or the
 * answerer's stack: the mount is the window's name, or NULL before the window is found). */
void hls_request_keep(hls_request_t *kept, const hls_request_t *r);
/* A kept request answered again: login_buf (an hls_name_t of the caller's) is where its login
 * is read into, now. */
void hls_request_resume(hls_request_t *r, char *login_buf);
/* Keeps a copy of r with c while c waits for someone else's answer (a login, an on-demand
 * relay) that resumes it with hls_request_take: c's role data (freed if c closes first).
 * 0, or -ENOMEM (nothing kept). */
int hls_request_hold(conn_t *c, const hls_request_t *r);
/* Takes back what hls_request_hold kept with c into *r (resumed, login_buf as above): 1, or 0
 * when c holds none. */
int hls_request_take(conn_t *c, hls_request_t *r, char *login_buf);

/* The state of a request being answered over several turns (a parked request, a piece being
 * sent, a part followed as it fills): at most HLS_STATE_BYTES, zeroed, from the thread's free
 * list (a worker answers a thousand a second; malloc beyond it), NULL without memory. Given back
 * with hls_state_free (NULL: nothing), on any thread. */
#define HLS_STATE_BYTES 512
void *hls_state_new(void);
void hls_state_free(void *p);

/* ---- hls_route.c ---- */

/* The window of live mount m (its reference taken) that r asks for: r->window (and r->mount
 * its name), or NULL with the error answered. */
hls_t *hls_route_window(hls_request_t *r, mount_t *m);

/* ---- hls_playlists.c ---- */

/* Answers a media playlist request: its session goes on (hls_admit_poll), then
 * hls_playlists_answer_session. */
void hls_playlists_answer(hls_request_t *r);
/* The playlist, once the request's session went on (blocking reloads parked). */
void hls_playlists_answer_session(hls_request_t *r);
/* Parks r until (msn, part) exists to answer it again (a copy is kept): 1 parked, 0 it is
 * there (answer now), -1 answered (400 or 500). */
int hls_playlists_park(const hls_request_t *r, uint64_t msn, int part);

/* ---- hls_admit.c ---- */

/* Answers a playlist request without a session: the multivariant playlist of r's mount with a
 * new token; of r->window, or with no window yet (an on-demand relay's: a token is handed out
 * without starting the relay). */
void hls_admit_multivariant(const hls_request_t *r);
/* The block of the mount whose listener authentication covers r's window now (read once, see
 * hls_request_t), NULL for none; r->login its name. */
const mount_conf_t *hls_admit_login_of(hls_request_t *r);

/* The session a media playlist request belongs to goes on, or begins (with login on a mount
 * with listener authentication): 1, else r was answered or waits for its login. */
int hls_admit_poll(hls_request_t *r, hls_login_t *login);
/* The login passed: the session begins with it and its playlist is answered. */
void hls_admit_login_done(hls_request_t *r, hls_login_t *login);
/* URL authentication answered for c: 1 if it accepted (its user goes to the access log),
 * else 0 with the listener's refusal sent and s freed. */
int hls_admit_url_accepted(conn_t *c, auth_url_session_t *s);
/* Starts the login of r's listener to mount `name`, whose block mc has authentication: URL
 * authentication (url_done), else htpasswd (user_done), r kept with its connection
 * meanwhile (hls_request_take gives it back to them); 1 when there is no authentication to
 * pass after all: the caller goes on with r (nothing kept). */
int hls_admit_login_start(const hls_request_t *r, const mount_conf_t *mc, const char *name,
                          auth_url_resume_fn url_done, auth_admitted_fn user_done);
/* Bytes sent to the session r belongs to (see hls_session_add_bytes): 1 if it has one. */
int hls_admit_count(const hls_request_t *r, uint64_t bytes);
/* 1 if r's window's pieces answer only within a session: the mount whose authentication
 * covers it now has listener authentication (its playlists list them with the session's
 * token, private). */
int hls_admit_protected(hls_request_t *r);
/* The one check before any piece of r's window (segment, part, init or intro segment) is
 * sent: 1 go on (r->private_: 1 when the answer may not be cached by others), else 0 with the
 * refusal answered (403). See hls_session_piece. */
int hls_admit_piece(hls_request_t *r);

/* ---- hls_pieces.c ---- */

/* Answers the segment, part or init segment r asks for (parked while it is not there yet). */
void hls_pieces_answer(const hls_request_t *r);
/* An upgrade: what c still owes of the segment or part it is sending. */
typedef struct hls_owed {
    hls_t *hls;              /* a part sent as it fills: its window (else NULL) */
    uint64_t msn, start, end; /* ... the part, its first byte and how far it was cut */
    int part, follow, started; /* follow: not complete yet; started: start is known */
    uint32_t id3_len;
    int keep;
} hls_owed_t;
/* Appends the bytes c owes (with its chunks' framing) to out and fills *o: 0, or -ENOENT when
 * c sends no piece. */
int hls_pieces_owed(conn_t *c, buf_t *out, hls_owed_t *o);

/* ---- hls_intros.c ---- */

/* Answers the intro segment r asks for (404 when its window does not serve it). */
void hls_intros_answer(const hls_request_t *r);

#endif
