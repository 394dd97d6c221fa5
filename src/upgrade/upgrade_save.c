/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_save: the old process's state written for the new one (see upgrade_internal.h):
 * the listening sockets, the pidfile, the counters, events and history, the mounts carried,
 * their sources and plain listeners and the other connections that can go, each as records
 * (upgrade_proto.h) with their descriptors listed apart; then sent over the socket. The new
 * process reads them in upgrade_take.c. Main thread, workers parked.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/events_feed.h"
#include "ads/ads_carry.h"
#include "core/buf.h"
#include "core/list.h"
#include "core/record.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/tls.h"
#include "net/worker.h"
#include "stats/history.h"
#include "stream/events.h"
#include "stream/handover.h"
#include "hls/hls.h"
#include "hls/hls_carry.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/source.h"
#include "upgrade/upgrade.h"
#include "upgrade/upgrade_internal.h"
#include "upgrade/upgrade_proto.h"
#include "upstream/relay_handover.h"
#include "yp/yp.h"

static uint32_t fd_add(fdlist_t *l, int fd)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        int *v = realloc(l->v, (size_t)cap * sizeof(*v));
        if (!v)
            return UINT32_MAX;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n] = fd;
    return (uint32_t)l->n++;
}

static void save_listens(state_t *s, const upgrade_pidfile_t *pf)
{
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++) {
        worker_t *w = server.workers[i];
        for (int j = 0; w && !w->gone && j < w->nlisten; j++) {
            worker_listen_t *ls = w->listens[j];
            if (!ls || ls->fd < 0)
                continue;
            size_t at = rec_begin(&s->head, REC_LISTEN);
            rec_u32(&s->head, fd_add(&s->fds, ls->fd));
            rec_u32(&s->head, (uint32_t)ls->conf->port);
            rec_str(&s->head, ls->conf->bind_address);
            rec_end(&s->head, at);
        }
    }
    if (pf && pf->fd >= 0) {
        size_t at = rec_begin(&s->head, REC_PIDFILE);
        rec_u32(&s->head, fd_add(&s->fds, pf->fd));
        rec_str(&s->head, pf->path);
        rec_u64(&s->head, (uint64_t)pf->dev);
        rec_u64(&s->head, (uint64_t)pf->ino);
        rec_end(&s->head, at);
    }
    size_t at = rec_begin(&s->head, REC_STATS);
    rec_i64(&s->head, (int64_t)server.start_time);
    atomic_ullong *c[16];
    int n = upgrade_counters(c, 16);
    rec_u32(&s->head, (uint32_t)n);
    for (int i = 0; i < n; i++)
        rec_u64(&s->head, atomic_load(c[i]));
    rec_end(&s->head, at);
    unsigned char keys[TLS_TICKET_KEYS_LEN];
    size_t nkeys = tls_ticket_keys_get(keys);
    if (nkeys) { /* over the socket only: the state is never written to a file */
        at = rec_begin(&s->head, REC_TLS_KEYS);
        rec_bytes(&s->head, keys, nkeys);
        rec_end(&s->head, at);
        explicit_bzero(keys, sizeof(keys));
    }
    if (ads_beacons_waiting()) { /* forgotten here once the new process took them */
        at = rec_begin(&s->head, REC_ADS_BEACONS);
        ads_beacons_save(&s->head);
        rec_end(&s->head, at);
    }
    at = rec_begin(&s->head, REC_EVENTS);
    events_save(&s->head);
    rec_end(&s->head, at);
    if (history_global()) {
        at = rec_begin(&s->head, REC_HISTORY);
        history_save(history_global(), &s->head);
        rec_end(&s->head, at);
    }
}

static void collect_mount(mount_t *m, void *arg)
{
    state_t *s = arg;
    if (handover_mount_unmovable(m) && !relay_waiting(m))
        return;
    carried_t *v = realloc(s->mv, (size_t)(s->nm + 1) * sizeof(*v));
    if (!v)
        return;
    s->mv = v;
    s->mv[s->nm++] = (carried_t){mount_ref(m), NULL};
}

static carried_t *carried_of(state_t *s, const mount_t *m)
{
    for (int i = 0; i < s->nm; i++)
        if (s->mv[i].m == m)
            return &s->mv[i];
    return NULL;
}

/* A connection's record: its descriptor's index, its worker, its HTTP state, then what
 * `role` writes (0, or its -errno: not carried, nothing written). */
static int save_conn(state_t *s, conn_t *c, int type, int (*role)(conn_t *c, state_t *s))
{
    size_t mark = s->conns.len;
    size_t at = rec_begin(&s->conns, (uint16_t)type);
    rec_u32(&s->conns, (uint32_t)s->fds.n);
    rec_u32(&s->conns, (uint32_t)c->worker->id);
    client_save(c, &s->conns);
    int rc = role(c, s);
    if (rc == 0 && s->nc == s->ccap) {
        int cap = s->ccap ? s->ccap * 2 : 64;
        conn_t **v = realloc(s->cv, (size_t)cap * sizeof(*v));
        if (v) {
            s->cv = v;
            s->ccap = cap;
        }
    }
    if (rc == 0 && (s->conns.error || s->nc == s->ccap || fd_add(&s->fds, c->fd) == UINT32_MAX))
        rc = -ENOMEM;
    if (rc < 0) {
        s->conns.len = mark; /* dropped whole */
        return rc;
    }
    rec_end(&s->conns, at);
    s->cv[s->nc++] = c;
    return 0;
}

static int save_source_role(conn_t *c, state_t *s)
{
    return source_save(c, &s->conns);
}

static int save_relay_role(conn_t *c, state_t *s)
{
    int rc = relay_save(c, &s->conns);
    return rc < 0 ? rc : source_save(c, &s->conns);
}

/* The source of a carried mount: a relay's connection, or a source's. */
static int save_feed(state_t *s, conn_t *c)
{
    int rc = save_conn(s, c, REC_RELAY, save_relay_role);
    return rc == -ENOENT ? save_conn(s, c, REC_SOURCE, save_source_role) : rc;
}

static int save_listener_role(conn_t *c, state_t *s)
{
    return handover_listener_save(c, &s->t, &s->conns);
}

static int save_feed_role(conn_t *c, state_t *s)
{
    return events_feed_save(c, &s->conns);
}

static int save_reading_role(conn_t *c, state_t *s)
{
    return client_reading_save(c, &s->conns);
}

static int save_reply_role(conn_t *c, state_t *s)
{
    return reply_save(c, &s->conns);
}

static int save_hls_role(conn_t *c, state_t *s)
{
    return hls_playlists_carry_save(c, &s->conns);
}

/* The sources of the carried mounts (a mount whose source cannot be carried stays; a relay's
 * goes without when its connection cannot: the new process starts that relay again on it),
 * then the plain listeners of those mounts. */
static void save_conns(state_t *s)
{
    for (int i = 0; i < s->nm; i++) {
        mount_t *m = s->mv[i].m;
        worker_t *w = m->source_worker;
        conn_t *c = w ? worker_find_conn(w, m->source_conn_id) : NULL;
        int fed = c && !c->tls && save_feed(s, c) == 0;
        if (!fed && !relay_waiting(m)) {
            mount_unref(m);
            s->mv[i--] = s->mv[--s->nm];
            continue;
        }
        s->sources += fed;
    }
    int slots = atomic_load(&server.nslots), all = 0;
    for (int i = 0; i < slots; i++) {
        worker_t *w = server.workers[i];
        conn_t *c;
        if (!w || w->gone)
            continue;
        list_foreach(c, &w->conns, conn_t, link) {
            listener_t *l = listener_of(c);
            carried_t *k = l ? carried_of(s, l->mount) : NULL;
            all++;
            s->tls += c->tls;
            if (k && c->tls)
                upgrade_feed_add(l->mount); /* a TLS listener stays: fed from the new process */
            int type = l && handover_listener_carries_break(c) ? REC_LISTENER_AD : REC_LISTENER;
            if (k && !c->tls && save_conn(s, c, type, save_listener_role) == 0) {
                if (!k->from || l->blk->offset < k->from->offset)
                    k->from = l->blk;
                s->listeners++;
            } else if (!l && !c->tls && (save_conn(s, c, REC_FEED, save_feed_role) == 0 ||
                                         save_conn(s, c, REC_READING, save_reading_role) == 0 ||
                                         save_conn(s, c, REC_REPLY, save_reply_role) == 0 ||
                                         save_conn(s, c, REC_HLS_CONN, save_hls_role) == 0)) {
                s->others++;
            }
        }
    }
    s->left = all - s->listeners - s->sources - s->others;
}

/* Where m's queue is carried from: the oldest block a carried listener is on or an HLS window
 * lists (NULL: the whole queue). */
static const block_t *carried_from(mount_t *m, const block_t *from)
{
    const block_t *listed = hls_carry_oldest(m);
    pthread_mutex_lock(&m->lock);
    if (listed && listed->offset < (from ? from : m->oldest)->offset)
        from = listed;
    pthread_mutex_unlock(&m->lock);
    return from;
}

static void save_mounts(state_t *s)
{
    for (int i = 0; i < s->nm; i++) {
        mount_t *m = s->mv[i].m;
        size_t at = rec_begin(&s->mounts, REC_MOUNT);
        handover_mount_save(m, carried_from(m, s->mv[i].from), &s->t, &s->mounts);
        rec_end(&s->mounts, at);
        at = rec_begin(&s->mounts, REC_HLS_WINDOW);
        rec_str(&s->mounts, m->name);
        hls_carry_save(m, &s->t, &s->mounts);
        rec_end(&s->mounts, at);
        at = rec_begin(&s->mounts, REC_HLS);
        rec_str(&s->mounts, s->mv[i].m->name);
        hls_sessions_save(s->mv[i].m->name, &s->mounts);
        rec_end(&s->mounts, at);
    }
    upgrade_feeds_save(&s->mounts);
    yp_save(&s->mounts, REC_YP); /* nothing listed from here until the hand-over ends */
    for (size_t i = 0; i < s->t.n; i++) {
        size_t at = rec_begin(&s->metas, REC_META);
        handover_meta_save(&s->t, i, &s->metas);
        rec_end(&s->metas, at);
    }
}

void upgrade_state_free(state_t *s)
{
    if (s->head.data)
        explicit_bzero(s->head.data, s->head.len); /* the TLS session-ticket keys were there */
    buf_free(&s->head);
    buf_free(&s->metas);
    if (s->mounts.data)
        explicit_bzero(s->mounts.data, s->mounts.len); /* the feed tokens were there */
    buf_free(&s->mounts);
    buf_free(&s->conns);
    handover_metas_free(&s->t, 0);
    for (int i = 0; i < s->nm; i++)
        mount_unref(s->mv[i].m);
    free(s->mv);
    free(s->fds.v);
    free(s->cv);
}

int upgrade_state_send(int sock, state_t *s)
{
    int rc = 0;
    for (int i = 0; i < s->fds.n && rc == 0; i += UPGRADE_FD_BATCH) {
        int n = s->fds.n - i < UPGRADE_FD_BATCH ? s->fds.n - i : UPGRADE_FD_BATCH;
        rc = upgrade_send(sock, 'F', NULL, 0, s->fds.v + i, n);
    }
    unsigned char hdr[sizeof(UPGRADE_MAGIC) - 1 + 4];
    memcpy(hdr, UPGRADE_MAGIC, sizeof(UPGRADE_MAGIC) - 1);
    for (int i = 0; i < 4; i++)
        hdr[sizeof(UPGRADE_MAGIC) - 1 + (size_t)i] = (unsigned char)(UPGRADE_VERSION >> (8 * i));
    const buf_t *parts[] = {&s->head, &s->metas, &s->mounts, &s->conns};
    uint64_t total = sizeof(hdr);
    if (rc == 0)
        rc = upgrade_send(sock, 'D', hdr, sizeof(hdr), NULL, 0);
    for (size_t p = 0; p < 4 && rc == 0; p++) {
        for (size_t off = 0; off < parts[p]->len && rc == 0; off += UPGRADE_CHUNK) {
            size_t n = parts[p]->len - off < UPGRADE_CHUNK ? parts[p]->len - off : UPGRADE_CHUNK;
            rc = upgrade_send(sock, 'D', parts[p]->data + off, n, NULL, 0);
        }
        total += parts[p]->len;
    }
    char end[64];
    snprintf(end, sizeof(end), "%d %llu", s->fds.n, (unsigned long long)total);
    return rc ? rc : upgrade_send_text(sock, 'E', end);
}

void upgrade_state_write(state_t *s, const upgrade_pidfile_t *pf)
{
    save_listens(s, pf);
    mount_foreach(collect_mount, s);
    save_conns(s);
    save_mounts(s);
}
