/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pgresolve: the PostgreSQL store's host name lookups, each on a thread of its own
 * and waited for until the connect deadline (see audience_pgresolve.h).
 */
#include "audience/audience_pgresolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "core/buf.h"
#include "core/loop.h"

#define MAX_HOSTS 8            /* of the URI's host list that are looked up */
#define MAX_ADDRS 4            /* of each name's addresses handed to libpq */

/* One name's lookup: its thread and the store thread (through pending) hold it. */
typedef struct lookup {
    struct lookup *next;       /* in pending */
    char *name;
    int refs;
    int done, rc;              /* rc: getaddrinfo()'s, once done */
    int naddrs;
    char addrs[MAX_ADDRS][INET6_ADDRSTRLEN];
} lookup_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ended;   /* a lookup is done (CLOCK_MONOTONIC) */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static lookup_t *pending;      /* lookups not taken yet: a try after a deadline waits for them */

static void init_cond(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&ended, &a);
    pthread_condattr_destroy(&a);
}

/* Drops a reference, under lock. */
static void unref(lookup_t *l)
{
    if (--l->refs == 0) {
        free(l->name);
        free(l);
    }
}

static void *lookup_main(void *arg)
{
    lookup_t *l = arg;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char addrs[MAX_ADDRS][INET6_ADDRSTRLEN];
    int n = 0, rc = getaddrinfo(l->name, NULL, &hints, &res);
    for (struct addrinfo *a = rc == 0 ? res : NULL; a && n < MAX_ADDRS; a = a->ai_next) {
        if (getnameinfo(a->ai_addr, a->ai_addrlen, addrs[n], sizeof(addrs[n]), NULL, 0,
                        NI_NUMERICHOST) != 0)
            continue;
        int seen = 0;
        for (int i = 0; i < n; i++)
            seen |= strcmp(addrs[i], addrs[n]) == 0;
        n += !seen;
    }
    if (res)
        freeaddrinfo(res);
    pthread_mutex_lock(&lock);
    l->rc = rc == 0 && n == 0 ? EAI_NONAME : rc;
    memcpy(l->addrs, addrs, sizeof(addrs));
    l->naddrs = n;
    l->done = 1;
    pthread_cond_broadcast(&ended);
    unref(l);
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* The lookup of name: one under way (or done and not taken) since an earlier try, or a new
 * one. NULL without memory or a thread. Under lock. */
static lookup_t *lookup_of(const char *name)
{
    for (lookup_t *l = pending; l; l = l->next)
        if (strcmp(l->name, name) == 0)
            return l;
    lookup_t *l = calloc(1, sizeof(*l));
    if (!l || !(l->name = strdup(name))) {
        free(l);
        return NULL;
    }
    l->refs = 2;
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, lookup_main, l);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        free(l->name);
        free(l);
        return NULL;
    }
    l->next = pending;
    pending = l;
    return l;
}

/* Takes l out of pending, under lock. */
static void take(lookup_t *l)
{
    for (lookup_t **p = &pending; *p; p = &(*p)->next)
        if (*p == l) {
            *p = l->next;
            unref(l);
            return;
        }
}

/* Waits until every lookup of v[0..n) is done or the deadline passed, under lock. */
static void wait_all(lookup_t *const *v, int n, uint64_t deadline)
{
    for (;;) {
        int all = 1;
        for (int i = 0; i < n; i++)
            all &= !v[i] || v[i]->done;
        uint64_t now = loop_now_ms();
        if (all || now >= deadline)
            return;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t ns = (uint64_t)ts.tv_nsec + (deadline - now) * 1000000u;
        ts.tv_sec += (time_t)(ns / 1000000000u);
        ts.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&ended, &lock, &ts);
    }
}

/* Whether host (an entry of the host list) needs no lookup: a socket directory, an abstract
 * socket, none, or a numeric address. */
static int no_lookup(const char *host)
{
    unsigned char a[16];
    return !*host || *host == '/' || *host == '@' || inet_pton(AF_INET, host, a) == 1 ||
           inet_pton(AF_INET6, host, a) == 1;
}

/* Splits a comma-separated list in place into v (at most cap entries): how many. */
static int split(char *list, char **v, int cap)
{
    int n = 0;
    for (char *p = list; n < cap;) {
        v[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            break;
        *comma = '\0';
        p = comma + 1;
    }
    return n;
}

static const char *option(const PQconninfoOption *o, const char *key)
{
    for (; o && o->keyword; o++)
        if (strcmp(o->keyword, key) == 0)
            return o->val;
    return NULL;
}

/* The lists for libpq: each host entry once per address (a name's, or its own numeric one;
 * a socket's entry with an empty address), and the port of each when the URI names several. */
static int lists(audience_pg_hosts_t *out, char **hosts, int nh, char **ports, int np,
                 lookup_t *const *v)
{
    buf_t h = BUF_INIT, a = BUF_INIT, p = BUF_INIT;
    int n = 0;
    for (int i = 0; i < nh; i++) {
        int k = v[i] ? (v[i]->done && v[i]->rc == 0 ? v[i]->naddrs : 0) : 1;
        for (int j = 0; j < k; j++, n++) {
            buf_appendf(&h, "%s%s", n ? "," : "", hosts[i]);
            /* a numeric address is its own; a socket's entry has none */
            int numeric = *hosts[i] && *hosts[i] != '/' && *hosts[i] != '@';
            buf_appendf(&a, "%s%s", n ? "," : "",
                        v[i] ? v[i]->addrs[j] : numeric ? hosts[i] : "");
            if (np > 1)
                buf_appendf(&p, "%s%s", n ? "," : "", ports[i < np ? i : np - 1]);
        }
    }
    size_t len;
    out->host = buf_take(&h, &len);
    out->hostaddr = buf_take(&a, &len);
    out->port = np > 1 ? buf_take(&p, &len) : (buf_free(&p), NULL);
    return n;
}

int audience_pg_resolve(const char *uri, uint64_t deadline, audience_pg_hosts_t *out,
                        char *why, size_t cap)
{
    *out = (audience_pg_hosts_t){0};
    PQconninfoOption *opts = PQconninfoParse(uri, NULL);
    const char *host = option(opts, "host"), *addr = option(opts, "hostaddr");
    const char *port = option(opts, "port");
    char *hl = host && *host && !(addr && *addr) ? strdup(host) : NULL;
    char *pl = hl && port ? strdup(port) : NULL;
    PQconninfoFree(opts);
    char *hosts[MAX_HOSTS], *ports[MAX_HOSTS];
    int nh = hl ? split(hl, hosts, MAX_HOSTS) : 0, np = pl ? split(pl, ports, MAX_HOSTS) : 0;
    lookup_t *v[MAX_HOSTS] = {0};
    int names = 0, err = 0;
    pthread_once(&once, init_cond);
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nh && !err; i++)
        if (!no_lookup(hosts[i]))
            err = !(v[i] = lookup_of(hosts[i])) || (++names, 0);
    if (names && !err)
        wait_all(v, nh, deadline);
    int n = names && !err ? lists(out, hosts, nh, ports, np, v) : 0;
    if (err)
        snprintf(why, cap, "cannot look up the database's host: out of memory");
    for (int i = 0; names && !err && !n && i < nh; i++) {
        if (!v[i])
            continue;
        if (v[i]->done)
            snprintf(why, cap, "cannot look up %s: %s", hosts[i], gai_strerror(v[i]->rc));
        else
            snprintf(why, cap, "no answer in time looking up %s", hosts[i]);
        break;
    }
    /* those done are taken (a name listed twice once); the others wait for the next try */
    for (int i = 0; i < nh; i++) {
        int again = 0;
        for (int k = 0; k < i; k++)
            again |= v[k] == v[i];
        if (!again && v[i] && v[i]->done)
            take(v[i]);
    }
    pthread_mutex_unlock(&lock);
    free(hl);
    free(pl);
    if (names && !err && n)
        return 0;
    audience_pg_hosts_free(out);
    return names ? -1 : 0;
}

void audience_pg_hosts_free(audience_pg_hosts_t *h)
{
    free(h->host);
    free(h->hostaddr);
    free(h->port);
    *h = (audience_pg_hosts_t){0};
}
