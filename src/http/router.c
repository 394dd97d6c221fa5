/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * router: routes a non-stream request (see router.h): <alias> rewrites, then by rule order
 * /admin and /admin.cgi (admin commands), /metrics, *.xsl (public stats through a webroot
 * stylesheet; /status-json.xsl built in when the file is absent), static files, generated
 * playlists of live mounts; "/" without an alias is webroot/index.html, else /status.xsl.
 * Also the reply and keep-alive helpers every answer uses.
 */
#include "http/router.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/admin.h"
#include "admin/json.h"
#include "admin/xslt.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/url.h"
#include "http/files.h"
#include "http/parser.h"
#include "http/playlist.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/worker.h"
#include "server.h"
#include "stats/metrics.h"
#include "stats/stats.h"

#define ROUTER_MAX_PIPELINE_DEPTH 16

/* ---- replies and keep-alive ---- */

static int value_has_token(const http_header_t *h, const char *token)
{
    size_t k = strlen(token);
    for (size_t i = 0; h && i + k <= h->value_len; i++)
        if (strncasecmp(h->value + i, token, k) == 0)
            return 1;
    return 0;
}

int router_keepalive_wanted(const http_request_t *req)
{
    if (http_find_header(req, "content-length") || http_find_header(req, "transfer-encoding"))
        return 0; /* we never read request bodies */
    if (req->is_ice || req->version_major != 1)
        return 0;
    const http_header_t *h = http_find_header(req, "connection");
    if (req->version_minor >= 1)
        return !value_has_token(h, "close");
    return value_has_token(h, "keep-alive");
}

size_t router_head(char *buf, size_t cap, int keep, int status, const char *ctype,
                   long long content_length, const char *extra)
{
    size_t n = response_head(buf, cap, status, ctype, content_length, extra);
    static const char close_hdr[] = "\r\nConnection: Close\r\n";
    static const char keep_hdr[] = "\r\nConnection: keep-alive\r\n";
    char *at = n && keep ? strstr(buf, close_hdr) : NULL;
    if (!at)
        return n;
    size_t grow = sizeof(keep_hdr) - sizeof(close_hdr);
    if (n + grow + 1 > cap)
        return 0;
    size_t tail = n - (size_t)(at - buf) - (sizeof(close_hdr) - 1);
    memmove(at + sizeof(keep_hdr) - 1, at + sizeof(close_hdr) - 1, tail + 1);
    memcpy(at, keep_hdr, sizeof(keep_hdr) - 1);
    return n + grow;
}

const conn_ops_t router_sending_ops = {
    .name = "responding",
    .on_readable = NULL, /* a pipelined request stays in the socket until we read it */
    .on_writable = conn_write_pending,
};

static void log_request_done(conn_t *c)
{
    if (!c->log_method)
        return;
    log_access_entry_t e = {
        .ip = c->ip, .user = c->log_user, .start = c->start, .method = c->log_method,
        .uri = c->log_uri, .protocol = c->log_protocol, .status = c->status,
        .bytes = c->bytes_sent, .referer = c->log_referer, .agent = c->log_agent,
    };
    log_access(&e);
    char **fields[] = {&c->log_method, &c->log_uri, &c->log_protocol, &c->log_agent,
                       &c->log_referer, &c->log_user};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        free(*fields[i]);
        *fields[i] = NULL;
    }
}

void router_next_request(conn_t *c)
{
    static __thread int depth;
    if (c->closing)
        return;
    http_request_t *scratch = malloc(sizeof(*scratch));
    int head = scratch && c->rbuf ? http_parse_request(c->rbuf, c->rlen, 0, scratch) : -1;
    free(scratch);
    if (head <= 0 || depth >= ROUTER_MAX_PIPELINE_DEPTH) {
        conn_linger_close(c);
        return;
    }
    log_request_done(c);
    c->rlen -= (size_t)head;
    memmove(c->rbuf, c->rbuf + head, c->rlen);
    c->parsed_len = 0;
    c->status = 0;
    c->bytes_sent = 0;
    c->start = time(NULL);
    c->ops = &conn_reading_ops;
    worker_timeout_remove(c->worker, c);
    worker_timeout_add(c->worker, c,
                       loop_now_ms() + (uint64_t)server_config()->header_timeout * 1000u);
    /* edge-triggered epoll: what arrived meanwhile is read now, not on a future event */
    depth++;
    conn_reading_ops.on_readable(c);
    depth--;
}

void router_reply(conn_t *c, const http_request_t *req, int status, const char *ctype,
                  const char *body, size_t len, const char *extra)
{
    int keep = router_keepalive_wanted(req);
    int head_only = req->method == HTTP_METHOD_HEAD;
    char head[4096];
    size_t hlen = router_head(head, sizeof(head), keep, status, ctype, (long long)len, extra);
    if (hlen == 0) {
        conn_send_error(c, 500, "Internal Server Error");
        return;
    }
    c->status = status;
    c->ops = &router_sending_ops;
    void (*done)(conn_t *) = keep ? router_next_request : conn_linger_close;
    if (head_only || len == 0) {
        conn_send(c, head, hlen, done);
        return;
    }
    if (conn_queue(c, head, hlen) < 0) {
        conn_close(c);
        return;
    }
    conn_send(c, body, len, done);
}

/* ---- routes ---- */

const char *router_alias(const conn_t *c, const char *path)
{
    for (const alias_conf_t *a = server_config()->aliases; a; a = a->next)
        if (a->source && strcmp(a->source, path) == 0 && (a->port < 0 || a->port == c->local_port))
            return a->destination;
    return NULL;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

static void serve_metrics(conn_t *c, const http_request_t *req)
{
    if (!admin_auth_admin(req)) {
        conn_send_error(c, 401, "You need to authenticate");
        return;
    }
    size_t len = 0;
    char *text = metrics_render(&len);
    if (!text) {
        conn_send_error(c, 500, "Internal Server Error");
        return;
    }
    router_reply(c, req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len,
                 ROUTER_NO_CACHE);
    free(text);
}

static void serve_public_xsl(conn_t *c, const http_request_t *req, const char *path)
{
    char *real = NULL;
    int rc = files_resolve(path, &real);
    int native_json = rc == -ENOENT && strcmp(path, "/status-json.xsl") == 0;
    if (rc < 0 && !native_json) {
        conn_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    atomic_fetch_add(&server.stats.file_connections, 1);
    char *mount = req->query ? url_query_param(req->query, req->query_len, "mount") : NULL;
    xmlDocPtr doc = stats_document(0, mount, NULL);
    free(mount);
    char *out = NULL, ctype[128] = "application/json; charset=utf-8";
    size_t len = 0;
    if (doc && native_json)
        out = json_render_status(doc, &len);
    else if (doc)
        rc = xslt_apply(real, doc, &out, &len, ctype, sizeof(ctype));
    free(real);
    if (doc)
        xmlFreeDoc(doc);
    if (!out) {
        conn_send_error(c, 500, "Internal Server Error");
        return;
    }
    router_reply(c, req, 200, ctype, out, len,
                 ROUTER_NO_CACHE "Access-Control-Allow-Origin: *\r\n");
    free(out);
}

static void serve_path(conn_t *c, const http_request_t *req, const char *path)
{
    if (strcmp(path, "/metrics") == 0) {
        serve_metrics(c, req);
        return;
    }
    if (has_suffix(path, ".xsl")) {
        serve_public_xsl(c, req, path);
        return;
    }
    if (!server_config()->fileserve) {
        if (!playlist_try(c, req, path))
            conn_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    char *real = NULL;
    int rc = files_resolve(path, &real);
    if (rc == 0) {
        files_serve(c, req, real);
        free(real);
        return;
    }
    if (rc == -EACCES) {
        char esc[512];
        log_info("client %s: refused %s (a symlink or outside the webroot)", c->ip,
                 escape_log(esc, sizeof(esc), path, strlen(path)));
    }
    if (!playlist_try(c, req, path))
        conn_send_error(c, 404, "The file you requested could not be found");
}

void router_handle(conn_t *c, const http_request_t *req, const char *path)
{
    atomic_fetch_add(&server.stats.client_connections, 1);
    const char *alias = router_alias(c, path);
    if (alias)
        path = alias;
    if (strcmp(path, "/admin.cgi") == 0 || strcmp(path, "/admin") == 0 ||
        strncmp(path, "/admin/", 7) == 0) {
        admin_handle(c, req, path);
        return;
    }
    if (!alias && strcmp(path, "/") == 0) {
        char *real = NULL;
        if (server_config()->fileserve && files_resolve("/index.html", &real) == 0) {
            files_serve(c, req, real);
            free(real);
            return;
        }
        path = "/status.xsl";
    }
    serve_path(c, req, path);
}
