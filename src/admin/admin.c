/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * admin: request parsing, authentication and views for the admin commands (see admin.h).
 * Checks run in Icecast's order: unknown command (400), credentials (401), missing mount
 * (400 Missing parameter), mount not live (400 Source does not exist), then the handler.
 */
#include "admin/admin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/json.h"
#include "admin/request.h"
#include "admin/xslt.h"
#include "auth/auth.h"
#include "auth/auth_url.h"
#include "auth/guard.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "core/url.h"
#include "http/parser.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/worker.h"
#include "net/server.h"
#include "stats/stats.h"
#include "stream/mount.h"

#define ADMIN_NAME_MAX 64

/* ---- authentication ---- */

static int creds_match(const http_request_t *req, const char *want_user, const char *want_pass)
{
    char *user = NULL, *pass = NULL;
    int ok = 0;
    if (want_pass && http_parse_basic_auth(req, &user, &pass) == 0)
        ok = str_equal_ct(user, want_user ? want_user : "") & str_equal_ct(pass, want_pass);
    free(user);
    free(pass);
    return ok;
}

int admin_auth_admin(const http_request_t *req)
{
    const config_t *cfg = server_config();
    return creds_match(req, cfg->admin_user ? cfg->admin_user : "admin", cfg->admin_password);
}

int admin_auth_source(const char *mount, const char *user, const char *pass)
{
    const config_t *cfg = server_config();
    const mount_conf_t *mc = mount ? config_find_mount(cfg, mount) : NULL;
    if (mc && mc->password)
        return str_equal_ct(user, mc->username ? mc->username : "source") &
               str_equal_ct(pass, mc->password);
    return cfg->source_password && str_equal_ct(user, "source") &
           str_equal_ct(pass, cfg->source_password);
}

/* What auth_ok found: refused, passed, or handed to the auth server (a is parked or
 * answered and must not be touched). */
enum { AUTH_REFUSED, AUTH_PASSED, AUTH_ASKED };

static int auth_ok(admin_req_t *a, const http_request_t *req)
{
    const config_t *cfg = server_config();
    /* the stream list answers the relay user only, as Icecast's does (admin gets 401) */
    if (a->cmd->auth == ADMIN_AUTH_RELAY)
        return creds_match(req, cfg->relay_user ? cfg->relay_user : "relay", cfg->relay_password)
                   ? AUTH_PASSED
                   : AUTH_REFUSED;
    a->admin = admin_auth_admin(req);
    if (a->admin || a->cmd->auth == ADMIN_AUTH_NONE)
        return AUTH_PASSED;
    if (a->cmd->auth != ADMIN_AUTH_SOURCE)
        return AUTH_REFUSED;
    char *user = NULL, *pass = NULL;
    int r = AUTH_REFUSED;
    if (http_parse_basic_auth(req, &user, &pass) == 0) {
        if (admin_ask_auth_server(a, a->mount_name, user, pass))
            r = AUTH_ASKED;
        else if (admin_auth_source(a->mount_name, user, pass))
            r = AUTH_PASSED;
    }
    free(user);
    if (pass) {
        memset(pass, 0, strlen(pass));
        free(pass);
    }
    return r;
}

/* ---- request life ---- */

char *admin_param(const admin_req_t *a, const char *name)
{
    return a->query ? url_query_param(a->query, a->query_len, name) : NULL;
}

void admin_req_free(admin_req_t *a)
{
    if (a->data && a->free_data)
        a->free_data(a->data);
    if (a->mount)
        mount_unref(a->mount);
    free(a->query);
    free(a->mount_name);
    free(a);
}

static const conn_ops_t parked_ops = {
    .name = "admin-wait",
    .on_readable = NULL,
    .on_writable = NULL,
};

void admin_park(admin_req_t *a)
{
    a->conn->ops = &parked_ops;
    a->conn = NULL;
}

conn_t *admin_conn(admin_req_t *a)
{
    if (a->conn)
        return a->conn;
    conn_t *c = worker_find_conn(a->worker, a->conn_id);
    return c && !c->closing && c->ops == &parked_ops ? c : NULL;
}

void admin_send_raw(admin_req_t *a, const char *ctype, const char *body, size_t len,
                    const char *extra)
{
    conn_t *c = admin_conn(a);
    admin_req_free(a);
    if (c)
        reply_send(c, client_of(c)->req, 200, ctype, body, len, extra);
}

void admin_send_error(admin_req_t *a, int status, const char *message)
{
    conn_t *c = admin_conn(a);
    admin_req_free(a);
    if (c)
        client_send_error(c, status, message);
}

/* adminroot/<cmd>.xsl; an <iceresponse> without its own stylesheet uses response.xsl, as
 * Icecast does for every command answer. Every admin stylesheet gets the parameter "mount":
 * the mount= of the request (valid UTF-8, "" without one), so that a page can tell one mount's
 * view from the server's even though the document always holds the server's fields; and
 * "command": the command whose XML and JSON views show this page's data (the page links them
 * with its mount=), "" when there is none to link: an action's answer (<iceresponse>), whose
 * link would run the action again, or a command without those views; and "authenticator": the
 * <authentication type> of that mount ("" for none), so that its tabs offer only the pages
 * that apply (Users for htpasswd). */
static int apply_admin_xsl(admin_req_t *a, xmlDocPtr doc, char **out, size_t *len, char *ctype,
                           size_t cap)
{
    char *mount = stats_clean_text(a->mount_name ? a->mount_name : "");
    if (!mount)
        return -ENOMEM;
    const mount_conf_t *mc = a->mount_name ? config_find_mount(server_config(), a->mount_name)
                                           : NULL;
    const char *auth = mc && mc->auth && mc->auth->type ? mc->auth->type : "";
    xmlNodePtr root = xmlDocGetRootElement(doc);
    int response = root && xmlStrcmp(root->name, BAD_CAST "iceresponse") == 0;
    int linked = !response && (a->cmd->views & ADMIN_VIEW_XML) &&
                 (a->cmd->views & ADMIN_VIEW_JSON);
    const char *params[] = {"mount", mount, "command", linked ? a->cmd->name : "",
                            "authenticator", auth, NULL};
    char name[ADMIN_NAME_MAX + 8];
    int rc = -ENOENT;
    for (int pass = 0; pass < 2 && rc == -ENOENT; pass++) {
        if (pass == 1 && !response)
            break;
        snprintf(name, sizeof(name), "%s.xsl", pass == 0 ? a->cmd->name : "response");
        char *path = config_path(server_config()->adminroot, name);
        rc = path ? xslt_apply(path, doc, params, out, len, ctype, cap) : -ENOMEM;
        free(path);
    }
    free(mount);
    return rc;
}

static void send_xsl(admin_req_t *a, xmlDocPtr doc)
{
    char ctype[128];
    char *out = NULL;
    size_t len = 0;
    int rc = apply_admin_xsl(a, doc, &out, &len, ctype, sizeof(ctype));
    xmlFreeDoc(doc);
    if (rc == -ENOENT)
        admin_send_error(a, 404, "The file you requested could not be found");
    else if (rc < 0)
        admin_send_error(a, 500, "Internal Server Error: stylesheet failed");
    else
        admin_send_raw(a, ctype, out, len, REPLY_NO_CACHE ADMIN_CSP);
    free(out);
}

void admin_send_doc(admin_req_t *a, xmlDocPtr doc)
{
    if (!doc) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    if (a->view == ADMIN_VIEW_XSL) {
        send_xsl(a, doc);
        return;
    }
    char *out = NULL;
    size_t len = 0;
    const char *ctype = "application/json; charset=utf-8";
    if (a->view == ADMIN_VIEW_JSON) {
        out = json_render(doc, &len);
    } else {
        xmlChar *buf = NULL;
        int blen = 0;
        xmlDocDumpMemoryEnc(doc, &buf, &blen, "UTF-8");
        out = buf ? str_ndup((const char *)buf, (size_t)blen) : NULL;
        len = (size_t)blen;
        xmlFree(buf);
        ctype = "text/xml; charset=utf-8";
    }
    xmlFreeDoc(doc);
    if (!out)
        admin_send_error(a, 500, "Internal Server Error");
    else
        admin_send_raw(a, ctype, out, len, REPLY_NO_CACHE ADMIN_CSP);
    free(out);
}

void admin_send_response(admin_req_t *a, const char *message, int ret)
{
    xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
    xmlNodePtr root = doc ? xmlNewDocNode(doc, NULL, BAD_CAST "iceresponse", NULL) : NULL;
    if (!root) {
        if (doc)
            xmlFreeDoc(doc);
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    xmlDocSetRootElement(doc, root);
    xmlNewTextChild(root, NULL, BAD_CAST "message", BAD_CAST message);
    xmlNewTextChild(root, NULL, BAD_CAST "return", BAD_CAST(ret ? "1" : "0"));
    admin_send_doc(a, doc);
}

/* ---- source credentials decided by the auth server (stream_auth, admin=1) ---- */

static void admin_proceed(admin_req_t *a);

static void free_parked_req(void *arg)
{
    admin_req_free(arg); /* the client left before the auth server answered */
}

static void stream_auth_resumed(conn_t *c, auth_url_session_t *s)
{
    admin_req_t *a = s->arg;
    s->arg = NULL; /* ours again */
    a->conn = c;
    if (s->accepted) {
        auth_url_session_free(s);
        guard_succeeded(c->ip);
        a->source_checked = 1;
        admin_proceed(a);
        return;
    }
    if (s->unavailable) {
        admin_req_free(a);
        auth_url_send_refusal(c, s); /* 403: nobody could say, not a wrong password */
    } else {
        char what[ADMIN_NAME_MAX + 16];
        snprintf(what, sizeof(what), "admin %s", a->cmd->name);
        guard_failed(c->ip, what, s->user);
        admin_send_error(a, 401, "You need to authenticate");
    }
    auth_url_session_free(s);
}

int admin_ask_auth_server(admin_req_t *a, const char *mount, const char *user, const char *pass)
{
    const mount_conf_t *mc = mount ? config_find_mount(server_config(), mount) : NULL;
    if (!auth_url_checks_sources(mc))
        return 0;
    auth_url_start_t r = auth_url_stream_auth(a->conn, mc, mount, user, pass, 1, 0, a,
                                              free_parked_req, stream_auth_resumed);
    if (r == AUTH_URL_PARKED)
        a->conn = NULL; /* stream_auth_resumed gives it back */
    else if (r == AUTH_URL_BUSY)
        admin_send_error(a, 403, "Forbidden: busy, please try again later");
    else
        admin_send_error(a, 500, "Internal Server Error");
    return 1;
}

int admin_from_source_address(admin_req_t *a, const mount_t *m)
{
    conn_t *c = admin_conn(a);
    const char *ip = m->source_info.source_ip; /* immutable while m is referenced */
    return c && (!ip || strcmp(ip, c->ip) == 0); /* no source address (relay, file): anyone */
}

/* 1 if cmd changes the server's state and a browser marks req as sent by a page of another
 * origin (admin_cross_origin): answered 403, logged (rate-limited). The browser sends the
 * admin's cached Basic login with such a request; scripts and tools send neither header. */
static int refused_cross_origin(conn_t *c, const http_request_t *req, const admin_cmd_t *cmd)
{
    if (!cmd->changes)
        return 0;
    char *site = http_header_dup(req, "sec-fetch-site");
    char *origin = http_header_dup(req, "origin");
    char *host = http_header_dup(req, "host");
    int cross = admin_cross_origin(site, origin, host, c->tls);
    if (cross) {
        static log_ratelimit_t rl;
        char esc_origin[256], esc_site[64];
        const char *o = origin ? origin : "-", *s = site ? site : "-";
        log_info_limited(&rl, 10000, "admin %s from %s refused: sent by a page of another "
                         "origin (Origin %s, Sec-Fetch-Site %s)", cmd->name, CIDR_SHOWN(c->ip),
                         escape_log(esc_origin, sizeof(esc_origin), o, strlen(o)),
                         escape_log(esc_site, sizeof(esc_site), s, strlen(s)));
        client_send_error(c, 403, "Forbidden: admin commands that change the server are not "
                                  "accepted from pages of another site");
    }
    free(site);
    free(origin);
    free(host);
    return cross;
}

static admin_req_t *req_new(conn_t *c, const http_request_t *req, const admin_cmd_t *cmd,
                            int view)
{
    admin_req_t *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->conn = c;
    a->conn_id = c->id;
    a->worker = c->worker;
    a->cmd = cmd;
    a->view = view;
    if (req->query && !(a->query = str_ndup(req->query, req->query_len))) {
        free(a);
        return NULL;
    }
    a->query_len = req->query ? req->query_len : 0;
    a->mount_name = admin_param(a, "mount");
    return a;
}

void admin_handle(conn_t *c, const http_request_t *req, const char *path)
{
    char name[ADMIN_NAME_MAX];
    int view;
    const admin_cmd_t *cmd = NULL;
    if (admin_parse_command(path, name, sizeof(name), &view) == 0)
        cmd = admin_find_command(name);
    if (!cmd || !(cmd->views & view)) {
        client_send_error(c, 400, "Unrecognised command");
        return;
    }
    if (refused_cross_origin(c, req, cmd))
        return;
    admin_req_t *a = req_new(c, req, cmd, view);
    if (!a) {
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    int has_creds = http_find_header(req, "authorization") != NULL;
    unsigned blocked = has_creds ? guard_blocked(c->ip) : 0;
    if (blocked) {
        admin_req_free(a);
        auth_send_refusal(c, AUTH_BLOCKED, blocked);
        return;
    }
    int verdict = auth_ok(a, req);
    if (verdict == AUTH_ASKED)
        return;
    if (verdict == AUTH_REFUSED) {
        if (has_creds) {
            char *user = NULL, *pass = NULL;
            http_parse_basic_auth(req, &user, &pass);
            char what[ADMIN_NAME_MAX + 16];
            snprintf(what, sizeof(what), "admin %s", cmd->name);
            /* right source credentials on a command they do not open are refused, but are no
             * failed login: only wrong passwords count towards the back-off */
            if (user && pass && !admin_auth_source(a->mount_name, user, pass))
                guard_failed(c->ip, what, user);
            free(user);
            free(pass);
        }
        admin_send_error(a, 401, "You need to authenticate");
        return;
    }
    if (has_creds)
        guard_succeeded(c->ip);
    admin_proceed(a);
}

/* An authenticated request: the mount checks, then the handler. */
static void admin_proceed(admin_req_t *a)
{
    if (a->cmd->needs_mount && !a->mount_name) {
        admin_send_error(a, 400, "Missing parameter");
        return;
    }
    if (a->cmd->needs_mount && !(a->mount = mount_find(a->mount_name))) {
        admin_send_error(a, 400, "Source does not exist");
        return;
    }
    a->cmd->handler(a);
}
