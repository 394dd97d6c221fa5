/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth: listener authentication of mounts and the sessions open under each user (see
 * auth.h). Sessions are counted in a small hash table under one mutex: it is taken once when
 * an authenticated listener joins and once when it leaves, never while streaming.
 */
#include "auth/auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/guard.h"
#include "auth/htpasswd.h"
#include "auth/park.h"
#include "auth/verify.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/record.h"
#include "core/str.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/server.h"

#define SESSION_BUCKETS 256
/* past the verifier's own limit: a hash that started just before it may still be running */
#define PARK_GRACE_MS 5000

struct auth_session {
    char *mount;
    char *user;
    unsigned count;
    struct auth_session *next; /* a hash chain: one pointer a session, unlinked by walking a bucket */
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

int auth_covers(const mount_conf_t *from, const mount_conf_t *to)
{
    if (!to || !to->auth)
        return 1;
    htpasswd_t *h = auth_mount_htpasswd(to);
    return h && from && auth_mount_htpasswd(from) == h;
}

static int allow_duplicates(const mount_conf_t *mc)
{
    const char *v = auth_mount_option(mc, "allow_duplicate_users");
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0 ||
                 strcmp(v, "on") == 0);
}

/* ---- the check ---- */

/* One listener's credentials on their way through the verifier and back. */
typedef struct listener_check {
    uint64_t conn_id;
    htpasswd_t *h;
    auth_admitted_fn admitted;
    char *mount, *user, *pass;
    char ip[64];
    int head;
    /* set on the verifier thread */
    auth_result_t result;
    unsigned retry_after;
} listener_check_t;

static void wipe(char *secret)
{
    if (secret)
        memset(secret, 0, strlen(secret));
}

static void check_free(listener_check_t *k)
{
    wipe(k->pass);
    free(k->pass);
    free(k->user);
    free(k->mount);
    free(k);
}

static void send_busy(conn_t *c)
{
    static log_ratelimit_t busy_log;
    log_info_limited(&busy_log, 10000, "auth: listener %s refused: too many passwords waiting "
                     "to be verified (%d)", CIDR_SHOWN(c->ip), VERIFY_MAX_QUEUED);
    client_send_error(c, 403, "Forbidden: busy, please try again later");
}

/* Verifier thread: the password against the file, and the address back-off. The back-off is
 * asked again and fed here, not on the worker, so that many guesses queued at once from one
 * address stop being verified as soon as it is blocked. */
static void check_run(void *arg)
{
    listener_check_t *k = arg;
    char what[300];
    if ((k->retry_after = guard_blocked(k->ip)) > 0) {
        k->result = AUTH_BLOCKED;
    } else {
        int rc = htpasswd_check(k->h, k->user, k->pass);
        if (rc < 0) {
            k->result = AUTH_UNAVAILABLE;
        } else if (rc != HTPASSWD_OK) {
            snprintf(what, sizeof(what), "listener of %s", k->mount);
            guard_failed(k->ip, what, k->user);
            k->result = AUTH_DENIED;
        } else {
            guard_succeeded(k->ip);
            k->result = AUTH_OK;
        }
    }
    wipe(k->pass);
}

static void end_session(conn_t *c, void *arg)
{
    (void)c;
    auth_session_end(arg);
}

void auth_user_session_save(const auth_session_t *s, buf_t *out)
{
    rec_u8(out, s != NULL);
    if (s) {
        rec_str(out, s->mount);
        rec_str(out, s->user);
    }
}

int auth_user_session_restore(rec_reader_t *in, auth_session_t **out)
{
    *out = NULL;
    if (!rec_get_u8(in))
        return in->error ? -EINVAL : 0;
    char *mount = rec_get_str(in), *user = rec_get_str(in);
    int dup;
    *out = mount && user ? session_begin(mount, user, 1, &dup) : NULL;
    free(mount);
    free(user);
    if (!*out)
        return in->error ? -EINVAL : -ENOMEM;
    return 0;
}

int auth_session_save(conn_t *c, buf_t *out)
{
    client_t *cl = client_of(c);
    if (cl->on_end && cl->on_end != end_session)
        return -ENOTSUP; /* URL authentication's: its session is the router's */
    auth_user_session_save(cl->on_end ? cl->on_end_arg : NULL, out);
    return 0;
}

int auth_session_restore(conn_t *c, rec_reader_t *in)
{
    auth_session_t *s;
    int rc = auth_user_session_restore(in, &s);
    if (rc == 0 && s) {
        client_of(c)->on_end = end_session;
        client_of(c)->on_end_arg = s;
    }
    return rc;
}

/* On c's worker, its password verified: the duplicate-user check of a GET, then its session
 * and user go with the connection and admitted runs. */
static void check_finish(conn_t *c, listener_check_t *k)
{
    char esc[600], name[600];
    if (k->result != AUTH_OK) {
        auth_send_refusal(c, k->result, k->retry_after);
        return;
    }
    auth_session_t *session = NULL;
    if (!k->head) {
        const mount_conf_t *mc = config_find_mount(server_config(), k->mount);
        int dup;
        session = session_begin(k->mount, k->user, allow_duplicates(mc), &dup);
        if (dup)
            log_info("auth: %s refused on %s: user \"%s\" is already listening", CIDR_SHOWN(c->ip),
                     escape_log_utf8(esc, sizeof(esc), k->mount, strlen(k->mount)),
                     escape_log_utf8(name, sizeof(name), k->user, strlen(k->user)));
        if (!session) {
            auth_send_refusal(c, AUTH_DENIED, 0);
            return;
        }
    }
    client_t *cl = client_of(c);
    free(cl->log_user);
    cl->log_user = k->user; /* the access log's user field */
    k->user = NULL;
    if (session) {
        cl->on_end = end_session;
        cl->on_end_arg = session;
    }
    k->admitted(c, k->mount);
}

static void check_done(worker_t *w, void *arg, int ran)
{
    listener_check_t *k = arg;
    conn_t *c = auth_park_take(w, k->conn_id);
    if (c && !ran)
        send_busy(c); /* it waited longer than anyone should */
    else if (c)
        check_finish(c, k);
    check_free(k);
}

int auth_listener_begin(conn_t *c, const http_request_t *req, const char *mount,
                        auth_admitted_fn admitted)
{
    const mount_conf_t *mc = config_find_mount(server_config(), mount);
    char esc[600];
    if (!mc || !mc->auth)
        return 1;
    htpasswd_t *h = auth_mount_htpasswd(mc);
    if (!h) {
        log_error("auth: %s has authentication that cannot be used: listener refused",
                  escape_log_utf8(esc, sizeof(esc), mount, strlen(mount)));
        auth_send_refusal(c, AUTH_UNAVAILABLE, 0);
        return 0;
    }
    char *user = NULL, *pass = NULL;
    if (http_parse_basic_auth(req, &user, &pass) < 0) {
        auth_send_refusal(c, AUTH_DENIED, 0); /* no credentials: the usual challenge */
        return 0;
    }
    listener_check_t *k = NULL;
    unsigned retry_after = guard_blocked(c->ip);
    if (retry_after > 0) {
        auth_send_refusal(c, AUTH_BLOCKED, retry_after);
        goto fail;
    }
    if (!(k = calloc(1, sizeof(*k))) || !(k->mount = str_dup(mount))) {
        client_send_error(c, 500, "Internal Server Error");
        goto fail;
    }
    k->conn_id = c->id;
    k->h = h;
    k->admitted = admitted;
    k->user = user;
    k->pass = pass;
    user = pass = NULL;
    snprintf(k->ip, sizeof(k->ip), "%s", c->ip);
    k->head = req->method == HTTP_METHOD_HEAD;
    int rc = verify_submit(c->worker, check_run, check_done, k);
    if (rc < 0) {
        if (rc == -EBUSY)
            send_busy(c);
        else
            client_send_error(c, 503, "Service Unavailable");
        goto fail;
    }
    auth_park(c, AUTH_PARK_LISTENER, VERIFY_WAIT_MS + PARK_GRACE_MS);
    return 0;
fail:
    if (k)
        check_free(k);
    wipe(pass);
    free(pass);
    free(user);
    return 0;
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
