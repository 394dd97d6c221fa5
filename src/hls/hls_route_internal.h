/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_route_internal: what the files answering HLS URLs call in each other: hls_route.c (the
 * URL and the request read, the window found, the entry points), hls_playlists.c (media
 * playlists, parked requests), hls_admit.c (sessions: the multivariant playlist, polls,
 * logins, bytes counted), hls_pieces.c (segments and parts) and hls_intros.c (intro
 * segments). Nothing else includes it; the API is hls_route.h.
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

/* A mount name taken from a URL path: a buffer of the caller's (no allocation a request). */
typedef char hls_name_t[HTTP_MAX_URI + 1];

typedef struct hls_url {
    const char *mount; /* in the caller's hls_name_t */
    int playlist;     /* else a segment or part */
    uint64_t seq;
    int part;         /* -1: the whole segment */
    int init;         /* the init segment seq names (an Opus window's) */
    const char *ext;
    int private_;     /* a protected mount's piece: Cache-Control private (hls_admit_piece) */
} hls_url_t;

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

/* ---- hls_route.c ---- */

/* Reads "<digits>" into *v; returns the end or NULL. */
const char *hls_route_number(const char *p, uint64_t *v);
/* A query parameter of req, decoded into a buffer of the thread's (good until the next call
 * on it), NULL if absent or malformed. */
const char *hls_route_query(const http_request_t *req, const char *name);
/* Reads a decimal query parameter: 1 found (*v), 0 absent, -1 malformed. */
int hls_route_query_number(const http_request_t *req, const char *name, uint64_t *v);
/* The value of header `name` of req as a C string in buf (HTTP_MAX_HEAD_BYTES), or NULL. */
const char *hls_route_header(const http_request_t *req, const char *name, char *buf);
/* The window a request of c asked for: the mount in its path (a login resumed later). */
hls_t *hls_route_window_of(conn_t *c);
/* If path is an intro segment's URL: 1 with its mount (copied into name unless it is NULL)
 * and number (HLS_INTRO_INIT for an init segment), else 0. */
int hls_route_parse_intro(const char *path, char *name, int *n);

/* ---- hls_playlists.c ---- */

/* Answers a media playlist request of h: its session goes on (hls_admit_poll), then
 * hls_playlists_answer_session. */
void hls_playlists_answer(conn_t *c, const http_request_t *req, hls_t *h);
/* The playlist, once the request's session went on (blocking reloads parked). */
void hls_playlists_answer_session(conn_t *c, const http_request_t *req, hls_t *h);
/* Parks c until (msn, part) exists to answer u again: 1 parked, 0 it is there (answer now),
 * -1 answered (400). */
int hls_playlists_park(conn_t *c, hls_t *h, const hls_url_t *u, uint64_t msn, int part);

/* ---- hls_admit.c ---- */

/* Answers a playlist request without a session: the multivariant playlist of mount `name`
 * with a new token; h its window, or NULL for a mount not served yet (an on-demand relay's:
 * a token is handed out without starting the relay). */
void hls_admit_multivariant(conn_t *c, const http_request_t *req, const char *name, hls_t *h);

/* The session a media playlist request belongs to goes on, or begins (with login on a mount
 * with listener authentication): 1, else c was answered or waits for its login. */
int hls_admit_poll(conn_t *c, const http_request_t *req, hls_t *h, hls_login_t *login);
/* The login passed: the session begins with it and its playlist is answered. */
void hls_admit_login_done(conn_t *c, hls_t *h, hls_login_t *login);
/* URL authentication answered for c: 1 if it accepted (its user goes to the access log),
 * else 0 with the listener's refusal sent and s freed. */
int hls_admit_url_accepted(conn_t *c, auth_url_session_t *s);
/* Starts the login of the listener on c (req) of `name`, whose block mc has authentication:
 * URL authentication (url_done), else htpasswd (user_done); 1 when there is no
 * authentication to pass after all: the caller goes on. */
int hls_admit_login_start(conn_t *c, const http_request_t *req, const mount_conf_t *mc,
                          const char *name, auth_url_resume_fn url_done,
                          auth_admitted_fn user_done);
/* Bytes sent to the session c belongs to (see hls_session_add_bytes): 1 if it has one. */
int hls_admit_count(conn_t *c, const http_request_t *req, hls_t *h, uint64_t bytes);
/* 1 if h's pieces answer only within a session: the mount whose authentication covers h now
 * has listener authentication (its playlists list them with the session's token, private). */
int hls_admit_protected(hls_t *h);
/* The one check before any piece of h (segment, part, init or intro segment) is sent to the
 * request on c: 1 go on (*private_: 1 when the answer may not be cached by others), else 0
 * with the refusal answered (403). See hls_session_piece. */
int hls_admit_piece(conn_t *c, const http_request_t *req, hls_t *h, int *private_);

/* ---- hls_pieces.c ---- */

/* Answers a segment, part or init segment u of h (parked while it is not there yet). */
void hls_pieces_answer(conn_t *c, const http_request_t *req, hls_t *h, const hls_url_t *u);
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

/* Answers an intro segment of h (404 when h does not serve it); private_: a protected
 * mount's (Cache-Control private). */
void hls_intros_answer(conn_t *c, const http_request_t *req, hls_t *h, int private_);

#endif
