/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * clients: admin commands on listeners, which live on every worker: listclients, moveclients
 * and killclient. Each parks its connection, runs a function on every worker through
 * worker_broadcast (each worker only touches its own listeners), and answers from the
 * completion, on the admin connection's worker.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/audit.h"
#include "admin/commands.h"
#include "admin/request.h"
#include "core/cidr.h"
#include "core/log.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/worker.h"
#include "stats/stats.h"
#include "hls/hls.h"
#include "stream/sub.h"
#include "stream/listener.h"
#include "stream/session.h"
#include "stream/mount.h"

/* Shared state of a broadcast: written by several workers at once under lock. */
typedef struct entry {
    uint64_t id;
    char ip[64];
    char *agent;
    char *user;          /* the name it authenticated with (htpasswd, URL auth), or NULL */
    long long connected;
} entry_t;

typedef struct job {
    pthread_mutex_t lock;
    mount_t *dest;       /* moveclients: referenced */
    uint64_t target_id;  /* killclient */
    atomic_int hits;
    atomic_int refused;  /* moveclients: listeners left where they were (destination full) */
    atomic_int denied;   /* moveclients: left where they were (the destination's authentication) */
    entry_t *entries;    /* listclients */
    int n, cap;
    char who[AUDIT_WHO_LEN]; /* moveclients, killclient: for the log line */
} job_t;

static void job_free(void *p)
{
    job_t *j = p;
    for (int i = 0; i < j->n; i++) {
        free(j->entries[i].agent);
        free(j->entries[i].user);
    }
    free(j->entries);
    if (j->dest)
        mount_unref(j->dest);
    pthread_mutex_destroy(&j->lock);
    free(j);
}

static job_t *job_new(admin_req_t *a)
{
    job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    pthread_mutex_init(&j->lock, NULL);
    a->data = j;
    a->free_data = job_free;
    return j;
}


/* Parks the connection and broadcasts; answers 500 itself when that fails. */
static void run(admin_req_t *a, void (*fn)(worker_t *, void *), void (*done)(worker_t *, void *))
{
    worker_t *self = a->worker;
    conn_t *c = a->conn;
    admin_park(a);
    if (worker_broadcast(self, fn, done, a) < 0) {
        a->conn = c;
        admin_send_error(a, 500, "Internal Server Error");
    }
}

/* ---- listclients ---- */

/* One more entry (its fields to fill), or NULL without memory. */
static entry_t *entry_add(job_t *j)
{
    if (j->n == j->cap) {
        int ncap = j->cap ? j->cap * 2 : 64;
        entry_t *ne = realloc(j->entries, (size_t)ncap * sizeof(*ne));
        if (!ne)
            return NULL;
        j->entries = ne;
        j->cap = ncap;
    }
    return &j->entries[j->n++];
}

static void list_fn(worker_t *w, void *arg)
{
    admin_req_t *a = arg;
    job_t *j = a->data;
    sub_t *s = sub_find(w, a->mount);
    time_t now = time(NULL);
    listener_t *l;
    if (!s)
        return;
    pthread_mutex_lock(&j->lock);
    list_foreach(l, &s->listeners, listener_t, link) {
        if (l->conn->closing || l->feed) /* an upgrade's local feed is no listener */
            continue;
        entry_t *e = entry_add(j);
        if (!e)
            break;
        e->id = l->conn->id;
        snprintf(e->ip, sizeof(e->ip), "%s", CIDR_SHOWN(l->conn->ip));
        const client_t *cl = client_of(l->conn);
        e->agent = cl->log_agent ? strdup(cl->log_agent) : NULL;
        /* log_user of a listener is set only once its mount's authentication let it in */
        e->user = cl->log_user ? strdup(cl->log_user) : NULL;
        e->connected = (long long)(now - l->conn->start);
    }
    pthread_mutex_unlock(&j->lock);
}

/* An HLS session of the mount is listed like a connected listener. */
static void list_session(const hls_session_view_t *v, void *arg)
{
    entry_t *e = entry_add(arg);
    if (!e)
        return;
    e->id = v->id;
    snprintf(e->ip, sizeof(e->ip), "%s", CIDR_SHOWN(v->ip));
    e->agent = v->agent ? strdup(v->agent) : NULL;
    e->user = v->user ? strdup(v->user) : NULL; /* the login's user, as a listener's */
    e->connected = v->connected;
}

static int by_id(const void *x, const void *y)
{
    const entry_t *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

static void list_done(worker_t *self, void *arg)
{
    (void)self;
    admin_req_t *a = arg;
    job_t *j = a->data;
    xmlDocPtr doc = stats_new_doc("icestats");
    if (!doc) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    hls_sessions_foreach(a->mount->name, list_session, j);
    if (j->n > 1)
        qsort(j->entries, (size_t)j->n, sizeof(entry_t), by_id);
    xmlNodePtr src = xmlNewChild(xmlDocGetRootElement(doc), NULL, BAD_CAST "source", NULL);
    char *name = stats_clean_text(a->mount->name);
    xmlNewProp(src, BAD_CAST "mount", BAD_CAST(name ? name : ""));
    free(name);
    stats_add_number(src, "Listeners", j->n); /* Icecast 2.4's name */
    stats_add_number(src, "listeners", j->n); /* Icecast-KH's (AzuraCast reads it) */
    for (int i = 0; i < j->n; i++) {
        xmlNodePtr l = xmlNewChild(src, NULL, BAD_CAST "listener", NULL);
        stats_add_text(l, "IP", j->entries[i].ip);
        stats_add_text(l, "UserAgent", j->entries[i].agent ? j->entries[i].agent : "");
        stats_add_number(l, "Connected", j->entries[i].connected);
        stats_add_number(l, "ID", (long long)j->entries[i].id);
        if (j->entries[i].user) /* Icecast's element, only for an authenticated listener */
            stats_add_text(l, "username", j->entries[i].user);
    }
    admin_send_doc(a, doc);
}

void admin_cmd_listclients(admin_req_t *a)
{
    if (!job_new(a)) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    run(a, list_fn, list_done);
}

/* ---- moveclients ---- */

static void move_fn(worker_t *w, void *arg)
{
    admin_req_t *a = arg;
    job_t *j = a->data;
    sub_t *s = sub_find(w, a->mount);
    if (!s)
        return;
    /* moving the last listener frees the subscription: take the list first */
    int n = s->count, k = 0;
    listener_t **v = malloc((size_t)(n > 0 ? n : 1) * sizeof(*v));
    if (!v)
        return;
    listener_t *l;
    list_foreach(l, &s->listeners, listener_t, link)
        if (k < n && !l->conn->closing && !l->feed)
            v[k++] = l;
    int moved = 0, denied = 0;
    for (int i = 0; i < k; i++) {
        int err = listener_move(v[i], j->dest);
        if (err == 0) {
            moved++;
            free(v[i]->home); /* the admin chose its mount: no fallback-override pulls it back */
            v[i]->home = NULL;
        } else if (err == -EACCES) {
            denied++;
        }
    }
    atomic_fetch_add(&j->hits, moved);
    atomic_fetch_add(&j->denied, denied);
    atomic_fetch_add(&j->refused, k - moved - denied);
    free(v);
}

static void move_done(worker_t *self, void *arg)
{
    (void)self;
    admin_req_t *a = arg;
    job_t *j = a->data;
    char msg[1200];
    int moved = atomic_load(&j->hits), refused = atomic_load(&j->refused);
    int denied = atomic_load(&j->denied);
    if (denied > 0) {
        /* they stay on their mount, still playing: the destination asks for a login they did
         * not give (see listener_move) */
        audit_log(j->who, "moved %d listeners from %s to %s; %d stay (destination full), %d "
                  "stay (not logged in to the destination)", moved, a->mount->name,
                  j->dest->name, refused, denied);
        snprintf(msg, sizeof(msg), "Clients moved from %s to %s: %d moved, %d not moved "
                 "(destination full), %d not moved (not logged in to the destination)",
                 a->mount->name, j->dest->name, moved, refused, denied);
        admin_send_response(a, msg, moved > 0);
        return;
    }
    if (refused == 0) {
        audit_log(j->who, "moved %d listeners from %s to %s", moved, a->mount->name,
                  j->dest->name);
        snprintf(msg, sizeof(msg), "Clients moved from %s to %s", a->mount->name, j->dest->name);
        admin_send_response(a, msg, 1);
        return;
    }
    /* those that did not fit stay on their mount, still playing */
    audit_log(j->who, "moved %d listeners from %s to %s; %d stay (destination full)", moved,
              a->mount->name, j->dest->name, refused);
    snprintf(msg, sizeof(msg), "Clients moved from %s to %s: %d moved, %d not moved (destination "
             "full)", a->mount->name, j->dest->name, moved, refused);
    admin_send_response(a, msg, moved > 0);
}

void admin_cmd_moveclients(admin_req_t *a)
{
    char *dest = admin_param(a, "destination");
    if (!dest) {
        admin_send_doc(a, stats_listmounts_document(a->mount->name));
        return;
    }
    mount_t *d = mount_find(dest);
    free(dest);
    if (!d) {
        admin_send_error(a, 400, "No such destination");
        return;
    }
    if (d == a->mount) {
        mount_unref(d);
        admin_send_error(a, 400, "supplied mountpoints are identical");
        return;
    }
    /* a listener's framing (ICY or Ogg pages) is fixed by its response head: see
     * listener_move. Icecast 2.4 ignores such a move silently; we say why. */
    if (atomic_load(&d->is_ogg) != atomic_load(&a->mount->is_ogg)) {
        mount_unref(d);
        admin_send_error(a, 400, "Destination has a different stream format (Ogg and non-Ogg "
                         "listeners cannot be moved between each other)");
        return;
    }
    job_t *j = job_new(a);
    if (!j) {
        mount_unref(d);
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    j->dest = d;
    audit_who(a, a->admin, j->who);
    run(a, move_fn, move_done);
}

/* ---- killclient ---- */

static void kill_fn(worker_t *w, void *arg)
{
    admin_req_t *a = arg;
    job_t *j = a->data;
    sub_t *s = sub_find(w, a->mount);
    listener_t *l;
    if (!s)
        return;
    list_foreach(l, &s->listeners, listener_t, link) {
        if (l->conn->id == j->target_id && !l->conn->closing && !l->feed) {
            l->end_reason = SESSION_END_KICKED;
            conn_close(l->conn);
            atomic_fetch_add(&j->hits, 1);
            return;
        }
    }
}

static void kill_done(worker_t *self, void *arg)
{
    (void)self;
    admin_req_t *a = arg;
    job_t *j = a->data;
    char msg[64];
    int found = atomic_load(&j->hits) > 0 || hls_session_kill(a->mount->name, j->target_id);
    if (found) /* Icecast: "Admin request: client N removed" */
        audit_log(j->who, "client %llu removed from %s", (unsigned long long)j->target_id,
                  a->mount->name);
    snprintf(msg, sizeof(msg), "Client %llu %s", (unsigned long long)j->target_id,
             found ? "removed" : "not found");
    admin_send_response(a, msg, found);
}

void admin_cmd_killclient(admin_req_t *a)
{
    char *id = admin_param(a, "id");
    unsigned long long v = 0;
    int valid = admin_parse_id(id, &v) == 0;
    free(id);
    if (!valid) {
        admin_send_error(a, 400, "Missing parameter");
        return;
    }
    job_t *j = job_new(a);
    if (!j) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    j->target_id = v;
    audit_who(a, a->admin, j->who);
    run(a, kill_fn, kill_done);
}
