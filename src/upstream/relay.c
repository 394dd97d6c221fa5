/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay: pulling a mount from another server (see relay.h): the relay objects, their
 * connections (connect, request, response head, then the source role), reconnect backoff,
 * on-demand starts and stops, a relay given new upstreams (relay_retarget). Relays across an
 * upgrade are in relay_handover.c, the table of on-demand relays and the listeners parked on it
 * in relay_park.c, the master's relays in relay_master.c, the config's <relay> blocks (start-up,
 * reload) in relay_config.c (relay_internal.h: what they share).
 *
 * A relay_t belongs to one worker and is touched only on its thread: created anywhere, it is
 * handed over by worker_post; other threads reach it by its mount name through messages. Its
 * connection is a relay_conn_t (an HTTP client struct, so the source role finds the fields it
 * expects); when the connection is released, the relay hears of it in the destroy callback.
 */
#include "upstream/relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/str.h"
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
#include "upstream/relay_internal.h"

#define RELAY_TICK_MS 200
#define RELAY_CONNECT_MS 10000
#define RELAY_BACKOFF_MIN_MS 1000
#define RELAY_BACKOFF_MAX_MS 60000
#define RELAY_GRACE_MS 30000 /* the mount waits this long for the upstream to come back */
/* while the mount waits (its listeners held), retries come at least this often, so that an
 * upstream back within the grace period gets its listeners back */
#define RELAY_HELD_BACKOFF_MAX_MS 2000
#define RELAY_IDLE_MS 10000  /* on-demand: stay connected after the last listener left */
#define RELAY_MAX_REDIRECTS 5
#define RELAY_HEAD_CAP (HTTP_MAX_HEAD_BYTES + 4096)

list_t relay_lists[SERVER_MAX_WORKERS];
static atomic_int next_worker;

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

/* Ends r's mount, saying why (NULL: the caller said it). */
static void end_mount(relay_t *r, const char *why)
{
    r->lost_ms = 0;
    if (!r->mount)
        return;
    if (why)
        log_info("relay %s: mount ended (%s)", r->logname, why);
    source_end_mount(r->mount);
    mount_unref(r->mount);
    r->mount = NULL;
    if (r->on_demand)
        relay_demand_live(r->local, 0);
}

/* Drops the connection without hearing back from it. */
void relay_detach_conn(relay_t *r)
{
    if (!r->rc)
        return;
    r->rc->relay = NULL;
    conn_close(&r->rc->client.conn);
    r->rc = NULL;
    r->streaming = 0;
}

/* Frees the strings of r's upstreams (r->hosts[0..nhosts)). */
static void hosts_free(relay_t *r)
{
    for (int i = 0; i < r->nhosts; i++) {
        free(r->hosts[i].server);
        free(r->hosts[i].path);
        free(r->hosts[i].user);
        free(r->hosts[i].pass);
        free(r->hosts[i].bind);
    }
}

void relay_free(relay_t *r)
{
    end_mount(r, "relay stopped");
    hosts_free(r);
    free(r->local);
    free(r->host);
    free(r->path);
    if (r->feed_header) /* a secret: not left in freed memory */
        explicit_bzero(r->feed_header, strlen(r->feed_header));
    free(r->feed_header);
    free(r);
}

void relay_unlink(relay_t *r)
{
    list_remove(&r->link); /* harmless when it was never added, or removed already */
}

void relay_stop(relay_t *r, const char *why)
{
    relay_unlink(r);
    if (r->on_demand)
        relay_demand_set(r->local, NULL, 0);
    relay_detach_conn(r);
    end_mount(r, why);
    if (r->resolving)
        r->stopping = 1;
    else
        relay_free(r);
}

void relay_retarget(relay_t *r, relay_t *fresh)
{
    hosts_free(r);
    memcpy(r->hosts, fresh->hosts, sizeof(r->hosts));
    r->nhosts = fresh->nhosts;
    fresh->nhosts = 0; /* the strings are r's now */
    if (r->on_demand != fresh->on_demand) {
        r->on_demand = fresh->on_demand;
        relay_demand_set(r->local, r->worker, r->on_demand);
        if (r->on_demand)
            relay_demand_live(r->local, r->mount != NULL);
    }
    relay_free(fresh);
    relay_detach_conn(r);
    if (r->resolving)
        r->lookup_stale = 1; /* its answer is for the old upstream */
    r->cur = 0;
    r->redirects = r->redirect_pending = 0;
    r->backoff_ms = 0;
    r->next_try_ms = 0; /* the next tick connects */
    if (r->mount)
        r->lost_ms = loop_now_ms(); /* its listeners wait the grace period for the new one */
}

/* ---- connection ---- */

/* The connection ended (released by the worker): plan the next attempt. */
static void relay_conn_ended(relay_t *r)
{
    uint64_t now = loop_now_ms();
    r->rc = NULL;
    if (r->feed_end) {
        relay_feed_ended(r);
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

void relay_conn_destroy(conn_t *c)
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
        relay_demand_live(r->local, 1);
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
    if (r->lookup_stale) { /* r was given other upstreams meanwhile: the tick tries them */
        r->lookup_stale = 0;
        r->next_try_ms = 0;
        return;
    }
    if (!ip) {
        log_warn("relay %s: cannot resolve %s", r->logname, r->host);
        relay_conn_ended(r);
        return;
    }
    relay_connect(r, ip);
}

void relay_try(relay_t *r)
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

static void relay_check(relay_t *r, uint64_t now)
{
    if (r->feed_end) {
        relay_feed_check(r);
        return;
    }
    if (r->mount && atomic_load(&r->mount->listeners) > 0)
        r->wanted_ms = now;
    int wanted = !r->on_demand || (r->wanted_ms && now - r->wanted_ms < RELAY_IDLE_MS);
    if (!wanted) {
        if (r->rc || r->mount) {
            log_info("relay %s: no listeners, disconnecting (on-demand)", r->logname);
            relay_detach_conn(r);
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
    list_foreach_safe(r, next, &relay_lists[w->id], relay_t, link) {
        relay_check(r, now);
    }
}

static int relay_module_init(worker_t *w)
{
    list_init(&relay_lists[w->id]);
    return worker_timer_add(w, RELAY_TICK_MS, relay_tick, NULL);
}

static void relay_module_fini(worker_t *w)
{
    while (!list_empty(&relay_lists[w->id])) {
        relay_t *r = container_of(relay_lists[w->id].next, relay_t, link);
        r->resolving = 0; /* the resolver stopped before the workers */
        relay_stop(r, "relay stopped");
    }
}

/* A draining worker keeps the relays it runs (connected or waiting to reconnect). */
static int relay_module_busy(worker_t *w)
{
    return !list_empty(&relay_lists[w->id]);
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

relay_t *relay_new(const char *local, int on_demand)
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
int relay_add_host(relay_t *r, const char *host, int port, const char *path, const char *user,
                   const char *pass, int icy, int tls, const char *bind, int timeout_s)
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
    list_insert_head(&relay_lists[w->id], &r->link);
    for (int i = 0; i < r->nhosts; i++) {
        const relay_host_t *h = &r->hosts[i];
        char n[48] = "";
        if (r->nhosts > 1)
            snprintf(n, sizeof(n), " (upstream %d of %d)", i + 1, r->nhosts);
        log_info("relay %s: pulling %s%s:%d%s%s%s", r->logname, h->tls ? "https://" : "",
                 h->server, h->port, h->path, n, r->on_demand ? " (on demand)" : "");
    }
}

worker_t *relay_pick_worker(void)
{
    return server.workers[(unsigned)atomic_fetch_add(&next_worker, 1) %
                          (unsigned)server.nworkers];
}

int relay_hand_over(relay_t *r)
{
    return relay_hand_over_to(r, server.nworkers > 0 ? relay_pick_worker() : NULL);
}

int relay_hand_over_to(relay_t *r, worker_t *w)
{
    if (!w || relay_forgotten()) {
        relay_free(r);
        return -EINVAL;
    }
    if (r->on_demand)
        relay_demand_set(r->local, w, 1);
    int rc = worker_post(w, relay_add_msg, r);
    if (rc < 0) {
        if (r->on_demand)
            relay_demand_set(r->local, NULL, 0);
        relay_free(r);
    }
    return rc;
}

void relay_shutdown(void)
{
    resolve_shutdown();
}
