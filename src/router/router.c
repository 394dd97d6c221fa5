/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * router: routes a non-stream request (see router.h): <alias> rewrites, then by rule order
 * /admin and /admin.cgi (admin commands), /metrics, *.xsl (public stats through a webroot
 * stylesheet; /status-json.xsl built in when the file is absent), /room.txt and /health (the
 * server's load and state, for siblings and load balancers), static files, generated
 * playlists of live mounts; "/" without an alias is webroot/index.html, else /status.xsl.
 * Also the reply and keep-alive helpers every answer uses.
 */
#include "router/router.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/admin.h"
#include "admin/json.h"
#include "admin/xslt.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/log.h"
#include "core/escape.h"
#include "core/url.h"
#include "http/alias.h"
#include "http/client.h"
#include "http/files.h"
#include "http/parser.h"
#include "http/reply.h"
#include "router/playlist.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/server.h"
#include "stats/metrics.h"
#include "stats/stats.h"
#include "upstream/redirect.h"

/* ---- names the server answers itself ---- */

static int has_suffix(const char *s, const char *suffix);

static int is_admin_path(const char *path)
{
    return strcmp(path, "/admin.cgi") == 0 || strcmp(path, "/admin") == 0 ||
           strncmp(path, "/admin/", 7) == 0;
}

int router_owns(const char *path)
{
    return is_admin_path(path) || has_suffix(path, ".xsl") || strcmp(path, "/metrics") == 0 ||
           strcmp(path, "/room.txt") == 0 || strcmp(path, "/health") == 0 ||
           strcmp(path, "/") == 0;
}

const char *router_refuses_mount(const char *name, int file_mount)
{
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return "holds control characters";
    if (router_owns(name))
        return "is a URL the server answers itself";
    if (has_suffix(name, ".xsl"))
        return "ends in .xsl";
    if (file_mount)
        return NULL;
    char *real = NULL;
    int rc = files_resolve(name, &real);
    free(real);
    if (rc == 0 || rc == -EACCES)
        return "names a file in the webroot";
    return NULL;
}

/* ---- routes ---- */

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

static void serve_metrics(conn_t *c, const http_request_t *req)
{
    if (!admin_auth_admin(req)) {
        client_send_error(c, 401, "You need to authenticate");
        return;
    }
    size_t len = 0;
    char *text = metrics_render(&len);
    if (!text) {
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    reply_send(c, req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len,
                 REPLY_NO_CACHE);
    free(text);
}

static void serve_public_xsl(conn_t *c, const http_request_t *req, const char *path)
{
    char *real = NULL;
    int rc = files_resolve(path, &real);
    int native_json = rc == -ENOENT && strcmp(path, "/status-json.xsl") == 0;
    if (rc < 0 && !native_json) {
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    atomic_fetch_add(&server.stats.file_connections, 1);
    char *mount = req->query ? url_query_param(req->query, req->query_len, "mount") : NULL;
    xmlDocPtr doc = stats_document(0, mount, NULL, c);
    free(mount);
    char *out = NULL, ctype[128] = "application/json; charset=utf-8";
    size_t len = 0;
    if (doc && native_json)
        out = json_render_status(doc, &len);
    else if (doc)
        rc = xslt_apply(real, doc, NULL, &out, &len, ctype, sizeof(ctype));
    free(real);
    if (doc)
        xmlFreeDoc(doc);
    if (!out) {
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    reply_send(c, req, 200, ctype, out, len,
                 REPLY_NO_CACHE "Access-Control-Allow-Origin: *\r\n");
    free(out);
}

/* The room document siblings poll before sending this server their listeners: 503 while
 * the server is not serving, so that none sends it any. */
static void serve_room(conn_t *c, const http_request_t *req)
{
    size_t len = 0;
    char *text = redirect_room_text(&len);
    if (!text) {
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    int serving = atomic_load(&server.state) == SERVER_SERVING;
    reply_send(c, req, serving ? 200 : 503, "text/plain; charset=utf-8", text, len,
               REPLY_NO_CACHE);
    free(text);
}

/* /health, for load balancers and DNS failover (public: counts only): 200 while serving, 503
 * while starting or stopping; the state and the server-wide load as JSON. */
static void serve_health(conn_t *c, const http_request_t *req)
{
    redirect_load_t l;
    redirect_load_here(NULL, &l);
    int state = atomic_load(&server.state);
    long ppm = redirect_load_ppm(&l);
    char body[320];
    int n = snprintf(body, sizeof(body),
                     "{\"state\":\"%s\",\"clients\":%ld,\"clients_limit\":%ld,"
                     "\"listeners\":%ld,\"listeners_limit\":%ld,\"share\":%ld.%03ld}\n",
                     server_state_name(state), l.clients, l.clients_max, l.listeners,
                     l.listeners_max, ppm / 1000000, ppm % 1000000 / 1000);
    reply_send(c, req, state == SERVER_SERVING ? 200 : 503, "application/json", body,
               (size_t)n, "Cache-Control: no-store\r\n");
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
    if (strcmp(path, "/room.txt") == 0) {
        serve_room(c, req);
        return;
    }
    if (strcmp(path, "/health") == 0) {
        serve_health(c, req);
        return;
    }
    if (!server_config()->fileserve) {
        if (!playlist_try(c, req, path))
            client_send_error(c, 404, "The file you requested could not be found");
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
        log_info("client %s: refused %s (a symlink or outside the webroot)", CIDR_SHOWN(c->ip),
                 escape_log_utf8(esc, sizeof(esc), path, strlen(path)));
    }
    if (!playlist_try(c, req, path))
        client_send_error(c, 404, "The file you requested could not be found");
}

void router_handle(conn_t *c, const http_request_t *req, const char *path)
{
    atomic_fetch_add(&server.stats.client_connections, 1);
    const char *alias = alias_lookup(c, path);
    if (alias)
        path = alias;
    if (is_admin_path(path)) {
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
