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
#include "core/url.h"
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

/* "&<listener-id-param>=<id>" (encoded) when the request names a listener id, for the media
 * playlist's URL: the session begins with it (its listener key); tail stays empty else. */
static int listener_id_tail(const hls_request_t *r, buf_t *tail)
{
    const char *param = server_config()->listener_id_param;
    char id[257];
    if (!param || !r->http->query ||
        !url_query_value(r->http->query, r->http->query_len, param, id, sizeof(id)) || !id[0])
        return 0;
    buf_t form = BUF_INIT;
    int rc = url_form_append(&form, param, id) < 0 || buf_append_char(tail, '&') < 0 ||
             buf_append(tail, form.data, form.len) < 0 ? -ENOMEM : 0;
    buf_free(&form);
    return rc;
}

void hls_admit_multivariant(const hls_request_t *r)
{
    /* a new session: past its share, or full (a full mount refuses a session at its first
     * media playlist), this server sends it to a sibling, where it begins */
    if (redirect_admit(r->c, r->http, r->mount, REDIRECT_SPREAD | REDIRECT_FULL))
        return;
    char token[HLS_TOKEN_LEN + 1];
    buf_t out = BUF_INIT, tail = BUF_INIT;
    int rc = hls_token_issue(r->mount, token);
    if (rc == 0)
        rc = listener_id_tail(r, &tail);
    if (rc == 0 && r->window)
        rc = hls_multivariant(r->window, &out, token, tail.data);
    else if (rc == 0) /* a mount not served yet: what its stream is comes with its window */
        rc = buf_appendf(&out, "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                         "#EXT-X-STREAM-INF:BANDWIDTH=320000\nhls.m3u8?session=%s%s\n", token,
                         tail.data ? tail.data : "");
    buf_free(&tail);
    if (rc < 0) {
        buf_free(&out);
        client_send_error(r->c, 500, "Internal Server Error");
        return;
    }
    reply_send(r->c, r->http, 200, PLAYLIST_TYPE, out.data, out.len,
               "Cache-Control: no-cache, no-store\r\nAccess-Control-Allow-Origin: *\r\n");
    buf_free(&out);
}

const mount_conf_t *hls_admit_login_of(hls_request_t *r)
{
    if (r->login_known)
        return r->login_conf;
    r->login = hls_session_login_mount(r->window, r->login_buf,
                                       r->login_buf ? sizeof(hls_name_t) : 0);
    /* the window's own name (the usual case): its block is the request's, looked up once */
    int own = r->login && strcmp(r->login, r->mount) == 0;
    const mount_conf_t *mc = own ? r->conf
                             : r->login ? config_find_mount(server_config(), r->login) : NULL;
    if (own)
        r->login = r->mount; /* kept as long as the window */
    r->login_conf = mc && mc->auth ? mc : NULL;
    r->login_known = 1;
    return r->login_conf;
}

int hls_admit_protected(hls_request_t *r)
{
    return hls_admit_login_of(r) != NULL;
}

/* Who r's request is, as the sessions see it; login: the mount whose login covers the window
 * (NULL: an open one). */
static hls_client_t client_of_request(const hls_request_t *r, const char *login)
{
    return (hls_client_t){.ip = r->c->ip, .agent = r->agent, .agent_len = r->agent_len,
                          .referer = r->referer, .referer_len = r->referer_len,
                          .path = r->http->path, .path_len = r->http->path_len,
                          .conn_id = r->c->id, .token = hls_request_token(r), .login = login,
                          .query = r->http->query, .query_len = r->http->query_len,
                          .hint = (hls_sess_hint_t *)&r->hint};
}

static void login_begin(hls_request_t *r, const mount_conf_t *mc, const char *name);

/* The session a media playlist request belongs to goes on, or begins (on a mount with listener
 * authentication, with login: the first request of a session is authenticated, login NULL,
 * and comes back here once let in): 1, else the request was answered or waits for its
 * login. */
int hls_admit_poll(hls_request_t *r, hls_login_t *login)
{
    if (!r->sessions)
        return 1;
    if (r->token_arg == HLS_ARG_ABSENT) {
        hls_admit_multivariant(r);
        return 0;
    }
    const mount_conf_t *mc = hls_admit_login_of(r);
    hls_client_t who = client_of_request(r, mc ? r->login : NULL);
    const char *token = hls_request_token(r);
    int rc = !token ? -EINVAL
             : !r->login ? -ENOMEM
             : mc || login ? hls_session_poll_login(r->window, token, &who, login)
                           : hls_session_poll(r->window, token, &who, 0);
    conn_t *c = r->c;
    if (rc == 0) {
        client_skip_log(c); /* the session's own line says it all when it ends */
        conn_mark_carrier(c); /* it and the session count once in <clients> */
    }
    else if (rc == -ENOENT)
        login_begin(r, mc, r->login); /* its first request: a listener's login */
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
void hls_admit_login_done(hls_request_t *r, hls_login_t *login)
{
    if (hls_admit_poll(r, login))
        hls_playlists_answer_session(r);
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

/* Starts the login of r's listener of `name`, whose block mc has authentication: URL
 * authentication (url_done runs with the answer, parked meanwhile or at once), else htpasswd
 * (user_done runs once verified); refusals are answered as a listener's. r is held with its
 * connection meanwhile. 1 when there is no authentication to pass after all: the caller goes
 * on (nothing held). */
int hls_admit_login_start(const hls_request_t *r, const mount_conf_t *mc, const char *name,
                          auth_url_resume_fn url_done, auth_admitted_fn user_done)
{
    conn_t *c = r->c;
    if (hls_request_hold(c, r) < 0) {
        client_send_error(c, 500, "Internal Server Error");
        return 0;
    }
    if (!auth_url_enabled(mc)) {
        if (!auth_listener_begin(c, r->http, name, user_done))
            return 0;
        hls_request_t back;
        hls_request_take(c, &back, NULL); /* no authentication after all: r goes on */
        return 1;
    }
    auth_url_session_t *s = NULL;
    switch (auth_url_listener_add(c, mc, name, r->http, url_done, &s)) {
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

/* URL authentication answered (on c's worker), or let in at once (no listener_add URL): the
 * request held with c goes on, on the window it asked for. */
static void url_login_resumed(conn_t *c, auth_url_session_t *s)
{
    hls_name_t login_buf;
    hls_request_t r;
    if (!hls_request_take(c, &r, login_buf)) { /* cannot happen: login_begin held it */
        auth_url_session_free(s);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    if (!hls_admit_url_accepted(c, s))
        return;
    /* a preroll the auth server named is played first instead of the mount's intro */
    hls_login_t login = {.url = s, .user_name = s->user, .time_limit_s = s->timelimit,
                         .intro = s->preroll};
    hls_admit_login_done(&r, &login);
}

/* The htpasswd file let the listener in (on c's worker): the user's place among the mount's
 * users, which auth_listener_begin gave the connection to end, is the session's now. */
static void user_login_verified(conn_t *c, const char *mount)
{
    (void)mount;
    client_t *cl = client_of(c);
    hls_login_t login = {.user = cl->on_end ? cl->on_end_arg : NULL, .user_name = cl->log_user};
    cl->on_end = NULL;
    cl->on_end_arg = NULL;
    hls_name_t login_buf;
    hls_request_t r;
    if (!hls_request_take(c, &r, login_buf)) { /* cannot happen: login_begin held it */
        auth_session_end(login.user);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    hls_admit_login_done(&r, &login);
}

/* Authenticates the first playlist request of a session of r's window as a listener of
 * `name` (mc its block): parked while the auth server or the verifier thread decides, refused
 * as a listener is, or let in (login_done). */
static void login_begin(hls_request_t *r, const mount_conf_t *mc, const char *name)
{
    if (hls_admit_login_start(r, mc, name, url_login_resumed, user_login_verified)) {
        hls_login_t none = {0}; /* the authentication went away (a reload) */
        hls_admit_login_done(r, &none);
    }
}

int hls_admit_count(const hls_request_t *r, uint64_t bytes)
{
    hls_client_t who = client_of_request(r, NULL);
    return hls_session_add_bytes(r->window, &who, bytes);
}

/* May the request have a piece of its window (see hls_route_internal.h)? */
int hls_admit_piece(hls_request_t *r)
{
    static log_ratelimit_t refused_log;
    r->private_ = 0;
    if (!r->sessions)
        return 1; /* a CDN's origin: hls_offered serves no mount with authentication so */
    const mount_conf_t *mc = hls_admit_login_of(r);
    hls_client_t who = client_of_request(r, mc ? r->login : NULL);
    r->private_ = mc != NULL;
    conn_t *c = r->c;
    hls_t *h = r->window;
    int rc = hls_session_piece(h, &who, r->http->method == HTTP_METHOD_GET);
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
