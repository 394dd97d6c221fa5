/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shoutcast: the Shoutcast v1 source login on a shoutcast-compat socket (see shoutcast.h):
 * "password\r\n", our "OK2", then ICY headers and the stream. The parsing steps are
 * shoutcast_parse.h; here the connection reads, answers and becomes a source.
 * On a mount whose URL authentication has stream_auth, the auth server decides the password
 * (user "source") while the login is parked; its answer resumes it on its worker.
 */
#include "stream/shoutcast.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth_url.h"
#include "auth/guard.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "http/client.h"
#include "http/parser.h"
#include "net/conn.h"
#include "net/server.h"
#include "stream/shoutcast_parse.h"
#include "stream/source.h"


#define SHOUTCAST_MAX_HEAD 16384

/* Reads until the socket is drained (0) or the login buffer is full (1); < 0 on error/EOF. */
static int shoutcast_fill(conn_t *c)
{
    for (;;) {
        ssize_t n = conn_fill(c, SHOUTCAST_MAX_HEAD);
        if (n <= 0)
            return n == -E2BIG ? 1 : (int)n; /* full: parse what is there; more stays queued */
    }
}

/* Once the header block is complete, the connection becomes a source. With full set (the
 * login buffer filled up), a block still incomplete is refused, and a source that took over
 * reads the rest at once: the socket is edge-triggered and already signalled. */
static void shoutcast_headers(conn_t *c, int full)
{
    client_t *cl = client_of(c);
    const char *start = c->rbuf + cl->parsed_len;
    size_t hlen = shoutcast_headers_end(start, c->rlen - cl->parsed_len);
    if (!hlen) {
        if (full) {
            log_info("shoutcast source %s: headers over %d bytes", CIDR_SHOWN(c->ip),
                     SHOUTCAST_MAX_HEAD);
            conn_close(c);
        }
        return;
    }
    const char *mount = cl->shoutcast_mount;
    char *text = NULL;
    http_request_t *req = malloc(sizeof(*req));
    int r = req ? shoutcast_parse_headers(mount, start, hlen, &text, req) : -ENOMEM;
    if (r < 0) {
        if (r == -EINVAL)
            log_info("shoutcast source %s: malformed headers", CIDR_SHOWN(c->ip));
        free(req);
        conn_close(c);
        return;
    }
    client_capture_request(c, req);
    char *rbuf = c->rbuf;
    size_t rlen = c->rlen, used = cl->parsed_len + hlen;
    c->rbuf = NULL;
    conn_set_deadline(c, 0); /* a source: source-timeout applies from here */
    int status = source_become(c, req, mount, NULL, rbuf + used, rlen - used);
    free(rbuf);
    free(text);
    free(req);
    if (status) {
        source_abort(c);
        conn_close(c);
        return;
    }
    if (full && !c->closing && c->ops->on_readable)
        c->ops->on_readable(c);
}

/* The password was right: "OK2", then the headers (header-timeout keeps running until they
 * are complete). line_len: the password line with its newline. */
static void shoutcast_logged_in(conn_t *c, size_t line_len)
{
    client_t *cl = client_of(c);
    guard_succeeded(c->ip);
    cl->parsed_len = line_len;
    static const char ok2[] = "OK2\r\nicy-caps:11\r\n\r\n";
    conn_send(c, ok2, sizeof(ok2) - 1, NULL);
    if (!c->closing)
        shoutcast_headers(c, c->rlen >= c->rcap);
}

static void shoutcast_refused(conn_t *c, const char *why)
{
    char what[600];
    snprintf(what, sizeof(what), "shoutcast source %s (%s)", client_of(c)->shoutcast_mount, why);
    guard_failed(c->ip, what, NULL); /* logs, escaped */
    conn_close(c); /* as Shoutcast and Icecast: no answer */
}

static const conn_ops_t shoutcast_login_ops;

/* The auth server answered for a parked login (stream_auth), on its worker. */
static void shoutcast_url_resumed(conn_t *c, auth_url_session_t *s)
{
    size_t line_len = (size_t)s->tag;
    int accepted = s->accepted, unavailable = s->unavailable;
    auth_url_session_free(s);
    if (!accepted) {
        if (unavailable)
            conn_close(c); /* logged by auth_url; no answer is no wrong password */
        else
            shoutcast_refused(c, "refused by the auth server");
        return;
    }
    c->ops = &shoutcast_login_ops;
    conn_set_deadline(c, (uint64_t)server_config()->header_timeout * 1000u);
    shoutcast_logged_in(c, line_len);
    if (!c->closing)
        conn_rearm(c); /* what it sent while waiting: the socket will not report it again */
}

/* stream_auth: the auth server decides (user "source", the line as password). */
static void ask_auth_server(conn_t *c, const mount_conf_t *mc, const char *pass, size_t line_len)
{
    const char *mount = client_of(c)->shoutcast_mount;
    auth_url_start_t r = auth_url_stream_auth(c, mc, mount, "source", pass, 0, line_len, NULL,
                                              NULL, shoutcast_url_resumed);
    if (r != AUTH_URL_PARKED) {
        char esc[512];
        log_info("shoutcast source %s on %s refused: %s", CIDR_SHOWN(c->ip),
                 escape_log(esc, sizeof(esc), mount, strlen(mount)),
                 r == AUTH_URL_BUSY ? "too many waiting for the auth server" : "out of memory");
        conn_close(c);
    }
}

static void shoutcast_on_readable(conn_t *c)
{
    client_t *cl = client_of(c);
    int r = shoutcast_fill(c);
    if (r < 0) {
        conn_close(c);
        return;
    }
    if (cl->parsed_len > 0) {
        shoutcast_headers(c, r == 1);
        return;
    }
    size_t plen = 0;
    long line = shoutcast_password_line(c->rbuf, c->rlen, &plen);
    if (line == 0) {
        if (r == 1) /* a full buffer and still no newline */
            conn_close(c);
        return;
    }
    size_t line_len = line > 0 ? (size_t)line : 0;
    char *pass = line > 0 ? str_ndup(c->rbuf, plen) : NULL;
    const config_t *cfg = server_config();
    const mount_conf_t *mc = config_find_mount(cfg, cl->shoutcast_mount);
    const char *user = mc && mc->password && mc->username ? mc->username : "source";
    int blocked = guard_blocked(c->ip) != 0;
    if (!blocked && pass && auth_url_checks_sources(mc)) {
        ask_auth_server(c, mc, pass, line_len);
        memset(pass, 0, plen);
        free(pass);
        return;
    }
    int ok = !blocked && pass && source_check_password(cfg, mc, user, pass);
    if (pass)
        memset(pass, 0, plen);
    free(pass);
    if (ok)
        shoutcast_logged_in(c, line_len);
    else if (blocked)
        conn_close(c); /* not checked, so no failed login: the block is not made longer */
    else
        shoutcast_refused(c, "wrong password");
}

static void shoutcast_on_timeout(conn_t *c)
{
    log_info("shoutcast source %s: login not complete within header-timeout", CIDR_SHOWN(c->ip));
    conn_close(c);
}

static const conn_ops_t shoutcast_login_ops = {
    .name = "shoutcast-login",
    .on_readable = shoutcast_on_readable,
    .on_writable = conn_write_pending,
    .on_timeout = shoutcast_on_timeout,
};

void shoutcast_start(conn_t *c)
{
    c->ops = &shoutcast_login_ops;
    shoutcast_on_readable(c);
}
