/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manageauth: /admin/manageauth?mount=&action=list|add|delete[&username=&password=], the
 * users of a mount's htpasswd file (admin credentials only).
 *
 * The document is Icecast's: <icestats><source mount><User><username/></User>...</source>
 * with an <iceresponse><message/><return/></iceresponse> after an add or delete. Unlike
 * Icecast (400 without a live source), any mount configured with htpasswd authentication can
 * be managed, live or not. A deleted user is refused from the next login on; listeners
 * already connected under that name stay connected, as in Icecast.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/commands.h"
#include "auth/auth.h"
#include "auth/htpasswd.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "net/server.h"
#include "stats/stats.h"

/* Runs an add or delete; the message for the answer, ret 1 on success. */
static const char *change(admin_req_t *a, htpasswd_t *h, const char *action, int *ret)
{
    char *user = admin_param(a, "username"), *pass = admin_param(a, "password");
    const char *msg;
    int rc;
    *ret = 0;
    if (strcmp(action, "add") == 0) {
        if (!user || !pass)
            msg = NULL;
        else if ((rc = htpasswd_add(h, user, pass)) == 0)
            msg = "User added", *ret = 1;
        else if (rc == -EEXIST)
            msg = "User already exists - not added";
        else if (rc == -EINVAL)
            msg = "Invalid user name - not added";
        else
            msg = "Unable to add user";
    } else {
        if (!user)
            msg = NULL;
        else if ((rc = htpasswd_delete(h, user)) == 0)
            msg = "User deleted", *ret = 1;
        else if (rc == -ENOENT)
            msg = "User not found";
        else
            msg = "Unable to delete user";
    }
    if (msg && *ret) {
        char esc_user[600], esc_mount[600];
        log_info("admin: %s user \"%s\" on %s", action,
                 escape_log_utf8(esc_user, sizeof(esc_user), user, strlen(user)),
                 escape_log(esc_mount, sizeof(esc_mount), a->mount_name, strlen(a->mount_name)));
    }
    free(user);
    free(pass);
    return msg;
}

static xmlDocPtr users_document(admin_req_t *a, htpasswd_t *h, const char *message, int ret)
{
    xmlDocPtr doc = stats_new_doc("icestats");
    if (!doc)
        return NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    xmlNodePtr src = xmlNewChild(root, NULL, BAD_CAST "source", NULL);
    char *name = stats_clean_text(a->mount_name);
    xmlNewProp(src, BAD_CAST "mount", BAD_CAST(name ? name : ""));
    free(name);
    if (message) {
        xmlNodePtr r = xmlNewChild(root, NULL, BAD_CAST "iceresponse", NULL);
        xmlNewTextChild(r, NULL, BAD_CAST "message", BAD_CAST message);
        xmlNewTextChild(r, NULL, BAD_CAST "return", BAD_CAST(ret ? "1" : "0"));
    }
    char **names = NULL;
    long n = htpasswd_list(h, &names);
    for (long i = 0; i < n; i++) {
        xmlNodePtr u = xmlNewChild(src, NULL, BAD_CAST "User", NULL);
        char *clean = stats_clean_text(names[i]);
        xmlNewTextChild(u, NULL, BAD_CAST "username", BAD_CAST(clean ? clean : ""));
        free(clean);
        free(names[i]);
    }
    free(names);
    return doc;
}

void admin_cmd_manageauth(admin_req_t *a)
{
    if (!a->mount_name) {
        admin_send_error(a, 400, "Missing parameter");
        return;
    }
    const mount_conf_t *mc = config_find_mount(server_config(), a->mount_name);
    htpasswd_t *h = auth_mount_htpasswd(mc);
    if (!h) {
        admin_send_error(a, 400, "Mount has no htpasswd authentication");
        return;
    }
    char *action = admin_param(a, "action");
    const char *message = NULL;
    int ret = 0;
    if (action && (strcmp(action, "add") == 0 || strcmp(action, "delete") == 0)) {
        if (!(message = change(a, h, action, &ret))) {
            free(action);
            admin_send_error(a, 400, "Missing parameter");
            return;
        }
    } else if (action && strcmp(action, "list") != 0) {
        free(action);
        admin_send_error(a, 400, "Unknown action");
        return;
    }
    free(action);
    admin_send_doc(a, users_document(a, h, message, ret));
}
