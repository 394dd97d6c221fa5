/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * session: a listener session's record at its end (see session.h): the JSON line of the
 * session log and the hand-over to the store.
 */
#include "stream/session.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <openssl/evp.h>

#include "conf/config.h"
#include "core/buf.h"
#include "core/cidr.h"
#include "core/list.h"
#include "core/escape.h"
#include "core/log.h"
#include "net/server.h"

static void (*_Atomic sink_fn)(const session_record_t *r);
static atomic_int stopping;

static const char *const end_names[] = {
    [SESSION_END_CLIENT] = "client_left",     [SESSION_END_KICKED] = "kicked",
    [SESSION_END_SOURCE_GONE] = "source_gone", [SESSION_END_TOO_SLOW] = "too_slow",
    [SESSION_END_TIME_LIMIT] = "time_limit",   [SESSION_END_SHUTDOWN] = "shutdown",
};

const char *session_end_name(session_end_t end)
{
    return (unsigned)end < sizeof(end_names) / sizeof(end_names[0]) ? end_names[end]
                                                                     : "client_left";
}

void session_address(const char *ip, int truncate, char *out, size_t cap)
{
    if (truncate)
        cidr_truncate(ip, out, cap);
    else
        snprintf(out, cap, "%s", ip ? ip : "-");
}

void session_listener_key(const char *ip, const char *agent, const char *id, char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE], a[16];
    unsigned int mdlen = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    if (id) { /* "rimecast-listener" NUL "id" NUL id */
        ok = ok && EVP_DigestUpdate(ctx, "rimecast-listener\0id", 21) &&
             EVP_DigestUpdate(ctx, id, strlen(id) + 1);
    } else {  /* "rimecast-listener" NUL "ip" NUL address bytes (or text) NUL agent */
        const void *addr = ip ? ip : "";
        size_t alen = strlen(addr);
        if (ip && inet_pton(AF_INET, ip, a) == 1) {
            addr = a, alen = 4;
        } else if (ip && inet_pton(AF_INET6, ip, a) == 1) {
            static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
            int v4 = memcmp(a, mapped, sizeof(mapped)) == 0;
            addr = v4 ? a + 12 : a, alen = v4 ? 4 : 8; /* IPv6: its /64 */
        }
        ok = ok && EVP_DigestUpdate(ctx, "rimecast-listener\0ip", 21) &&
             EVP_DigestUpdate(ctx, addr, alen) && EVP_DigestUpdate(ctx, "", 1) &&
             EVP_DigestUpdate(ctx, agent ? agent : "", agent ? strlen(agent) : 0);
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) && mdlen >= SESSION_KEY_LEN / 2;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        memset(md, 0, sizeof(md));
    for (int i = 0; i < SESSION_KEY_LEN / 2; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[SESSION_KEY_LEN] = '\0';
}

int64_t session_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ,"name":"escaped text" or ,"name":null */
static void json_text(buf_t *b, const char *name, const char *s)
{
    buf_appendf(b, ",\"%s\":", name);
    if (s)
        escape_json_buf(b, s, strlen(s), 1);
    else
        buf_append_str(b, "null");
}

static void write_line(const session_record_t *r)
{
    int64_t ms = r->end_ms > r->start_ms ? r->end_ms - r->start_ms : 0;
    buf_t b = BUF_INIT;
    buf_appendf(&b, "{\"id\":%llu", (unsigned long long)r->id);
    json_text(&b, "mount", r->mount);
    json_text(&b, "served", r->served ? r->served : r->mount);
    /* times in Unix seconds, to the millisecond */
    buf_appendf(&b, ",\"start\":%lld.%03d,\"end\":%lld.%03d,\"seconds\":%lld.%03d,"
                "\"bytes\":%llu",
                (long long)(r->start_ms / 1000), (int)(r->start_ms % 1000),
                (long long)(r->end_ms / 1000), (int)(r->end_ms % 1000), (long long)(ms / 1000),
                (int)(ms % 1000), (unsigned long long)r->bytes);
    json_text(&b, "ip", r->address);
    json_text(&b, "user_agent", r->agent);
    json_text(&b, "referer", r->referer);
    json_text(&b, "user", r->user);
    json_text(&b, "country", r->country);
    json_text(&b, "ended", session_end_name(r->end));
    json_text(&b, "listener_key", r->key);
    json_text(&b, "invalid", r->invalid ? r->invalid : "");
    buf_appendf(&b, ",\"hls\":%d,\"preroll\":%d}\n", r->hls ? 1 : 0, r->preroll ? 1 : 0);
    size_t len;
    char *line = buf_take(&b, &len);
    if (line)
        log_session_line(line, len);
    free(line);
}

void session_end(const session_record_t *r)
{
    session_record_t rec = *r;
    char addr[64], key[SESSION_KEY_LEN + 1];
    if (!rec.key) { /* from the whole address, before it is cut */
        session_listener_key(r->address, r->agent, NULL, key);
        rec.key = key;
    }
    if (!rec.invalid) /* no session going on said it (none joined): by its agent */
        rec.invalid = session_classify(r->agent);
    session_address(r->address, server_config()->address_truncation, addr, sizeof(addr));
    rec.address = addr;
    /* while the server stops, a listener may see its client go or its mount end (the
     * source's worker stopped first) before its own worker closes it: the stop did it */
    if (atomic_load(&stopping) &&
        (rec.end == SESSION_END_CLIENT || rec.end == SESSION_END_SOURCE_GONE))
        rec.end = SESSION_END_SHUTDOWN;
    write_line(&rec);
    void (*sink)(const session_record_t *) = atomic_load(&sink_fn);
    if (sink)
        sink(&rec);
}

/* ---- invalid traffic ---- */

static const char *(*_Atomic classifier)(const char *agent);

void session_set_classifier(const char *(*classify)(const char *agent))
{
    atomic_store(&classifier, classify);
}

const char *session_classify(const char *agent)
{
    const char *(*classify)(const char *) = atomic_load(&classifier);
    const char *why = classify ? classify(agent) : NULL;
    return why ? why : "";
}

/* ---- countries ---- */

static int (*_Atomic locator)(const char *ip, char *cc, size_t cap);

void session_set_locator(int (*locate)(const char *ip, char *cc, size_t cap))
{
    atomic_store(&locator, locate);
}

void session_locate(const char *ip, char *cc, size_t cap)
{
    int (*locate)(const char *, char *, size_t) = atomic_load(&locator);
    if (cap && (!locate || !ip || locate(ip, cc, cap) < 0))
        cc[0] = '\0';
}

/* Listeners per (mount, country): a short array searched linearly, as joins and leaves are
 * the cold path and a station has a few mounts and a few dozen countries. Entries that fall
 * to zero are removed. */
typedef struct country_count {
    char *mount;
    char cc[8];
    long n;
} country_count_t;

/* A session going on: what the figures need of it, copied when it joined. */
struct session_live {
    list_t link;
    uint64_t id;
    int64_t start_ms;
    atomic_int preroll;
    char cc[8];
    char key[SESSION_KEY_LEN + 1]; /* the listener key */
    const char *invalid;       /* "" valid, or why not (a static string; under the lock) */
    char *mount, *address, *agent;
};

static struct {
    pthread_mutex_t lock;
    country_count_t *v;
    size_t n, cap;
    list_t sessions;    /* session_live_t: a doubly linked list, as they leave in any order */
} live = {.lock = PTHREAD_MUTEX_INITIALIZER, .sessions = LIST_INIT(live.sessions)};

static country_count_t *live_find(const char *mount, const char *cc)
{
    for (size_t i = 0; i < live.n; i++)
        if (strcmp(live.v[i].cc, cc) == 0 && strcmp(live.v[i].mount, mount) == 0)
            return &live.v[i];
    return NULL;
}

static void country_join(const char *mount, const char *cc)
{
    country_count_t *e = live_find(mount, cc);
    if (!e && live.n == live.cap) {
        size_t ncap = live.cap ? live.cap * 2 : 16;
        country_count_t *v = realloc(live.v, ncap * sizeof(*v));
        if (v) {
            live.v = v;
            live.cap = ncap;
        }
    }
    if (!e && live.n < live.cap) {
        char *m = strdup(mount);
        if (m) {
            e = &live.v[live.n++];
            *e = (country_count_t){.mount = m};
            snprintf(e->cc, sizeof(e->cc), "%s", cc);
        }
    }
    if (e)
        e->n++;
}

static void country_leave(const char *mount, const char *cc)
{
    country_count_t *e = live_find(mount, cc);
    if (e && --e->n <= 0) {
        free(e->mount);
        *e = live.v[--live.n];
    }
}

static void live_free(session_live_t *s)
{
    free(s->mount);
    free(s->address);
    free(s->agent);
    free(s);
}

static int same_listener(const session_live_t *a, const session_live_t *b)
{
    return memcmp(a->key, b->key, SESSION_KEY_LEN) == 0 && strcmp(a->mount, b->mount) == 0;
}

/* Under the lock, s just joined: when its listener key holds more than limit sessions on its
 * mount now, each of them is invalid traffic (a bot's reason stays). One pass over the
 * sessions going on, a second only when the limit is passed. */
static void mark_concurrent(session_live_t *s, int limit)
{
    session_live_t *o;
    int n = 0;
    list_foreach(o, &live.sessions, session_live_t, link)
        n += same_listener(o, s);
    if (n <= limit)
        return;
    list_foreach(o, &live.sessions, session_live_t, link)
        if (same_listener(o, s) && !o->invalid[0])
            o->invalid = SESSION_INVALID_CONCURRENT;
}

session_live_t *session_listener_join(const session_record_t *r)
{
    session_live_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->id = r->id;
    s->start_ms = r->start_ms;
    snprintf(s->cc, sizeof(s->cc), "%s", r->country ? r->country : "");
    s->mount = strdup(r->mount ? r->mount : "");
    s->address = strdup(r->address ? r->address : "-");
    s->agent = r->agent ? strdup(r->agent) : NULL;
    if (r->key)
        snprintf(s->key, sizeof(s->key), "%s", r->key);
    else
        session_listener_key(r->address, r->agent, NULL, s->key);
    if (!s->mount || !s->address || (r->agent && !s->agent)) {
        live_free(s);
        return NULL;
    }
    s->invalid = session_classify(s->agent);
    int limit = server_config()->max_concurrent;
    pthread_mutex_lock(&live.lock);
    country_join(s->mount, s->cc);
    list_insert_tail(&live.sessions, &s->link);
    if (limit > 0)
        mark_concurrent(s, limit);
    pthread_mutex_unlock(&live.lock);
    return s;
}

void session_listener_leave(session_live_t *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&live.lock);
    country_leave(s->mount, s->cc);
    list_remove(&s->link);
    pthread_mutex_unlock(&live.lock);
    live_free(s);
}

const char *session_live_invalid(session_live_t *s)
{
    if (!s)
        return NULL;
    pthread_mutex_lock(&live.lock);
    const char *why = s->invalid;
    pthread_mutex_unlock(&live.lock);
    return why;
}

void session_live_preroll(session_live_t *s)
{
    if (s)
        atomic_store(&s->preroll, 1);
}

void session_live_each(void (*fn)(const session_record_t *r, void *arg), void *arg)
{
    int64_t now = session_now_ms();
    session_live_t *s;
    pthread_mutex_lock(&live.lock);
    list_foreach(s, &live.sessions, session_live_t, link) {
        session_record_t r = {
            .id = s->id, .mount = s->mount, .start_ms = s->start_ms, .end_ms = now,
            .address = s->address, .agent = s->agent, .country = s->cc[0] ? s->cc : NULL,
            .preroll = atomic_load(&s->preroll), .key = s->key, .invalid = s->invalid,
        };
        fn(&r, arg);
    }
    pthread_mutex_unlock(&live.lock);
}

void session_countries(const char *mount, void (*fn)(const char *cc, long n, void *arg),
                       void *arg)
{
    pthread_mutex_lock(&live.lock);
    for (size_t i = 0; i < live.n; i++)
        if (strcmp(live.v[i].mount, mount) == 0)
            fn(live.v[i].cc, live.v[i].n, arg);
    pthread_mutex_unlock(&live.lock);
}

void session_set_sink(void (*sink)(const session_record_t *r))
{
    atomic_store(&sink_fn, sink);
}

void session_server_stopping(void)
{
    atomic_store(&stopping, 1);
}
