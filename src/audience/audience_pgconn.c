/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pgconn: libpq with deadlines, and URIs shown without their password (see
 * audience_pgconn.h).
 */
#include "audience/audience_pgconn.h"
#include "audience/audience_pgresolve.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/loop.h"

static const char *const schemes[] = {"postgresql://", "postgres://"};

/* The length of the scheme uri starts with, or 0. */
static size_t scheme_len(const char *uri)
{
    for (size_t i = 0; uri && i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if (strncasecmp(uri, schemes[i], strlen(schemes[i])) == 0)
            return strlen(schemes[i]);
    return 0;
}

int audience_pg_is_uri(const char *where)
{
    return scheme_len(where) > 0;
}

/* Where the password of uri's user part is: *at and *len (0 when it has none). libpq ends the
 * user part at the first '@' before any '/', the user at its first ':'. */
static void user_password(const char *uri, size_t *at, size_t *len)
{
    size_t s = scheme_len(uri), end = s + strcspn(uri + s, "@/");
    *at = *len = 0;
    if (uri[end] != '@')
        return;
    const char *colon = memchr(uri + s, ':', end - s);
    if (colon) {
        *at = (size_t)(colon + 1 - uri);
        *len = end - *at;
    }
}

char *audience_pg_shown(const char *uri)
{
    buf_t b = BUF_INIT;
    size_t at, len;
    user_password(uri, &at, &len);
    const char *query = strchr(uri + (len ? at + len : 0), '?');
    size_t head = query ? (size_t)(query - uri) : strlen(uri);
    if (len) {
        buf_append(&b, uri, at);
        buf_append_str(&b, "***");
        buf_append(&b, uri + at + len, head - at - len);
    } else {
        buf_append(&b, uri, head);
    }
    /* the parameters: password=... replaced, the others kept */
    for (const char *p = query; p && *p;) {
        size_t n = strcspn(p + 1, "&") + 1;
        if (n >= 10 && strncasecmp(p + 1, "password=", 9) == 0)
            buf_appendf(&b, "%cpassword=***", *p);
        else
            buf_append(&b, p, n);
        p += n;
    }
    size_t out_len;
    return buf_take(&b, &out_len);
}

/* Replaces each copy of uri's password in text with "***" (a message libpq made from the
 * URI could quote it). */
static void scrub(char *text, const char *uri)
{
    size_t at, len;
    user_password(uri, &at, &len);
    const char *q = strcasestr(uri, "password=");
    char secret[256];
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0 && len)
            snprintf(secret, sizeof(secret), "%.*s", (int)len, uri + at);
        else if (pass == 1 && q)
            snprintf(secret, sizeof(secret), "%.*s", (int)strcspn(q + 9, "&"), q + 9);
        else
            continue;
        size_t slen = strlen(secret);
        for (char *hit; slen && (hit = strstr(text, secret));) {
            memmove(hit + 3, hit + slen, strlen(hit + slen) + 1);
            memcpy(hit, "***", 3);
        }
    }
}

/* libpq's message as one line: its trailing newline and any inner ones made spaces. */
static void say(char *why, size_t cap, const char *what, const char *msg)
{
    snprintf(why, cap, "%s%s%s", what, *what && msg && *msg ? ": " : "", msg ? msg : "");
    for (char *p = why; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    for (size_t n = strlen(why); n && why[n - 1] == ' '; n--)
        why[n - 1] = '\0';
}

/* Waits until c's socket is ready for events or the monotonic deadline: 1 ready, 0 time up,
 * -1 failure. */
static int wait_socket(PGconn *c, short events, uint64_t deadline)
{
    int fd = PQsocket(c);
    if (fd < 0)
        return -1;
    for (;;) {
        uint64_t now = loop_now_ms();
        if (now >= deadline)
            return 0;
        struct pollfd p = {.fd = fd, .events = events};
        int rc = poll(&p, 1, (int)(deadline - now));
        if (rc > 0)
            return 1;
        if (rc < 0 && errno != EINTR)
            return -1;
    }
}

/* libpq's TLS files (a client certificate and key, the CAs, their revocations) default to
 * ~/.postgresql/ of $HOME, which is root's when the server was started as root and runs as
 * <changeowner>'s user: unreadable, which libpq takes for a failure of every TLS connection.
 * They are named here under the home of the user the server runs as (where they are missing,
 * libpq goes without them, as it would for that user); the URI's own settings win. How many
 * keys and values were set (paths holds the values). */
static int home_files(const char **keys, const char **values, char (*paths)[PATH_MAX])
{
    static const char *const names[][2] = {{"sslcert", "postgresql.crt"},
                                           {"sslkey", "postgresql.key"},
                                           {"sslrootcert", "root.crt"},
                                           {"sslcrl", "root.crl"}};
    char buf[4096];
    struct passwd pwd, *pw = NULL;
    if (getpwuid_r(geteuid(), &pwd, buf, sizeof(buf), &pw) != 0 || !pw || !pw->pw_dir ||
        !*pw->pw_dir)
        return 0;
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], PATH_MAX, "%s/.postgresql/%s", pw->pw_dir, names[i][1]);
        keys[i] = names[i][0];
        values[i] = paths[i];
    }
    return 4;
}

PGconn *audience_pg_connect(const char *uri, int timeout_ms, audience_pg_err_t *err)
{
    char *why = err->why;
    size_t cap = sizeof(err->why);
    *err = (audience_pg_err_t){.gone = 1};
    uint64_t deadline = loop_now_ms() + (uint64_t)timeout_ms;
    /* the hosts' names looked up here, within the deadline: libpq's own lookup has none */
    audience_pg_hosts_t hosts;
    if (audience_pg_resolve(uri, deadline, &hosts, why, cap) < 0)
        return NULL;
    /* the URI comes after the defaults (what it says wins over them), the addresses found
     * after the URI */
    const char *keys[11] = {"application_name", "client_encoding"};
    const char *values[11] = {"rimecast", "UTF8"};
    char files[4][PATH_MAX];
    int k = 2 + home_files(keys + 2, values + 2, files);
    keys[k] = "dbname", values[k++] = uri;
    if (hosts.hostaddr) {
        keys[k] = "host", values[k++] = hosts.host;
        keys[k] = "hostaddr", values[k++] = hosts.hostaddr;
    }
    if (hosts.port)
        keys[k] = "port", values[k++] = hosts.port;
    keys[k] = values[k] = NULL;
    PGconn *c = PQconnectStartParams(keys, values, 1);
    audience_pg_hosts_free(&hosts);
    if (!c) {
        say(why, cap, "out of memory", NULL);
        return NULL;
    }
    PostgresPollingStatusType st = PQstatus(c) == CONNECTION_BAD ? PGRES_POLLING_FAILED
                                                                 : PGRES_POLLING_WRITING;
    while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        int ready = wait_socket(c, st == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (ready <= 0) {
            say(why, cap, ready == 0 ? "no answer in time" : "connection failed", NULL);
            PQfinish(c);
            return NULL;
        }
        st = PQconnectPoll(c);
    }
    if (st == PGRES_POLLING_FAILED) {
        say(why, cap, "", PQerrorMessage(c));
        scrub(why, uri);
        PQfinish(c);
        return NULL;
    }
    PQsetnonblocking(c, 1);
    return c;
}

/* Sends what libpq holds and reads the answer until it is whole, within the deadline. 0, -1
 * (the connection failed) or -2 (time up). */
static int drive(PGconn *c, uint64_t deadline)
{
    int rc;
    while ((rc = PQflush(c)) == 1) { /* the rest of the query: reading meanwhile, as asked */
        int ready = wait_socket(c, POLLOUT | POLLIN, deadline);
        if (ready <= 0)
            return ready == 0 ? -2 : -1;
        if (!PQconsumeInput(c))
            return -1;
    }
    if (rc < 0)
        return -1;
    while (PQisBusy(c)) {
        int ready = wait_socket(c, POLLIN, deadline);
        if (ready <= 0)
            return ready == 0 ? -2 : -1;
        if (!PQconsumeInput(c))
            return -1;
    }
    return 0;
}

PGresult *audience_pg_exec(PGconn *c, const char *sql, int n, const char *const *params,
                           int timeout_ms, audience_pg_err_t *err)
{
    char *why = err->why;
    size_t cap = sizeof(err->why);
    int *gone = &err->gone;
    uint64_t deadline = loop_now_ms() + (uint64_t)timeout_ms;
    *err = (audience_pg_err_t){0};
    if (!(params ? PQsendQueryParams(c, sql, n, NULL, params, NULL, NULL, 0)
                 : PQsendQuery(c, sql))) {
        say(why, cap, "", PQerrorMessage(c));
        *gone = PQstatus(c) != CONNECTION_OK;
        return NULL;
    }
    PGresult *res = NULL, *r;
    int failed = 0;
    for (;;) {
        int d = drive(c, deadline);
        if (d < 0) {
            say(why, cap, d == -2 ? "no answer in time" : "", d == -2 ? NULL : PQerrorMessage(c));
            *gone = 1;
            PQclear(res);
            return NULL;
        }
        if (!(r = PQgetResult(c)))
            break;
        ExecStatusType s = PQresultStatus(r);
        if (!failed && (s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK)) {
            PQclear(res);
            res = r;
        } else {
            if (!failed) {
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                say(why, cap, "", PQresultErrorMessage(r));
                snprintf(err->state, sizeof(err->state), "%s", state ? state : "");
            }
            failed = 1;
            PQclear(r);
        }
    }
    if (failed || !res) {
        if (!failed)
            say(why, cap, "", PQerrorMessage(c));
        *gone = PQstatus(c) != CONNECTION_OK;
        PQclear(res);
        return NULL;
    }
    return res;
}
