/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_session: the login of an HLS session on a mount with listener authentication (the
 * rest of the sessions' API is in hls.h). The router authenticates a session's first media
 * playlist request as a listener's GET (htpasswd, URL authentication's listener_add) and
 * hands what it let in to the session: the session ends it (listener_remove with the
 * session's duration and bytes, the user's place among the mount's users) when it ends, and
 * ends at the time limit the auth server gave. Later polls of the session carry only its
 * token; segment and part URLs stay the same for everyone. Also the session's own playlist,
 * its intro first (a view fixed at its first playlist), and the intro's impression.
 */
#ifndef RIMECAST_HLS_SESSION_H
#define RIMECAST_HLS_SESSION_H

#include <stdint.h>

#include "hls/hls.h"

typedef struct auth_url_session auth_url_session_t;
typedef struct auth_session auth_session_t;

/* What a session's authentication left it. Every field may be NULL / 0. */
typedef struct hls_login {
    auth_url_session_t *url; /* URL authentication's: listener_remove when the session ends */
    auth_session_t *user;    /* htpasswd's (mount, user) place: given back at the end */
    const char *user_name;   /* who logged in (the access log, the session record); copied */
    unsigned time_limit_s;   /* the session ends this long after it began */
    const char *intro;       /* a webroot file played first instead of the mount's <intro>
                              * (a preroll chosen for this session), NULL: the mount's */
} hls_login_t;

/* A media playlist request of session `token` on a mount with listener authentication:
 * a session that exists goes on as with hls_session_poll; one that does not begins only with
 * a login (NULL: -ENOENT, the caller authenticates the request first). The login's parts
 * become the session's; if none was begun (an error, or the token began meanwhile) they are
 * ended at once. 0, -ENOENT, -ENOSPC (mount full), -EPERM (killclient ended it), -ETIME (its
 * time limit passed: it ended then), -ENOMEM. */
int hls_session_poll_login(hls_t *h, const char *token, const hls_client_t *who,
                           hls_login_t *login);

/* Ends what login holds (the auth server is told the session lasted nothing). NULL is fine. */
void hls_login_drop(hls_login_t *login);
/* 1 if h has a session of token (begun, not yet forgotten). */
int hls_session_known(hls_t *h, const char *token);

/* The mount name whose <mount> block's authentication a new session of h passes: h's own
 * name, or, while h serves the live fallback of its sourceless mount, that fallback's when its
 * authentication does not cover the one of h's name (as a listener sent to the fallback:
 * auth_covers). Copied into out (cap bytes): out, or NULL when it does not fit. */
const char *hls_session_login_mount(hls_t *h, char *out, size_t cap);

/* The media playlist as session `token` sees it (appended to out): its intro's segments
 * first while they are listed (hls_playlist_view), else the window's own; an ad break
 * signalled on the mount since its last request begins for it (its ads asked for on worker
 * w), and once it had one, its playlist is its own (hls_ads.h). 0, -EAGAIN (no
 * complete segment yet), -EINPROGRESS (its preroll is being decided: ask again once a part
 * more is cut), -ENOMEM. hint: the request's session found before (see hls_client_t). */
int hls_session_playlist(hls_t *h, const char *token, buf_t *out, int ll, worker_t *w,
                         hls_sess_hint_t *hint);
/* 1 if webroot file `file` ("/intro.mp3") is an intro of h: its mount's <intro>, or one a
 * session of h plays first. Only those are served as intro segments. */
int hls_session_intro_known(hls_t *h, const char *file);
/* The request of `who` (as hls_session_add_bytes finds its session) fetched segment n of
 * intro `file` whole: if that is the last its session plays, the intro counts as played. */
void hls_session_intro_fetched(hls_t *h, const hls_client_t *who, const char *file, int n);

#endif
