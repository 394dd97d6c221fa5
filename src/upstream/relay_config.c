/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_config: the <relay> blocks of the config as running relays (see relay.h). At start-up
 * each is handed to a worker; a table (main thread only) remembers, by local mount, which
 * worker runs it and the block it runs on. A reload compares the new blocks with that table:
 * a relay whose block went is stopped, one whose block changed is given its new upstreams
 * (relay_retarget: its mount and listeners stay), a new block starts. What a worker does to
 * its relays it does on its own thread, told by worker_post; the table is never read there.
 * Not here: the master's relays (relay_master.c, followed by master.c).
 */
#include "upstream/relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/str.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/fallback.h"
#include "stream/mount.h"
#include "upstream/relay_internal.h"

/* A configured relay that runs: its local mount, the block it runs on (config snapshots are
 * kept until exit), its worker. */
typedef struct tracked {
    char *local;
    const relay_conf_t *conf;
    worker_t *worker;
} tracked_t;
static tracked_t *tracked; /* main thread only */
static int ntracked;

static const char *conf_local(const relay_conf_t *rc)
{
    return rc->local_mount ? rc->local_mount : rc->mount ? rc->mount : "/";
}

static tracked_t *find_tracked(const char *local)
{
    for (int i = 0; i < ntracked; i++)
        if (strcmp(tracked[i].local, local) == 0)
            return &tracked[i];
    return NULL;
}

void relay_track(const relay_conf_t *rc, worker_t *w)
{
    tracked_t *v = realloc(tracked, (size_t)(ntracked + 1) * sizeof(*v));
    if (!v)
        return; /* no memory: a reload takes it for a new relay (whose mount is then in use) */
    tracked = v;
    if (!(v[ntracked].local = str_dup(conf_local(rc))))
        return;
    v[ntracked].conf = rc;
    v[ntracked].worker = w;
    ntracked++;
}

static void untrack(tracked_t *t)
{
    free(t->local);
    *t = tracked[--ntracked];
}

/* The first block of each local mount counts; a later one is warned about and left out. */
static const relay_conf_t *first_of(const config_t *cfg, const char *local)
{
    for (const relay_conf_t *rc = cfg->relays; rc; rc = rc->next)
        if (strcmp(conf_local(rc), local) == 0)
            return rc;
    return NULL;
}

relay_t *relay_from_conf(const relay_conf_t *rc)
{
    relay_t *r = relay_new(conf_local(rc), rc->on_demand);
    for (const relay_host_conf_t *h = rc->hosts; h && r; h = h->next) {
        if (relay_add_host(r, h->server, h->port, h->mount, h->username, h->password,
                           h->relay_shoutcast_metadata, h->tls, h->bind, h->timeout) < 0) {
            relay_free(r);
            r = NULL;
        }
    }
    if (r && !r->nhosts) {
        relay_free(r);
        r = NULL;
    }
    return r;
}

/* 1 (logged) if rc may not start: its local mount is a name no mount may have, or another
 * block came first with it. */
static int refused(const config_t *cfg, const relay_conf_t *rc)
{
    const char *local = conf_local(rc);
    char esc[512];
    escape_log_utf8(esc, sizeof(esc), local, strlen(local));
    const char *why = mount_name_refused(local, 0);
    if (why) {
        log_warn("relay %s refused: mountpoint %s %s", esc, esc, why);
        return 1;
    }
    if (first_of(cfg, local) != rc) {
        log_warn("relay %s refused: an earlier <relay> has the same <local-mount>", esc);
        return 1;
    }
    return 0;
}

/* Starts rc on a worker and tracks it. 0 or -errno. */
static int start(const relay_conf_t *rc)
{
    relay_t *r = relay_from_conf(rc);
    if (!r)
        return -ENOMEM;
    relay_take_held(r);
    worker_t *w = server.nworkers > 0 ? relay_pick_worker() : NULL;
    int err = relay_hand_over_to(r, w);
    if (err == 0)
        relay_track(rc, w);
    return err;
}

void relay_start_all(void)
{
    const config_t *cfg = server_config();
    for (const relay_conf_t *rc = cfg->relays; rc; rc = rc->next) {
        if (refused(cfg, rc) || relay_adopted(conf_local(rc)))
            continue;
        if (start(rc) < 0)
            log_error("relay of %s: cannot start", conf_local(rc));
    }
    if (!cfg->master_server)
        relay_end_held(); /* else the master's list may name them: relay_master_polled */
    relay_adopted_clear();
}

int relay_configured(const char *local)
{
    return first_of(server_config(), local) != NULL;
}

/* ---- a reload ---- */

static int same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Appends `what` to the list in buf (once). */
static void note_change(char *buf, size_t len, const char *what)
{
    if (strstr(buf, what))
        return;
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", n ? ", " : "", what);
}

/* What differs between two blocks of one local mount, as a list of setting names in buf ("" if
 * nothing does). */
static const char *changes(const relay_conf_t *a, const relay_conf_t *b, char *buf, size_t len)
{
    buf[0] = '\0';
    if (a->nhosts != b->nhosts)
        note_change(buf, len, "upstreams");
    const relay_host_conf_t *x = a->hosts, *y = b->hosts;
    for (; x && y; x = x->next, y = y->next) {
        if (!same_text(x->server, y->server))
            note_change(buf, len, "server");
        if (x->port != y->port)
            note_change(buf, len, "port");
        if (!same_text(x->mount, y->mount))
            note_change(buf, len, "mount");
        if (!same_text(x->username, y->username) || !same_text(x->password, y->password))
            note_change(buf, len, "credentials");
        if (x->tls != y->tls)
            note_change(buf, len, "tls");
        if (x->relay_shoutcast_metadata != y->relay_shoutcast_metadata)
            note_change(buf, len, "relay-shoutcast-metadata");
        if (!same_text(x->bind, y->bind))
            note_change(buf, len, "bind");
        if (x->timeout != y->timeout)
            note_change(buf, len, "timeout");
    }
    if ((a->on_demand > 0) != (b->on_demand > 0))
        note_change(buf, len, "on-demand");
    return buf;
}

/* On the relay's worker: the configured relay of a removed block stops; its listeners follow
 * the mount's fallback, or close. */
static void stop_msg(worker_t *w, void *arg)
{
    char *name = arg;
    relay_t *r;
    list_foreach(r, &relay_lists[w->id], relay_t, link) {
        if (r->from_master || r->feed_end || strcmp(r->local, name) != 0)
            continue;
        int n = r->mount ? atomic_load(&r->mount->listeners) : 0;
        mount_t *to = n > 0 ? fallback_target(r->mount) : NULL;
        char esc[512] = "";
        if (to)
            escape_log_utf8(esc, sizeof(esc), to->name, strlen(to->name));
        if (n == 0)
            log_info("relay %s: removed by the reload, stopping", r->logname);
        else
            log_info("relay %s: removed by the reload, stopping (%d listener%s %s%s)",
                     r->logname, n, n == 1 ? "" : "s", to ? "to " : "closed: no fallback",
                     esc);
        if (to)
            mount_unref(to);
        relay_stop(r, NULL);
        break;
    }
    free(name);
}

/* On the relay's worker: the configured relay of a changed block takes its new upstreams. */
static void retarget_msg(worker_t *w, void *arg)
{
    relay_t *fresh = arg, *r;
    list_foreach(r, &relay_lists[w->id], relay_t, link) {
        if (!r->from_master && !r->feed_end && strcmp(r->local, fresh->local) == 0) {
            relay_retarget(r, fresh);
            return;
        }
    }
    relay_free(fresh);
}

/* The block of t is gone: its relay stops. */
static void reload_removed(tracked_t *t)
{
    char *name = str_dup(t->local);
    if (name && worker_post(t->worker, stop_msg, name) < 0)
        free(name);
    untrack(t);
}

/* t's relay runs on an older block of the same local mount: restarted if they differ. */
static void reload_kept(tracked_t *t, const relay_conf_t *rc)
{
    char what[160];
    const relay_conf_t *was = t->conf;
    t->conf = rc;
    if (!changes(was, rc, what, sizeof(what))[0])
        return;
    char esc[512];
    escape_log_utf8(esc, sizeof(esc), t->local, strlen(t->local));
    relay_t *fresh = relay_from_conf(rc);
    if (!fresh || worker_post(t->worker, retarget_msg, fresh) < 0) {
        if (fresh)
            relay_free(fresh);
        log_error("relay %s: changed by the reload (%s), but cannot restart", esc, what);
        return;
    }
    log_info("relay %s: changed by the reload (%s): restarting", esc, what);
}

void relay_reload(void)
{
    const config_t *cfg = server_config();
    if (relay_forgotten())
        return;
    for (int i = 0; i < ntracked;) {
        if (first_of(cfg, tracked[i].local))
            i++;
        else
            reload_removed(&tracked[i]); /* the last entry moved to i */
    }
    for (const relay_conf_t *rc = cfg->relays; rc; rc = rc->next) {
        tracked_t *t = find_tracked(conf_local(rc));
        if (t && t->conf != rc && first_of(cfg, t->local) == rc) {
            reload_kept(t, rc);
            continue;
        }
        if (t || refused(cfg, rc))
            continue;
        char esc[512];
        escape_log_utf8(esc, sizeof(esc), conf_local(rc), strlen(conf_local(rc)));
        log_info("relay %s: added by the reload, starting", esc);
        relay_stop_master(conf_local(rc)); /* a configured relay takes a master's mount over */
        if (start(rc) < 0)
            log_error("relay %s: cannot start", esc);
    }
}
