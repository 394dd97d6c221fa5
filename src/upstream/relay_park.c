/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_park: on-demand relays seen from the listeners' side (see relay_park.h): the table of
 * on-demand relays by local mount (which worker runs each, whether it is connected), and the
 * listeners parked while their relay connects. The relay connecting and disconnecting on
 * demand is relay.c's tick.
 */
#include "upstream/relay_park.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "core/str.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "upstream/relay_internal.h"

#define RELAY_PARK_MS 10000  /* a listener waits this long for an on-demand upstream */
#define RELAY_PARK_POLL_MS 100

/* On-demand relays by local mount (read by the workers' dispatch): cold path, one lock. */
typedef struct demand {
    char *name;
    worker_t *worker;
    int live;
    struct demand *next; /* singly linked: a handful, looked up and unlinked by name */
} demand_t;
static pthread_mutex_t demand_lock = PTHREAD_MUTEX_INITIALIZER;
static demand_t *demands;

void relay_demand_set(const char *name, worker_t *w, int add)
{
    pthread_mutex_lock(&demand_lock);
    demand_t **pp = &demands;
    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    if (add && !*pp) {
        demand_t *d = calloc(1, sizeof(*d));
        if (d && (d->name = str_dup(name))) {
            d->worker = w;
            *pp = d;
        } else {
            free(d);
        }
    } else if (!add && *pp) {
        demand_t *d = *pp;
        *pp = d->next;
        free(d->name);
        free(d);
    }
    pthread_mutex_unlock(&demand_lock);
}

void relay_demand_live(const char *name, int live)
{
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d; d = d->next)
        if (strcmp(d->name, name) == 0)
            d->live = live;
    pthread_mutex_unlock(&demand_lock);
}

void relay_foreach_idle(void (*fn)(const char *mount, void *arg), void *arg)
{
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d; d = d->next)
        if (!d->live)
            fn(d->name, arg);
    pthread_mutex_unlock(&demand_lock);
}

/* ---- parked listeners ---- */

typedef struct park {
    char *name;
    uint64_t until_ms;
    unsigned time_limit_s; /* from the listener's authentication, 0 = none */
    relay_listen_fn listen;
    const conn_ops_t *held_role; /* the role c had (a request held with it), and its data */
    void *held_data;
} park_t;

/* c leaves the park: the role it had, and its data, are its own again. */
static void park_leave(conn_t *c)
{
    park_t *p = c->data;
    c->role = p->held_role;
    c->data = p->held_data;
    free(p->name);
    free(p);
}

/* c closed while parked: the role it had releases its data too. */
static void park_release(conn_t *c)
{
    if (!c->data)
        return;
    park_leave(c);
    if (c->role && c->role->on_close)
        c->role->on_close(c);
    c->role = NULL;
}

static void park_check(conn_t *c);

static const conn_ops_t park_ops = {
    .name = "relay-wait",
    .on_readable = conn_discard_input,
    .on_writable = conn_write_pending,
    .on_timeout = park_check,
    .on_close = park_release,
};

static void park_check(conn_t *c)
{
    park_t *p = c->data;
    mount_t *m = mount_find(p->name);
    if (!m && loop_now_ms() < p->until_ms) {
        conn_set_deadline(c, RELAY_PARK_POLL_MS);
        return;
    }
    unsigned limit = p->time_limit_s;
    relay_listen_fn listen = p->listen;
    park_leave(c);
    if (m) {
        listen(c, m, limit); /* the request was kept while parked */
        return;
    }
    client_send_error(c, 404, "The file you requested could not be found");
}

static void kick_msg(worker_t *w, void *arg)
{
    char *name = arg;
    uint64_t now = loop_now_ms();
    relay_t *r;
    list_foreach(r, &relay_lists[w->id], relay_t, link) {
        if (r->on_demand && strcmp(r->local, name) == 0) {
            r->wanted_ms = now;
            if (!r->rc && !r->resolving && now >= r->next_try_ms)
                relay_try(r);
            break;
        }
    }
    free(name);
}

int relay_is_on_demand(const char *name)
{
    int found = 0;
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d && !found; d = d->next)
        found = strcmp(d->name, name) == 0;
    pthread_mutex_unlock(&demand_lock);
    return found;
}

int relay_park_listener(conn_t *c, const char *name, unsigned time_limit_s,
                        relay_listen_fn listen)
{
    worker_t *w = NULL;
    pthread_mutex_lock(&demand_lock);
    for (demand_t *d = demands; d; d = d->next)
        if (strcmp(d->name, name) == 0)
            w = d->worker;
    pthread_mutex_unlock(&demand_lock);
    if (!w)
        return 0;
    park_t *p = calloc(1, sizeof(*p));
    char *kick = str_dup(name);
    if (!p || !kick || !(p->name = str_dup(name)) || worker_post(w, kick_msg, kick) < 0) {
        free(kick);
        if (p)
            free(p->name);
        free(p);
        return 0;
    }
    p->until_ms = loop_now_ms() + RELAY_PARK_MS;
    p->time_limit_s = time_limit_s;
    p->listen = listen;
    p->held_role = c->role;
    p->held_data = c->data;
    c->data = p;
    c->ops = c->role = &park_ops;
    conn_set_deadline(c, RELAY_PARK_POLL_MS);
    return 1;
}
