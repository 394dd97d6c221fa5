/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_route: the HLS URLs of a mount (see hls_route.h): <mount>/hls.m3u8, the media playlist,
 * <mount>/hls/<seq>.<ext> and <mount>/hls/<seq>.<part>.<ext>, segments and parts, an Opus
 * mount's init segments <mount>/hls/<id>.init.mp4, and intro segments under
 * <mount>/hls/intro/. This file makes the request value (read by hls_request.c), looks the
 * mount's block and the live mount up once, finds the window and hands the value on; an
 * on-demand relay's playlist starts its relay here, the value held with its connection until
 * the relay is live. What answers each is in the files named in hls_route_internal.h. The
 * window itself (cutting, waiting lists) is hls.c.
 */
#include "hls/hls_route.h"

#include "auth/auth_url.h"
#include "conf/config.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "hls/hls_route_internal.h"
#include "stream/fallback.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_session.h"
#include "stream/mount.h"
#include "upstream/relay_park.h"

/* The window of mount name r->mount served by live mount m (the caller's reference is taken):
 * m itself, or the live fallback of a mount of that name with no source. NULL with the error
 * answered. */
hls_t *hls_route_window(hls_request_t *r, mount_t *m)
{
    const http_request_t *req = r->http;
    int why = req->method != HTTP_METHOD_GET && req->method != HTTP_METHOD_HEAD ? -1
                                                                                : hls_offered(m);
    if (why != HLS_OFFERED) {
        static const int status[] = {405, 404, 415, 403, 503};
        static const char *const text[] = {
            "Method Not Allowed",
            "HLS is not enabled on this mount",
            "Unsupported Media Type: HLS needs an MP3 or AAC (ADTS) stream, or Ogg Opus",
            "Forbidden: HLS without sessions is not served on mounts with listener "
            "authentication",
            "Service Unavailable: the stream's codec headers have not come yet",
        };
        mount_unref(m);
        client_send_error(r->c, status[why < 0 ? 0 : why], text[why < 0 ? 0 : why]);
        return NULL;
    }
    hls_t *h = hls_touch_as(r->mount, m);
    mount_unref(m);
    if (!h) {
        client_send_error(r->c, 500, "Internal Server Error");
        return NULL;
    }
    r->window = h;
    r->mount = h->name; /* the same name, kept as long as the window */
    return h;
}

/* Answers r, an HLS URL of a mount served by live mount m (its reference taken). */
static void answer(hls_request_t *r, mount_t *m)
{
    if (!hls_route_window(r, m))
        return;
    if (r->url.playlist) {
        hls_playlists_answer(r);
    } else if (r->url.ad) {
        hls_pieces_answer(r); /* a public ad's: no login, nothing of the mount's */
    } else if (hls_admit_piece(r)) {
        if (r->url.intro)
            hls_intros_answer(r);
        else
            hls_pieces_answer(r);
    }
}

/* ---- an on-demand relay's playlist: the session's login, then the relay ---- */

/* The on-demand relay a playlist request started is live (the request was held with its
 * connection meanwhile). A login that came first rode on the connection, as a waiting
 * listener's does: the session takes it. */
static void relay_live(conn_t *c, mount_t *m, unsigned time_limit_s)
{
    client_t *cl = client_of(c);
    hls_login_t login = {.time_limit_s = time_limit_s, .user_name = cl->log_user};
    int logged_in = cl->on_end != NULL;
    if (cl->on_end == auth_url_session_end) {
        login.url = cl->on_end_arg;
        login.intro = login.url->preroll;
    } else if (cl->on_end) {
        login.user = cl->on_end_arg; /* htpasswd's place among the mount's users */
    }
    cl->on_end = NULL;
    cl->on_end_arg = NULL;
    hls_name_t login_buf;
    hls_request_t r;
    if (!hls_request_take(c, &r, login_buf)) { /* cannot happen: relay_wait held it */
        mount_unref(m);
        hls_login_drop(&login);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    r.mount = m->name; /* the relay's mount: the name the request asked for */
    if (!hls_route_window(&r, m))
        hls_login_drop(&login);
    else if (logged_in)
        hls_admit_login_done(&r, &login);
    else
        hls_playlists_answer(&r);
}

/* The request c holds waits for the relay of `name` (its login, if any, held by the
 * connection meanwhile: ended with it if it leaves first). */
static void relay_wait(conn_t *c, const char *name, unsigned time_limit_s)
{
    if (!relay_park_listener(c, name, time_limit_s, relay_live))
        client_send_error(c, 404, "The file you requested could not be found");
}

static void relay_url_resumed(conn_t *c, auth_url_session_t *s)
{
    if (!hls_admit_url_accepted(c, s))
        return;
    client_t *cl = client_of(c);
    cl->on_end = auth_url_session_end; /* listener_remove if it leaves before the relay came */
    cl->on_end_arg = s;
    relay_wait(c, s->mount_name, s->timelimit);
}

static void relay_user_verified(conn_t *c, const char *mount)
{
    relay_wait(c, mount, 0);
}

/* An on-demand relay's playlist: a session's first request on a mount with listener
 * authentication logs in before the relay is started (a refused one never makes it
 * connect, as for a listener), then waits for the relay. */
static void relay_start(hls_request_t *r)
{
    const mount_conf_t *mc = r->conf;
    if (r->sessions && r->token_arg == HLS_ARG_ABSENT) {
        /* the multivariant playlist: a token, and the relay starts with the session */
        hls_admit_multivariant(r);
        return;
    }
    const char *token = r->sessions && mc && mc->auth ? hls_request_token(r) : NULL;
    hls_t *h = token ? hls_find(r->mount) : NULL;
    int login = token && !(h && hls_session_known(h, token));
    /* the request is held with its connection: the login (which holds it itself) and the
     * relay give it back */
    if (login && !hls_admit_login_start(r, mc, r->mount, relay_url_resumed, relay_user_verified))
        return;
    if (hls_request_hold(r->c, r) < 0) {
        client_send_error(r->c, 500, "Internal Server Error");
        return;
    }
    relay_wait(r->c, r->mount, 0);
}

const char *hls_route_first_playlist(const http_request_t *req, const char *path, char *name)
{
    hls_request_t r;
    return hls_request_read(&r, NULL, req, path, name) && r.url.playlist &&
                   r.token_arg == HLS_ARG_ABSENT ? name : NULL;
}

int hls_route_names(const char *path)
{
    return hls_request_names(path);
}

/* The live mount that serves r's mount name: its own, else (a mount with no source) its
 * fallback, as it would serve its listeners; NULL for none. */
static mount_t *serving(const hls_request_t *r, int on_demand)
{
    mount_t *m = mount_find(r->mount);
    return m || on_demand ? m : fallback_for_sourceless(r->mount);
}

int hls_route(conn_t *c, const http_request_t *req, const char *path)
{
    hls_name_t name, login_buf;
    hls_request_t r;
    if (!hls_request_read(&r, c, req, path, name))
        return 0;
    r.login_buf = login_buf;
    const config_t *cfg = server_config();
    r.conf = config_find_mount(cfg, r.mount);
    r.sessions = hls_sessions_wanted_conf(cfg, r.mount, r.conf);
    /* an intro segment's mount: its own or its fallback, whatever its relay does */
    int on_demand = !r.url.intro && relay_is_on_demand(r.mount);
    mount_t *m = serving(&r, on_demand);
    /* an on-demand relay's playlist starts it, as a listener does (its segments and parts
     * come once it is live) */
    int start_relay = !m && on_demand && r.url.playlist && req->method == HTTP_METHOD_GET;
    if (m) {
        /* players' requests come close together (a part's waiters ask again at once): the
         * next may wait a moment for the worker to take several in one turn */
        worker_gather(c->worker);
        answer(&r, m);
    } else if (start_relay)
        relay_start(&r);
    /* else not a live mount's: the URL is left to files and the other routes */
    return m || start_relay;
}
