/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dispatch: routing a parsed request to its role (see dispatch.h).
 *
 * Order: the server's own URLs (admin, *.xsl pages, /metrics, the front page) are answered
 * before mounts, so a mount can never shadow them; then live mounts; then files and
 * playlists. A source may not create a mount on a name the server answers itself.
 */
#include "router/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/access.h"
#include "auth/auth.h"
#include "auth/auth_url.h"
#include "auth/guard.h"
#include "conf/config.h"
#include "core/log.h"
#include "core/escape.h"
#include "core/str.h"
#include "core/url.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "router/hls_route.h"
#include "router/router.h"
#include "stats/history.h"
#include "stream/fallback.h"
#include "stream/fanout.h"
#include "stream/filemount.h"
#include "stream/hls.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/redirect.h"
#include "stream/relay.h"
#include "stream/shoutcast.h"
#include "stream/source.h"

static void answer_options(conn_t *c)
{
    static const char extra[] =
        "Access-Control-Allow-Origin: *\r\n"
        "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
        "Access-Control-Allow-Headers: Origin, Accept, Content-Type, Icy-MetaData, Range\r\n"
        "Access-Control-Expose-Headers: icy-metaint, icy-name, icy-description, icy-genre, "
        "icy-url, icy-br, icy-pub\r\n"
        "Access-Control-Max-Age: 86400\r\n"
        "Allow: GET, HEAD, OPTIONS, PUT, SOURCE\r\n";
    char head[2048];
    size_t n = response_head(head, sizeof(head), 204, NULL, -1, extra);
    client_of(c)->status = 204;
    conn_send(c, head, n, conn_linger_close);
}

/* The request path, percent-decoded and normalised; NULL if malformed. */
static char *request_path(const http_request_t *req)
{
    size_t dlen;
    char *dec = url_decode(req->path, req->path_len, 0, &dlen);
    char *path = dec && dec[0] == '/' ? url_normalize_path(dec, dlen) : NULL;
    free(dec);
    return path;
}

static void log_warn_limited_busy(conn_t *c)
{
    static log_ratelimit_t busy_log;
    log_info_limited(&busy_log, 10000, "auth: listener %s refused: too many waiting for the "
                     "auth server (%d)", c->ip, AUTH_URL_MAX_PENDING);
}

/* Hands s (URL authentication accepted the listener; NULL: none) to c: its user goes to the
 * access log, and a GET keeps it as the session whose end sends listener_remove; a HEAD has
 * no session (s freed). Returns the time limit the auth server set, 0 for none. */
static unsigned keep_session(conn_t *c, auth_url_session_t *s)
{
    client_t *cl = client_of(c);
    if (!s)
        return 0;
    if (s->user) {
        free(cl->log_user);
        cl->log_user = str_dup(s->user);
    }
    unsigned limit = s->timelimit;
    if (cl->req->method == HTTP_METHOD_HEAD) {
        auth_url_session_free(s);
        return 0;
    }
    cl->on_end = auth_url_session_end; /* listener_remove when it leaves */
    cl->on_end_arg = s;
    return limit;
}

/* Joins an admitted listener (URL authentication accepted it, s is its session or NULL). */
static void join(conn_t *c, mount_t *m, auth_url_session_t *s)
{
    unsigned limit = keep_session(c, s);
    listener_start(c, client_of(c)->req, m); /* takes the reference */
    listener_set_time_limit(c, limit);
}

/* Lets in a listener URL authentication accepted for s->mount_name: at once if that mount is
 * live, else (an on-demand relay's mount) once its relay connected. */
static void admit_url_listener(conn_t *c, auth_url_session_t *s)
{
    mount_t *m = mount_find(s->mount_name);
    if (m) {
        join(c, m, s);
        return;
    }
    char *name = relay_is_on_demand(s->mount_name) ? str_dup(s->mount_name) : NULL;
    unsigned limit = name ? keep_session(c, s) : 0; /* listener_remove balances the add */
    if (!name)
        auth_url_session_free(s); /* the source left meanwhile */
    if (!name || !relay_park_listener(c, client_of(c)->req, name, limit))
        client_send_error(c, 404, "The file you requested could not be found");
    free(name);
}

/* The auth server answered for a parked listener (on its worker). */
static void url_auth_resumed(conn_t *c, auth_url_session_t *s)
{
    if (!s->accepted) {
        auth_url_send_refusal(c, s);
        auth_url_session_free(s);
        return;
    }
    admit_url_listener(c, s);
}

/* URL authentication of a listener of `name`: it waits for the auth server (parked) or is let
 * in now. m is the live mount that serves it (its reference is taken), or NULL for an
 * on-demand relay's mount that is not live yet (its relay is started once the listener is
 * accepted, so a refused listener never makes it connect). */
static void url_auth_listener(conn_t *c, const http_request_t *req, const char *name,
                              mount_t *m, const mount_conf_t *mc)
{
    auth_url_session_t *s = NULL;
    auth_url_start_t r = auth_url_listener_add(c, mc, name, req, url_auth_resumed, &s);
    if (r == AUTH_URL_ACCEPTED && m) {
        join(c, m, s);
        return;
    }
    if (m)
        mount_unref(m); /* a waiting listener holds nothing but its connection */
    switch (r) {
    case AUTH_URL_PARKED:
        return;
    case AUTH_URL_ACCEPTED:
        admit_url_listener(c, s);
        return;
    case AUTH_URL_BUSY:
        log_warn_limited_busy(c);
        client_send_error(c, 403, "Forbidden: busy, please try again later");
        return;
    case AUTH_URL_FAILED:
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
}

/* A listener of `name` (the mount it asked for) whose password was verified joins what
 * serves that name now, as handle_get would have sent it: the mount if live, else an on-demand
 * relay's mount once its relay connected, else the fallback of a mount with no source; else
 * 404 (the source left meanwhile). */
static void listener_verified(conn_t *c, const char *name)
{
    static const char not_found[] = "The file you requested could not be found";
    const http_request_t *req = client_of(c)->req;
    mount_t *m = mount_find(name);
    if (m) {
        listener_start(c, req, m); /* takes the reference */
        return;
    }
    if (relay_is_on_demand(name)) {
        if (!relay_park_listener(c, req, name, 0))
            client_send_error(c, 404, not_found);
        return;
    }
    if ((m = fallback_for_sourceless(name))) {
        listener_start_for(c, req, m, name);
        return;
    }
    client_send_error(c, 404, not_found);
}

static void handle_get(conn_t *c, const http_request_t *req)
{
    char *path = request_path(req);
    if (!path) {
        client_send_error(c, 400, "Bad Request");
        return;
    }
    const char *alias = router_alias(c, path);
    const char *target = alias ? alias : path;
    /* <no-mount>: reachable as a fallback or a move's destination, never directly */
    const mount_conf_t *nm = config_find_mount(server_config(), target);
    if (nm && nm->no_mount && req->method != HTTP_METHOD_POST && !router_owns(target)) {
        free(path);
        client_send_error(c, 403, "Forbidden: mountpoint unavailable");
        return;
    }
    mount_t *m = req->method != HTTP_METHOD_POST && !router_owns(target)
                     ? mount_find(target)
                     : NULL;
    if (m) {
        free(path);
        const mount_conf_t *mc = config_find_mount(server_config(), m->name);
        if (auth_url_enabled(mc)) {
            url_auth_listener(c, req, m->name, m, mc);
            return;
        }
        if (auth_listener_begin(c, req, m->name, listener_verified))
            listener_start(c, req, m); /* takes the reference */
        else
            mount_unref(m); /* a listener being verified holds nothing but its connection */
        return;
    }
    if (req->method != HTTP_METHOD_POST && hls_route(c, req, target)) {
        free(path);
        return;
    }
    /* an on-demand relay's mount is not live until a listener asks for it */
    if (req->method != HTTP_METHOD_POST && !router_owns(target) && relay_is_on_demand(target)) {
        const mount_conf_t *mc = config_find_mount(server_config(), target);
        if (auth_url_enabled(mc))
            url_auth_listener(c, req, target, NULL, mc); /* the relay starts once accepted */
        else if (auth_listener_begin(c, req, target, listener_verified) &&
                 !relay_park_listener(c, req, target, 0))
            client_send_error(c, 404, "The file you requested could not be found");
        free(path);
        return;
    }
    /* a mount with no source whose <mount> names a live fallback serves that fallback */
    if (req->method != HTTP_METHOD_POST && !router_owns(target) &&
        (m = fallback_for_sourceless(target))) {
        const mount_conf_t *mc = config_find_mount(server_config(), target);
        if (auth_url_enabled(mc)) {
            url_auth_listener(c, req, m->name, m, mc); /* the auth server sees the mount that serves */
            free(path);
            return;
        }
        if (auth_listener_begin(c, req, target, listener_verified))
            listener_start_for(c, req, m, target);
        else
            mount_unref(m);
        free(path);
        return;
    }
    router_handle(c, req, path);
    free(path);
}

static void handle_source(conn_t *c, http_request_t *req, size_t head_len)
{
    char *path = request_path(req);
    const char *why = path ? router_refuses_mount(path) : NULL;
    if (why) {
        char esc[512];
        log_warn("source %s refused: mountpoint %s %s", c->ip,
                 escape_log_utf8(esc, sizeof(esc), path, strlen(path)), why);
        free(path);
        client_send_error(c, 403, "Forbidden: mountpoint name not allowed");
        return;
    }
    free(path);
    source_start(c, req, head_len);
}

static int admit_connection(conn_t *c)
{
    if (access_ip_allowed(c->ip))
        return 1;
    log_info("access: %s refused (allow-ip / deny-ip)", c->ip);
    return 0;
}

/* Access rules that need the request: the address behind a trusted proxy (it replaces c->ip
 * for logs, stats, listclients, auth and the IP rules; the socket's stays in peer), then the
 * IP rules again for it, then the agent. 1 to go on, else 403 sent. */
static int admit_request(conn_t *c, const http_request_t *req)
{
    client_t *cl = client_of(c);
    const char *peer = cl->peer[0] ? cl->peer : c->ip;
    char real[64];
    int named = access_proxy_trusted(peer) ? access_forwarded_for(req, real, sizeof(real)) : 0;
    if (named < 0) {
        static log_ratelimit_t conflict_log;
        log_info_limited(&conflict_log, 10000, "access: request through proxy %s refused: its "
                         "X-Forwarded-For and Forwarded headers name different clients", peer);
        client_send_error(c, 400, "Bad Request: conflicting forwarding headers");
        return 0;
    }
    if (named) {
        if (!cl->peer[0])
            snprintf(cl->peer, sizeof(cl->peer), "%s", c->ip);
        if (strcmp(real, c->ip) != 0)
            log_debug("access: %s forwards for %s", cl->peer, real);
        snprintf(c->ip, sizeof(c->ip), "%s", real);
        if (!access_ip_allowed(c->ip)) {
            log_info("access: %s (through proxy %s) refused (allow-ip / deny-ip)", c->ip,
                     cl->peer);
            client_send_error(c, 403, "Forbidden");
            return 0;
        }
    } else if (cl->peer[0]) {
        snprintf(c->ip, sizeof(c->ip), "%s", cl->peer); /* this request names no one else */
    }
    const http_header_t *ua = http_find_header(req, "user-agent");
    if (!access_agent_allowed(ua ? ua->value : NULL, ua ? ua->value_len : 0)) {
        char esc[512];
        log_info("access: %s refused: user agent %s is denied", c->ip,
                 ua ? escape_log_utf8(esc, sizeof(esc), ua->value, ua->value_len) : "(none)");
        client_send_error(c, 403, "Forbidden");
        return 0;
    }
    return 1;
}

/* A connection past <clients> (kept only because siblings are configured): a listener of a
 * mount a sibling has room for (GET, or HEAD: the answer a GET would get) is sent there,
 * anyone else refused. */
static void refuse_over_limit(conn_t *c, const http_request_t *req)
{
    int listener = req->method == HTTP_METHOD_GET || req->method == HTTP_METHOD_HEAD;
    char *path = listener ? request_path(req) : NULL;
    const char *alias = path ? router_alias(c, path) : NULL;
    int sent = path && redirect_listener(c, req, alias ? alias : path);
    free(path);
    if (sent)
        return;
    atomic_fetch_add(&server.stats.connections_refused, 1);
    client_send_error(c, 403, "Forbidden: connection limit reached");
}

static void dispatch_request(conn_t *c, http_request_t *req, size_t head_len)
{
    if (!admit_request(c, req))
        return;
    if (client_of(c)->over_limit) {
        refuse_over_limit(c, req);
        return;
    }
    switch (req->method) {
    case HTTP_METHOD_SOURCE:
    case HTTP_METHOD_PUT:
        handle_source(c, req, head_len);
        return;
    case HTTP_METHOD_GET:
    case HTTP_METHOD_HEAD:
    case HTTP_METHOD_POST:
        handle_get(c, req);
        return;
    case HTTP_METHOD_OPTIONS:
        answer_options(c);
        return;
    default:
        client_send_error(c, 405, "Method Not Allowed");
        return;
    }
}

void dispatch_init(void)
{
    static const client_handlers_t handlers = {
        .request = dispatch_request,
        .shoutcast = shoutcast_start,
        .admit = admit_connection,
    };
    client_set_handlers(&handlers);
    worker_set_accept(client_accept);
    fanout_register();
    source_register();
    relay_register();
    redirect_register();
    filemount_register();
    hls_register();
    history_register();
    guard_register();
}
