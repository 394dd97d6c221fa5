/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience: the answers of the figures and top lists freed (and the servers of a figures'
 * answer added), and the /metrics counters of ended sessions (see audience.h). The figures
 * themselves are made by the store's backend.
 */
#include "audience/audience.h"
#include "audience/audience_top.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "net/server.h"

/* The first and the end of the whole quarter-hours of [from, to) (times are after 1970). */
static int64_t quarter_up(int64_t t)
{
    return (t + AUDIENCE_QH_MS - 1) / AUDIENCE_QH_MS * AUDIENCE_QH_MS;
}

int64_t audience_quarters(int64_t from_ms, int64_t to_ms)
{
    int64_t a = quarter_up(from_ms), b = to_ms / AUDIENCE_QH_MS * AUDIENCE_QH_MS;
    return b > a ? (b - a) / AUDIENCE_QH_MS : 0;
}

/* The same cut as audience_pg_figures.c's AQH_EDGES. */
int audience_quarter_edges(int64_t start_ms, int64_t end_ms, int64_t from_ms, int64_t to_ms,
                           audience_edges_t *e)
{
    int64_t qa = quarter_up(from_ms), qb = to_ms / AUDIENCE_QH_MS * AUDIENCE_QH_MS;
    int64_t a = start_ms > qa ? start_ms : qa, b = end_ms < qb ? end_ms : qb;
    *e = (audience_edges_t){0};
    if (b <= a)
        return 0;
    int64_t i1 = a / AUDIENCE_QH_MS, i2 = (b - 1) / AUDIENCE_QH_MS;
    e->quarter[0] = i1;
    e->ms[0] = (i1 == i2 ? b : (i1 + 1) * AUDIENCE_QH_MS) - a;
    e->n = 1;
    if (i2 > i1) {
        e->quarter[1] = i2;
        e->ms[1] = b - i2 * AUDIENCE_QH_MS;
        e->n = 2;
        e->whole = i2 - i1 - 1;
    }
    return 1;
}

audience_derived_t audience_row_derived(const audience_row_t *r)
{
    int64_t quarters = audience_quarters(r->from_ms, r->to_ms);
    audience_derived_t d = {0};
    if (r->cume)
        d.tsl_hours = (double)r->listened_ms / 3600000.0 / (double)r->cume;
    if (r->to_ms > r->from_ms)
        d.aas = (double)r->listened_ms / (double)(r->to_ms - r->from_ms);
    if (quarters)
        d.aqh = (double)r->aqh_quarters / (double)quarters;
    return d;
}

void audience_query_clear(audience_query_t *q)
{
    for (size_t i = 0; i < q->nrows; i++) {
        free(q->rows[i].mount);
        free(q->rows[i].countries);
    }
    free(q->rows);
    for (size_t i = 0; i < q->nservers; i++)
        free(q->servers[i]);
    free(q->servers);
    free(q->mount);
    free(q->server);
    q->rows = NULL;
    q->nrows = 0;
    q->servers = NULL;
    q->nservers = 0;
    q->mount = q->server = NULL;
}

int audience_query_add_server(audience_query_t *q, const char *name)
{
    char **v = realloc(q->servers, (q->nservers + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    q->servers = v;
    if (!(v[q->nservers] = strdup(name)))
        return -ENOMEM;
    q->nservers++;
    return 0;
}

void audience_top_clear(audience_top_t *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->entries[i].name);
    free(t->entries);
    free(t->mount);
    free(t->server);
    t->entries = NULL;
    t->n = 0;
    t->mount = t->server = NULL;
}

/* ---- counters for /metrics ---- */

#define AUDIENCE_MAX_COUNTED 1024  /* mounts counted at most (names from the config or sources) */

typedef struct counted {
    char *mount;
    uint64_t sessions, qualified, listened_ms;
} counted_t;

static struct {
    pthread_mutex_t lock;
    counted_t *v;
    size_t n, cap;
} counters = {.lock = PTHREAD_MUTEX_INITIALIZER};

static counted_t *counted_find(const char *mount)
{
    for (size_t i = 0; i < counters.n; i++)
        if (strcmp(counters.v[i].mount, mount) == 0)
            return &counters.v[i];
    if (counters.n == AUDIENCE_MAX_COUNTED)
        return NULL;
    if (counters.n == counters.cap) {
        size_t ncap = counters.cap ? counters.cap * 2 : 16;
        counted_t *n = realloc(counters.v, ncap * sizeof(*n));
        if (!n)
            return NULL;
        counters.v = n;
        counters.cap = ncap;
    }
    char *name = strdup(mount);
    if (!name)
        return NULL;
    counters.v[counters.n] = (counted_t){.mount = name};
    return &counters.v[counters.n++];
}

void audience_count(const session_record_t *r)
{
    int64_t ms = r->end_ms > r->start_ms ? r->end_ms - r->start_ms : 0;
    int qualified = ms >= (int64_t)server_config()->qualified_seconds * 1000;
    pthread_mutex_lock(&counters.lock);
    counted_t *c = counted_find(r->mount ? r->mount : "");
    if (c) {
        c->sessions++;
        if (qualified) {
            c->qualified++;
            c->listened_ms += (uint64_t)ms;
        }
    }
    pthread_mutex_unlock(&counters.lock);
}

void audience_metrics(buf_t *o, void (*label)(buf_t *o, const char *value))
{
    static const struct {
        const char *name, *help;
        size_t off;
        int ms;
    } families[] = {
        {"rimecast_audience_sessions_total", "Listener sessions ended since start-up.",
         offsetof(counted_t, sessions), 0},
        {"rimecast_audience_qualified_sessions_total",
         "Listener sessions ended since start-up that lasted at least "
         "min-session.", offsetof(counted_t, qualified), 0},
        {"rimecast_audience_listening_seconds_total",
         "Seconds listened in qualified sessions ended since start-up (TLH in seconds).",
         offsetof(counted_t, listened_ms), 1},
    };
    pthread_mutex_lock(&counters.lock);
    for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
        buf_appendf(o, "# HELP %s %s\n# TYPE %s counter\n", families[f].name, families[f].help,
                    families[f].name);
        for (size_t i = 0; i < counters.n; i++) {
            uint64_t v = *(const uint64_t *)((const char *)&counters.v[i] + families[f].off);
            buf_appendf(o, "%s{mount=\"", families[f].name);
            label(o, counters.v[i].mount);
            if (families[f].ms)
                buf_appendf(o, "\"} %llu.%03u\n", (unsigned long long)(v / 1000),
                            (unsigned)(v % 1000));
            else
                buf_appendf(o, "\"} %llu\n", (unsigned long long)v);
        }
    }
    pthread_mutex_unlock(&counters.lock);
}
