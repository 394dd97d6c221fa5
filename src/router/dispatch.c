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

#include "core/log.h"
#include "core/escape.h"
#include "core/url.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/worker.h"
#include "router/router.h"
#include "stream/fallback.h"
#include "stream/fanout.h"
#include "stream/filemount.h"
#include "stream/listener.h"
#include "stream/mount.h"
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

static void handle_get(conn_t *c, const http_request_t *req)
{
    char *path = request_path(req);
    if (!path) {
        client_send_error(c, 400, "Bad Request");
        return;
    }
    const char *alias = router_alias(c, path);
    const char *target = alias ? alias : path;
    mount_t *m = req->method != HTTP_METHOD_POST && !router_owns(target)
                     ? mount_find(target)
                     : NULL;
    if (m) {
        free(path);
        listener_start(c, req, m); /* takes the reference */
        return;
    }
    /* a mount with no source whose <mount> names a live fallback serves that fallback */
    if (req->method != HTTP_METHOD_POST && !router_owns(target) &&
        (m = fallback_for_sourceless(target))) {
        listener_start_for(c, req, m, target);
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
                 escape_log(esc, sizeof(esc), path, strlen(path)), why);
        free(path);
        client_send_error(c, 403, "Forbidden: mountpoint name not allowed");
        return;
    }
    free(path);
    source_start(c, req, head_len);
}

static void dispatch_request(conn_t *c, http_request_t *req, size_t head_len)
{
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
    };
    client_set_handlers(&handlers);
    worker_set_accept(client_accept);
    fanout_register();
    source_register();
    filemount_register();
}
