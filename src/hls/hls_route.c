/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_route: the HLS URLs of a mount (see hls_route.h): <mount>/hls.m3u8, the media playlist,
 * <mount>/hls/<seq>.<ext> and <mount>/hls/<seq>.<part>.<ext>, segments and parts, an Opus
 * mount's init segments <mount>/hls/<id>.init.mp4, and intro segments under
 * <mount>/hls/intro/. This file reads the URL and the request and finds the window; an
 * on-demand relay's playlist starts its relay here. What answers each is in the files named
 * in hls_route_internal.h. The window itself (cutting, waiting lists) is hls.c.
 */
#include "hls/hls_route.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_url.h"
#include "conf/config.h"
#include "core/url.h"
#include "http/alias.h"
#include "http/client.h"
#include "net/conn.h"
#include "hls/hls_route_internal.h"
#include "stream/fallback.h"
#include "hls/hls.h"
#include "hls/hls_intro.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"
#include "stream/mount.h"
#include "upstream/relay_park.h"

/* Reads "<digits>" into *v; returns the end or NULL. */
const char *hls_route_number(const char *p, uint64_t *v)
{
    if (*p < '0' || *p > '9')
        return NULL;
    uint64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            return NULL;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *v = n;
    return p;
}

/* Copies the first len bytes of path into name as a C string: 1, or 0 when they do not fit. */
static int name_of(hls_name_t name, const char *path, size_t len)
{
    if (len >= sizeof(hls_name_t))
        return 0;
    memcpy(name, path, len);
    name[len] = '\0';
    return 1;
}

/* 1 if path is an HLS URL of a mount (u filled; its mount copied into name unless name is
 * NULL: a question of whether it is one needs no copy), else 0. */
static int parse_url(const char *path, hls_url_t *u, char *name)
{
    static const char playlist[] = "/hls.m3u8";
    size_t len = strlen(path), pl = sizeof(playlist) - 1;
    memset(u, 0, sizeof(*u));
    u->part = -1;
    if (len > pl + 1 && strcmp(path + len - pl, playlist) == 0) {
        u->playlist = 1;
        u->mount = name;
        return !name || name_of(name, path, len - pl);
    }
    const char *dir = NULL;
    for (const char *p = strstr(path, "/hls/"); p; p = strstr(p + 1, "/hls/"))
        dir = p;
    if (!dir || dir == path)
        return 0;
    uint64_t part;
    const char *p = hls_route_number(dir + 5, &u->seq);
    if (p && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        if (!(p = hls_route_number(p + 1, &part)) || part >= HLS_MAX_PARTS)
            return 0;
        u->part = (int)part;
    }
    if (p && u->part < 0 && strcmp(p, ".init.mp4") == 0) {
        u->init = 1;
        p += sizeof(".init") - 1;
    }
    /* a static string: a parked request answers again after the path is gone */
    static const char *const exts[] = {"mp3", "aac", "mp4"};
    for (size_t i = 0; p && *p == '.' && !u->ext && i < sizeof(exts) / sizeof(exts[0]); i++)
        if (strcmp(p + 1, exts[i]) == 0)
            u->ext = exts[i];
    if (!u->ext)
        return 0;
    u->mount = name;
    return !name || name_of(name, path, (size_t)(dir - path));
}

/* The window of mount name `name` served by live mount m (the caller's reference is taken):
 * m itself, or the live fallback of a mount of that name with no source. NULL with the error
 * answered. */
static hls_t *window_for(conn_t *c, const http_request_t *req, const char *name, mount_t *m)
{
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
        client_send_error(c, status[why < 0 ? 0 : why], text[why < 0 ? 0 : why]);
        return NULL;
    }
    hls_t *h = hls_touch_as(name, m);
    mount_unref(m);
    if (!h)
        client_send_error(c, 500, "Internal Server Error");
    return h;
}

/* A query parameter of req, decoded into a buffer of the thread's (good until the next call
 * on it; a query is shorter than a request head), NULL if absent or malformed: a request asks
 * for up to four, without an allocation each. */
const char *hls_route_query(const http_request_t *req, const char *name)
{
    static __thread char value[HTTP_MAX_HEAD_BYTES];
    return req->query ? url_query_value(req->query, req->query_len, name, value, sizeof(value))
                      : NULL;
}

/* The value of header `name` of req as a C string in buf (HTTP_MAX_HEAD_BYTES: a value is
 * shorter than its head), or NULL without it. */
const char *hls_route_header(const http_request_t *req, const char *name, char *buf)
{
    const http_header_t *h = http_find_header(req, name);
    if (!h || h->value_len >= HTTP_MAX_HEAD_BYTES)
        return NULL;
    memcpy(buf, h->value, h->value_len);
    buf[h->value_len] = '\0';
    return buf;
}

/* Reads a decimal query parameter: 1 found (*v), 0 absent, -1 malformed. */
int hls_route_query_number(const http_request_t *req, const char *name, uint64_t *v)
{
    const char *s = hls_route_query(req, name);
    if (!s)
        return 0;
    const char *end = hls_route_number(s, v);
    return end && *end == '\0' ? 1 : -1;
}

/* The window a request of c asked for: the mount in its path (a login resumed later). */
hls_t *hls_route_window_of(conn_t *c)
{
    const http_request_t *req = client_of(c)->req;
    size_t len;
    char *dec = url_decode(req->path, req->path_len, 0, &len);
    char *path = dec && dec[0] == '/' ? url_normalize_path(dec, len) : NULL;
    const char *alias = path ? alias_lookup(c, path) : NULL;
    hls_url_t u;
    hls_name_t name;
    int n;
    const char *p = alias ? alias : path;
    hls_t *h = p && (parse_url(p, &u, name) || hls_route_parse_intro(p, name, &n)) ? hls_find(name)
                                                                          : NULL;
    free(dec);
    free(path);
    return h;
}

/* If path is an intro segment's URL: 1 with its mount (copied into name unless it is NULL)
 * and number (HLS_INTRO_INIT for an init segment), else 0. */
int hls_route_parse_intro(const char *path, char *name, int *n)
{
    static const char dir[] = "/hls/intro/";
    const char *d = strstr(path, dir);
    const char *at = d && d != path ? d + sizeof(dir) - 1 : NULL;
    uint64_t v = 0;
    const char *p = at && strcmp(at, "init.mp4") == 0 ? "" : at ? hls_route_number(at, &v) : NULL;
    if (!p || v >= HLS_INTRO_MAX_SEGS ||
        (*p && strcmp(p, ".mp3") != 0 && strcmp(p, ".aac") != 0 && strcmp(p, ".mp4") != 0))
        return 0;
    *n = *p ? (int)v : HLS_INTRO_INIT;
    return !name || name_of(name, path, (size_t)(d - path));
}

/* Answers an HLS URL of mount name `name` served by live mount m (its reference taken). */
static void answer(conn_t *c, const http_request_t *req, const hls_url_t *u, const char *name,
                   mount_t *m)
{
    hls_t *h = window_for(c, req, name, m);
    if (!h)
        return;
    if (u->playlist) {
        hls_playlists_answer(c, req, h);
        return;
    }
    hls_url_t admitted = *u;
    if (hls_admit_piece(c, req, h, &admitted.private_))
        hls_pieces_answer(c, req, h, &admitted);
}

/* ---- an on-demand relay's playlist: the session's login, then the relay ---- */

/* The on-demand relay a playlist request started is live (the request was kept). A login
 * that came first rode on the connection, as a waiting listener's does: the session takes
 * it. */
static void relay_live(conn_t *c, mount_t *m, unsigned time_limit_s)
{
    client_t *cl = client_of(c);
    const http_request_t *req = cl->req;
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
    hls_t *h = window_for(c, req, m->name, m);
    if (!h)
        hls_login_drop(&login);
    else if (logged_in)
        hls_admit_login_done(c, h, &login);
    else
        hls_playlists_answer(c, req, h);
}

/* The request waits for the relay (its login, if any, held by the connection meanwhile:
 * ended with it if it leaves first). */
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
static void relay_start(conn_t *c, const http_request_t *req, const char *name)
{
    const mount_conf_t *mc = config_find_mount(server_config(), name);
    const char *token = hls_sessions_wanted(name) ? hls_route_query(req, "session") : NULL;
    if (hls_sessions_wanted(name) && !token) {
        /* the multivariant playlist: a token, and the relay starts with the session */
        hls_admit_multivariant(c, req, name, NULL);
        return;
    }
    if (!(mc && mc->auth))
        token = NULL;
    hls_t *h = token ? hls_find(name) : NULL;
    int login = token && hls_token_form(token) && !(h && hls_session_known(h, token));
    if (!login || hls_admit_login_start(c, req, mc, name, relay_url_resumed, relay_user_verified))
        relay_wait(c, name, 0);
}

const char *hls_route_first_playlist(const http_request_t *req, const char *path, char *name)
{
    hls_url_t u;
    return parse_url(path, &u, name) && u.playlist && !hls_route_query(req, "session") ? name
                                                                                    : NULL;
}

int hls_route_names(const char *path)
{
    hls_url_t u;
    int n;
    return parse_url(path, &u, NULL) || hls_route_parse_intro(path, NULL, &n);
}

int hls_route(conn_t *c, const http_request_t *req, const char *path)
{
    hls_url_t u;
    hls_name_t name;
    int intro_n;
    if (hls_route_parse_intro(path, name, &intro_n)) {
        mount_t *m = mount_find(name);
        if (!m)
            m = fallback_for_sourceless(name);
        hls_t *h = m ? window_for(c, req, name, m) : NULL;
        int private_;
        if (h && hls_admit_piece(c, req, h, &private_))
            hls_intros_answer(c, req, h, private_);
        return m != NULL;
    }
    if (!parse_url(path, &u, name))
        return 0;
    int on_demand = relay_is_on_demand(u.mount);
    mount_t *m = mount_find(u.mount);
    /* a mount with no source: its fallback serves its HLS, as it would its listeners */
    if (!m && !on_demand)
        m = fallback_for_sourceless(u.mount);
    /* an on-demand relay's playlist starts it, as a listener does (its segments and parts
     * come once it is live) */
    int start_relay = !m && on_demand && u.playlist && req->method == HTTP_METHOD_GET;
    if (m)
        answer(c, req, &u, u.mount, m);
    else if (start_relay)
        relay_start(c, req, u.mount);
    /* else not a live mount's: the URL is left to files and the other routes */
    return m || start_relay;
}
