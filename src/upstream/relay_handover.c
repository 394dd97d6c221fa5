/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_handover: relays across an upgrade (see relay_handover.h). In the old process: which
 * mounts a waiting relay holds, a streaming relay's connection saved as record fields, every
 * relay forgotten once the new process took over, and the local feeds that keep the old
 * process's TLS listeners fed from the new one. In the new process: the saved connections
 * adopted by the relays of the config, and the carried mounts held for the relays that start
 * on them. The relays themselves, their connections and tick are relay.c's.
 */
#include "upstream/relay_handover.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/record.h"
#include "core/str.h"
#include "core/url.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "stream/source.h"
#include "upstream/relay_internal.h"

/* Set once this process handed its relays over to a new one (relay_forget_all). */
static atomic_int relays_forgotten;

int relay_forgotten(void)
{
    return atomic_load(&relays_forgotten);
}

/* The local mounts of relays an upgrade brought over streaming (main thread, at start-up):
 * relay_start_all leaves them be. */
static char **adopted;
static int nadopted;

int relay_adopted(const char *local)
{
    for (int i = 0; i < nadopted; i++)
        if (strcmp(adopted[i], local) == 0)
            return 1;
    return 0;
}

void relay_adopted_clear(void)
{
    for (int i = 0; i < nadopted; i++)
        free(adopted[i]);
    free(adopted);
    adopted = NULL;
    nadopted = 0;
}

/* ---- an upgrade: relays waiting to reconnect ---- */

/* carried mounts of relays that were waiting: taken by the relays of the config at start-up,
 * and by the master's at its first list (on a worker: hence the lock) */
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static mount_t **held;
static int nheld;

int relay_waiting(const mount_t *m)
{
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots && i < SERVER_MAX_WORKERS; i++) {
        relay_t *r;
        if (!server.workers[i] || server.workers[i]->gone)
            continue;
        list_foreach(r, &relay_lists[i], relay_t, link)
            if (r->mount == m)
                return 1;
    }
    return 0;
}

int relay_hold_mount(mount_t *m)
{
    pthread_mutex_lock(&held_lock);
    mount_t **v = realloc(held, (size_t)(nheld + 1) * sizeof(*v));
    if (v) {
        held = v;
        held[nheld++] = mount_ref(m);
    }
    pthread_mutex_unlock(&held_lock);
    return v ? 0 : -ENOMEM;
}

/* r starts on the held mount of its name, if there is one. */
void relay_take_held(relay_t *r)
{
    pthread_mutex_lock(&held_lock);
    for (int i = 0; i < nheld && !r->mount; i++)
        if (strcmp(held[i]->name, r->local) == 0) {
            r->mount = held[i]; /* the list's reference is r's now */
            held[i] = held[--nheld];
        }
    pthread_mutex_unlock(&held_lock);
    if (r->mount) {
        r->lost_ms = loop_now_ms(); /* its listeners wait the grace period from now */
        log_info("relay %s: its mount carried over by the upgrade, connecting again",
                 r->logname);
    }
}

/* The held mounts no relay took end (their listeners follow their fallbacks). */
void relay_end_held(void)
{
    pthread_mutex_lock(&held_lock);
    mount_t **v = held;
    int n = nheld;
    held = NULL;
    nheld = 0;
    pthread_mutex_unlock(&held_lock);
    for (int i = 0; i < n; i++) {
        char esc[512];
        log_warn("relay %s: no longer relayed: its carried mount ends",
                 escape_log_utf8(esc, sizeof(esc), v[i]->name, strlen(v[i]->name)));
        source_end_mount(v[i]);
        mount_unref(v[i]);
    }
    free(v);
}

void relay_master_polled(void)
{
    relay_end_held();
}

/* ---- an upgrade ---- */

int relay_save(conn_t *c, buf_t *out)
{
    if (c->destroy != relay_conn_destroy)
        return -ENOENT;
    relay_t *r = ((relay_conn_t *)c)->relay;
    if (!r || !r->streaming || !r->mount || r->from_master || c->tls || c->closing)
        return -ENOTSUP;
    rec_str(out, r->local);
    rec_u32(out, (uint32_t)r->cur);
    rec_str(out, r->host);
    rec_str(out, r->path);
    rec_u32(out, (uint32_t)r->tport);
    rec_u64(out, r->bytes_at_start);
    return 0;
}

/* The relay of the config for local, streaming on c (on w, before w runs). */
static relay_t *relay_adopt_conf(worker_t *w, relay_conn_t *rc, rec_reader_t *in)
{
    char *local = rec_get_str(in);
    uint32_t cur = rec_get_u32(in);
    char *host = rec_get_str(in), *path = rec_get_str(in);
    uint32_t tport = rec_get_u32(in);
    uint64_t bytes_at_start = rec_get_u64(in);
    const relay_conf_t *conf = server_config()->relays;
    while (conf && local && strcmp(conf->local_mount ? conf->local_mount : "/", local) != 0)
        conf = conf->next;
    relay_t *r = !in->error && conf && host && path ? relay_from_conf(conf) : NULL;
    char **v = r ? realloc(adopted, (size_t)(nadopted + 1) * sizeof(*v)) : NULL;
    if (v)
        adopted = v;
    if (!v || !(adopted[nadopted] = str_dup(local))) {
        if (r)
            relay_free(r);
        free(local);
        free(host);
        free(path);
        return NULL;
    }
    nadopted++;
    free(local);
    r->cur = cur < (uint32_t)r->nhosts ? (int)cur : 0;
    r->host = host;
    r->path = path;
    r->tport = (int)tport;
    r->bytes_at_start = bytes_at_start;
    r->worker = w;
    r->rc = rc;
    r->streaming = 1;
    rc->relay = r;
    list_insert_head(&relay_lists[w->id], &r->link);
    relay_track(conf, w); /* a reload follows it as the relays relay_start_all starts */
    if (r->on_demand) {
        r->wanted_ms = loop_now_ms();
        relay_demand_set(r->local, w, 1);
        relay_demand_live(r->local, 1);
    }
    return r;
}

conn_t *relay_adopt(worker_t *w, int fd, rec_reader_t *in,
                    mount_t *(*find)(const char *name, void *arg), void *arg)
{
    client_t *cl = client_restore(w, fd, in, sizeof(relay_conn_t), relay_conn_destroy);
    if (!cl)
        return NULL;
    conn_t *c = &cl->conn;
    relay_t *r = relay_adopt_conf(w, (relay_conn_t *)cl, in);
    if (r && source_adopt(c, in, find, arg) == 0 && (r->mount = find(r->local, arg)) != NULL) {
        mount_ref(r->mount);
        return c;
    }
    conn_close(c); /* the relay (if any) hears of it when the worker releases it */
    return NULL;
}

void relay_forget_all(void)
{
    atomic_store(&relays_forgotten, 1);
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots && i < SERVER_MAX_WORKERS; i++) {
        relay_t *r, *next;
        if (!server.workers[i] || server.workers[i]->gone)
            continue;
        list_foreach_safe(r, next, &relay_lists[i], relay_t, link) {
            relay_unlink(r); /* its tick no longer tries it */
            if (r->rc)
                r->rc->relay = NULL; /* its connection's end says nothing to it */
            r->rc = NULL;
            r->mount = NULL; /* the mount is the new process's: nothing ends it here */
            if (r->resolving)
                r->stopping = 1; /* freed, silently, when its lookup answers */
        }
    }
}

/* ---- an upgrade's local feed ---- */

/* Its connection ended (or never came up): it says why once, and goes. */
void relay_feed_ended(relay_t *r)
{
    relay_unlink(r);
    char why[256];
    snprintf(why, sizeof(why), "%s%s%s", r->streaming ? "its feed from the new process ended"
             : "no feed from the new process", r->streaming || !r->feed_why[0] ? "" : ": ",
             r->streaming ? "" : r->feed_why);
    r->feed_end(r->mount, why);
    r->streaming = 0;
    mount_unref(r->mount); /* not ended: the caller closes its listeners */
    r->mount = NULL;
    if (r->resolving)
        r->stopping = 1;
    else
        relay_free(r);
}

/* Tick: its mount's last listener left: the feed closes. */
void relay_feed_check(relay_t *r)
{
    if (atomic_load(&r->mount->listeners) > 0 || r->resolving)
        return;
    log_info("relay %s: local feed closed: its last listener left", r->logname);
    relay_unlink(r);
    relay_detach_conn(r);
    mount_unref(r->mount);
    r->mount = NULL;
    relay_free(r);
}

static void feed_add_msg(worker_t *w, void *arg)
{
    relay_t *r = arg;
    r->worker = w;
    list_insert_head(&relay_lists[w->id], &r->link);
    relay_try(r);
}

int relay_start_feed(mount_t *m, const char *ip, int port, const char *header,
                     relay_feed_end_fn ended)
{
    char *path = url_encode(m->name, strlen(m->name));
    relay_t *r = path ? relay_new(m->name, 0) : NULL;
    if (r && (relay_add_host(r, ip, port, path, NULL, NULL, 1, 0, NULL, 5) < 0 ||
              !(r->feed_header = str_dup(header)))) {
        relay_free(r);
        r = NULL;
    }
    free(path);
    if (r && server.nworkers <= 0) {
        relay_free(r);
        return -EINVAL;
    }
    if (!r)
        return -ENOMEM;
    r->mount = mount_ref(m);
    r->feed_end = ended;
    worker_t *w = relay_pick_worker();
    int rc = worker_post(w, feed_add_msg, r);
    if (rc < 0) {
        mount_unref(r->mount);
        r->mount = NULL;
        relay_free(r);
    }
    return rc;
}
