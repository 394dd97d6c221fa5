/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_admit: who may have what of an HLS window (see hls_route_internal.h). A playlist
 * request without a session gets the multivariant playlist with a new token (or, from a server
 * past its <redirect-share> or full, a 302 to a sibling: upstream/redirect.h); a session goes
 * on, or begins, after the login of a listener on a mount with listener authentication; a
 * piece (segment, part, init or intro segment) of such a mount answers only within a session
 * (hls_session_piece), and any piece makes its session a listener; bytes sent are counted to
 * the session.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/auth_url.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "hls/hls_route_internal.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"
#include "upstream/redirect.h"

/* A request without a session: the multivariant playlist naming the media playlist with a
 * new session's token. Never cached: each client gets its own. */
static void answer_multivariant(conn_t *c, const http_request_t *req, hls_t *h)
{
    hls_admit_multivariant(c, req, h->name, h);
}

void hls_admit_multivariant(conn_t *c, const http_request_t *req, const char *name, hls_t *h)
{
    /* a new session: past its share, or full (a full mount refuses a session at its first
     * media playlist), this server sends it to a sibling, where it begins */
    if (redirect_admit(c, req, name, REDIRECT_SPREAD | REDIRECT_FULL))
        return;
    char token[HLS_TOKEN_LEN + 1];
    buf_t out = BUF_INIT;
    int rc = hls_token_issue(name, token);
    if (rc == 0 && h)
        rc = hls_multivariant(h, &out, token);
    else if (rc == 0) /* a mount not served yet: what its stream is comes with its window */
        rc = buf_appendf(&out, "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                         "#EXT-X-STREAM-INF:BANDWIDTH=320000\nhls.m3u8?session=%s\n", token);
    if (rc < 0) {
        buf_free(&out);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    reply_send(c, req, 200, PLAYLIST_TYPE, out.data, out.len,
               "Cache-Control: no-cache, no-store\r\nAccess-Control-Allow-Origin: *\r\n");
    buf_free(&out);
}

/* The mount block whose listener authentication a session of h passes, NULL for none (*name:
 * the mount name it is found by, in buf; NULL when it does not fit). */
static const mount_conf_t *login_conf(hls_t *h, hls_name_t buf, const char **name)
{
    *name = hls_session_login_mount(h, buf, sizeof(hls_name_t));
    const mount_conf_t *mc = *name ? config_find_mount(server_config(), *name) : NULL;
    return mc && mc->auth ? mc : NULL;
}

int hls_admit_protected(hls_t *h)
{
    hls_name_t buf;
    const char *name;
    return login_conf(h, buf, &name) != NULL;
}

/* The session token of req's query, copied into out when it has a token's form, else NULL. */
static const char *request_token(const http_request_t *req, char *out)
{
    const char *t = hls_route_query(req, "session");
    if (!t || !hls_token_form(t))
        return NULL;
    memcpy(out, t, strlen(t) + 1);
    return out;
}

static void login_begin(conn_t *c, const http_request_t *req, hls_t *h, const mount_conf_t *mc,
                        const char *name);

/* The session a media playlist request belongs to goes on, or begins (on a mount with listener
 * authentication, with login: the first request of a session is authenticated, login NULL,
 * and comes back here once let in): 1, else c was answered or waits for its login. */
int hls_admit_poll(conn_t *c, const http_request_t *req, hls_t *h, hls_login_t *login)
{
    if (!hls_sessions_wanted(h->name))
        return 1;
    const char *token = hls_route_query(req, "session");
    if (!token) {
        answer_multivariant(c, req, h);
        return 0;
    }
    hls_name_t login_buf;
    const char *login_name;
    const mount_conf_t *mc = login_conf(h, login_buf, &login_name);
    /* the agent, referer and URI in buffers of the thread's: copied only by a session begun */
    static __thread char agent[HTTP_MAX_HEAD_BYTES], referer[HTTP_MAX_HEAD_BYTES];
    static __thread char uri[HTTP_MAX_HEAD_BYTES + sizeof("?session=") + HLS_TOKEN_LEN];
    size_t tlen = strlen(token);
    int fits = req->path_len + sizeof("?session=") + tlen <= sizeof(uri);
    if (fits) {
        memcpy(uri, req->path, req->path_len);
        char *u = hls_put(uri + req->path_len, "?session=");
        memcpy(u, token, tlen + 1);
    }
    hls_client_t who = {c->ip, hls_route_header(req, "user-agent", agent),
                        hls_route_header(req, "referer", referer), uri, c->id, NULL,
                        mc ? login_name : NULL};
    int rc = !hls_token_form(token) ? -EINVAL
             : !fits || !login_name ? -ENOMEM
             : mc || login ? hls_session_poll_login(h, token, &who, login)
                           : hls_session_poll(h, token, &who, 0);
    if (rc == 0) {
        client_skip_log(c); /* the session's own line says it all when it ends */
        conn_mark_carrier(c); /* it and the session count once in <clients> */
    }
    else if (rc == -ENOENT)
        login_begin(c, req, h, mc, login_name); /* its first request: a listener's login */
    else if (rc == -EINVAL)
        client_send_error(c, 400, "Bad Request: malformed session");
    else if (rc == -EACCES)
        client_send_error(c, 403, "Forbidden: unknown session (ask hls.m3u8 for a new one)");
    else if (rc == -EDQUOT)
        client_send_error(c, 403, "Forbidden: too many sessions from this address");
    else if (rc == -EMFILE)
        client_send_error(c, 403, "Forbidden: connection limit reached");
    else if (rc == -ENOSPC)
        client_send_error(c, 403, "Forbidden: too many listeners");
    else if (rc == -EPERM)
        client_send_error(c, 403, "Forbidden: this session was ended");
    else if (rc == -ETIME)
        client_send_error(c, 403, "Forbidden: this session reached its time limit");
    else if (rc < 0)
        client_send_error(c, 500, "Internal Server Error");
    return rc == 0;
}

/* ---- a session's login: its first playlist request is authenticated as a listener's GET ---- */

/* The login passed: the session begins with it and its playlist is answered. */
void hls_admit_login_done(conn_t *c, hls_t *h, hls_login_t *login)
{
    const http_request_t *req = client_of(c)->req;
    if (hls_admit_poll(c, req, h, login))
        hls_playlists_answer_session(c, req, h);
}

/* URL authentication answered for c: 1 if it accepted (its user goes to the access log),
 * else 0 with the listener's refusal sent and s freed. */
int hls_admit_url_accepted(conn_t *c, auth_url_session_t *s)
{
    if (!s->accepted) {
        auth_url_send_refusal(c, s);
        auth_url_session_free(s);
        return 0;
    }
    if (s->user) {
        free(client_of(c)->log_user);
        client_of(c)->log_user = str_dup(s->user);
    }
    return 1;
}

/* Starts the login of the listener on c (req) of `name`, whose block mc has authentication:
 * URL authentication (url_done runs with the answer, parked meanwhile or at once), else
 * htpasswd (user_done runs once verified); refusals are answered as a listener's. 1 when
 * there is no authentication to pass after all: the caller goes on. */
int hls_admit_login_start(conn_t *c, const http_request_t *req, const mount_conf_t *mc,
                          const char *name, auth_url_resume_fn url_done,
                          auth_admitted_fn user_done)
{
    if (!auth_url_enabled(mc))
        return auth_listener_begin(c, req, name, user_done);
    auth_url_session_t *s = NULL;
    switch (auth_url_listener_add(c, mc, name, req, url_done, &s)) {
    case AUTH_URL_PARKED:
        break;
    case AUTH_URL_ACCEPTED:
        url_done(c, s);
        break;
    case AUTH_URL_BUSY:
        client_send_error(c, 403, "Forbidden: busy, please try again later");
        break;
    case AUTH_URL_FAILED:
        client_send_error(c, 500, "Internal Server Error");
        break;
    }
    return 0;
}

/* URL authentication answered (on c's worker), or let in at once (no listener_add URL). */
static void url_login_resumed(conn_t *c, auth_url_session_t *s)
{
    hls_t *h = hls_route_window_of(c);
    if (!h) {
        auth_url_session_free(s);
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    if (!hls_admit_url_accepted(c, s))
        return;
    /* a preroll the auth server named is played first instead of the mount's intro */
    hls_login_t login = {.url = s, .user_name = s->user, .time_limit_s = s->timelimit,
                         .intro = s->preroll};
    hls_admit_login_done(c, h, &login);
}

/* The htpasswd file let the listener in (on c's worker): the user's place among the mount's
 * users, which auth_listener_begin gave the connection to end, is the session's now. */
static void user_login_verified(conn_t *c, const char *mount)
{
    (void)mount;
    client_t *cl = client_of(c);
    hls_t *h = hls_route_window_of(c);
    hls_login_t login = {.user = cl->on_end ? cl->on_end_arg : NULL, .user_name = cl->log_user};
    cl->on_end = NULL;
    cl->on_end_arg = NULL;
    if (!h) {
        auth_session_end(login.user);
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    hls_admit_login_done(c, h, &login);
}

/* Authenticates the first playlist request of a session of h as a listener of `name` (mc its
 * block): parked while the auth server or the verifier thread decides, refused as a listener
 * is, or let in (login_done). */
static void login_begin(conn_t *c, const http_request_t *req, hls_t *h, const mount_conf_t *mc,
                        const char *name)
{
    if (hls_admit_login_start(c, req, mc, name, url_login_resumed, user_login_verified)) {
        hls_login_t none = {0}; /* the authentication went away (a reload) */
        hls_admit_login_done(c, h, &none);
    }
}

/* Bytes sent to the session c belongs to (see hls_session_add_bytes): 1 if it has one. */
int hls_admit_count(conn_t *c, const http_request_t *req, hls_t *h, uint64_t bytes)
{
    static __thread char agent[HTTP_MAX_HEAD_BYTES];
    char token[HTTP_MAX_HEAD_BYTES];
    hls_client_t who = {.ip = c->ip, .agent = hls_route_header(req, "user-agent", agent),
                        .conn_id = c->id, .token = request_token(req, token)};
    return hls_session_add_bytes(h, &who, bytes);
}

/* May the request on c have a piece of h (see hls_route_internal.h)? */
int hls_admit_piece(conn_t *c, const http_request_t *req, hls_t *h, int *private_)
{
    static log_ratelimit_t refused_log;
    *private_ = 0;
    if (!hls_sessions_wanted(h->name))
        return 1; /* a CDN's origin: hls_offered serves no mount with authentication so */
    hls_name_t login_buf;
    const char *login_name;
    const mount_conf_t *mc = login_conf(h, login_buf, &login_name);
    static __thread char agent[HTTP_MAX_HEAD_BYTES];
    char token[HTTP_MAX_HEAD_BYTES];
    hls_client_t who = {.ip = c->ip, .agent = hls_route_header(req, "user-agent", agent),
                        .conn_id = c->id, .token = request_token(req, token),
                        .login = mc ? login_name : NULL};
    *private_ = mc != NULL;
    int rc = hls_session_piece(h, &who, req->method == HTTP_METHOD_GET);
    if (rc == 0)
        return 1;
    if (rc == -ENOSPC) {
        client_send_error(c, 403, "Forbidden: too many listeners");
        return 0;
    }
    char esc[512];
    log_info_limited(&refused_log, 10000, "hls: %s refused a piece of %s: %s", CIDR_SHOWN(c->ip),
                     escape_log_utf8(esc, sizeof(esc), h->name, strlen(h->name)),
                     rc == -EPERM ? "its session was ended" : who.token ?
                     "its session is unknown, over, or another address's" : "no session named");
    client_send_error(c, 403, rc == -EPERM ? "Forbidden: this session was ended"
                                           : "Forbidden: this stream's HLS answers only within "
                                             "a logged-in session");
    return 0;
}
