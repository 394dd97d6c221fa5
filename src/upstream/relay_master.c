/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_master: the relays a master server's list asks for (see master.c): starting one,
 * stopping one the list no longer names, moving one to a new master (a reload changed it) and
 * waking those waiting out a backoff when the master answered. They are relays like the
 * configured ones, marked from_master.
 */
#include "upstream/relay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "core/log.h"
#include "core/str.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "upstream/relay_internal.h"

/* A master relay built again for its worker to take (relay_restart_master). */
static relay_t *master_relay_new(const char *host, int port, int tls, const char *mount,
                                 const char *local, const char *user, const char *pass,
                                 int on_demand)
{
    relay_t *r = relay_new(local, on_demand);
    if (r && relay_add_host(r, host, port, mount, user, pass, 1, tls, NULL, 0) < 0) {
        relay_free(r);
        r = NULL;
    }
    if (r)
        r->from_master = 1;
    return r;
}

int relay_start_master(const char *host, int port, int tls, const char *mount,
                       const char *local, const char *user, const char *pass, int on_demand)
{
    if (mount[0] != '/' || mount_name_refused(local, 0)) /* the caller checked and logged */
        return -EPERM;
    relay_t *r = master_relay_new(host, port, tls, mount, local, user, pass, on_demand);
    if (!r)
        return -ENOMEM;
    relay_take_held(r);
    return relay_hand_over(r);
}

/* The worker that runs the master relay of fresh's local mount retargets it; the others drop
 * their copy. */
static void restart_master_msg(worker_t *w, void *arg)
{
    relay_t *fresh = arg, *r;
    list_foreach(r, &relay_lists[w->id], relay_t, link) {
        if (r->from_master && strcmp(r->local, fresh->local) == 0) {
            log_info("relay %s: changed by the reload (master): restarting", r->logname);
            relay_retarget(r, fresh);
            return;
        }
    }
    relay_free(fresh);
}

void relay_restart_master(const char *host, int port, int tls, const char *mount,
                          const char *local, const char *user, const char *pass, int on_demand)
{
    for (int i = 0; i < server.nslots; i++) { /* draining workers' relays too */
        relay_t *fresh = master_relay_new(host, port, tls, mount, local, user, pass, on_demand);
        if (fresh && worker_post(server.workers[i], restart_master_msg, fresh) < 0)
            relay_free(fresh);
    }
}

static void stop_master_msg(worker_t *w, void *arg)
{
    char *name = arg;
    relay_t *r;
    list_foreach(r, &relay_lists[w->id], relay_t, link) {
        if (r->from_master && strcmp(r->local, name) == 0) {
            relay_stop(r, "relay stopped");
            break;
        }
    }
    free(name);
}

/* The master answered its list: its relays waiting out a backoff try now. */
static void master_listed_msg(worker_t *w, void *arg)
{
    (void)arg;
    relay_t *r;
    list_foreach(r, &relay_lists[w->id], relay_t, link) {
        if (r->from_master && !r->rc && !r->resolving) {
            r->backoff_ms = 0;
            r->next_try_ms = 0;
        }
    }
}

void relay_master_listed(void)
{
    for (int i = 0; i < server.nslots; i++) /* draining workers' relays too */
        worker_post(server.workers[i], master_listed_msg, NULL);
}

void relay_stop_master(const char *local)
{
    for (int i = 0; i < server.nslots; i++) { /* draining workers' relays too */
        char *name = str_dup(local);
        if (name && worker_post(server.workers[i], stop_master_msg, name) < 0)
            free(name);
    }
}

