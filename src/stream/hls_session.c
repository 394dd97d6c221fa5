/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_session: HLS listeners as listeners. A session is named by the token in its media
 * playlist URL (<mount>/hls.m3u8?session=<token>, handed out by the multivariant playlist);
 * it begins at its first playlist request, holds a listener slot of the mount (max-listeners,
 * the listener counts) and ends when it stopped polling for four target durations (at least
 * 10 s), with one access-log line (its duration, and the bytes of its playlists and of the
 * segments it fetched: segment URLs carry no token, so a segment counts to the session whose
 * playlist came by the same connection, else to one polling from the same address with the
 * same agent). Under hls_t.lock, but for the token.
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
#include "core/record.h"
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

static hls_session_t *session_find(hls_t *h, const char *token)
{
    hls_session_t *s = h->sessions;
    while (s && strcmp(s->token, token) != 0)
        s = s->next;
    return s;
}

int hls_session_poll(hls_t *h, const char *token, const hls_client_t *who, uint64_t bytes)
{
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = session_find(h, token);
    int rc = 0;
    if (!s) {
        if (!h->mount || mount_take_listener_slot(h->mount) < 0) {
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
            s->next = h->sessions;
            h->sessions = s;
            h->nsessions++;
            atomic_fetch_add(&server.stats.listeners, 1);
            atomic_fetch_add(&server.stats.listener_connections, 1);
        }
    }
    if (s) {
        s->last_ms = loop_now_ms();
        s->bytes += bytes;
        s->conn_id = who->conn_id;
        if (s->killed)
            rc = -EPERM;
    }
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int hls_session_add_bytes(hls_t *h, const hls_client_t *who, uint64_t bytes)
{
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = h->sessions, *same = NULL;
    for (; s && s->conn_id != who->conn_id; s = s->next)
        if (!same && strcmp(s->ip, who->ip) == 0 &&
            (s->agent && who->agent ? strcmp(s->agent, who->agent) == 0 : !s->agent && !who->agent))
            same = s;
    if (!s)
        s = same;
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
            session_free(h, s);
        } else {
            pp = &s->next;
        }
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

/* ---- an upgrade: the sessions go on in the new process ---- */

void hls_sessions_save(const char *name, buf_t *out)
{
    hls_t *h = hls_find(name);
    uint32_t n = 0;
    if (h)
        pthread_mutex_lock(&h->lock);
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next)
        n += !s->killed;
    rec_u64(out, h ? h->open_seq : 0);
    rec_u32(out, n);
    uint64_t now = loop_now_ms();
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next) {
        if (s->killed)
            continue;
        rec_str(out, s->token);
        rec_u64(out, s->id);
        rec_i64(out, (int64_t)s->start);
        rec_u64(out, now - s->last_ms);
        rec_u64(out, s->bytes);
        rec_str(out, s->ip);
        rec_str(out, s->country);
        rec_i64(out, s->start_ms);
        rec_str(out, s->agent);
        rec_str(out, s->referer);
        rec_str(out, s->uri);
    }
    if (h)
        pthread_mutex_unlock(&h->lock);
}

int hls_sessions_restore(mount_t *m, rec_reader_t *in, uint64_t *max_id)
{
    uint64_t seq = rec_get_u64(in);
    uint32_t n = rec_get_u32(in);
    hls_number_after(seq);
    hls_t *h = n && !in->error ? hls_touch(m) : NULL;
    if (!n || in->error)
        return in->error ? -EINVAL : 0;
    if (!h)
        return -ENOMEM;
    pthread_mutex_lock(&h->lock);
    h->ever = 1; /* its first segment says the stream broke: players reset their clocks */
    for (uint32_t i = 0; i < n && !in->error; i++) {
        hls_session_t *s = calloc(1, sizeof(*s));
        char *token = rec_get_str(in), *ip, *country;
        if (!s) {
            free(token);
            break;
        }
        snprintf(s->token, sizeof(s->token), "%s", token ? token : "");
        free(token);
        s->id = rec_get_u64(in);
        s->start = (time_t)rec_get_i64(in);
        s->last_ms = loop_now_ms() - rec_get_u64(in);
        s->bytes = rec_get_u64(in);
        ip = rec_get_str(in);
        country = rec_get_str(in);
        snprintf(s->ip, sizeof(s->ip), "%s", ip ? ip : "");
        snprintf(s->country, sizeof(s->country), "%s", country ? country : "");
        free(ip);
        free(country);
        s->start_ms = rec_get_i64(in);
        s->agent = rec_get_str(in);
        s->referer = rec_get_str(in);
        s->uri = rec_get_str(in);
        if (!s->uri)
            s->uri = str_dup("-");
        if (s->id > *max_id)
            *max_id = s->id;
        session_listener_join(h->name, s->country);
        atomic_fetch_add(&m->listeners, 1);
        s->counted = mount_ref(m);
        s->next = h->sessions;
        h->sessions = s;
        h->nsessions++;
        atomic_fetch_add(&server.stats.listeners, 1);
    }
    pthread_mutex_unlock(&h->lock);
    return in->error ? -EINVAL : 0;
}
