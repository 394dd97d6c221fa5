// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * history: rings of listener and bandwidth samples per series (see history.h). A series is a
 * name, an hour ring, a day ring and the accumulator that folds 30 hour samples into one day
 * sample. Series live in a flat array searched by name (at most a few hundred, sampled every
 * 10 s); the timer on worker 0 walks the mounts, never a listener.
 */
#include "stats/history.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/record.h"
#include "core/str.h"
#include "net/server.h"
#include "net/worker.h"
#include "stats/stats.h"
#include "stream/mount.h"

/* A ring's room grows with its samples, from none to RING_FIRST_ROOM and then four times
 * that until it holds len (it never wraps before): a mount's day ring has no room for its first
 * 5 minutes, its hour ring a fifth of it for the first 5, and a short-lived mount's rings stay
 * small. Grown only while the ring has not wrapped, so its samples stay in order. */
#define RING_FIRST_ROOM 32
typedef struct ring {
    history_point_t *pts;
    int cap, len;          /* cap: room allocated; len: samples the ring keeps */
    int head, count;       /* head: next slot to write */
} ring_t;

typedef struct series {
    char *name;
    ring_t fine, coarse;
    int64_t last_seen;
    uint64_t last_bytes;
    int have_bytes;
    uint64_t acc_rate;     /* sum of the hour samples folded into the next day sample */
    uint32_t acc_max;
    int acc_n;
} series_t;

struct history {
    pthread_mutex_t lock;
    series_t *v;
    int n, cap;
};

/* 0, or -ENOMEM when the ring needed more room and found no memory (the sample is lost). */
static int ring_push(ring_t *r, history_point_t p)
{
    if (r->count == r->cap && r->cap < r->len) {
        int cap = r->cap ? r->cap * 4 : RING_FIRST_ROOM;
        cap = cap < r->len ? cap : r->len;
        history_point_t *pts = realloc(r->pts, (size_t)cap * sizeof(*pts));
        if (!pts)
            return -ENOMEM;
        r->pts = pts;
        r->cap = cap;
        r->head = r->count; /* it wrapped to 0 when the smaller room filled up */
    }
    r->pts[r->head] = p;
    r->head = (r->head + 1) % r->cap;
    if (r->count < r->cap)
        r->count++;
    return 0;
}

static int ring_copy(const ring_t *r, history_point_t *out, int cap)
{
    if (r->count == 0)
        return 0;
    int n = r->count < cap ? r->count : cap;
    int first = (r->head - r->count + r->cap) % r->cap + (r->count - n);
    for (int i = 0; i < n; i++)
        out[i] = r->pts[(first + i) % r->cap];
    return n;
}

static void series_free(series_t *s)
{
    free(s->name);
    free(s->fine.pts);
    free(s->coarse.pts);
    memset(s, 0, sizeof(*s));
}

history_t *history_new(int max_series)
{
    history_t *h = calloc(1, sizeof(*h));
    if (!h)
        return NULL;
    h->v = calloc((size_t)max_series, sizeof(*h->v));
    if (!h->v) {
        free(h);
        return NULL;
    }
    h->cap = max_series;
    pthread_mutex_init(&h->lock, NULL);
    return h;
}

void history_free(history_t *h)
{
    if (!h)
        return;
    for (int i = 0; i < h->n; i++)
        series_free(&h->v[i]);
    free(h->v);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static series_t *find(history_t *h, const char *name)
{
    for (int i = 0; i < h->n; i++)
        if (strcmp(h->v[i].name, name) == 0)
            return &h->v[i];
    return NULL;
}

static void drop(history_t *h, int i)
{
    series_free(&h->v[i]);
    h->v[i] = h->v[--h->n];
    memset(&h->v[h->n], 0, sizeof(h->v[h->n]));
}

/* A new series; when full, the one seen longest ago (not at now) makes room. */
static series_t *add(history_t *h, const char *name, int64_t now, int *err)
{
    if (h->n == h->cap) {
        int old = -1;
        for (int i = 0; i < h->n; i++)
            if (h->v[i].last_seen < now && (old < 0 || h->v[i].last_seen < h->v[old].last_seen))
                old = i;
        if (old < 0) {
            *err = -ENOSPC;
            return NULL;
        }
        drop(h, old);
    }
    series_t *s = &h->v[h->n];
    s->name = str_dup(name);
    if (!s->name) {
        series_free(s);
        *err = -ENOMEM;
        return NULL;
    }
    s->fine.len = HISTORY_FINE_LEN;
    s->coarse.len = HISTORY_COARSE_LEN;
    h->n++;
    return s;
}

static uint32_t saturated(uint64_t v)
{
    return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

int history_sample(history_t *h, const char *name, int64_t now, long long listeners,
                   uint64_t bytes_sent)
{
    int err = 0;
    pthread_mutex_lock(&h->lock);
    series_t *s = find(h, name);
    if (!s)
        s = add(h, name, now, &err);
    if (s) {
        history_point_t p = {.t = (uint32_t)now,
                             .listeners = listeners > 0 ? (uint32_t)listeners : 0};
        int64_t dt = s->fine.count ? now - s->last_seen : 0;
        if (s->have_bytes && dt > 0 && bytes_sent >= s->last_bytes)
            p.bytes_per_s = saturated((bytes_sent - s->last_bytes) / (uint64_t)dt);
        s->last_bytes = bytes_sent;
        s->have_bytes = 1;
        s->last_seen = now;
        err = ring_push(&s->fine, p);
        s->acc_rate += p.bytes_per_s;
        if (p.listeners > s->acc_max)
            s->acc_max = p.listeners;
        if (++s->acc_n == HISTORY_COARSE_STEP / HISTORY_FINE_STEP) {
            history_point_t c = {.t = (uint32_t)now, .listeners = s->acc_max,
                                 .bytes_per_s = saturated(s->acc_rate / (uint64_t)s->acc_n)};
            if (ring_push(&s->coarse, c) < 0)
                err = -ENOMEM;
            s->acc_rate = 0;
            s->acc_max = 0;
            s->acc_n = 0;
        }
    }
    pthread_mutex_unlock(&h->lock);
    return err;
}

void history_sweep(history_t *h, int64_t now)
{
    pthread_mutex_lock(&h->lock);
    for (int i = h->n - 1; i >= 0; i--)
        if (now - h->v[i].last_seen > (int64_t)HISTORY_COARSE_LEN * HISTORY_COARSE_STEP)
            drop(h, i);
    pthread_mutex_unlock(&h->lock);
}

int history_count(history_t *h)
{
    pthread_mutex_lock(&h->lock);
    int n = h->n;
    pthread_mutex_unlock(&h->lock);
    return n;
}

int history_get(history_t *h, const char *name, int coarse, history_point_t *out, int cap)
{
    pthread_mutex_lock(&h->lock);
    series_t *s = find(h, name);
    int n = s ? ring_copy(coarse ? &s->coarse : &s->fine, out, cap) : -ENOENT;
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* ---- an upgrade: the series carried to the new process ---- */

static void ring_save(const ring_t *r, buf_t *out)
{
    history_point_t pts[HISTORY_FINE_LEN > HISTORY_COARSE_LEN ? HISTORY_FINE_LEN
                                                               : HISTORY_COARSE_LEN];
    int n = ring_copy(r, pts, r->cap);
    rec_u32(out, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        rec_u32(out, pts[i].t);
        rec_u32(out, pts[i].listeners);
        rec_u32(out, pts[i].bytes_per_s);
    }
}

static void ring_load(ring_t *r, rec_reader_t *in)
{
    uint32_t n = rec_get_u32(in);
    for (uint32_t i = 0; i < n && !in->error; i++) {
        history_point_t p = {rec_get_u32(in), rec_get_u32(in), rec_get_u32(in)};
        (void)ring_push(r, p); /* more than the ring holds: the oldest go; no memory: lost */
    }
}

void history_save(history_t *h, buf_t *out)
{
    pthread_mutex_lock(&h->lock);
    rec_u32(out, (uint32_t)h->n);
    for (int i = 0; i < h->n; i++) {
        const series_t *s = &h->v[i];
        rec_str(out, s->name);
        rec_i64(out, s->last_seen);
        rec_u64(out, s->last_bytes);
        rec_u8(out, (uint8_t)s->have_bytes);
        rec_u64(out, s->acc_rate);
        rec_u32(out, s->acc_max);
        rec_u32(out, (uint32_t)s->acc_n);
        ring_save(&s->fine, out);
        ring_save(&s->coarse, out);
    }
    pthread_mutex_unlock(&h->lock);
}

int history_restore(history_t *h, rec_reader_t *in)
{
    uint32_t n = rec_get_u32(in);
    int err = 0;
    pthread_mutex_lock(&h->lock);
    for (uint32_t i = 0; i < n && !in->error && !err; i++) {
        char *name = rec_get_str(in);
        int64_t seen = rec_get_i64(in);
        series_t *s = name && !find(h, name) ? add(h, name, seen, &err) : NULL;
        history_point_t pf[HISTORY_FINE_LEN], pc[HISTORY_COARSE_LEN];
        series_t skip = {.fine = {pf, HISTORY_FINE_LEN, HISTORY_FINE_LEN, 0, 0},
                         .coarse = {pc, HISTORY_COARSE_LEN, HISTORY_COARSE_LEN, 0, 0}};
        if (!s)
            s = &skip; /* a duplicate, or no room: read past it */
        s->last_seen = seen;
        s->last_bytes = rec_get_u64(in);
        s->have_bytes = rec_get_u8(in);
        s->acc_rate = rec_get_u64(in);
        s->acc_max = rec_get_u32(in);
        s->acc_n = (int)(rec_get_u32(in) % (HISTORY_COARSE_STEP / HISTORY_FINE_STEP));
        ring_load(&s->fine, in);
        ring_load(&s->coarse, in);
        free(name);
        err = err == -ENOSPC ? 0 : err;
    }
    pthread_mutex_unlock(&h->lock);
    return in->error ? -EINVAL : err;
}

/* ---- the server's history, sampled on worker 0 ---- */

static history_t *global;

history_t *history_global(void)
{
    return global;
}

static void on_tick(worker_t *w, void *arg)
{
    (void)w;
    (void)arg;
    mount_t **v = NULL;
    int n = stats_mounts(&v, 1);
    if (n < 0 || !global)
        return;
    int64_t now = (int64_t)time(NULL);
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        uint64_t sent = (uint64_t)atomic_load(&v[i]->bytes_sent);
        total += sent;
        history_sample(global, v[i]->name, now, atomic_load(&v[i]->listeners), sent);
    }
    stats_mounts_free(v, n);
    /* The server's total counts only live mounts: a mount going away makes it drop, and
     * history_sample then reports no rate for that interval rather than a negative one. */
    history_sample(global, "", now, atomic_load(&server.stats.listeners), total);
    history_sweep(global, now);
}

static int history_module_init(worker_t *w)
{
    if (w->id != 0)
        return 0;
    if (!global && !(global = history_new(HISTORY_MAX_SERIES)))
        return -ENOMEM;
    return worker_timer_add(w, HISTORY_FINE_STEP * 1000, on_tick, NULL);
}

static void history_module_fini(worker_t *w)
{
    if (w->id != 0)
        return;
    history_free(global);
    global = NULL;
}

static const worker_module_t history_module = {
    .name = "history",
    .init = history_module_init,
    .fini = history_module_fini,
};

void history_register(void)
{
    worker_register(&history_module);
}
