/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audit: who did an admin action, and its log line (see audit.h).
 */
#include "admin/audit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "http/client.h"
#include "http/parser.h"
#include "net/conn.h"

void audit_who(admin_req_t *a, int admin, char *who)
{
    conn_t *c = admin_conn(a);
    if (!c) {
        snprintf(who, AUDIT_WHO_LEN, "a client that hung up");
        return;
    }
    const http_request_t *req = client_of(c)->req;
    char *user = NULL, *pass = NULL;
    if (req)
        http_parse_basic_auth(req, &user, &pass);
    if (pass) {
        memset(pass, 0, strlen(pass));
        free(pass);
    }
    char name[256], ip[128];
    if (user) {
        char esc[200];
        snprintf(name, sizeof(name), "\"%s\"", escape_log_utf8(esc, sizeof(esc), user,
                                                               strlen(user)));
    } else {
        snprintf(name, sizeof(name), "(password in the URL)");
    }
    free(user);
    snprintf(who, AUDIT_WHO_LEN, "%s %s from %s", admin ? "admin" : "source user", name,
             escape_log(ip, sizeof(ip), CIDR_SHOWN(c->ip), strlen(CIDR_SHOWN(c->ip))));
}

void audit_log(const char *who, const char *fmt, ...)
{
    char what[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    log_info("admin: %s, by %s", what, who);
}
