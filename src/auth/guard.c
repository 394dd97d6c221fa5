/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guard: per-address login back-off in a fixed-size, sharded, LRU-evicting table (see
 * guard.h for the rules). Entries are keyed by the address cut to its prefix; the settings
 * are read from the config snapshot on every call, so a reload applies at once.
 */
#include "auth/guard.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "auth/access.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "net/server.h"
#include "net/worker.h"

typedef struct {
    unsigned char key[16]; /* the address, host bits beyond the prefix cleared */
    unsigned prefix;       /* of key, in IPv6 terms; 0 = free slot */
    unsigned failures;     /* in the current window */
    time_t window_start;
    time_t blocked_until;
    unsigned block_len;    /* of the block in force or last ended */
    unsigned strikes;      /* earlier blocks still remembered */
    time_t last_failure;
    time_t last_seen;
    int announced;         /* a block was logged and its end not yet */
} entry_t;

typedef struct {
    pthread_mutex_t lock;
    entry_t slots[GUARD_SLOTS];
} shard_t;

static shard_t shards[GUARD_SHARDS] = {
#define S {.lock = PTHREAD_MUTEX_INITIALIZER}
    S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
#undef S
};

static const login_backoff_conf_t *settings(void)
{
    static const login_backoff_conf_t defaults = {.failures = 5, .window = 60, .block = 2,
                                                  .block_max = 300, .forget = 600,
                                                  .ipv4_prefix = 32, .ipv6_prefix = 64,
                                                  .exempt_local = 1};
    const config_t *cfg = server_config();
    return cfg ? &cfg->backoff : &defaults;
}

static time_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1; /* never 0, which means "unset" */
}

static int is_v4(const unsigned char a[16])
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a, mapped, 12) == 0;
}

static int is_loopback(const unsigned char a[16])
{
    static const unsigned char one[16] = {[15] = 1};
    return (is_v4(a) && a[12] == 127) || memcmp(a, one, 16) == 0;
}

/* The table key of ip: 1 and key/prefix filled, or 0 when ip is exempt (or not an address,
 * which cannot happen for a connection's own; such a string is never blocked). */
static int key_of(const char *ip, const login_backoff_conf_t *b, unsigned char key[16],
                  unsigned *prefix)
{
    if (cidr_addr_parse(ip, strlen(ip), key) < 0)
        return 0;
    if (cidr_list_match(&b->exempt, key))
        return 0;
    if (b->exempt_local && (is_loopback(key) || access_proxy_trusted(ip)))
        return 0;
    *prefix = is_v4(key) ? 96 + (unsigned)b->ipv4_prefix : (unsigned)b->ipv6_prefix;
    for (unsigned bit = *prefix; bit < 128; bit++)
        key[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
    return 1;
}

/* "192.0.2.7", or "2001:db8:1:2::/64" for a range. */
static const char *shown(const entry_t *e, char *out, size_t cap)
{
    char addr[INET6_ADDRSTRLEN];
    int v4 = is_v4(e->key);
    inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? e->key + 12 : e->key, addr, sizeof(addr));
    unsigned bits = v4 ? e->prefix - 96 : e->prefix;
    if (cidr_anonymizing() && bits > (v4 ? 24u : 48u))
        snprintf(out, cap, "%s", CIDR_SHOWN(addr)); /* no more than its network */
    else if (bits == (v4 ? 32u : 128u))
        snprintf(out, cap, "%s", addr);
    else
        snprintf(out, cap, "%s/%u", addr, bits);
    return out;
}

static shard_t *shard_of(const unsigned char key[16])
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (int i = 0; i < 16; i++)
        h = (h ^ key[i]) * 16777619u;
    return &shards[h % GUARD_SHARDS];
}

/* The entry of key in its (locked) shard, or NULL; create takes a free or the LRU slot. */
static entry_t *find(shard_t *s, const unsigned char key[16], unsigned prefix, int create,
                     time_t now)
{
    entry_t *lru = &s->slots[0];
    for (int i = 0; i < GUARD_SLOTS; i++) {
        entry_t *e = &s->slots[i];
        if (e->prefix == prefix && memcmp(e->key, key, 16) == 0)
            return e;
        if (!e->prefix || (lru->prefix && e->last_seen < lru->last_seen))
            lru = e;
    }
    if (!create)
        return NULL;
    memset(lru, 0, sizeof(*lru));
    memcpy(lru->key, key, 16);
    lru->prefix = prefix;
    lru->window_start = now;
    return lru;
}

unsigned guard_blocked(const char *ip)
{
    unsigned char key[16];
    unsigned prefix, left = 0;
    if (!key_of(ip, settings(), key, &prefix))
        return 0;
    shard_t *s = shard_of(key);
    time_t now = now_s();
    pthread_mutex_lock(&s->lock);
    entry_t *e = find(s, key, prefix, 0, now);
    if (e && e->blocked_until > now)
        left = (unsigned)(e->blocked_until - now);
    pthread_mutex_unlock(&s->lock);
    return left;
}

/* Counts a failure into e; the length of the block it starts, else 0. */
static unsigned count_failure(entry_t *e, const login_backoff_conf_t *b, time_t now)
{
    if (e->last_failure && b->forget > 0) {
        time_t quiet = (now - e->last_failure) / b->forget;
        e->strikes = quiet >= (time_t)e->strikes ? 0 : e->strikes - (unsigned)quiet;
    }
    e->last_failure = e->last_seen = now;
    if (now - e->window_start >= b->window) {
        e->window_start = now;
        e->failures = 0;
    }
    if (b->failures == 0 || ++e->failures < (unsigned)b->failures)
        return 0;
    unsigned block = (unsigned)b->block;
    for (unsigned i = 0; i < e->strikes && block < (unsigned)b->block_max; i++)
        block *= 2;
    if (block > (unsigned)b->block_max)
        block = (unsigned)b->block_max;
    e->blocked_until = now + block;
    e->block_len = block;
    e->strikes++;
    e->failures = 0;
    e->window_start = now;
    e->announced = 1;
    return block;
}

unsigned guard_failed(const char *ip, const char *what, const char *user)
{
    char eip[200], ewhat[300], euser[300], range[INET6_ADDRSTRLEN + 8];
    const login_backoff_conf_t *b = settings();
    unsigned char key[16];
    unsigned prefix, block = 0, failures = (unsigned)b->failures;
    const char *seen = CIDR_SHOWN(ip);
    escape_log(eip, sizeof(eip), seen, strlen(seen));
    escape_log(ewhat, sizeof(ewhat), what, strlen(what));
    if (user)
        escape_log_utf8(euser, sizeof(euser), user, strlen(user));
    log_warn("auth: failed login from %s for %s%s%s%s", eip, ewhat, user ? " as user \"" : "",
             user ? euser : "", user ? "\"" : "");
    if (!key_of(ip, b, key, &prefix))
        return 0;
    shard_t *s = shard_of(key);
    time_t now = now_s();
    pthread_mutex_lock(&s->lock);
    entry_t *e = find(s, key, prefix, 1, now);
    if ((block = count_failure(e, b, now)))
        shown(e, range, sizeof(range));
    pthread_mutex_unlock(&s->lock);
    if (block)
        log_warn("auth: %s blocked for %u s after %u failed logins", range, block, failures);
    return block;
}

void guard_succeeded(const char *ip)
{
    char range[INET6_ADDRSTRLEN + 8];
    unsigned char key[16];
    unsigned prefix;
    unsigned ended = 0; /* a block not yet logged as ended (a login is checked only after it) */
    if (!key_of(ip, settings(), key, &prefix))
        return;
    shard_t *s = shard_of(key);
    pthread_mutex_lock(&s->lock);
    entry_t *e = find(s, key, prefix, 0, 0);
    if (e) {
        if (e->announced && (ended = e->block_len))
            shown(e, range, sizeof(range));
        memset(e, 0, sizeof(*e));
    }
    pthread_mutex_unlock(&s->lock);
    if (ended)
        log_info("auth: %s no longer blocked (a block of %u s ended)", range, ended);
}

/* Worker 0, once a second: the end of each block, logged once. */
static void sweep(worker_t *w, void *arg)
{
    (void)w;
    (void)arg;
    time_t now = now_s();
    for (int i = 0; i < GUARD_SHARDS; i++) {
        char ended[8][INET6_ADDRSTRLEN + 8];
        unsigned lens[8];
        int n = 0;
        pthread_mutex_lock(&shards[i].lock);
        for (int j = 0; j < GUARD_SLOTS && n < 8; j++) {
            entry_t *e = &shards[i].slots[j];
            if (e->prefix && e->announced && e->blocked_until <= now) {
                e->announced = 0;
                lens[n] = e->block_len;
                shown(e, ended[n++], sizeof(ended[0]));
            }
        }
        pthread_mutex_unlock(&shards[i].lock);
        for (int k = 0; k < n; k++)
            log_info("auth: %s no longer blocked (a block of %u s ended)", ended[k], lens[k]);
    }
}

static int guard_worker_init(worker_t *w)
{
    return w->id == 0 ? worker_timer_add(w, 1000, sweep, NULL) : 0;
}

void guard_register(void)
{
    static const worker_module_t module = {.name = "guard", .init = guard_worker_init};
    worker_register(&module);
}

void guard_reset(void)
{
    for (int i = 0; i < GUARD_SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        memset(shards[i].slots, 0, sizeof(shards[i].slots));
        pthread_mutex_unlock(&shards[i].lock);
    }
}
