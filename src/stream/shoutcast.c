/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shoutcast: the Shoutcast v1 source login on a shoutcast-compat socket (see shoutcast.h):
 * "password\r\n", our "OK2", then ICY headers and the stream. The headers are parsed by
 * wrapping them in a fake "SOURCE <mount>" request, then the connection becomes a source.
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
#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "http/client.h"
#include "http/parser.h"
#include "net/conn.h"
#include "net/server.h"
#include "stream/source.h"


#define SHOUTCAST_MAX_HEAD 16384

static int shoutcast_fill(conn_t *c)
{
    if (!c->rbuf && !(c->rbuf = malloc(SHOUTCAST_MAX_HEAD)))
        return -ENOMEM;
    c->rcap = SHOUTCAST_MAX_HEAD;
    for (;;) {
        if (c->rlen >= c->rcap)
            return -E2BIG;
        ssize_t n = conn_read(c, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (n > 0) {
            c->rlen += (size_t)n;
            continue;
        }
        if (n == 0)
            return -EPIPE;
        if (errno == EINTR)
            continue;
        return (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
    }
}

static const char *find_blank_line(const char *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (p[i] == '\n' && p[i + 1] == '\n')
            return p + i + 2;
        if (i + 3 < len && memcmp(p + i, "\r\n\r\n", 4) == 0)
            return p + i + 4;
    }
    return NULL;
}

static void shoutcast_headers(conn_t *c)
{
    client_t *cl = client_of(c);
    char *start = c->rbuf + cl->parsed_len;
    size_t avail = c->rlen - cl->parsed_len;
    const char *end = find_blank_line(start, avail);
    if (!end)
        return;
    size_t hlen = (size_t)(end - start);
    const char *mount = cl->shoutcast_mount;
    size_t mlen = strlen(mount);
    char *fake = malloc(mlen + 32 + hlen);
    http_request_t *req = malloc(sizeof(*req));
    if (!fake || !req) {
        free(fake);
        free(req);
        conn_close(c);
        return;
    }
    int flen = snprintf(fake, mlen + 32, "SOURCE %s HTTP/1.0\r\n", mount);
    memcpy(fake + flen, start, hlen);
    if (http_parse_request(fake, (size_t)flen + hlen, 0, req) <= 0) {
        log_info("shoutcast source %s: malformed headers", c->ip);
        free(fake);
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
    free(fake);
    free(req);
    if (status) {
        source_abort(c);
        conn_close(c);
    }
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
        shoutcast_headers(c);
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
        log_info("shoutcast source %s on %s refused: %s", c->ip,
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
        shoutcast_headers(c);
        return;
    }
    char *nl = memchr(c->rbuf, '\n', c->rlen);
    if (!nl)
        return;
    size_t plen = (size_t)(nl - c->rbuf), line_len = plen + 1;
    if (plen > 0 && c->rbuf[plen - 1] == '\r')
        plen--;
    char *pass = str_ndup(c->rbuf, plen);
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
    if (!ok)
        shoutcast_refused(c, "wrong password");
    else
        shoutcast_logged_in(c, line_len);
}

static void shoutcast_on_timeout(conn_t *c)
{
    log_info("shoutcast source %s: login not complete within header-timeout", c->ip);
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
