/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guard: per-address login back-off in a fixed-size, sharded, LRU-evicting table (see
 * guard.h for the scheme).
 */
#include "auth/guard.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/escape.h"
#include "core/log.h"

typedef struct {
    char ip[64];        /* "" = free */
    unsigned failures;  /* in the current window */
    time_t window_start;
    time_t blocked_until;
    unsigned strikes;   /* blocks so far: the next one lasts 2^(strikes+1) s */
    time_t last_seen;
} entry_t;

typedef struct {
    pthread_mutex_t lock;
    entry_t slots[GUARD_SLOTS];
} shard_t;

static shard_t shards[GUARD_SHARDS] = {
#define S {PTHREAD_MUTEX_INITIALIZER, {{{0}, 0, 0, 0, 0, 0}}}
    S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S,
#undef S
};

static time_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1; /* never 0, which means "unset" */
}

static shard_t *shard_of(const char *ip)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)ip; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &shards[h % GUARD_SHARDS];
}

/* The entry of ip in its (locked) shard, or NULL; create takes a free or the LRU slot. */
static entry_t *find(shard_t *s, const char *ip, int create, time_t now)
{
    entry_t *lru = &s->slots[0];
    for (int i = 0; i < GUARD_SLOTS; i++) {
        entry_t *e = &s->slots[i];
        if (e->ip[0] && strcmp(e->ip, ip) == 0)
            return e;
        if (!e->ip[0] || (lru->ip[0] && e->last_seen < lru->last_seen))
            lru = e;
    }
    if (!create)
        return NULL;
    memset(lru, 0, sizeof(*lru));
    snprintf(lru->ip, sizeof(lru->ip), "%s", ip);
    lru->window_start = now;
    return lru;
}

unsigned guard_blocked(const char *ip)
{
    shard_t *s = shard_of(ip);
    time_t now = now_s();
    unsigned left = 0;
    pthread_mutex_lock(&s->lock);
    entry_t *e = find(s, ip, 0, now);
    if (e && e->blocked_until > now)
        left = (unsigned)(e->blocked_until - now);
    pthread_mutex_unlock(&s->lock);
    return left;
}

unsigned guard_failed(const char *ip, const char *what, const char *user)
{
    char eip[200], ewhat[300], euser[300];
    shard_t *s = shard_of(ip);
    time_t now = now_s();
    unsigned block = 0;
    pthread_mutex_lock(&s->lock);
    entry_t *e = find(s, ip, 1, now);
    e->last_seen = now;
    if (now - e->window_start >= GUARD_WINDOW) {
        e->window_start = now;
        e->failures = 0;
    }
    if (++e->failures >= GUARD_FAILURES) {
        unsigned shift = e->strikes < 8 ? e->strikes + 1 : 9;
        block = 1u << shift;
        if (block > GUARD_BLOCK_MAX)
            block = GUARD_BLOCK_MAX;
        e->blocked_until = now + block;
        e->strikes++;
        e->failures = 0;
        e->window_start = now;
    }
    pthread_mutex_unlock(&s->lock);
    escape_log(eip, sizeof(eip), ip, strlen(ip));
    escape_log(ewhat, sizeof(ewhat), what, strlen(what));
    if (user)
        escape_log_utf8(euser, sizeof(euser), user, strlen(user));
    log_warn("auth: failed login from %s for %s%s%s%s", eip, ewhat, user ? " as user \"" : "",
             user ? euser : "", user ? "\"" : "");
    if (block)
        log_warn("auth: %s blocked for %u s after %d failed logins", eip, block, GUARD_FAILURES);
    return block;
}

void guard_succeeded(const char *ip)
{
    shard_t *s = shard_of(ip);
    pthread_mutex_lock(&s->lock);
    entry_t *e = find(s, ip, 0, 0);
    if (e && e->blocked_until == 0)
        memset(e, 0, sizeof(*e));
    else if (e)
        e->failures = 0;
    pthread_mutex_unlock(&s->lock);
}

void guard_reset(void)
{
    for (int i = 0; i < GUARD_SHARDS; i++) {
        pthread_mutex_lock(&shards[i].lock);
        memset(shards[i].slots, 0, sizeof(shards[i].slots));
        pthread_mutex_unlock(&shards[i].lock);
    }
}
