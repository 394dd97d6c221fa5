/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth_url: URL authentication (see auth_url.h). Bodies are built in growing buffers (no
 * fixed-size buffer: forwarded client headers may be long, CVE-2018-18820) with the fields in
 * Icecast 2.4's order and escaping. Everything the auth server says is untrusted: the message
 * is cut and stripped of control characters here, and escaped where it is logged or shown.
 */
#include "auth/auth_url.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "auth/auth.h"
#include "auth/park.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/record.h"
#include "core/str.h"
#include "core/url.h"
#include "http/client.h"
#include "http/fetch.h"
#include "http/parser.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"

#define DEFAULT_AUTH_HEADER "icecast-auth-user: 1"
#define DEFAULT_TIMELIMIT_HEADER "icecast-auth-timelimit:"
#define MESSAGE_HEADER "icecast-auth-message"
#define DEFAULT_PREROLL_HEADER "icecast-preroll"
#define PREROLL_MAX 256
#define DEFAULT_TIMEOUT_S 15
#define PARK_GRACE_MS 2000 /* past the request's own timeout: the fetch answer always comes first */

static atomic_int pending;

int auth_url_enabled(const mount_conf_t *mc)
{
    return mc && mc->auth && mc->auth->type && strcmp(mc->auth->type, "url") == 0;
}

int auth_url_checks_sources(const mount_conf_t *mc)
{
    return auth_url_enabled(mc) && auth_mount_option(mc, "stream_auth");
}

void auth_url_session_free(auth_url_session_t *s)
{
    if (!s)
        return;
    if (s->arg && s->arg_free)
        s->arg_free(s->arg);
    char *fields[] = {s->mount_name, s->user, s->remove_url, s->uri, s->ip, s->agent,
                      s->server, s->auth_header, s->timelimit_header, s->preroll,
                      s->preroll_header};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        free(fields[i]);
    char *secrets[] = {s->pass, s->userpwd};
    for (size_t i = 0; i < 2; i++)
        if (secrets[i]) {
            memset(secrets[i], 0, strlen(secrets[i]));
            free(secrets[i]);
        }
    free(s);
}

/* ---- carried across an upgrade: what listener_remove needs ---- */

void auth_url_session_save(const auth_url_session_t *s, buf_t *out)
{
    rec_u64(out, s->conn_id);
    const char *fields[] = {s->mount_name, s->user, s->pass, s->remove_url, s->userpwd, s->uri,
                            s->ip, s->agent, s->server};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        rec_str(out, fields[i]);
    rec_u32(out, s->timeout_ms);
    rec_u32(out, (uint32_t)s->port);
    rec_u32(out, s->timelimit);
}

auth_url_session_t *auth_url_session_restore(rec_reader_t *in)
{
    auth_url_session_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->conn_id = rec_get_u64(in);
    char **fields[] = {&s->mount_name, &s->user, &s->pass, &s->remove_url, &s->userpwd, &s->uri,
                       &s->ip, &s->agent, &s->server};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        *fields[i] = rec_get_str(in);
    s->timeout_ms = rec_get_u32(in);
    s->port = (int)rec_get_u32(in);
    s->timelimit = rec_get_u32(in);
    s->accepted = 1;
    if (in->error || !s->mount_name || !s->ip || !s->server) {
        auth_url_session_free(s);
        return NULL;
    }
    return s;
}

/* ---- settings of the mount ---- */

static unsigned timeout_ms(const mount_conf_t *mc)
{
    const char *v = auth_mount_option(mc, "timeout");
    long t = v ? strtol(v, NULL, 10) : DEFAULT_TIMEOUT_S;
    if (t <= 0 || t > 3600)
        t = DEFAULT_TIMEOUT_S;
    return (unsigned)t * 1000u;
}

/* "user:password" for the auth server: the options, else (listeners, as Icecast does) the
 * client's own credentials; NULL for none. */
static char *server_credentials(const mount_conf_t *mc, const char *user, const char *pass)
{
    const char *u = auth_mount_option(mc, "username"), *p = auth_mount_option(mc, "password");
    if (!u || !p) {
        u = user;
        p = pass;
    }
    if (!u)
        return NULL;
    size_t len = strlen(u) + strlen(p ? p : "") + 2;
    char *out = malloc(len);
    if (out)
        snprintf(out, len, "%s:%s", u, p ? p : "");
    return out;
}

/* The header name of a "name:" option (timelimit_header), trimmed. */
static char *header_name(const char *opt)
{
    size_t len = strlen(opt);
    while (len > 0 && (opt[len - 1] == ':' || opt[len - 1] == ' '))
        len--;
    return str_ndup(opt, len);
}

static auth_url_session_t *session_new(conn_t *c, const mount_conf_t *mc, const char *mount,
                                       const char *user, const char *pass)
{
    const config_t *cfg = server_config();
    auth_url_session_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    const char *ah = auth_mount_option(mc, "auth_header");
    const char *th = auth_mount_option(mc, "timelimit_header");
    const char *ph = auth_mount_option(mc, "preroll_header");
    s->conn_id = c ? c->id : 0;
    s->mount_name = str_dup(mount);
    s->user = user ? str_dup(user) : NULL;
    s->pass = pass ? str_dup(pass) : NULL;
    s->ip = str_dup(c ? c->ip : "");
    s->server = str_dup(cfg->hostname ? cfg->hostname : "localhost");
    s->port = c ? c->local_port : cfg->listen ? cfg->listen->port : 8000;
    s->auth_header = str_dup(ah ? ah : DEFAULT_AUTH_HEADER);
    s->timelimit_header = header_name(th ? th : DEFAULT_TIMELIMIT_HEADER);
    s->preroll_header = header_name(ph ? ph : DEFAULT_PREROLL_HEADER);
    s->timeout_ms = timeout_ms(mc);
    if (!s->mount_name || !s->ip || !s->server || !s->auth_header || !s->timelimit_header ||
        !s->preroll_header ||
        (user && !s->user) || (pass && !s->pass)) {
        auth_url_session_free(s);
        return NULL;
    }
    return s;
}

static void clean_message(char *out, size_t cap, const char *in)
{
    size_t n = 0;
    for (; *in && n + 1 < cap; in++)
        if ((unsigned char)*in >= 0x20 && *in != 0x7f)
            out[n++] = *in;
    out[n] = '\0';
}

int auth_url_preroll_ok(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || len >= PREROLL_MAX || name[0] == '/')
        return 0;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\')
            return 0;
    for (const char *seg = name; seg; ) {
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
        seg = slash ? slash + 1 : NULL;
    }
    return 1;
}

/* The preroll an accepting answer names, if any and if it may be one (else said in the log,
 * at most once a minute: the mount's intro is played instead). */
static void read_preroll(auth_url_session_t *s, const fetch_result_t *r)
{
    char name[PREROLL_MAX + 1], esc[4 * PREROLL_MAX + 8], m[512];
    if (!fetch_header(r, s->preroll_header, name, sizeof(name)))
        return;
    if (auth_url_preroll_ok(name)) {
        s->preroll = str_dup(name);
        return;
    }
    static log_ratelimit_t rl;
    log_warn_limited(&rl, 60000, "auth: listener on %s: the auth server named the preroll "
                     "\"%s\", not a file name of the webroot; the mount's intro is played "
                     "instead", escape_log(m, sizeof(m), s->mount_name, strlen(s->mount_name)),
                     escape_log(esc, sizeof(esc), name, strlen(name)));
}

/* Reads the answer into s. */
static void judge(auth_url_session_t *s, const char *action, const fetch_result_t *r)
{
    char esc[512], why[600], msg[AUTH_URL_MESSAGE_MAX], tl[32];
    s->accepted = 0;
    s->message[0] = '\0';
    if (r->error) {
        s->unavailable = 1;
        snprintf(s->message, sizeof(s->message), "authentication unavailable");
        log_error("auth: %s for %s on %s: the auth server gave no answer (%s): refused",
                  action, CIDR_SHOWN(s->ip), escape_log(why, sizeof(why), s->mount_name,
                                            strlen(s->mount_name)),
                  escape_log(esc, sizeof(esc), r->error_text, strlen(r->error_text)));
        return;
    }
    s->accepted = fetch_has_header_line(r, s->auth_header);
    if (s->accepted) {
        if (fetch_header(r, s->timelimit_header, tl, sizeof(tl))) {
            long v = strtol(tl, NULL, 10);
            s->timelimit = v > 0 ? (unsigned)v : 0;
        }
        read_preroll(s, r);
        return;
    }
    if (fetch_header(r, MESSAGE_HEADER, msg, sizeof(msg)))
        clean_message(s->message, sizeof(s->message), msg);
    log_info("auth: %s for %s on %s refused by the auth server (HTTP %ld): %s", action,
             CIDR_SHOWN(s->ip),
             escape_log(why, sizeof(why), s->mount_name, strlen(s->mount_name)), r->status,
             s->message[0] ? escape_log(esc, sizeof(esc), s->message, strlen(s->message))
                           : "no reason given");
}

static void resume_parked(worker_t *w, const fetch_result_t *r, auth_url_session_t *s,
                          const char *action)
{
    atomic_fetch_sub(&pending, 1);
    conn_t *c = auth_park_take(w, s->conn_id);
    if (!c) {
        auth_url_session_free(s); /* the client left (or was answered) meanwhile */
        return;
    }
    judge(s, action, r);
    s->resume(c, s);
}

static void listener_answered(worker_t *w, const fetch_result_t *r, void *arg)
{
    resume_parked(w, r, arg, "listener_add");
}

static void source_answered(worker_t *w, const fetch_result_t *r, void *arg)
{
    resume_parked(w, r, arg, "stream_auth");
}

/* Sends body to url for s's client c, parked as kind. PARKED, or a start result to return. */
static auth_url_start_t park(conn_t *c, auth_url_session_t *s, const char *url, char *body,
                             auth_park_kind_t kind, fetch_done_fn done)
{
    if (atomic_fetch_add(&pending, 1) >= AUTH_URL_MAX_PENDING) {
        atomic_fetch_sub(&pending, 1);
        free(body);
        return AUTH_URL_BUSY;
    }
    fetch_request_t rq = {.url = url, .body = body, .userpwd = s->userpwd,
                          .timeout_ms = s->timeout_ms, .reply_to = c->worker, .done = done,
                          .arg = s};
    int rc = fetch_submit(&rq);
    free(body);
    if (rc < 0) {
        atomic_fetch_sub(&pending, 1);
        return rc == -ENOMEM ? AUTH_URL_FAILED : AUTH_URL_BUSY;
    }
    auth_park(c, kind, s->timeout_ms + PARK_GRACE_MS);
    return AUTH_URL_PARKED;
}

/* ---- listeners ---- */

/* The client headers named by the headers option, as prefix+name=value fields. */
static int append_client_headers(buf_t *b, const mount_conf_t *mc, const http_request_t *req)
{
    const char *list = auth_mount_option(mc, "headers");
    const char *prefix = auth_mount_option(mc, "header_prefix");
    if (!list)
        return 0;
    for (const char *p = list; *p;) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *ne = e;
        while (ne > p && ne[-1] == ' ')
            ne--;
        char *name = ne > p ? str_ndup(p, (size_t)(ne - p)) : NULL;
        char *value = name ? http_header_dup(req, name) : NULL;
        int rc = 0;
        if (value) {
            buf_t field = {0};
            rc = buf_appendf(&field, "%s%s", prefix ? prefix : "", name);
            if (rc == 0)
                rc = url_form_append(b, field.data, value);
            buf_free(&field);
        }
        free(name);
        free(value);
        if (rc < 0)
            return -ENOMEM;
        p = e;
    }
    return 0;
}

static char *client_id(char *buf, size_t len, uint64_t id)
{
    snprintf(buf, len, "%llu", (unsigned long long)id);
    return buf;
}

/* listener_add (req: the client's request) or listener_remove (req NULL: how long the
 * session lasted and the bytes it was sent). */
static char *listener_body(const auth_url_session_t *s, const char *action,
                           const mount_conf_t *mc, const http_request_t *req,
                           uint64_t duration_s, uint64_t sent)
{
    char num[32];
    buf_t b = {0};
    int rc = buf_appendf(&b, "action=%s", action);
    rc |= url_form_append(&b, "server", s->server);
    rc |= url_form_append(&b, "port", client_id(num, sizeof(num), (uint64_t)s->port));
    rc |= url_form_append(&b, "client", client_id(num, sizeof(num), s->conn_id));
    rc |= url_form_append(&b, "mount", s->uri);
    rc |= url_form_append(&b, "user", s->user);
    rc |= url_form_append(&b, "pass", s->pass);
    if (!req) { /* listener_remove: what Icecast sends, then the bytes sent (as Icecast-KH) */
        rc |= url_form_append(&b, "duration", client_id(num, sizeof(num), duration_s));
    }
    rc |= url_form_append(&b, "ip", CIDR_SHOWN(s->ip)); /* <anonymize-ip>: its network */
    rc |= url_form_append(&b, "agent", s->agent);
    if (req)
        rc |= append_client_headers(&b, mc, req);
    else
        rc |= url_form_append(&b, "sent", client_id(num, sizeof(num), sent));
    if (rc) {
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b, NULL);
}

auth_url_start_t auth_url_listener_add(conn_t *c, const mount_conf_t *mc, const char *mount,
                                       const http_request_t *req, auth_url_resume_fn resume,
                                       auth_url_session_t **out)
{
    char *user = NULL, *pass = NULL;
    *out = NULL;
    http_parse_basic_auth(req, &user, &pass);
    auth_url_session_t *s = session_new(c, mc, mount, user, pass);
    free(user);
    if (pass) {
        memset(pass, 0, strlen(pass));
        free(pass);
    }
    if (!s)
        return AUTH_URL_FAILED;
    const char *remove = auth_mount_option(mc, "listener_remove");
    const char *add = auth_mount_option(mc, "listener_add");
    s->resume = resume;
    s->uri = str_ndup(req->uri, req->uri_len);
    s->agent = http_header_dup(req, "user-agent");
    s->remove_url = remove ? str_dup(remove) : NULL;
    s->userpwd = server_credentials(mc, s->user, s->pass);
    if (!s->uri || (remove && !s->remove_url)) {
        auth_url_session_free(s);
        return AUTH_URL_FAILED;
    }
    if (!add) { /* nothing to ask: let in, as Icecast does */
        s->accepted = 1;
        *out = s;
        return AUTH_URL_ACCEPTED;
    }
    char *body = listener_body(s, "listener_add", mc, req, 0, 0);
    if (!body) {
        auth_url_session_free(s);
        return AUTH_URL_FAILED;
    }
    auth_url_start_t r = park(c, s, add, body, AUTH_PARK_LISTENER, listener_answered);
    if (r != AUTH_URL_PARKED)
        auth_url_session_free(s);
    return r;
}

void auth_url_session_end(conn_t *c, void *arg)
{
    time_t now = time(NULL);
    auth_url_session_close(arg, (uint64_t)(now > c->start ? now - c->start : 0), c->bytes_sent);
}

void auth_url_session_close(auth_url_session_t *s, uint64_t duration_s, uint64_t sent)
{
    if (s->remove_url) {
        char *body = listener_body(s, "listener_remove", NULL, NULL, duration_s, sent);
        fetch_request_t rq = {.url = s->remove_url, .body = body, .userpwd = s->userpwd,
                              .timeout_ms = s->timeout_ms};
        int rc = body ? fetch_submit(&rq) : -ENOMEM;
        if (rc < 0)
            log_warn("auth: listener_remove for %s not sent (%s)", CIDR_SHOWN(s->ip),
                     strerror(-rc));
        free(body);
    }
    auth_url_session_free(s);
}

/* ---- sources and mounts ---- */

auth_url_start_t auth_url_stream_auth(conn_t *c, const mount_conf_t *mc, const char *mount,
                                      const char *user, const char *pass, int admin,
                                      uintptr_t tag, void *arg, void (*arg_free)(void *arg),
                                      auth_url_resume_fn resume)
{
    char num[32];
    const char *url = auth_mount_option(mc, "stream_auth");
    auth_url_session_t *s = url ? session_new(c, mc, mount, user, pass) : NULL;
    if (!s)
        return AUTH_URL_FAILED;
    s->resume = resume;
    s->tag = tag;
    s->userpwd = server_credentials(mc, NULL, NULL);
    buf_t b = {0};
    int rc = buf_append_str(&b, "action=stream_auth");
    rc |= url_form_append(&b, "mount", mount);
    rc |= url_form_append(&b, "ip", CIDR_SHOWN(s->ip)); /* <anonymize-ip>: its network */
    rc |= url_form_append(&b, "server", s->server);
    rc |= url_form_append(&b, "port", client_id(num, sizeof(num), (uint64_t)s->port));
    rc |= url_form_append(&b, "user", user); /* NULL (no credentials) is sent empty */
    rc |= url_form_append(&b, "pass", pass);
    if (admin)
        rc |= buf_append_str(&b, "&admin=1");
    if (rc) {
        buf_free(&b);
        auth_url_session_free(s);
        return AUTH_URL_FAILED;
    }
    s->arg = arg;
    s->arg_free = arg_free;
    auth_url_start_t r = park(c, s, url, buf_take(&b, NULL), AUTH_PARK_SOURCE,
                              source_answered);
    if (r != AUTH_URL_PARKED) {
        s->arg = NULL; /* the caller's still */
        auth_url_session_free(s);
    }
    return r;
}

void auth_url_mount_event(const mount_conf_t *mc, const char *mount, int added)
{
    const char *url = auth_url_enabled(mc)
                          ? auth_mount_option(mc, added ? "mount_add" : "mount_remove")
                          : NULL;
    if (!url)
        return;
    const config_t *cfg = server_config();
    char num[32];
    buf_t b = {0};
    int rc = buf_appendf(&b, "action=%s", added ? "mount_add" : "mount_remove");
    rc |= url_form_append(&b, "mount", mount);
    rc |= url_form_append(&b, "server", cfg->hostname ? cfg->hostname : "localhost");
    rc |= url_form_append(&b, "port", client_id(num, sizeof(num),
                                                (uint64_t)(cfg->listen ? cfg->listen->port : 8000)));
    char *userpwd = server_credentials(mc, NULL, NULL);
    fetch_request_t rq = {.url = url, .body = b.data, .userpwd = userpwd,
                          .timeout_ms = timeout_ms(mc)};
    if (rc == 0)
        rc = fetch_submit(&rq);
    if (rc < 0) {
        char esc[512];
        log_warn("auth: %s for %s not sent (%s)", added ? "mount_add" : "mount_remove",
                 escape_log(esc, sizeof(esc), mount, strlen(mount)), strerror(-rc));
    }
    free(userpwd);
    buf_free(&b);
}

void auth_url_send_refusal(conn_t *c, const auth_url_session_t *s)
{
    char text[AUTH_URL_MESSAGE_MAX + 32];
    snprintf(text, sizeof(text), "Forbidden: %s",
             s && s->message[0] ? s->message : "authentication refused");
    client_send_error(c, 403, text);
}
