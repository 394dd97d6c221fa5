/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * manageauth: /admin/manageauth?mount=&action=list|add|delete[&username=&password=], the
 * users of a mount's htpasswd file (admin credentials only).
 *
 * The document is Icecast's: <icestats><source mount><User><username/></User>...</source>
 * with an <iceresponse><message/><return/></iceresponse> after an add or delete. Unlike
 * Icecast (400 without a live source), any mount configured with htpasswd authentication can
 * be managed, live or not. A deleted user is refused from the next login on; listeners
 * already connected under that name stay connected, as in Icecast. An add or delete (a new
 * password hashed, the file rewritten and fsynced) runs on a verifier thread (auth/verify.h),
 * the request parked meanwhile, so that the worker's other clients do not wait for the disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"
#include "admin/audit.h"
#include "admin/commands.h"
#include "auth/auth.h"
#include "auth/htpasswd.h"
#include "auth/verify.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "net/server.h"
#include "stats/stats.h"

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

/* An add or delete: hashing the new password and writing the file out (fsync, rename) run on
 * a verifier thread, the request parked meanwhile; the answer is made back on its worker. */
typedef struct change {
    admin_req_t *a;
    htpasswd_t *h;
    int add;
    char *user, *pass;
    int rc;
    char who[AUDIT_WHO_LEN]; /* for the log line */
} change_t;

static void change_free(change_t *ch)
{
    if (ch->pass) {
        memset(ch->pass, 0, strlen(ch->pass));
        free(ch->pass);
    }
    free(ch->user);
    free(ch);
}

static void change_run(void *arg)
{
    change_t *ch = arg;
    ch->rc = ch->add ? htpasswd_add(ch->h, ch->user, ch->pass) : htpasswd_delete(ch->h, ch->user);
}

/* The message for the answer to a change that returned rc, ret 1 on success. */
static const char *change_message(const change_t *ch, int *ret)
{
    *ret = ch->rc == 0;
    if (ch->add)
        return ch->rc == 0         ? "User added"
               : ch->rc == -EEXIST ? "User already exists - not added"
               : ch->rc == -EINVAL ? "Invalid user name - not added"
                                   : "Unable to add user";
    return ch->rc == 0 ? "User deleted" : ch->rc == -ENOENT ? "User not found"
                                                             : "Unable to delete user";
}

static void change_done(worker_t *w, void *arg, int ran)
{
    change_t *ch = arg;
    admin_req_t *a = ch->a;
    if (!w) {
        admin_req_free(a); /* its worker is gone */
    } else if (!ran) {
        admin_send_error(a, 503, "Service Unavailable: busy, please try again later");
    } else {
        int ret;
        const char *msg = change_message(ch, &ret);
        if (ret) {
            char esc_user[600], esc_mount[600];
            audit_log(ch->who, "%s user \"%s\" on %s", ch->add ? "add" : "delete",
                      escape_log_utf8(esc_user, sizeof(esc_user), ch->user, strlen(ch->user)),
                      escape_log(esc_mount, sizeof(esc_mount), a->mount_name,
                                 strlen(a->mount_name)));
        }
        admin_send_doc(a, users_document(a, ch->h, msg, ret));
    }
    change_free(ch);
}

/* Why a new user cannot be added (the answer's message), or NULL: a name the file could not
 * hold as a user line (empty, a '#' that makes it a comment, ':' or a control character) or
 * an empty password. Checked before the file is touched. */
static const char *add_refusal(const char *user, const char *pass)
{
    if (!htpasswd_user_valid(user))
        return "Invalid user name (empty, starting with '#', or holding ':' or a control "
               "character) - not added";
    if (!*pass)
        return "Empty password - not added";
    return NULL;
}

/* Starts an add or delete (the request is answered later), or answers a missing parameter or
 * a busy verifier. */
static void change(admin_req_t *a, htpasswd_t *h, int add)
{
    change_t *ch = calloc(1, sizeof(*ch));
    if (!ch) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    ch->a = a;
    ch->h = h;
    ch->add = add;
    ch->user = admin_param(a, "username");
    ch->pass = add ? admin_param(a, "password") : NULL;
    if (!ch->user || (add && !ch->pass)) {
        change_free(ch);
        admin_send_error(a, 400, "Missing parameter");
        return;
    }
    const char *refused = add ? add_refusal(ch->user, ch->pass) : NULL;
    if (refused) {
        static log_ratelimit_t rl;
        char esc_user[600], esc_mount[600];
        log_info_limited(&rl, 10000, "admin: user \"%s\" not added on %s: %s",
                         escape_log_utf8(esc_user, sizeof(esc_user), ch->user, strlen(ch->user)),
                         escape_log(esc_mount, sizeof(esc_mount), a->mount_name,
                                    strlen(a->mount_name)), refused);
        change_free(ch);
        admin_send_doc(a, users_document(a, h, refused, 0));
        return;
    }
    audit_who(a, a->admin, ch->who);
    int rc = verify_submit(a->worker, change_run, change_done, ch);
    if (rc < 0) {
        change_free(ch);
        admin_send_error(a, 503, "Service Unavailable: busy, please try again later");
        return;
    }
    admin_park(a);
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
    if (action && (strcmp(action, "add") == 0 || strcmp(action, "delete") == 0)) {
        int add = strcmp(action, "add") == 0;
        free(action);
        change(a, h, add);
        return;
    }
    if (action && strcmp(action, "list") != 0) {
        free(action);
        admin_send_error(a, 400, "Unknown action");
        return;
    }
    free(action);
    admin_send_doc(a, users_document(a, h, NULL, 0));
}
