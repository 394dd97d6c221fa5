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
#include "auth/guard.h"
#include "conf/config.h"
#include "core/str.h"
#include "core/url.h"
#include "http/parser.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/worker.h"
#include "net/server.h"
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

static int auth_ok(admin_req_t *a, const http_request_t *req)
{
    const config_t *cfg = server_config();
    a->admin = admin_auth_admin(req);
    if (a->admin || a->cmd->auth == ADMIN_AUTH_NONE)
        return 1;
    if (a->cmd->auth == ADMIN_AUTH_RELAY)
        return creds_match(req, cfg->relay_user ? cfg->relay_user : "relay", cfg->relay_password);
    if (a->cmd->auth != ADMIN_AUTH_SOURCE)
        return 0;
    char *user = NULL, *pass = NULL;
    int ok = 0;
    if (http_parse_basic_auth(req, &user, &pass) == 0)
        ok = admin_auth_source(a->mount_name, user, pass);
    free(user);
    free(pass);
    return ok;
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
 * Icecast does for every command answer. */
static int apply_admin_xsl(admin_req_t *a, xmlDocPtr doc, char **out, size_t *len, char *ctype,
                           size_t cap)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    int response = root && xmlStrcmp(root->name, BAD_CAST "iceresponse") == 0;
    char name[ADMIN_NAME_MAX + 8];
    int rc = -ENOENT;
    for (int pass = 0; pass < 2 && rc == -ENOENT; pass++) {
        if (pass == 1 && !response)
            break;
        snprintf(name, sizeof(name), "%s.xsl", pass == 0 ? a->cmd->name : "response");
        char *path = config_path(server_config()->adminroot, name);
        rc = path ? xslt_apply(path, doc, out, len, ctype, cap) : -ENOMEM;
        free(path);
    }
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
        admin_send_raw(a, ctype, out, len, REPLY_NO_CACHE);
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
        admin_send_raw(a, ctype, out, len, REPLY_NO_CACHE);
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
    if (!auth_ok(a, req)) {
        if (has_creds) {
            char *user = NULL, *pass = NULL;
            http_parse_basic_auth(req, &user, &pass);
            char what[ADMIN_NAME_MAX + 16];
            snprintf(what, sizeof(what), "admin %s", cmd->name);
            /* right source credentials on a command they do not open are refused, but are no
             * failed login: only wrong passwords count towards the back-off */
            if (!user || !pass || !admin_auth_source(a->mount_name, user, pass))
                guard_failed(c->ip, what, user);
            free(user);
            free(pass);
        }
        admin_send_error(a, 401, "You need to authenticate");
        return;
    }
    if (has_creds)
        guard_succeeded(c->ip);
    if (cmd->needs_mount && !a->mount_name) {
        admin_send_error(a, 400, "Missing parameter");
        return;
    }
    if (cmd->needs_mount && !(a->mount = mount_find(a->mount_name))) {
        admin_send_error(a, 400, "Source does not exist");
        return;
    }
    cmd->handler(a);
}
