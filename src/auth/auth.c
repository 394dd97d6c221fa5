/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth: listener authentication of mounts and the sessions open under each user (see
 * auth.h). Sessions are counted in a small hash table under one mutex: it is taken once when
 * an authenticated listener joins and once when it leaves, never while streaming.
 */
#include "auth/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/guard.h"
#include "auth/htpasswd.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/server.h"

#define SESSION_BUCKETS 256

struct auth_session {
    char *mount;
    char *user;
    unsigned count;
    struct auth_session *next;
};

static pthread_mutex_t sessions_lock = PTHREAD_MUTEX_INITIALIZER;
static auth_session_t *sessions[SESSION_BUCKETS];

static unsigned bucket_of(const char *mount, const char *user)
{
    unsigned h = 5381;
    for (const char *p = mount; *p; p++)
        h = h * 33 + (unsigned char)*p;
    h = h * 33 + ':';
    for (const char *p = user; *p; p++)
        h = h * 33 + (unsigned char)*p;
    return h % SESSION_BUCKETS;
}

/* Opens a session unless the user is already listening and duplicates are refused. */
static auth_session_t *session_begin(const char *mount, const char *user, int allow_dup,
                                     int *duplicate)
{
    unsigned b = bucket_of(mount, user);
    auth_session_t *s;
    *duplicate = 0;
    pthread_mutex_lock(&sessions_lock);
    for (s = sessions[b]; s; s = s->next)
        if (strcmp(s->mount, mount) == 0 && strcmp(s->user, user) == 0)
            break;
    if (s && s->count > 0 && !allow_dup) {
        *duplicate = 1;
        s = NULL;
    } else if (!s && (s = calloc(1, sizeof(*s)))) {
        s->mount = strdup(mount);
        s->user = strdup(user);
        if (!s->mount || !s->user) {
            free(s->mount);
            free(s->user);
            free(s);
            s = NULL;
        } else {
            s->next = sessions[b];
            sessions[b] = s;
        }
    }
    if (s)
        s->count++;
    pthread_mutex_unlock(&sessions_lock);
    return s;
}

void auth_session_end(auth_session_t *s)
{
    if (!s)
        return;
    unsigned b = bucket_of(s->mount, s->user);
    pthread_mutex_lock(&sessions_lock);
    if (--s->count == 0) {
        for (auth_session_t **pp = &sessions[b]; *pp; pp = &(*pp)->next)
            if (*pp == s) {
                *pp = s->next;
                break;
            }
        free(s->mount);
        free(s->user);
        free(s);
    }
    pthread_mutex_unlock(&sessions_lock);
}

/* ---- mount configuration ---- */

const char *auth_mount_option(const mount_conf_t *mc, const char *name)
{
    if (!mc || !mc->auth)
        return NULL;
    for (const kv_conf_t *kv = mc->auth->options; kv; kv = kv->next)
        if (kv->name && strcmp(kv->name, name) == 0)
            return kv->value;
    return NULL;
}

htpasswd_t *auth_mount_htpasswd(const mount_conf_t *mc)
{
    if (!mc || !mc->auth || !mc->auth->type || strcmp(mc->auth->type, "htpasswd") != 0)
        return NULL;
    const char *file = auth_mount_option(mc, "filename");
    if (!file)
        return NULL;
    char *path = config_path(server_config()->basedir, file);
    htpasswd_t *h = path ? htpasswd_get(path) : NULL;
    free(path);
    return h;
}

static int allow_duplicates(const mount_conf_t *mc)
{
    const char *v = auth_mount_option(mc, "allow_duplicate_users");
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 ||
                 strcmp(v, "on") == 0);
}

/* ---- the check ---- */

auth_result_t auth_listener_check(const char *mount, const http_request_t *req, const char *ip,
                                  int head, auth_outcome_t *out)
{
    const mount_conf_t *mc = config_find_mount(server_config(), mount);
    char what[300], esc[600];
    memset(out, 0, sizeof(*out));
    if (!mc || !mc->auth)
        return AUTH_OK;
    htpasswd_t *h = auth_mount_htpasswd(mc);
    snprintf(what, sizeof(what), "listener of %s", mount);
    if (!h) {
        log_error("auth: %s has authentication that cannot be used: listener refused",
                  escape_log_utf8(esc, sizeof(esc), mount, strlen(mount)));
        return AUTH_UNAVAILABLE;
    }
    char *user = NULL, *pass = NULL;
    if (http_parse_basic_auth(req, &user, &pass) < 0)
        return AUTH_DENIED; /* no credentials: the usual challenge, no back-off */
    auth_result_t res = AUTH_DENIED;
    if ((out->retry_after = guard_blocked(ip)) > 0) {
        res = AUTH_BLOCKED;
        goto done;
    }
    int rc = htpasswd_check(h, user, pass);
    if (rc < 0) {
        res = AUTH_UNAVAILABLE;
        goto done;
    }
    if (rc != HTPASSWD_OK) {
        guard_failed(ip, what, user);
        goto done;
    }
    guard_succeeded(ip);
    if (!head) {
        int dup;
        out->session = session_begin(mount, user, allow_duplicates(mc), &dup);
        if (dup) {
            log_info("auth: %s refused on %s: user \"%s\" is already listening",
                     ip, escape_log_utf8(esc, sizeof(esc), mount, strlen(mount)),
                     escape_log_utf8(what, sizeof(what), user, strlen(user)));
            goto done;
        }
        if (!out->session)
            goto done;
    }
    out->user = user;
    user = NULL;
    res = AUTH_OK;
done:
    free(user);
    free(pass);
    return res;
}

void auth_send_refusal(conn_t *c, auth_result_t r, unsigned retry_after)
{
    if (r != AUTH_BLOCKED) {
        client_send_error(c, 401, "You need to authenticate");
        return;
    }
    static const char body[] = "<html><head><title>Error 429</title></head><body><b>429 - "
                               "Too many failed logins, try again later</b></body></html>\r\n";
    char extra[64], head[2048];
    snprintf(extra, sizeof(extra), "Retry-After: %u\r\n", retry_after ? retry_after : 1);
    size_t n = response_head(head, sizeof(head), 429, "text/html; charset=utf-8",
                             (long)sizeof(body) - 1, extra);
    client_of(c)->status = 429;
    c->ops = &conn_writing_ops;
    if (n == 0 || conn_queue(c, head, n) < 0) {
        conn_close(c);
        return;
    }
    conn_send(c, body, sizeof(body) - 1, conn_linger_close);
}
