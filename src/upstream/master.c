/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * master: fetching a master server's stream list and keeping one relay per listed mount (see
 * master.h). The list is untrusted: each line must be a clean mount path (or an http:// or
 * https:// URL of one) or it is skipped, and at most MASTER_MAX_MOUNTS are relayed. Lines name
 * mounts on the master: a URL naming another scheme, host or port, or a name the server keeps
 * for itself, is refused (logged once while listed); the master's credentials go to it only. With
 * <master-ssl-port> (Icecast-KH) the list and the mounts it names by path are fetched over
 * TLS from that port (verified as every upstream is: net/tls.h).
 * A reload that changes the master (its address, credentials or <relays-on-demand>) is
 * followed at once: the new master is asked for its list, an answer still coming from the old
 * one is dropped, and at the new list each mount it names again reconnects to it (keeping its
 * mount), each it does not name stops. Without a master any more, the master's relays stop.
 */
#include "upstream/master.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
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
#include "upstream/relay.h"
#include "upstream/relay_handover.h"

#define MASTER_TIMEOUT_MS 10000
#define MASTER_MAX_BYTES (1 << 20)
#define MASTER_MAX_MOUNTS 1000

typedef struct relayed {
    char *name;
    int seen;
    int refused;  /* listed, but not relayed (logged once, while it stays listed) */
    int stale;    /* relayed from a master the config no longer names: its next list decides */
    struct relayed *next; /* singly linked: walked whole at each list fetch, unlinked there */
} relayed_t;

static relayed_t *relayed;      /* mounts we relay from the master */
static uint64_t next_fetch_ms;
static int busy;                /* a fetch (lookup or connection) is under way */
static uint64_t last_fetch_ms;  /* when the last fetch started */
static const config_t *polled;  /* the snapshot whose master settings are followed */
static unsigned generation;     /* counts changes of the master: older answers are dropped */


typedef struct master_conn {
    client_t client;
    unsigned generation; /* of the master asked */
} master_conn_t;

/* How often the list is fetched, in seconds. */
static int interval_s(const config_t *cfg)
{
    return cfg->master_update_interval > 0 ? cfg->master_update_interval : 120;
}

/* The port the master is asked on, and whether over TLS. */
static int master_port(const config_t *cfg)
{
    return cfg->master_ssl_port > 0 ? cfg->master_ssl_port : cfg->master_server_port;
}

static relayed_t *find(const char *name)
{
    for (relayed_t *r = relayed; r; r = r->next)
        if (strcmp(r->name, name) == 0)
            return r;
    return NULL;
}

/* 1 if the list line `mount` is a full URL of a server other than the master (another scheme,
 * host or port): the list names mounts on the master, and the master's credentials go
 * nowhere else. The host is compared as written in <master-server> (no lookup). */
static int names_another_server(const config_t *cfg, const char *mount)
{
    if (mount[0] == '/')
        return 0;
    char *host = NULL, *path = NULL;
    int port = 0, tls = 0;
    if (relay_parse_url(mount, strlen(mount), &host, &port, &path, &tls) < 0)
        return 1;
    int same = strcasecmp(host, cfg->master_server) == 0 && port == master_port(cfg) &&
               tls == (cfg->master_ssl_port > 0);
    free(host);
    free(path);
    return !same;
}

/* 1 (logged) if the list line `mount`, local mount `local`, may not be relayed. */
static int entry_refused(const config_t *cfg, const char *mount, const char *local)
{
    char esc[256], esc2[256];
    escape_log_utf8(esc, sizeof(esc), mount, strlen(mount));
    if (names_another_server(cfg, mount)) {
        log_warn("master %s: list entry %s refused: it names another server than the master "
                 "(%s%s:%d)", cfg->master_server, esc, cfg->master_ssl_port > 0 ? "https://" : "",
                 cfg->master_server, master_port(cfg));
        return 1;
    }
    const char *why = mount_name_refused(local, 0);
    if (why) {
        log_warn("master %s: list entry %s refused: mountpoint %s %s", cfg->master_server, esc,
                 escape_log_utf8(esc2, sizeof(esc2), local, strlen(local)), why);
        return 1;
    }
    return 0;
}

/* A line not relayed yet: its relay started (or its refusal logged, once). The relay pulls
 * the path on the master (a line that is the master's own URL names the same). */
static relayed_t *add_entry(const config_t *cfg, const char *mount, char *local)
{
    relayed_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->name = local;
    r->seen = 1;
    if (entry_refused(cfg, mount, local)) {
        r->refused = 1;
    } else if (relay_start_master(cfg->master_server, master_port(cfg), cfg->master_ssl_port > 0,
                                  local, local, cfg->master_username, cfg->master_password,
                                  cfg->relays_on_demand) < 0) {
        free(r);
        return NULL;
    }
    r->next = relayed;
    relayed = r;
    return r;
}

/* A mount relayed from the old master, listed by the new one: its relay reconnects there
 * (or starts, or stops, as the new master's rules for the line say). */
static void follow_new_master(const config_t *cfg, relayed_t *r, const char *mount)
{
    int was_refused = r->refused;
    r->stale = 0;
    r->seen = 1;
    r->refused = entry_refused(cfg, mount, r->name);
    if (r->refused) {
        if (!was_refused)
            relay_stop_master(r->name);
    } else if (!was_refused) {
        relay_restart_master(cfg->master_server, master_port(cfg), cfg->master_ssl_port > 0,
                             r->name, r->name, cfg->master_username, cfg->master_password,
                             cfg->relays_on_demand);
    } else if (relay_start_master(cfg->master_server, master_port(cfg),
                                  cfg->master_ssl_port > 0, r->name, r->name,
                                  cfg->master_username, cfg->master_password,
                                  cfg->relays_on_demand) < 0) {
        r->refused = 1;
        r->seen = 0; /* dropped: the next list tries it again */
    }
}

static void apply_list(const char *body, size_t len)
{
    const config_t *cfg = server_config();
    for (relayed_t *r = relayed; r; r = r->next)
        r->seen = 0;
    int count = 0;
    for (size_t pos = 0; pos < len;) {
        const char *eol = memchr(body + pos, '\n', len - pos);
        size_t end = eol ? (size_t)(eol - body) : len;
        size_t n = end - pos;
        while (n > 0 && (body[pos + n - 1] == '\r' || body[pos + n - 1] == ' '))
            n--;
        const char *line = body + pos;
        pos = end + 1;
        if (n == 0)
            continue;
        char *local = master_parse_name(line, n);
        if (!local) {
            char esc[256];
            log_warn("master %s: skipping list entry %s", cfg->master_server,
                     escape_log(esc, sizeof(esc), line, n));
            continue;
        }
        char *mount = str_ndup(line, n);
        relayed_t *r = find(local);
        if (r && relay_configured(local))
            r->refused = 1; /* a <relay> added by a reload took it over: dropped quietly */
        else if (r && r->stale && mount)
            follow_new_master(cfg, r, mount);
        else if (r)
            r->seen = 1;
        else if (mount && count < MASTER_MAX_MOUNTS && !relay_configured(local) &&
                 add_entry(cfg, mount, local))
            local = NULL; /* the entry's now */
        count++;
        free(mount);
        free(local);
    }
    for (relayed_t **pp = &relayed; *pp;) {
        relayed_t *r = *pp;
        if (r->seen) {
            pp = &r->next;
            continue;
        }
        if (!r->refused) {
            char esc[256];
            log_info("master %s: %s is no longer listed, stopping its relay", cfg->master_server,
                     escape_log(esc, sizeof(esc), r->name, strlen(r->name)));
            relay_stop_master(r->name);
        }
        *pp = r->next;
        free(r->name);
        free(r);
    }
}

/* The whole answer is in c->rbuf (the master closes after it). */
static void fetched(conn_t *c)
{
    const config_t *cfg = server_config();
    if (((master_conn_t *)c)->generation != generation) {
        next_fetch_ms = 0; /* the old master's list: the new one is asked now */
        return;
    }
    http_response_t resp;
    int head = c->rbuf ? http_parse_response(c->rbuf, c->rlen, &resp) : HTTP_PARSE_PARTIAL;
    if (head <= 0) {
        log_warn("master %s:%d: no valid answer to the stream list request", cfg->master_server,
                 master_port(cfg));
        return;
    }
    if (resp.status != 200) {
        log_warn("master %s:%d: stream list request answered %d%s", cfg->master_server,
                 master_port(cfg), resp.status,
                 resp.status == 401 ? " (check master-username and master-password)" : "");
        return;
    }
    apply_list(c->rbuf + head, c->rlen - (size_t)head);
    relay_master_listed(); /* the master is back: its mounts need not wait out a backoff */
}

static void list_on_readable(conn_t *c)
{
    for (;;) {
        ssize_t n = conn_fill(c, MASTER_MAX_BYTES);
        if (n > 0)
            continue;
        if (n == 0)
            return; /* more later */
        if (n == -EPIPE)
            fetched(c); /* the answer ends with the connection */
        else if (n == -E2BIG)
            log_warn("master: stream list too large");
        else if (n == -ENOMEM)
            log_warn("master: no memory for the stream list");
        conn_close(c);
        return;
    }
}

static void list_on_timeout(conn_t *c)
{
    log_warn("master %s: stream list request timed out", server_config()->master_server);
    conn_close(c);
}

static const conn_ops_t list_ops = {
    .name = "master-list",
    .on_readable = list_on_readable,
    .on_writable = conn_write_pending,
    .on_timeout = list_on_timeout,
};

static void list_destroy(conn_t *c)
{
    master_conn_t *mc = (master_conn_t *)c;
    relay_master_polled(); /* carried mounts its list did not name end */
    free(mc->client.req);
    free(mc);
    busy = 0;
}

static void send_list_request(conn_t *c)
{
    const config_t *cfg = server_config();
    char req[1536];
    char creds[600];
    snprintf(creds, sizeof(creds), "%s:%s", cfg->master_username ? cfg->master_username : "relay",
             cfg->master_password ? cfg->master_password : "");
    char *b64 = str_base64_encode((const unsigned char *)creds, strlen(creds));
    int n = snprintf(req, sizeof(req),
                     "GET /admin/streamlist.txt HTTP/1.0\r\nHost: %s:%d\r\nUser-Agent: %s\r\n"
                     "Authorization: Basic %s\r\n\r\n",
                     cfg->master_server, master_port(cfg), server_ident(), b64 ? b64 : "");
    free(b64);
    if (n <= 0 || (size_t)n >= sizeof(req)) {
        conn_close(c);
        return;
    }
    c->ops = &list_ops;
    conn_set_deadline(c, MASTER_TIMEOUT_MS);
    conn_send(c, req, (size_t)n, NULL);
}

static void list_tls_done(conn_t *c, int err, const char *why)
{
    const config_t *cfg = server_config();
    if (err) {
        log_warn("master %s:%d: TLS handshake failed: %s", cfg->master_server, master_port(cfg),
                 why);
        return;
    }
    send_list_request(c);
}

static void list_connected(conn_t *c, int err)
{
    const config_t *cfg = server_config();
    if (err) {
        log_warn("master %s:%d: cannot connect: %s", cfg->master_server, master_port(cfg),
                 strerror(-err));
        return;
    }
    if (cfg->master_ssl_port <= 0) {
        send_list_request(c);
        return;
    }
    conn_set_deadline(c, MASTER_TIMEOUT_MS);
    int rc = c->closing ? 0 : tls_connect(c, cfg->master_server, list_tls_done);
    if (rc < 0) {
        log_warn("master %s:%d: cannot start TLS: %s", cfg->master_server, master_port(cfg),
                 rc == -ENOTSUP ? "no TLS client context" : strerror(-rc));
        conn_close(c);
    }
}

static void fetch_from(worker_t *w, const char *ip)
{
    master_conn_t *mc = calloc(1, sizeof(*mc));
    if (!mc)
        return;
    busy = 1;
    mc->generation = generation;
    int err = connect_start(&mc->client.conn, w, ip, master_port(server_config()),
                            MASTER_TIMEOUT_MS, list_connected, list_destroy);
    if (err < 0) {
        busy = 0;
        free(mc);
        log_warn("master %s: cannot connect: %s", server_config()->master_server, strerror(-err));
    }
}

static void resolved(worker_t *w, void *arg, const char *ip)
{
    busy = 0;
    if ((unsigned)(uintptr_t)arg != generation) {
        next_fetch_ms = 0; /* the old master's address: the new one is looked up now */
        return;
    }
    if (!ip) {
        log_warn("master %s: cannot resolve", server_config()->master_server);
        return;
    }
    fetch_from(w, ip);
}

static void master_tick(worker_t *w, void *arg)
{
    (void)arg;
    uint64_t now_ms = loop_now_ms();
    const config_t *cfg = server_config();
    if (!cfg->master_server || busy || now_ms < next_fetch_ms)
        return;
    last_fetch_ms = now_ms;
    next_fetch_ms = now_ms + (uint64_t)interval_s(cfg) * 1000u;
    if (master_port(cfg) <= 0) {
        log_warn("master %s: no <master-server-port> (or <master-ssl-port>)", cfg->master_server);
        return;
    }
    if (resolve_numeric(cfg->master_server)) {
        fetch_from(w, cfg->master_server);
    } else if (resolve_start(w, cfg->master_server, resolved,
                             (void *)(uintptr_t)generation) == 0) {
        busy = 1;
    }
}

/* Forgets every relayed mount; stop_relays: their relays stop too. */
static void forget_all(int stop_relays)
{
    while (relayed) {
        relayed_t *r = relayed;
        relayed = r->next;
        if (stop_relays && !r->refused)
            relay_stop_master(r->name);
        free(r->name);
        free(r);
    }
}

static void master_fini(worker_t *w)
{
    if (w->id == 0)
        forget_all(0);
}

static int same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether a and b name the same master, with the same credentials, for relays of the same
 * kind (on demand or not). */
static int same_master(const config_t *a, const config_t *b)
{
    return same_text(a->master_server, b->master_server) && master_port(a) == master_port(b) &&
           (a->master_ssl_port > 0) == (b->master_ssl_port > 0) &&
           same_text(a->master_username, b->master_username) &&
           same_text(a->master_password, b->master_password) &&
           a->relays_on_demand == b->relays_on_demand;
}

/* A reload (worker 0): a changed master is asked at once, its relays marked for its list;
 * a changed interval counts from the last fetch. */
static void master_reload(worker_t *w)
{
    const config_t *cfg = server_config(), *old = polled;
    if (w->id != 0 || !old || old == cfg)
        return;
    polled = cfg;
    if (same_master(old, cfg)) {
        if (!cfg->master_server || interval_s(old) == interval_s(cfg))
            return;
        next_fetch_ms = last_fetch_ms + (uint64_t)interval_s(cfg) * 1000u;
    } else {
        generation++;
        next_fetch_ms = 0;
        if (!cfg->master_server) {
            log_info("master: no longer polling %s:%d: its relays stop", old->master_server,
                     master_port(old));
            forget_all(1);
            return;
        }
        for (relayed_t *r = relayed; r; r = r->next)
            r->stale = 1;
    }
    log_info("master: now polling %s%s:%d (every %d s)", cfg->master_ssl_port > 0 ? "https://"
             : "", cfg->master_server, master_port(cfg), interval_s(cfg));
}

static int master_init(worker_t *w)
{
    if (w->id != 0)
        return 0;
    polled = server_config();
    return worker_timer_add(w, MASTER_TICK_MS, master_tick, NULL);
}

void master_register(void)
{
    static const worker_module_t module = {.name = "master", .init = master_init,
                                           .fini = master_fini, .reload = master_reload};
    worker_register(&module);
}
