/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dispatch: routing a parsed request to its role (see dispatch.h).
 */
#include "net/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/url.h"
#include "http/parser.h"
#include "http/response.h"
#include "http/router.h"
#include "net/conn.h"
#include "stream/listener.h"
#include "stream/mount.h"
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
    c->status = 204;
    conn_send(c, head, n, conn_linger_close);
}

static void handle_get(conn_t *c, const http_request_t *req)
{
    size_t dlen;
    char *dec = url_decode(req->path, req->path_len, 0, &dlen);
    char *path = dec ? url_normalize_path(dec, dlen) : NULL;
    free(dec);
    if (!path) {
        conn_send_error(c, 400, "Bad Request");
        return;
    }
    const char *alias = router_alias(c, path);
    mount_t *m = req->method != HTTP_METHOD_POST ? mount_find(alias ? alias : path) : NULL;
    if (m) {
        free(path);
        listener_start(c, req, m); /* takes the reference */
        return;
    }
    router_handle(c, req, path);
    free(path);
}

void dispatch_request(conn_t *c, http_request_t *req, size_t head_len)
{
    conn_capture_request(c, req);
    c->requests++;
    switch (req->method) {
    case HTTP_METHOD_SOURCE:
    case HTTP_METHOD_PUT:
        source_start(c, req, head_len);
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
        conn_send_error(c, 405, "Method Not Allowed");
        return;
    }
}

void dispatch_shoutcast(conn_t *c)
{
    source_start_shoutcast(c);
}
