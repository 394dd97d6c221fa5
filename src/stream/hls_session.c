/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_session: HLS listeners as listeners. A session is named by the token in its media
 * playlist URL (<mount>/hls.m3u8?session=<token>, handed out by the multivariant playlist);
 * it begins at its first playlist request, holds a listener slot of the mount (max-listeners,
 * the listener counts) and ends when it stopped polling for four target durations (at least
 * 10 s), with one access-log line (its duration, and the bytes of its playlists and of the
 * segments it fetched: segment URLs carry no token, so a segment counts to the session whose
 * playlist came by the same connection, else to one polling from the same address with the
 * same agent). Sessions are found by token and by connection through a hash index (a poll
 * and a segment cost the same with ten or ten thousand sessions). Under hls_t.lock, but for
 * the token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "conf/config.h"
#include "core/log.h"
#include "core/cidr.h"
#include "core/loop.h"
#include "core/str.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/hls.h"
#include "stream/mount.h"
#include "stream/session.h"

#define SESSION_MIN_TIMEOUT_MS 10000

struct hls_session {
    char token[HLS_TOKEN_LEN + 1];
    uint64_t id;
    int killed;          /* ended by killclient: its polls are refused until they stop */
    time_t start;
    uint64_t last_ms;
    uint64_t bytes;
    uint64_t conn_id;    /* the connection of its last playlist request */
    mount_t *counted;    /* the mount whose listener count holds it (a reference) */
    char ip[64];
    char country[8];     /* ISO code from the GeoIP database, "" unknown */
    int64_t start_ms;    /* wall clock: its session record */
    char *agent, *referer, *uri;
    hls_session_t *next;
    hls_session_t *token_next, *conn_next; /* chains of the index */
};

int hls_session_token(char *out)
{
    unsigned char rnd[HLS_TOKEN_LEN / 2];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -EIO;
    for (size_t i = 0; i < sizeof(rnd); i++)
        snprintf(out + 2 * i, 3, "%02x", rnd[i]);
    return 0;
}

int hls_session_token_valid(const char *t)
{
    size_t n = 0;
    for (; t[n]; n++)
        if (!((t[n] >= '0' && t[n] <= '9') || (t[n] >= 'a' && t[n] <= 'f')))
            return 0;
    return n == HLS_TOKEN_LEN;
}

/* The session's end as a listener: its access-log line and its session record (as a
 * streaming listener's: stream/session.h), its slot given back. */
static void session_close(hls_t *h, hls_session_t *s, session_end_t why)
{
    char masked[64]; /* <address-truncation>: only the listener's network is logged */
    int truncate = server_config()->address_truncation;
    if (truncate)
        cidr_truncate(s->ip, masked, sizeof(masked));
    log_access_entry_t e = {
        .ip = truncate ? masked : s->ip, .start = s->start, .method = "GET", .uri = s->uri,
        .protocol = "HTTP/1.1", .status = 200, .bytes = s->bytes, .referer = s->referer,
        .agent = s->agent,
    };
    log_access(&e);
    session_record_t r = {
        .id = s->id, .mount = h->name, .start_ms = s->start_ms, .end_ms = session_now_ms(),
        .bytes = s->bytes, .address = s->ip, .agent = s->agent, .referer = s->referer,
        .country = s->country, .end = why,
    };
    session_end(&r);
    session_listener_leave(h->name, s->country);
    if (s->counted) {
        atomic_fetch_sub(&s->counted->listeners, 1);
        mount_unref(s->counted);
    }
    s->counted = NULL;
    atomic_fetch_sub(&server.stats.listeners, 1);
}

static void session_free(hls_t *h, hls_session_t *s)
{
    if (!s->killed)
        session_close(h, s, SESSION_END_CLIENT); /* it stopped polling */
    h->nsessions--;
    free(s->agent);
    free(s->referer);
    free(s->uri);
    free(s);
}

/* ---- the index: two tables of index_size chains, by token and by connection ---- */

static size_t token_hash(const hls_t *h, const char *token)
{
    uint64_t x = 1469598103934665603ull; /* FNV-1a */
    for (; *token; token++)
        x = (x ^ (unsigned char)*token) * 1099511628211ull;
    return (size_t)(x % h->index_size);
}

static size_t conn_hash(const hls_t *h, uint64_t conn_id)
{
    return h->index_size + (size_t)((conn_id * 11400714819323198485ull >> 32) % h->index_size);
}

static void chain_remove(hls_session_t **pp, hls_session_t *s, int by_token)
{
    for (; *pp; pp = by_token ? &(*pp)->token_next : &(*pp)->conn_next)
        if (*pp == s) {
            *pp = by_token ? s->token_next : s->conn_next;
            return;
        }
}

static void index_add(hls_t *h, hls_session_t *s)
{
    hls_session_t **t = &h->session_index[token_hash(h, s->token)];
    s->token_next = *t;
    *t = s;
    hls_session_t **c = &h->session_index[conn_hash(h, s->conn_id)];
    s->conn_next = *c;
    *c = s;
}

static void index_remove(hls_t *h, hls_session_t *s)
{
    if (!h->session_index)
        return;
    chain_remove(&h->session_index[token_hash(h, s->token)], s, 1);
    chain_remove(&h->session_index[conn_hash(h, s->conn_id)], s, 0);
}

/* Room for one more session: the tables grow to twice the sessions (at least 64 chains). */
static int index_reserve(hls_t *h)
{
    if (h->session_index && (size_t)h->nsessions < h->index_size)
        return 0;
    size_t size = h->index_size ? 2 * h->index_size : 64;
    hls_session_t **index = calloc(2 * size, sizeof(*index));
    if (!index)
        return -ENOMEM;
    free(h->session_index);
    h->session_index = index;
    h->index_size = size;
    for (hls_session_t *s = h->sessions; s; s = s->next)
        index_add(h, s);
    return 0;
}

static hls_session_t *session_find(hls_t *h, const char *token)
{
    hls_session_t *s = h->session_index ? h->session_index[token_hash(h, token)] : NULL;
    while (s && strcmp(s->token, token) != 0)
        s = s->token_next;
    return s;
}

int hls_session_poll(hls_t *h, const char *token, const hls_client_t *who, uint64_t bytes)
{
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = session_find(h, token);
    int rc = 0;
    if (!s) {
        if (index_reserve(h) < 0) {
            rc = -ENOMEM;
        } else if (!h->mount || mount_take_listener_slot(h->mount) < 0) {
            rc = -ENOSPC;
        } else if (!(s = calloc(1, sizeof(*s)))) {
            atomic_fetch_sub(&h->mount->listeners, 1);
            rc = -ENOMEM;
        } else {
            snprintf(s->token, sizeof(s->token), "%s", token);
            s->id = worker_next_conn_id();
            snprintf(s->ip, sizeof(s->ip), "%s", who->ip);
            s->agent = who->agent ? str_dup(who->agent) : NULL;
            s->referer = who->referer ? str_dup(who->referer) : NULL;
            s->uri = str_dup(who->uri);
            s->start = time(NULL);
            s->start_ms = session_now_ms();
            session_locate(s->ip, s->country, sizeof(s->country));
            session_listener_join(h->name, s->country);
            s->counted = mount_ref(h->mount);
            s->conn_id = who->conn_id;
            s->next = h->sessions;
            h->sessions = s;
            h->nsessions++;
            index_add(h, s);
            atomic_fetch_add(&server.stats.listeners, 1);
            atomic_fetch_add(&server.stats.listener_connections, 1);
        }
    }
    if (s) {
        s->last_ms = loop_now_ms();
        s->bytes += bytes;
        if (s->conn_id != who->conn_id) {
            chain_remove(&h->session_index[conn_hash(h, s->conn_id)], s, 0);
            s->conn_id = who->conn_id;
            hls_session_t **c = &h->session_index[conn_hash(h, s->conn_id)];
            s->conn_next = *c;
            *c = s;
        }
        if (s->killed)
            rc = -EPERM;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int hls_session_add_bytes(hls_t *h, const hls_client_t *who, uint64_t bytes)
{
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = h->session_index ? h->session_index[conn_hash(h, who->conn_id)] : NULL;
    while (s && s->conn_id != who->conn_id)
        s = s->conn_next;
    /* else the first polling from the same address with the same agent (a walk of them all:
     * a segment fetched on a connection that carried no playlist) */
    for (hls_session_t *o = s ? NULL : h->sessions; o && !s; o = o->next)
        if (strcmp(o->ip, who->ip) == 0 &&
            (o->agent && who->agent ? strcmp(o->agent, who->agent) == 0 : !o->agent && !who->agent))
            s = o;
    if (s && s->killed)
        s = NULL;
    if (s)
        s->bytes += bytes;
    pthread_mutex_unlock(&h->lock);
    return s != NULL;
}

void hls_sessions_expire_locked(hls_t *h, uint64_t now, int all)
{
    uint64_t timeout = (uint64_t)h->target * 4000u;
    if (timeout < SESSION_MIN_TIMEOUT_MS)
        timeout = SESSION_MIN_TIMEOUT_MS;
    for (hls_session_t **pp = &h->sessions; *pp;) {
        hls_session_t *s = *pp;
        if (all || now - s->last_ms > timeout) {
            *pp = s->next;
            index_remove(h, s);
            session_free(h, s);
        } else {
            pp = &s->next;
        }
    }
    if (!h->sessions) { /* the index is made again with the next session */
        free(h->session_index);
        h->session_index = NULL;
        h->index_size = 0;
    }
}

void hls_sessions_follow_locked(hls_t *h, mount_t *m)
{
    for (hls_session_t *s = h->sessions; s; s = s->next) {
        if (s->counted == m || s->killed)
            continue;
        if (s->counted) {
            atomic_fetch_sub(&s->counted->listeners, 1);
            mount_unref(s->counted);
        }
        /* a session keeps its place even past max-listeners: it was let in */
        atomic_fetch_add(&m->listeners, 1);
        s->counted = mount_ref(m);
    }
}

void hls_sessions_foreach(const char *name, void (*fn)(const hls_session_view_t *v, void *arg),
                          void *arg)
{
    hls_t *h = hls_find(name);
    if (!h)
        return;
    time_t now = time(NULL);
    pthread_mutex_lock(&h->lock);
    for (hls_session_t *s = h->sessions; s; s = s->next) {
        if (s->killed)
            continue;
        hls_session_view_t v = {s->id, s->ip, s->agent, (long long)(now - s->start)};
        fn(&v, arg);
    }
    pthread_mutex_unlock(&h->lock);
}

int hls_session_kill(const char *name, uint64_t id)
{
    hls_t *h = hls_find(name);
    if (!h)
        return 0;
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = h->sessions;
    while (s && (s->id != id || s->killed))
        s = s->next;
    if (s) {
        session_close(h, s, SESSION_END_KICKED);
        s->killed = 1;
    }
    pthread_mutex_unlock(&h->lock);
    return s != NULL;
}
