/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dispatch: routing a parsed request to its role (see dispatch.h).
 *
 * Order: the server's own URLs (admin, *.xsl pages, /metrics, the front page, the webroot's
 * files such as the web UI's scripts) are answered before mounts, so a mount can never shadow
 * them; then live mounts; then playlists. HLS URLs (<mount>/hls.m3u8, <mount>/hls/...) that
 * are no mount's own name go before all of these: they were never left to files, and a
 * player asks several a second. No mount may be created on a name the server
 * answers itself, however it comes to exist (router_refuses_mount, set as the mount layer's
 * name check).
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
#include "core/cidr.h"
#include "core/log.h"
#include "core/escape.h"
#include "core/str.h"
#include "core/url.h"
#include "http/alias.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "hls/hls_route.h"
#include "router/router.h"
#include "stats/history.h"
#include "stream/fallback.h"
#include "ads/ads.h"
#include "stream/fanout.h"
#include "stream/filemount.h"
#include "hls/hls.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "upstream/master.h"
#include "upstream/redirect.h"
#include "upstream/relay.h"
#include "upstream/relay_park.h"
#include "upgrade/upgrade.h"
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

/* The request path, percent-decoded and normalised into path (a buffer of the caller's: a
 * request is answered without an allocation for it); NULL if malformed. */
typedef char request_path_t[HTTP_MAX_URI + 1];
static const char *request_path(const http_request_t *req, request_path_t path)
{
    return url_request_path(req->path, req->path_len, path, sizeof(request_path_t));
}

static void log_warn_limited_busy(conn_t *c)
{
    static log_ratelimit_t busy_log;
    log_info_limited(&busy_log, 10000, "auth: listener %s refused: too many waiting for the "
                     "auth server (%d)", CIDR_SHOWN(c->ip), AUTH_URL_MAX_PENDING);
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

/* c becomes a listener of m (taking the reference; home as in listener_start), or, when m is
 * full, of what its <fallback-when-full> chain gives, else it is sent to a sibling server with
 * room (302), else refused (403). The decision is made here, not on the listener's write
 * path. */
static void listen_or_overflow(conn_t *c, const http_request_t *req, mount_t *m,
                               const char *home)
{
    mount_t *asked = home ? NULL : mount_ref(m); /* keeps m's name, the home of a fallback */
    const char *want = home ? home : m->name;
    for (int depth = 0; listener_start(c, req, m, depth ? want : home) == LISTENER_FULL;
         depth++) {
        mount_t *alt = depth < FALLBACK_MAX_DEPTH ? fallback_when_full(m) : NULL;
        if (alt && !listener_may_enter(want, client_of(c)->log_user, alt)) {
            static log_ratelimit_t closed_log;
            log_info_limited(&closed_log, 10000, "listener %s: %s is full and its "
                             "<fallback-when-full> %s has authentication it did not pass",
                             CIDR_SHOWN(c->ip), m->name, alt->name);
            mount_unref(alt); /* as if there were none: a sibling, else 403 */
            alt = NULL;
        }
        if (!alt) {
            if (!redirect_listener(c, req, want))
                client_send_error(c, 403, "Forbidden: max listeners reached");
            mount_unref(m);
            break;
        }
        log_debug("listener %llu: %s is full, serving its fallback %s",
                  (unsigned long long)c->id, m->name, alt->name);
        mount_unref(m);
        m = alt;
    }
    if (asked)
        mount_unref(asked);
}

/* A parked listener (an on-demand relay's) whose mount is live now. */
static void listen_parked(conn_t *c, mount_t *m, unsigned time_limit_s)
{
    listen_or_overflow(c, client_of(c)->req, m, NULL);
    listener_set_time_limit(c, time_limit_s);
}

/* Joins an admitted listener (URL authentication accepted it, s is its session or NULL). */
static void join(conn_t *c, mount_t *m, auth_url_session_t *s)
{
    listen_parked(c, m, keep_session(c, s));
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
    if (!name || !relay_park_listener(c, name, limit, listen_parked))
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
static void admit_listener(conn_t *c, const http_request_t *req, mount_t *m);
static int fallback_has_own_auth(const mount_conf_t *asked, const mount_t *fb);

static void listener_verified(conn_t *c, const char *name)
{
    static const char not_found[] = "The file you requested could not be found";
    const http_request_t *req = client_of(c)->req;
    mount_t *m = mount_find(name);
    if (m) {
        listen_or_overflow(c, req, m, NULL); /* takes the reference */
        return;
    }
    if (relay_is_on_demand(name)) {
        if (!relay_park_listener(c, name, 0, listen_parked))
            client_send_error(c, 404, not_found);
        return;
    }
    if ((m = fallback_for_sourceless(name))) {
        if (fallback_has_own_auth(config_find_mount(server_config(), name), m))
            admit_listener(c, req, m); /* its own authentication too */
        else
            listen_or_overflow(c, req, m, name);
        return;
    }
    client_send_error(c, 404, not_found);
}

/* A listener asking for a live mount m (taking the reference): its authentication (URL auth,
 * htpasswd on the verifier threads), then listen_or_overflow. */
static void admit_listener(conn_t *c, const http_request_t *req, mount_t *m)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (auth_url_enabled(mc)) {
        url_auth_listener(c, req, m->name, m, mc);
        return;
    }
    if (auth_listener_begin(c, req, m->name, listener_verified))
        listen_or_overflow(c, req, m, NULL); /* takes the reference */
    else
        mount_unref(m); /* a listener being verified holds nothing but its connection */
}

/* A mount with no source (block asked) serves fallback fb: does fb keep listeners out that
 * the asked mount's own authentication would let in? Then a listener passes fb's, as one that
 * asked for fb (the same htpasswd file on both is passed once). */
static int fallback_has_own_auth(const mount_conf_t *asked, const mount_t *fb)
{
    return !auth_covers(asked, config_find_mount(server_config(), fb->name));
}

/* 1 if c's socket comes from a loopback address (not a forwarded one). */
static int from_loopback(conn_t *c)
{
    const client_t *cl = client_of(c);
    const char *ip = cl->peer ? cl->peer : c->ip;
    unsigned char a[16];
    cidr_t v4, v6;
    return cidr_addr_parse(ip, strlen(ip), a) == 0 && cidr_parse("127.0.0.0/8", 11, &v4) == 0 &&
           cidr_parse("::1/128", 7, &v6) == 0 && (cidr_match(&v4, a) || cidr_match(&v6, a));
}

/* An upgrade's old process feeding the TLS listeners it kept (upgrade.h upgrade_feed_claim):
 * a GET of live mount m from loopback with the token it was sent for m, good once. 1 when c
 * is that feed; 0 for anyone else: one without the header, and one whose token is wrong,
 * used, late or not from loopback (logged, and treated as if the header were absent). */
static int is_local_feed(conn_t *c, const http_request_t *req, const mount_t *m)
{
    static log_ratelimit_t refused;
    const http_header_t *h = http_find_header(req, "x-rimecast-feed");
    if (!h)
        return 0;
    if (req->method == HTTP_METHOD_GET && from_loopback(c) &&
        upgrade_feed_claim(m->name, h->value, h->value_len))
        return 1;
    char esc[512];
    log_warn_limited(&refused, 10000, "listener %s on %s: feed token refused (wrong, used, "
                     "expired or not from loopback): an ordinary listener", CIDR_SHOWN(c->ip),
                     escape_log_utf8(esc, sizeof(esc), m->name, strlen(m->name)));
    return 0;
}

/* 1 if a mount named name is live now. */
static int mount_is_live(const char *name)
{
    mount_t *m = mount_find(name);
    if (m)
        mount_unref(m);
    return m != NULL;
}

static void handle_get(conn_t *c, const http_request_t *req)
{
    request_path_t buf;
    const char *path = request_path(req, buf);
    if (!path) {
        client_send_error(c, 400, "Bad Request");
        return;
    }
    const char *alias = alias_lookup(c, path);
    const char *target = alias ? alias : path;
    /* <no-mount>: reachable as a fallback or a move's destination, never directly */
    const mount_conf_t *nm = config_find_mount(server_config(), target);
    /* An HLS URL that names no mount of its own is answered before the webroot lookup below
     * (a player polls several a second): HLS answers it whatever file has that name anyway. */
    if (req->method != HTTP_METHOD_POST && !(nm && nm->no_mount) && hls_route_names(target) &&
        !mount_is_live(target) && hls_route(c, req, target))
        return; /* its access-log fields were not copied: its session's line has them */
    client_keep_log(c); /* the roles below may read them, or free the request head */
    /* the server's own pages and files come first, whatever mount has that name */
    int may_be_mount = req->method != HTTP_METHOD_POST && !router_refuses_mount(target, 0);
    if (nm && nm->no_mount && may_be_mount) {
        client_send_error(c, 403, "Forbidden: mountpoint unavailable");
        return;
    }
    mount_t *m = may_be_mount ? mount_find(target) : NULL;
    if (m) {
        if (is_local_feed(c, req, m))
            listener_start_feed(c, req, m); /* no authentication, not counted */
        else if (redirect_admit(c, req, m->name, REDIRECT_SPREAD))
            mount_unref(m); /* past its share: a less loaded sibling takes it */
        else
            admit_listener(c, req, m);
        return;
    }
    if (req->method != HTTP_METHOD_POST && hls_route(c, req, target))
        return;
    /* an on-demand relay's mount is not live until a listener asks for it */
    if (may_be_mount && relay_is_on_demand(target)) {
        const mount_conf_t *mc = config_find_mount(server_config(), target);
        if (redirect_admit(c, req, target, REDIRECT_SPREAD))
            return; /* a sibling takes it: the relay does not start for it */
        if (auth_url_enabled(mc))
            url_auth_listener(c, req, target, NULL, mc); /* the relay starts once accepted */
        else if (auth_listener_begin(c, req, target, listener_verified) &&
                 !relay_park_listener(c, target, 0, listen_parked))
            client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    /* a mount with no source whose <mount> names a live fallback serves that fallback */
    if (may_be_mount && (m = fallback_for_sourceless(target))) {
        const mount_conf_t *mc = config_find_mount(server_config(), target);
        if (fallback_has_own_auth(mc, m))
            admit_listener(c, req, m); /* the fallback's own authentication */
        else if (auth_url_enabled(mc))
            url_auth_listener(c, req, m->name, m, mc); /* the auth server sees the mount that serves */
        else if (auth_listener_begin(c, req, target, listener_verified))
            listen_or_overflow(c, req, m, target);
        else
            mount_unref(m);
        return;
    }
    router_handle(c, req, path);
}

static void handle_source(conn_t *c, http_request_t *req, size_t head_len)
{
    client_keep_log(c); /* a source frees the request head */
    request_path_t buf;
    const char *path = request_path(req, buf);
    const char *why = path ? router_refuses_mount(path, 0) : NULL;
    if (why) {
        char esc[512];
        log_warn("source %s refused: mountpoint %s %s", CIDR_SHOWN(c->ip),
                 escape_log_utf8(esc, sizeof(esc), path, strlen(path)), why);
        client_send_error(c, 403, "Forbidden: mountpoint name not allowed");
        return;
    }
    source_start(c, req, head_len);
}

static int admit_connection(conn_t *c)
{
    if (access_ip_allowed(c->ip))
        return 1;
    log_info("access: %s refused (allow-ip / deny-ip)", CIDR_SHOWN(c->ip));
    return 0;
}

/* Access rules that need the request: the address behind a trusted proxy (it replaces c->ip
 * for logs, stats, listclients, auth and the IP rules; the socket's stays in peer), then the
 * IP rules again for it, then the agent. 1 to go on, else 403 sent. */
static int admit_request(conn_t *c, const http_request_t *req)
{
    client_t *cl = client_of(c);
    const char *peer = cl->peer ? cl->peer : c->ip;
    char real[CONN_IP_LEN];
    int named = access_proxy_trusted(peer) ? access_forwarded_for(req, real, sizeof(real)) : 0;
    if (named < 0) {
        static log_ratelimit_t conflict_log;
        log_info_limited(&conflict_log, 10000, "access: request through proxy %s refused: its "
                         "X-Forwarded-For and Forwarded headers name different clients",
                         CIDR_SHOWN(peer));
        client_send_error(c, 400, "Bad Request: conflicting forwarding headers");
        return 0;
    }
    if (named) {
        if (!cl->peer && !(cl->peer = strdup(c->ip))) {
            client_send_error(c, 500, "Internal Server Error");
            return 0;
        }
        if (strcmp(real, c->ip) != 0)
            log_debug("access: %s forwards for %s", CIDR_SHOWN(cl->peer), CIDR_SHOWN(real));
        snprintf(c->ip, sizeof(c->ip), "%s", real);
        if (!access_ip_allowed(c->ip)) {
            log_info("access: %s (through proxy %s) refused (allow-ip / deny-ip)",
                     CIDR_SHOWN(c->ip), CIDR_SHOWN(cl->peer));
            client_send_error(c, 403, "Forbidden");
            return 0;
        }
    } else if (cl->peer) {
        snprintf(c->ip, sizeof(c->ip), "%s", cl->peer); /* this request names no one else */
    }
    const http_header_t *ua = http_find_header(req, "user-agent");
    if (!access_agent_allowed(ua ? ua->value : NULL, ua ? ua->value_len : 0)) {
        char esc[512];
        log_info("access: %s refused: user agent %s is denied", CIDR_SHOWN(c->ip),
                 ua ? escape_log_utf8(esc, sizeof(esc), ua->value, ua->value_len) : "(none)");
        client_send_error(c, 403, "Forbidden");
        return 0;
    }
    return 1;
}

/* A connection past <clients> (kept only because siblings are configured): a listener of a
 * mount a sibling has room for (GET, or HEAD: the answer a GET would get; or an HLS player's
 * first playlist request) is sent there, anyone else refused. */
static void refuse_over_limit(conn_t *c, const http_request_t *req)
{
    int listener = req->method == HTTP_METHOD_GET || req->method == HTTP_METHOD_HEAD;
    request_path_t buf, hls_mount;
    const char *path = listener ? request_path(req, buf) : NULL;
    const char *alias = path ? alias_lookup(c, path) : NULL;
    const char *target = alias ? alias : path;
    const char *session_mount = target ? hls_route_first_playlist(req, target, hls_mount) : NULL;
    if (target && redirect_listener(c, req, session_mount ? session_mount : target))
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
    mount_set_name_check(router_refuses_mount);
    fanout_register();
    adbreak_register();
    ads_register();
    source_register();
    relay_register();
    master_register();
    redirect_register();
    filemount_register();
    hls_register();
    history_register();
    guard_register();
}
