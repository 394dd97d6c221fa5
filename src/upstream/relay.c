/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay: pulling a mount from another server (see relay.h): the relay objects, their
 * connections (connect, request, response head, then the source role), reconnect backoff,
 * on-demand starts and stops, and parked listeners.
 *
 * A relay_t belongs to one worker and is touched only on its thread: created anywhere, it is
 * handed over by worker_post; other threads reach it by its mount name through messages. Its
 * connection is a relay_conn_t (an HTTP client struct, so the source role finds the fields it
 * expects); when the connection is released, the relay hears of it in the destroy callback.
 */
#include "upstream/relay.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/record.h"
#include "core/list.h"
#include "core/log.h"
#include "core/str.h"
#include "core/url.h"
#include "http/client.h"
#include "http/parser.h"
#include "net/conn.h"
#include "net/connect.h"
#include "net/resolve.h"
#include "net/server.h"
#include "net/tls.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "stream/source.h"

#define RELAY_TICK_MS 200
#define RELAY_CONNECT_MS 10000
#define RELAY_BACKOFF_MIN_MS 1000
#define RELAY_BACKOFF_MAX_MS 60000
#define RELAY_GRACE_MS 30000 /* the mount waits this long for the upstream to come back */
/* while the mount waits (its listeners held), retries come at least this often, so that an
 * upstream back within the grace period gets its listeners back */
#define RELAY_HELD_BACKOFF_MAX_MS 2000
#define RELAY_IDLE_MS 10000  /* on-demand: stay connected after the last listener left */
#define RELAY_PARK_MS 10000  /* a listener waits this long for an on-demand upstream */
#define RELAY_PARK_POLL_MS 100
#define RELAY_MAX_REDIRECTS 5
#define RELAY_HEAD_CAP (HTTP_MAX_HEAD_BYTES + 4096)

typedef struct relay relay_t;

typedef struct relay_conn {
    client_t client; /* first: the source role uses client_of() */
    relay_t *relay;  /* NULL once the relay let go of it */
} relay_conn_t;

/* One configured upstream (a <relay> may list several: tried in order). */
typedef struct relay_host {
    char *server, *path;  /* upstream host and mount path */
    char *user, *pass;
    char *bind;           /* <bind>: local address to connect from, NULL = any */
    int port, icy;
    int tls;              /* the upstream speaks HTTPS */
    unsigned timeout_ms;  /* to connect (and the TLS handshake), and again for the head */
} relay_host_t;

struct relay {
    /* what to pull */
    relay_host_t hosts[RELAY_MAX_HOSTS];
    int nhosts;
    int cur;              /* the upstream of the current (or next) attempt */
    char *local;
    int on_demand, from_master;
    /* where the current attempt goes (the configured place, or a redirect's) */
    char *host, *path;
    int tport, ttls, redirects, redirect_pending;
    int send_creds;       /* the target is still the configured host: credentials go there */
    uint64_t bytes_at_start; /* the mount's bytes_read when this connection became its source */

    worker_t *worker;
    relay_conn_t *rc;     /* connecting, reading the head, or streaming */
    int resolving;        /* a lookup is under way (it holds a pointer to us) */
    int stopping;         /* free when the lookup answers */
    int streaming;        /* rc is a source now */
    mount_t *mount;       /* ours, kept across reconnects */
    uint64_t next_try_ms, lost_ms, wanted_ms;
    unsigned backoff_ms;
    uint32_t rnd;
    /* an upgrade's local feed (relay_start_feed): one connection, no retry */
    relay_feed_end_fn feed_end;
    char *feed_header;    /* the request header that proves it to the new process */
    char feed_why[200];   /* why its connection failed, for feed_end's log line */
    char logname[160];    /* local mount, escaped for the log */
    list_t link;          /* in worker_relays[its worker] (an empty list until it is added) */
};

static list_t worker_relays[SERVER_MAX_WORKERS]; /* each touched by its worker only */

/* On-demand relays by local mount (read by the workers' dispatch): cold path, one lock. */
typedef struct demand {
    char *name;
    worker_t *worker;
    int live;
    struct demand *next; /* singly linked: a handful, looked up and unlinked by name */
} demand_t;
static pthread_mutex_t demand_lock = PTHREAD_MUTEX_INITIALIZER;
static demand_t *demands;
static atomic_int next_worker;

static void relay_try(relay_t *r);

/* ---- small helpers ---- */

static uint32_t relay_random(relay_t *r)
{
    r->rnd ^= r->rnd << 13;
    r->rnd ^= r->rnd >> 17;
    r->rnd ^= r->rnd << 5;
    return r->rnd;
}

/* ms +- 20 % */
static uint64_t jitter(relay_t *r, unsigned ms)
{
    return ms * 4 / 5 + relay_random(r) % (ms * 2 / 5 + 1);
}

static void demand_set(const char *name, worker_t *w, int add)
{
    pthread_mutex_lock(&demand_lock);
    demand_t **pp = &demands;
    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    if (add && !*pp) {
        demand_t *d = calloc(1, sizeof(*d));
        if (d && (d->name = str_dup(name))) {
            d->worker = w;
            *pp = d;
        } else {
            free(d);
        }
    } else if (!add && *pp) {
        demand_t *d = *pp;
        *pp = d->next;
        free(d->name);
        free(d);
    }
    pthread_mutex_unlock(&demand_lock);
}

static void demand_live(const char *name, int live)
{
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d; d = d->next)
        if (strcmp(d->name, name) == 0)
            d->live = live;
    pthread_mutex_unlock(&demand_lock);
}

void relay_foreach_idle(void (*fn)(const char *mount, void *arg), void *arg)
{
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d; d = d->next)
        if (!d->live)
            fn(d->name, arg);
    pthread_mutex_unlock(&demand_lock);
}

int relay_parse_url(const char *url, size_t len, char **host, int *port, char **path, int *tls)
{
    size_t i;
    if (len > 7 && str_ieq(url, 7, "http://"))
        i = 7, *tls = 0;
    else if (len > 8 && str_ieq(url, 8, "https://"))
        i = 8, *tls = 1;
    else
        return -1;
    size_t h = i;
    while (i < len && url[i] != '/' && url[i] != ':')
        i++;
    size_t hlen = i - h;
    if (hlen == 0 || hlen > 253)
        return -1;
    for (size_t k = h; k < i; k++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", url[k]))
            return -1;
    int p = *tls ? 443 : 80;
    if (i < len && url[i] == ':') {
        p = 0;
        for (i++; i < len && url[i] >= '0' && url[i] <= '9' && p <= 65535; i++)
            p = p * 10 + (url[i] - '0');
        if (p <= 0 || p > 65535)
            return -1;
    }
    if (i >= len || url[i] != '/' || len - i > 1024)
        return -1;
    for (size_t k = i; k < len; k++)
        if ((unsigned char)url[k] <= 0x20 || url[k] == 0x7f)
            return -1;
    *host = str_ndup(url + h, hlen);
    *path = str_ndup(url + i, len - i);
    *port = p;
    if (!*host || !*path) {
        free(*host);
        free(*path);
        return -1;
    }
    return 0;
}

/* ---- the relay's mount ---- */

static void end_mount(relay_t *r, const char *why)
{
    r->lost_ms = 0;
    if (!r->mount)
        return;
    log_info("relay %s: mount ended (%s)", r->logname, why);
    source_end_mount(r->mount);
    mount_unref(r->mount);
    r->mount = NULL;
    if (r->on_demand)
        demand_live(r->local, 0);
}

/* Drops the connection without hearing back from it. */
static void detach_conn(relay_t *r)
{
    if (!r->rc)
        return;
    r->rc->relay = NULL;
    conn_close(&r->rc->client.conn);
    r->rc = NULL;
    r->streaming = 0;
}

static void relay_free(relay_t *r)
{
    end_mount(r, "relay stopped");
    for (int i = 0; i < r->nhosts; i++) {
        free(r->hosts[i].server);
        free(r->hosts[i].path);
        free(r->hosts[i].user);
        free(r->hosts[i].pass);
        free(r->hosts[i].bind);
    }
    free(r->local);
    free(r->host);
    free(r->path);
    if (r->feed_header) /* a secret: not left in freed memory */
        explicit_bzero(r->feed_header, strlen(r->feed_header));
    free(r->feed_header);
    free(r);
}

static void unlink_relay(relay_t *r)
{
    list_remove(&r->link); /* harmless when it was never added, or removed already */
}

/* Stops r (its worker's thread): no connection, mount ended, freed now or when its lookup
 * answers. */
static void relay_stop(relay_t *r)
{
    unlink_relay(r);
    if (r->on_demand)
        demand_set(r->local, NULL, 0);
    detach_conn(r);
    end_mount(r, "relay stopped");
    if (r->resolving)
        r->stopping = 1;
    else
        relay_free(r);
}

/* ---- connection ---- */

/* The connection ended (released by the worker): plan the next attempt. */
static void feed_ended(relay_t *r);

static void relay_conn_ended(relay_t *r)
{
    uint64_t now = loop_now_ms();
    r->rc = NULL;
    if (r->feed_end) {
        feed_ended(r);
        return;
    }
    if (r->redirect_pending) {
        r->next_try_ms = now;
        return;
    }
    /* a source that ended before any audio counts as a failed attempt */
    int had_data = r->streaming &&
                   (!r->mount || atomic_load(&r->mount->bytes_read) > r->bytes_at_start);
    if (r->streaming) {
        r->streaming = 0;
        if (!r->lost_ms)
            r->lost_ms = now;
    }
    free(r->path);
    r->path = NULL; /* the next attempt starts from a configured upstream */
    if (had_data) {
        r->lost_ms = now;
        r->cur = 0; /* each reconnect starts again from the first upstream */
        r->backoff_ms = RELAY_BACKOFF_MIN_MS;
        log_info("relay %s: upstream lost, reconnecting", r->logname);
    } else if (r->cur + 1 < r->nhosts) {
        r->cur++; /* this upstream failed: the next one at once */
        log_info("relay %s: trying upstream %d of %d", r->logname, r->cur + 1, r->nhosts);
        r->next_try_ms = now;
        return;
    } else {
        unsigned cap = r->mount && r->lost_ms ? RELAY_HELD_BACKOFF_MAX_MS : RELAY_BACKOFF_MAX_MS;
        r->backoff_ms = r->backoff_ms ? r->backoff_ms * 2 : RELAY_BACKOFF_MIN_MS;
        if (r->backoff_ms > cap)
            r->backoff_ms = cap;
        if (r->nhosts > 1)
            log_info("relay %s: all %d upstreams failed, trying again in about %u s",
                     r->logname, r->nhosts, (r->backoff_ms + 500) / 1000);
        r->cur = 0;
    }
    r->next_try_ms = now + jitter(r, r->backoff_ms);
}

static void relay_conn_destroy(conn_t *c)
{
    relay_conn_t *rc = (relay_conn_t *)c;
    relay_t *r = rc->relay;
    free(rc->client.req);
    free(rc->client.log_user);
    free(rc);
    if (r)
        relay_conn_ended(r);
}

static void fail(conn_t *c, relay_t *r, const char *what, const char *detail)
{
    char esc[256];
    if (r->feed_end) { /* said once, by the feed's end */
        snprintf(r->feed_why, sizeof(r->feed_why), "%s%s%s", what, detail ? ": " : "",
                 detail ? detail : "");
        conn_close(c);
        return;
    }
    log_warn("relay %s from %s%s:%d%s: %s%s%s", r->logname, r->ttls ? "https://" : "", r->host,
             r->tport, escape_log(esc, sizeof(esc), r->path, strlen(r->path)), what,
             detail ? ": " : "", detail ? detail : "");
    conn_close(c);
}

/* A redirect is followed up to RELAY_MAX_REDIRECTS times. Never from TLS to plain HTTP (the
 * stream, and the credentials, would then travel in clear): refused. To another host than the
 * configured one: followed without the credentials, which go to the configured host only. */
static void follow_redirect(conn_t *c, relay_t *r, const http_response_t *resp)
{
    const http_header_t *loc = http_response_header(resp, "location");
    char *host = NULL, *path = NULL;
    int port = 0, tls = 0;
    char esc[256];
    if (!loc || r->redirects >= RELAY_MAX_REDIRECTS ||
        relay_parse_url(loc->value, loc->value_len, &host, &port, &path, &tls) < 0) {
        fail(c, r, "redirect not followed",
             loc ? escape_log(esc, sizeof(esc), loc->value, loc->value_len) : "no Location");
        return;
    }
    if (r->ttls && !tls) {
        free(host);
        free(path);
        fail(c, r, "redirect from https to plain http refused",
             escape_log(esc, sizeof(esc), loc->value, loc->value_len));
        return;
    }
    const relay_host_t *h = &r->hosts[r->cur];
    int same_host = strcasecmp(host, h->server) == 0;
    int dropped = r->send_creds && !same_host && h->user && h->pass;
    r->send_creds = r->send_creds && same_host;
    free(r->host);
    free(r->path);
    r->host = host;
    r->path = path;
    r->tport = port;
    r->ttls = tls; /* https:// goes on over TLS, http:// in plain */
    r->redirects++;
    r->redirect_pending = 1;
    log_info("relay %s: redirected to %s%s:%d%s", r->logname, tls ? "https://" : "", host, port,
             dropped ? " (another host: followed without the credentials)" : "");
    conn_close(c);
}

static void become_source(conn_t *c, relay_t *r, const http_response_t *resp, size_t head_len)
{
    http_request_t *req = calloc(1, sizeof(*req));
    if (!req) {
        conn_close(c);
        return;
    }
    req->method = HTTP_METHOD_GET;
    req->num_headers = resp->num_headers;
    memcpy(req->headers, resp->headers, resp->num_headers * sizeof(resp->headers[0]));
    const http_header_t *ct = http_find_header(req, "content-type");
    if (r->mount && ct && !str_ieq(ct->value, ct->value_len, mount_info(r->mount)->content_type))
        end_mount(r, "the upstream changed its content type");
    char *rbuf = c->rbuf;
    size_t rlen = c->rlen;
    c->rbuf = NULL;
    c->rlen = c->rcap = 0;
    int status = r->feed_end ? source_become_feed(c, req, r->mount, rbuf + head_len,
                                                  rlen - head_len)
                             : source_become_relay(c, req, r->local, &r->mount,
                                                   rbuf + head_len, rlen - head_len);
    free(req);
    free(rbuf);
    if (status) {
        source_abort(c);
        fail(c, r, status == 409 ? "local mount in use" : "cannot start the mount", NULL);
        return;
    }
    r->streaming = 1;
    r->redirects = 0;
    r->bytes_at_start = r->mount ? atomic_load(&r->mount->bytes_read) - (rlen - head_len) : 0;
    char url[1400];
    snprintf(url, sizeof(url), "%s://%s:%d%s", r->ttls ? "https" : "http", r->host, r->tport,
             r->path);
    if (r->mount && !r->feed_end)
        mount_set_relay_url(r->mount, url);
    if (r->nhosts > 1) {
        char esc[256];
        log_info("relay %s: streaming from %s (upstream %d of %d)", r->logname,
                 escape_log(esc, sizeof(esc), url, strlen(url)), r->cur + 1, r->nhosts);
    }
    if (r->on_demand)
        demand_live(r->local, 1);
    conn_set_deadline(c, 0);
    if (!c->closing)
        conn_rearm(c); /* bytes may wait in the socket (edge-triggered) */
}

static void head_on_readable(conn_t *c)
{
    relay_t *r = ((relay_conn_t *)c)->relay;
    if (!r) {
        conn_close(c);
        return;
    }
    for (;;) {
        ssize_t n = conn_fill(c, RELAY_HEAD_CAP);
        if (n == -E2BIG) {
            fail(c, r, "response head too large", NULL);
            return;
        }
        if (n == -ENOMEM) {
            conn_close(c);
            return;
        }
        if (n < 0) {
            fail(c, r, "closed before a response", NULL);
            return;
        }
        if (n == 0)
            return; /* the rest of the head later */
        http_response_t resp;
        int head = http_parse_response(c->rbuf, c->rlen, &resp);
        if (head == HTTP_PARSE_PARTIAL)
            continue;
        if (head < 0) {
            fail(c, r, "malformed response", NULL);
            return;
        }
        if (resp.status == 200) {
            become_source(c, r, &resp, (size_t)head);
        } else if (resp.status == 301 || resp.status == 302 || resp.status == 303 ||
                   resp.status == 307 || resp.status == 308) {
            follow_redirect(c, r, &resp);
        } else {
            char esc[160], st[16];
            snprintf(st, sizeof(st), "%d ", resp.status);
            escape_log(esc, sizeof(esc), resp.reason, resp.reason_len);
            char detail[200];
            snprintf(detail, sizeof(detail), "%s%s", st, esc);
            fail(c, r, "upstream answered", detail);
        }
        return;
    }
}

static void head_on_timeout(conn_t *c)
{
    relay_t *r = ((relay_conn_t *)c)->relay;
    if (r)
        fail(c, r, "no response in time", NULL);
    else
        conn_close(c);
}

static const conn_ops_t head_ops = {
    .name = "relay-head",
    .on_readable = head_on_readable,
    .on_writable = conn_write_pending,
    .on_timeout = head_on_timeout,
};

/* Connected (and through the TLS handshake if any): the request goes out. */
static void send_request(conn_t *c, relay_t *r)
{
    const relay_host_t *h = &r->hosts[r->cur];
    char req[2048];
    int v6 = strchr(r->host, ':') && r->host[0] != '['; /* an IPv6 literal: "[::1]:8000" */
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.0\r\nHost: %s%s%s:%d\r\nUser-Agent: %s\r\n%s", r->path,
                     v6 ? "[" : "", r->host, v6 ? "]" : "", r->tport, server_ident(),
                     h->icy ? "Icy-MetaData: 1\r\n" : "");
    if (r->feed_header && n > 0 && (size_t)n < sizeof(req))
        n += snprintf(req + n, sizeof(req) - (size_t)n, "%s\r\n", r->feed_header);
    if (r->send_creds && h->user && h->pass && n > 0 && (size_t)n < sizeof(req)) {
        char creds[600];
        snprintf(creds, sizeof(creds), "%s:%s", h->user, h->pass);
        char *b64 = str_base64_encode((const unsigned char *)creds, strlen(creds));
        if (b64)
            n += snprintf(req + n, sizeof(req) - (size_t)n, "Authorization: Basic %s\r\n", b64);
        free(b64);
    }
    if (n <= 0 || (size_t)n + 2 >= sizeof(req)) {
        fail(c, r, "request too long", NULL);
        return;
    }
    memcpy(req + n, "\r\n", 3);
    c->ops = &head_ops;
    conn_set_deadline(c, h->timeout_ms);
    conn_send(c, req, (size_t)n + 2, NULL);
}

/* The relay a connect or handshake step belongs to, or NULL when the relay was stopped
 * meanwhile (the connection, if it came up, is closed then). */
static relay_t *relay_still_wanted(conn_t *c, int err)
{
    relay_t *r = ((relay_conn_t *)c)->relay;
    if (!r && !err)
        conn_close(c);
    return r;
}

static void relay_tls_done(conn_t *c, int err, const char *why)
{
    relay_t *r = relay_still_wanted(c, err);
    if (!r)
        return;
    if (err) {
        fail(c, r, "TLS handshake failed", why); /* closed already; the backoff applies */
        return;
    }
    send_request(c, r);
}

static void relay_connected(conn_t *c, int err)
{
    relay_t *r = relay_still_wanted(c, err);
    if (!r)
        return;
    if (err) {
        fail(c, r, "cannot connect", strerror(-err));
        return;
    }
    if (!r->ttls) {
        send_request(c, r);
        return;
    }
    /* the handshake gets the connect time again: a peer that accepts and never answers is
     * dropped then */
    conn_set_deadline(c, r->hosts[r->cur].timeout_ms);
    int rc = c->closing ? 0 : tls_connect(c, r->host, relay_tls_done);
    if (rc < 0)
        fail(c, r, "cannot start TLS", rc == -ENOTSUP ? "no TLS client context (restart the "
             "server to pull from HTTPS upstreams)" : strerror(-rc));
}

static void relay_connect(relay_t *r, const char *ip)
{
    relay_conn_t *rc = calloc(1, sizeof(*rc));
    if (!rc) {
        relay_conn_ended(r);
        return;
    }
    rc->relay = r;
    r->rc = rc;
    const relay_host_t *h = &r->hosts[r->cur];
    int err = connect_start_from(&rc->client.conn, r->worker, h->bind, ip, r->tport,
                                 h->timeout_ms, relay_connected, relay_conn_destroy);
    if (err < 0) {
        free(rc);
        if (r->feed_end) /* said once, by the feed's end */
            snprintf(r->feed_why, sizeof(r->feed_why), "cannot connect: %s", strerror(-err));
        else
            log_warn("relay %s: cannot connect to %s:%d: %s", r->logname, r->host, r->tport,
                     strerror(-err));
        relay_conn_ended(r);
    }
}

static void relay_resolved(worker_t *w, void *arg, const char *ip)
{
    (void)w;
    relay_t *r = arg;
    r->resolving = 0;
    if (r->stopping) {
        relay_free(r);
        return;
    }
    if (!ip) {
        log_warn("relay %s: cannot resolve %s", r->logname, r->host);
        relay_conn_ended(r);
        return;
    }
    relay_connect(r, ip);
}

static void relay_try(relay_t *r)
{
    if (r->redirect_pending) {
        r->redirect_pending = 0;
    } else {
        const relay_host_t *h = &r->hosts[r->cur];
        free(r->host);
        free(r->path);
        r->host = str_dup(h->server);
        r->path = str_dup(h->path);
        r->tport = h->port;
        r->ttls = h->tls;
        r->redirects = 0;
        r->send_creds = 1;
        if (!r->host || !r->path) {
            r->next_try_ms = loop_now_ms() + RELAY_BACKOFF_MAX_MS;
            return;
        }
    }
    if (resolve_numeric(r->host)) {
        relay_connect(r, r->host);
        return;
    }
    if (resolve_start(r->worker, r->host, relay_resolved, r) < 0) {
        relay_conn_ended(r);
        return;
    }
    r->resolving = 1;
}

/* ---- the per-worker tick ---- */

static void feed_check(relay_t *r);

static void relay_check(relay_t *r, uint64_t now)
{
    if (r->feed_end) {
        feed_check(r);
        return;
    }
    if (r->mount && atomic_load(&r->mount->listeners) > 0)
        r->wanted_ms = now;
    int wanted = !r->on_demand || (r->wanted_ms && now - r->wanted_ms < RELAY_IDLE_MS);
    if (!wanted) {
        if (r->rc || r->mount) {
            log_info("relay %s: no listeners, disconnecting (on-demand)", r->logname);
            detach_conn(r);
            end_mount(r, "on-demand relay idle");
            r->cur = 0;
            r->backoff_ms = 0;
            r->next_try_ms = 0;
        }
        return;
    }
    if (!r->rc && !r->resolving && now >= r->next_try_ms)
        relay_try(r);
    if (r->mount && !r->streaming && r->lost_ms && now - r->lost_ms > RELAY_GRACE_MS)
        end_mount(r, "upstream gone for longer than the grace period");
}

static void relay_tick(worker_t *w, void *arg)
{
    (void)arg;
    uint64_t now = loop_now_ms();
    relay_t *r, *next;
    list_foreach_safe(r, next, &worker_relays[w->id], relay_t, link) {
        relay_check(r, now);
    }
}

static int relay_module_init(worker_t *w)
{
    list_init(&worker_relays[w->id]);
    return worker_timer_add(w, RELAY_TICK_MS, relay_tick, NULL);
}

static void relay_module_fini(worker_t *w)
{
    while (!list_empty(&worker_relays[w->id])) {
        relay_t *r = container_of(worker_relays[w->id].next, relay_t, link);
        r->resolving = 0; /* the resolver stopped before the workers */
        relay_stop(r);
    }
}

/* A draining worker keeps the relays it runs (connected or waiting to reconnect). */
static int relay_module_busy(worker_t *w)
{
    return !list_empty(&worker_relays[w->id]);
}

static const worker_module_t relay_module = {
    .name = "relays",
    .init = relay_module_init,
    .fini = relay_module_fini,
    .busy = relay_module_busy,
};

void relay_register(void)
{
    worker_register(&relay_module);
}

/* ---- creating and stopping relays ---- */

static relay_t *relay_new(const char *local, int on_demand)
{
    relay_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    list_init(&r->link);
    r->local = str_dup(local ? local : "/");
    if (!r->local) {
        free(r);
        return NULL;
    }
    r->on_demand = on_demand > 0;
    r->rnd = (uint32_t)time(NULL) ^ (uint32_t)(uintptr_t)r ^ 0x9e3779b9u;
    if (!r->rnd)
        r->rnd = 1;
    escape_log(r->logname, sizeof(r->logname), r->local, strlen(r->local));
    return r;
}

/* Appends an upstream to r. 0 or -1 (no memory, or too many). */
static int relay_add_host(relay_t *r, const char *host, int port, const char *path,
                          const char *user, const char *pass, int icy, int tls,
                          const char *bind, int timeout_s)
{
    if (r->nhosts >= RELAY_MAX_HOSTS)
        return -1;
    relay_host_t *h = &r->hosts[r->nhosts++];
    h->server = str_dup(host ? host : "127.0.0.1");
    h->path = str_dup(path ? path : "/");
    h->user = user ? str_dup(user) : NULL;
    h->pass = pass ? str_dup(pass) : NULL;
    h->bind = bind ? str_dup(bind) : NULL;
    h->port = port > 0 ? port : 8000;
    h->icy = icy;
    h->tls = tls > 0;
    h->timeout_ms = timeout_s > 0 ? (unsigned)timeout_s * 1000u : RELAY_CONNECT_MS;
    if (!h->server || !h->path || (user && !h->user) || (pass && !h->pass) ||
        (bind && !h->bind))
        return -1;
    return 0;
}

static void relay_add_msg(worker_t *w, void *arg)
{
    relay_t *r = arg;
    r->worker = w;
    list_insert_head(&worker_relays[w->id], &r->link);
    for (int i = 0; i < r->nhosts; i++) {
        const relay_host_t *h = &r->hosts[i];
        char n[48] = "";
        if (r->nhosts > 1)
            snprintf(n, sizeof(n), " (upstream %d of %d)", i + 1, r->nhosts);
        log_info("relay %s: pulling %s%s:%d%s%s%s", r->logname, h->tls ? "https://" : "",
                 h->server, h->port, h->path, n, r->on_demand ? " (on demand)" : "");
    }
}

/* Set once this process handed its relays over to a new one (relay_forget_all). */
static atomic_int relays_forgotten;

static int relay_hand_over(relay_t *r)
{
    if (server.nworkers <= 0 || atomic_load(&relays_forgotten)) {
        relay_free(r);
        return -EINVAL;
    }
    worker_t *w = server.workers[(unsigned)atomic_fetch_add(&next_worker, 1) %
                                 (unsigned)server.nworkers];
    if (r->on_demand)
        demand_set(r->local, w, 1);
    int rc = worker_post(w, relay_add_msg, r);
    if (rc < 0) {
        if (r->on_demand)
            demand_set(r->local, NULL, 0);
        relay_free(r);
    }
    return rc;
}

/* A relay as <relay> rc says, not yet on a worker; NULL without memory. */
static relay_t *relay_from_conf(const relay_conf_t *rc)
{
    relay_t *r = relay_new(rc->local_mount ? rc->local_mount : "/", rc->on_demand);
    for (const relay_host_conf_t *h = rc->hosts; h && r; h = h->next) {
        if (relay_add_host(r, h->server, h->port, h->mount, h->username, h->password,
                           h->relay_shoutcast_metadata, h->tls, h->bind, h->timeout) < 0) {
            relay_free(r);
            r = NULL;
        }
    }
    if (r && !r->nhosts) {
        relay_free(r);
        r = NULL;
    }
    return r;
}

/* The local mounts of relays an upgrade brought over streaming (main thread, at start-up):
 * relay_start_all leaves them be. */
static char **adopted;
static int nadopted;

static int relay_adopted(const char *local)
{
    for (int i = 0; i < nadopted; i++)
        if (strcmp(adopted[i], local) == 0)
            return 1;
    return 0;
}

/* ---- an upgrade: relays waiting to reconnect ---- */

/* carried mounts of relays that were waiting: taken by the relays of the config at start-up,
 * and by the master's at its first list (on a worker: hence the lock) */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static mount_t **held;
static int nheld;

int relay_waiting(const mount_t *m)
{
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots && i < SERVER_MAX_WORKERS; i++) {
        relay_t *r;
        if (!server.workers[i] || server.workers[i]->gone)
            continue;
        list_foreach(r, &worker_relays[i], relay_t, link)
            if (r->mount == m)
                return 1;
    }
    return 0;
}

int relay_hold_mount(mount_t *m)
{
    pthread_mutex_lock(&held_lock);
    mount_t **v = realloc(held, (size_t)(nheld + 1) * sizeof(*v));
    if (v) {
        held = v;
        held[nheld++] = mount_ref(m);
    }
    pthread_mutex_unlock(&held_lock);
    return v ? 0 : -ENOMEM;
}

/* r starts on the held mount of its name, if there is one. */
static void take_held(relay_t *r)
{
    pthread_mutex_lock(&held_lock);
    for (int i = 0; i < nheld && !r->mount; i++)
        if (strcmp(held[i]->name, r->local) == 0) {
            r->mount = held[i]; /* the list's reference is r's now */
            held[i] = held[--nheld];
        }
    pthread_mutex_unlock(&held_lock);
    if (r->mount) {
        r->lost_ms = loop_now_ms(); /* its listeners wait the grace period from now */
        log_info("relay %s: its mount carried over by the upgrade, connecting again",
                 r->logname);
    }
}

/* The held mounts no relay took end (their listeners follow their fallbacks). */
static void end_held(void)
{
    pthread_mutex_lock(&held_lock);
    mount_t **v = held;
    int n = nheld;
    held = NULL;
    nheld = 0;
    pthread_mutex_unlock(&held_lock);
    for (int i = 0; i < n; i++) {
        char esc[512];
        log_warn("relay %s: no longer relayed: its carried mount ends",
                 escape_log_utf8(esc, sizeof(esc), v[i]->name, strlen(v[i]->name)));
        source_end_mount(v[i]);
        mount_unref(v[i]);
    }
    free(v);
}

void relay_master_polled(void)
{
    end_held();
}

void relay_start_all(void)
{
    const config_t *cfg = server_config();
    for (const relay_conf_t *rc = cfg->relays; rc; rc = rc->next) {
        const char *local = rc->local_mount ? rc->local_mount : "/";
        const char *why = mount_name_refused(local, 0);
        if (why) {
            char esc[512];
            escape_log_utf8(esc, sizeof(esc), local, strlen(local));
            log_warn("relay %s refused: mountpoint %s %s", esc, esc, why);
            continue;
        }
        if (relay_adopted(local))
            continue;
        relay_t *r = relay_from_conf(rc);
        if (r)
            take_held(r);
        if (!r || relay_hand_over(r) < 0)
            log_error("relay of %s: cannot start", rc->local_mount ? rc->local_mount : "/");
    }
    if (!cfg->master_server)
        end_held(); /* else the master's list may name them: relay_master_polled */
    for (int i = 0; i < nadopted; i++)
        free(adopted[i]);
    free(adopted);
    adopted = NULL;
    nadopted = 0;
}

/* ---- an upgrade ---- */

int relay_save(conn_t *c, buf_t *out)
{
    if (c->destroy != relay_conn_destroy)
        return -ENOENT;
    relay_t *r = ((relay_conn_t *)c)->relay;
    if (!r || !r->streaming || !r->mount || r->from_master || c->tls || c->closing)
        return -ENOTSUP;
    rec_str(out, r->local);
    rec_u32(out, (uint32_t)r->cur);
    rec_str(out, r->host);
    rec_str(out, r->path);
    rec_u32(out, (uint32_t)r->tport);
    rec_u64(out, r->bytes_at_start);
    return 0;
}

/* The relay of the config for local, streaming on c (on w, before w runs). */
static relay_t *relay_adopt_conf(worker_t *w, relay_conn_t *rc, rec_reader_t *in)
{
    char *local = rec_get_str(in);
    uint32_t cur = rec_get_u32(in);
    char *host = rec_get_str(in), *path = rec_get_str(in);
    uint32_t tport = rec_get_u32(in);
    uint64_t bytes_at_start = rec_get_u64(in);
    const relay_conf_t *conf = server_config()->relays;
    while (conf && local && strcmp(conf->local_mount ? conf->local_mount : "/", local) != 0)
        conf = conf->next;
    relay_t *r = !in->error && conf && host && path ? relay_from_conf(conf) : NULL;
    char **v = r ? realloc(adopted, (size_t)(nadopted + 1) * sizeof(*v)) : NULL;
    if (v)
        adopted = v;
    if (!v || !(adopted[nadopted] = str_dup(local))) {
        if (r)
            relay_free(r);
        free(local);
        free(host);
        free(path);
        return NULL;
    }
    nadopted++;
    free(local);
    r->cur = cur < (uint32_t)r->nhosts ? (int)cur : 0;
    r->host = host;
    r->path = path;
    r->tport = (int)tport;
    r->bytes_at_start = bytes_at_start;
    r->worker = w;
    r->rc = rc;
    r->streaming = 1;
    rc->relay = r;
    list_insert_head(&worker_relays[w->id], &r->link);
    if (r->on_demand) {
        r->wanted_ms = loop_now_ms();
        demand_set(r->local, w, 1);
        demand_live(r->local, 1);
    }
    return r;
}

conn_t *relay_adopt(worker_t *w, int fd, rec_reader_t *in,
                    mount_t *(*find)(const char *name, void *arg), void *arg)
{
    client_t *cl = client_restore(w, fd, in, sizeof(relay_conn_t), relay_conn_destroy);
    if (!cl)
        return NULL;
    conn_t *c = &cl->conn;
    relay_t *r = relay_adopt_conf(w, (relay_conn_t *)cl, in);
    if (r && source_adopt(c, in, find, arg) == 0 && (r->mount = find(r->local, arg)) != NULL) {
        mount_ref(r->mount);
        return c;
    }
    conn_close(c); /* the relay (if any) hears of it when the worker releases it */
    return NULL;
}

void relay_forget_all(void)
{
    atomic_store(&relays_forgotten, 1);
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots && i < SERVER_MAX_WORKERS; i++) {
        relay_t *r, *next;
        if (!server.workers[i] || server.workers[i]->gone)
            continue;
        list_foreach_safe(r, next, &worker_relays[i], relay_t, link) {
            unlink_relay(r); /* its tick no longer tries it */
            if (r->rc)
                r->rc->relay = NULL; /* its connection's end says nothing to it */
            r->rc = NULL;
            r->mount = NULL; /* the mount is the new process's: nothing ends it here */
            if (r->resolving)
                r->stopping = 1; /* freed, silently, when its lookup answers */
        }
    }
}

/* ---- an upgrade's local feed ---- */

/* Its connection ended (or never came up): it says why once, and goes. */
static void feed_ended(relay_t *r)
{
    unlink_relay(r);
    char why[256];
    snprintf(why, sizeof(why), "%s%s%s", r->streaming ? "its feed from the new process ended"
             : "no feed from the new process", r->streaming || !r->feed_why[0] ? "" : ": ",
             r->streaming ? "" : r->feed_why);
    r->feed_end(r->mount, why);
    r->streaming = 0;
    mount_unref(r->mount); /* not ended: the caller closes its listeners */
    r->mount = NULL;
    if (r->resolving)
        r->stopping = 1;
    else
        relay_free(r);
}

/* Tick: its mount's last listener left: the feed closes. */
static void feed_check(relay_t *r)
{
    if (atomic_load(&r->mount->listeners) > 0 || r->resolving)
        return;
    log_info("relay %s: local feed closed: its last listener left", r->logname);
    unlink_relay(r);
    detach_conn(r);
    mount_unref(r->mount);
    r->mount = NULL;
    relay_free(r);
}

static void feed_add_msg(worker_t *w, void *arg)
{
    relay_t *r = arg;
    r->worker = w;
    list_insert_head(&worker_relays[w->id], &r->link);
    relay_try(r);
}

int relay_start_feed(mount_t *m, const char *ip, int port, const char *header,
                     relay_feed_end_fn ended)
{
    char *path = url_encode(m->name, strlen(m->name));
    relay_t *r = path ? relay_new(m->name, 0) : NULL;
    if (r && (relay_add_host(r, ip, port, path, NULL, NULL, 1, 0, NULL, 5) < 0 ||
              !(r->feed_header = str_dup(header)))) {
        relay_free(r);
        r = NULL;
    }
    free(path);
    if (r && server.nworkers <= 0) {
        relay_free(r);
        return -EINVAL;
    }
    if (!r)
        return -ENOMEM;
    r->mount = mount_ref(m);
    r->feed_end = ended;
    worker_t *w = server.workers[(unsigned)atomic_fetch_add(&next_worker, 1) %
                                 (unsigned)server.nworkers];
    int rc = worker_post(w, feed_add_msg, r);
    if (rc < 0) {
        mount_unref(r->mount);
        r->mount = NULL;
        relay_free(r);
    }
    return rc;
}

void relay_shutdown(void)
{
    resolve_shutdown();
}

int relay_configured(const char *local)
{
    for (const relay_conf_t *rc = server_config()->relays; rc; rc = rc->next) {
        const char *l = rc->local_mount ? rc->local_mount : rc->mount ? rc->mount : "/";
        if (strcmp(l, local) == 0)
            return 1;
    }
    return 0;
}

int relay_start_master(const char *host, int port, int tls, const char *mount,
                       const char *local, const char *user, const char *pass, int on_demand)
{
    if (mount[0] != '/' || mount_name_refused(local, 0)) /* the caller checked and logged */
        return -EPERM;
    relay_t *r = relay_new(local, on_demand);
    if (r && relay_add_host(r, host, port, mount, user, pass, 1, tls, NULL, 0) < 0) {
        relay_free(r);
        r = NULL;
    }
    if (!r)
        return -ENOMEM;
    r->from_master = 1;
    take_held(r);
    return relay_hand_over(r);
}

static void stop_master_msg(worker_t *w, void *arg)
{
    char *name = arg;
    relay_t *r;
    list_foreach(r, &worker_relays[w->id], relay_t, link) {
        if (r->from_master && strcmp(r->local, name) == 0) {
            relay_stop(r);
            break;
        }
    }
    free(name);
}

/* The master answered its list: its relays waiting out a backoff try now. */
static void master_listed_msg(worker_t *w, void *arg)
{
    (void)arg;
    relay_t *r;
    list_foreach(r, &worker_relays[w->id], relay_t, link) {
        if (r->from_master && !r->rc && !r->resolving) {
            r->backoff_ms = 0;
            r->next_try_ms = 0;
        }
    }
}

void relay_master_listed(void)
{
    for (int i = 0; i < server.nslots; i++) /* draining workers' relays too */
        worker_post(server.workers[i], master_listed_msg, NULL);
}

void relay_stop_master(const char *local)
{
    for (int i = 0; i < server.nslots; i++) { /* draining workers' relays too */
        char *name = str_dup(local);
        if (name && worker_post(server.workers[i], stop_master_msg, name) < 0)
            free(name);
    }
}

/* ---- parked listeners (on-demand) ---- */

typedef struct park {
    char *name;
    uint64_t until_ms;
    unsigned time_limit_s; /* from the listener's authentication, 0 = none */
    relay_listen_fn listen;
} park_t;

static void park_release(conn_t *c)
{
    park_t *p = c->data;
    if (p) {
        free(p->name);
        free(p);
        c->data = NULL;
    }
}

static void park_check(conn_t *c);

static const conn_ops_t park_ops = {
    .name = "relay-wait",
    .on_readable = conn_discard_input,
    .on_writable = conn_write_pending,
    .on_timeout = park_check,
    .on_close = park_release,
};

static void park_check(conn_t *c)
{
    park_t *p = c->data;
    mount_t *m = mount_find(p->name);
    if (!m && loop_now_ms() < p->until_ms) {
        conn_set_deadline(c, RELAY_PARK_POLL_MS);
        return;
    }
    unsigned limit = p->time_limit_s;
    relay_listen_fn listen = p->listen;
    park_release(c);
    c->role = NULL;
    if (m) {
        listen(c, m, limit); /* the request was kept while parked */
        return;
    }
    client_send_error(c, 404, "The file you requested could not be found");
}

static void kick_msg(worker_t *w, void *arg)
{
    char *name = arg;
    uint64_t now = loop_now_ms();
    relay_t *r;
    list_foreach(r, &worker_relays[w->id], relay_t, link) {
        if (r->on_demand && strcmp(r->local, name) == 0) {
            r->wanted_ms = now;
            if (!r->rc && !r->resolving && now >= r->next_try_ms)
                relay_try(r);
            break;
        }
    }
    free(name);
}

int relay_is_on_demand(const char *name)
{
    int found = 0;
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d && !found; d = d->next)
        found = strcmp(d->name, name) == 0;
    pthread_mutex_unlock(&demand_lock);
    return found;
}

int relay_park_listener(conn_t *c, const char *name, unsigned time_limit_s,
                        relay_listen_fn listen)
{
    worker_t *w = NULL;
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d; d = d->next)
        if (strcmp(d->name, name) == 0)
            w = d->worker;
    pthread_mutex_unlock(&demand_lock);
    if (!w)
        return 0;
    park_t *p = calloc(1, sizeof(*p));
    char *kick = str_dup(name);
    if (!p || !kick || !(p->name = str_dup(name)) || worker_post(w, kick_msg, kick) < 0) {
        free(kick);
        if (p)
            free(p->name);
        free(p);
        return 0;
    }
    p->until_ms = loop_now_ms() + RELAY_PARK_MS;
    p->time_limit_s = time_limit_s;
    p->listen = listen;
    c->data = p;
    c->ops = c->role = &park_ops;
    conn_set_deadline(c, RELAY_PARK_POLL_MS);
    return 1;
}
