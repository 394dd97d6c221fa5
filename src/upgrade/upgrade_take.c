/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_take: the new process's side of an upgrade (see upgrade.h): it asks the old process
 * for the state, reads it (the listening sockets before its workers are created, the rest
 * after), rebuilds mounts and connections on its workers before they run, and confirms.
 */
#include "upgrade/upgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/events_feed.h"
#include "ads/ads_carry.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/loop.h"
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
#include "stream/mount.h"
#include "stream/source.h"
#include "upgrade/upgrade_proto.h"
#include "upstream/relay_handover.h"
#include "yp/yp.h"

/* What the old process sent (main thread only). */
static struct {
    int sock;
    unsigned char *state; /* what the old process sent, after the magic and version */
    size_t len;
    int *fds;
    int nfds;
    int *used; /* fds[i] taken by a worker or a connection */
} in = {-1, NULL, 0, NULL, 0, NULL};

int upgrade_inherited(void)
{
    const char *v = getenv(UPGRADE_ENV);
    if (!v)
        return -1;
    char *end;
    long fd = strtol(v, &end, 10);
    unsetenv(UPGRADE_ENV);
    if (*end || fd < 3 || fd > INT_MAX || fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0)
        return -1;
    in.sock = (int)fd;
    return (int)fd;
}

void upgrade_refuse(int fd, const char *why)
{
    upgrade_send_text(fd, 'R', why);
    close(fd);
    in.sock = -1;
}

/* The whole state from the old process into `in`. 0 or -1 with err. */
static int receive_all(char *err, size_t cap)
{
    buf_t b = BUF_INIT;
    upgrade_msg_t *m = malloc(sizeof(*m));
    int rc = -1;
    if (!m) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    for (;;) {
        int got = upgrade_recv(in.sock, m);
        if (got <= 0) {
            snprintf(err, cap, "the old process went away while sending its state");
            break;
        }
        if (m->kind == 'F') {
            int *v = realloc(in.fds, (size_t)(in.nfds + m->nfds) * sizeof(*v));
            if (!v) {
                for (int i = 0; i < m->nfds; i++)
                    close(m->fds[i]);
                continue;
            }
            in.fds = v;
            memcpy(in.fds + in.nfds, m->fds, (size_t)m->nfds * sizeof(int));
            in.nfds += m->nfds;
        } else if (m->kind == 'D') {
            buf_append(&b, m->data, m->len);
        } else if (m->kind == 'E') {
            int nfds = -1;
            unsigned long long total = 0;
            m->data[m->len < sizeof(m->data) ? m->len : sizeof(m->data) - 1] = '\0';
            if (sscanf((const char *)m->data, "%d %llu", &nfds, &total) != 2 ||
                nfds != in.nfds || total != b.len || b.error)
                snprintf(err, cap, "the state arrived incomplete");
            else
                rc = 0;
            break;
        }
    }
    explicit_bzero(m, sizeof(*m)); /* its last chunk of the state (secrets in it) */
    free(m);
    in.len = b.len;
    in.state = (unsigned char *)buf_take(&b, NULL);
    in.used = calloc((size_t)in.nfds + 1, sizeof(*in.used));
    if (rc == 0 && (!in.state || !in.used)) {
        snprintf(err, cap, "out of memory");
        rc = -1;
    }
    return rc;
}

/* The descriptor of index i for the caller to own, or -1. */
static int take_fd(uint32_t i)
{
    if (i >= (uint32_t)in.nfds || in.used[i])
        return -1;
    in.used[i] = 1;
    return in.fds[i];
}

static void restore_stats(rec_reader_t *r)
{
    server.start_time = (time_t)rec_get_i64(r);
    atomic_ullong *c[16];
    int have = upgrade_counters(c, 16);
    uint32_t n = rec_get_u32(r);
    for (uint32_t i = 0; i < n && (int)i < have; i++) {
        uint64_t v = rec_get_u64(r);
        if (!r->error)
            atomic_store(c[i], v);
    }
}

/* The old process's TLS session-ticket keys: a listener that resumes a session it began there
 * makes an abbreviated handshake here too. Without them (this config has no TLS listen socket,
 * or OpenSSL refused them) every such listener makes a full handshake: said, not fatal. */
static void take_ticket_keys(rec_reader_t *f)
{
    size_t n = 0;
    const unsigned char *keys = rec_get_bytes(f, &n);
    int rc = f->error ? -1 : tls_ticket_keys_set(keys, n);
    if (rc == 0)
        log_info("upgrade: TLS session tickets of the old process resume here");
    else if (rc < 0)
        log_warn("upgrade: the old process's TLS session-ticket keys could not be taken: "
                 "listeners reconnecting make a full handshake");
}

int upgrade_receive(int fd, upgrade_pidfile_t *pf, char *err, size_t cap)
{
    char hello[32];
    snprintf(hello, sizeof(hello), "%u", UPGRADE_VERSION);
    pf->fd = -1;
    if (upgrade_send_text(fd, 'H', hello) < 0 || receive_all(err, cap) < 0)
        return -1;
    size_t ml = sizeof(UPGRADE_MAGIC) - 1;
    if (in.len < ml + 4 || memcmp(in.state, UPGRADE_MAGIC, ml) != 0) {
        snprintf(err, cap, "the state is not a Rimecast state");
        return -1;
    }
    uint32_t version = 0;
    for (int i = 0; i < 4; i++)
        version |= (uint32_t)in.state[ml + (size_t)i] << (8 * i);
    if (FAULT(FAULT_UPGRADE_VERSION))
        version++; /* a test build: the state of a binary of another format version */
    if (version != UPGRADE_VERSION) {
        snprintf(err, cap, "the state is of format version %u, this binary reads version %u",
                 version, UPGRADE_VERSION);
        return -1;
    }
    rec_reader_t r, f;
    rec_reader_init(&r, in.state + ml + 4, in.len - ml - 4);
    uint16_t type;
    int rc;
    while ((rc = rec_next(&r, &type, &f)) > 0) {
        if (type == REC_LISTEN) {
            int lfd = take_fd(rec_get_u32(&f));
            uint32_t port = rec_get_u32(&f);
            char *bind = rec_get_str(&f);
            if (lfd < 0 || f.error || worker_inherit_listen(lfd, (int)port, bind) < 0)
                rc = -1;
            free(bind);
        } else if (type == REC_PIDFILE) {
            pf->fd = take_fd(rec_get_u32(&f));
            pf->path = rec_get_str(&f);
            pf->dev = (dev_t)rec_get_u64(&f);
            pf->ino = (ino_t)rec_get_u64(&f);
        } else if (type == REC_STATS) {
            restore_stats(&f);
        } else if (type == REC_TLS_KEYS) {
            take_ticket_keys(&f);
        } else if (type == REC_ADS_BEACONS) {
            int n = ads_beacons_load(&f);
            if (n > 0)
                log_info("upgrade: %d ad tracking URL%s to try again taken over", n,
                         n == 1 ? "" : "s");
            else if (n < 0)
                log_warn("upgrade: the old process's ad tracking retries do not read: "
                         "those not read are not sent");
        }
        if (rc < 0)
            break;
    }
    if (rc < 0) {
        snprintf(err, cap, "the state's listening sockets do not read");
        return -1;
    }
    return 0;
}

/* ---- the old process's local feeds ---- */

/* The feed tokens the old process sent, each good once, until `until` (loop clock, ms). */
typedef struct feed_token {
    char *mount;
    char hex[UPGRADE_TOKEN_HEX];
} feed_token_t;

static pthread_mutex_t tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static feed_token_t *tokens;
static int ntokens;
static uint64_t tokens_until;

static void forget_tokens_locked(void)
{
    for (int i = 0; i < ntokens; i++)
        free(tokens[i].mount);
    if (tokens)
        explicit_bzero(tokens, (size_t)ntokens * sizeof(*tokens));
    free(tokens);
    tokens = NULL;
    ntokens = 0;
}

static int load_feed_token(rec_reader_t *f)
{
    char *mount = rec_get_str(f), *hex = rec_get_str(f);
    feed_token_t *v = NULL;
    int ok = mount && hex && !f->error && strlen(hex) == UPGRADE_TOKEN_HEX;
    pthread_mutex_lock(&tokens_lock);
    if (ok && (v = realloc(tokens, (size_t)(ntokens + 1) * sizeof(*v)))) {
        tokens = v;
        tokens[ntokens].mount = mount;
        memcpy(tokens[ntokens++].hex, hex, UPGRADE_TOKEN_HEX);
        tokens_until = loop_now_ms() + (uint64_t)server_config()->upgrade_drain * 1000u;
        mount = NULL;
    }
    pthread_mutex_unlock(&tokens_lock);
    free(mount);
    free(hex);
    return ok && v ? 0 : -1;
}

/* 1 when a[0..n) equals b[0..n), in a time that does not depend on where they differ. */
static int same_secret(const char *a, const char *b, size_t n)
{
    volatile unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

int upgrade_feed_claim(const char *mount, const char *value, size_t len)
{
    int found = -1;
    pthread_mutex_lock(&tokens_lock);
    if (ntokens && loop_now_ms() > tokens_until)
        forget_tokens_locked(); /* too late: none is good any more */
    for (int i = 0; i < ntokens && len == UPGRADE_TOKEN_HEX; i++)
        if (same_secret(tokens[i].hex, value, len) && strcmp(tokens[i].mount, mount) == 0)
            found = i;
    if (found >= 0) { /* used up */
        free(tokens[found].mount);
        tokens[found] = tokens[--ntokens];
        explicit_bzero(&tokens[ntokens], sizeof(*tokens));
        if (!ntokens)
            forget_tokens_locked();
    }
    pthread_mutex_unlock(&tokens_lock);
    return found >= 0;
}

/* ---- rebuilding ---- */

typedef struct restored {
    mount_t *m;
    uint64_t queue_start;
} restored_t;

/* What is rebuilt so far (main thread only). */
static struct {
    restored_t *v;
    int n;
    handover_metas_t t;
    uint64_t max_id;
} rs;

static worker_t *worker_of(int old_id)
{
    int n = atomic_load(&server.nworkers);
    return server.workers[(old_id < 0 ? 0 : old_id) % (n > 0 ? n : 1)];
}

static mount_t *find_restored(const char *name, void *arg)
{
    for (int i = 0; i < rs.n; i++)
        if (strcmp(rs.v[i].m->name, name) == 0)
            return rs.v[i].m;
    return NULL;
}

/* A connection's record: its client rebuilt on its worker, its role restored by `role`. */
static int restore_conn(rec_reader_t *f, int type)
{
    int fd = take_fd(rec_get_u32(f));
    worker_t *w = worker_of((int)rec_get_u32(f));
    if (fd < 0 || f->error)
        return -1;
    conn_t *c;
    int rc = 0;
    if (type == REC_RELAY) {
        if (!(c = relay_adopt(w, fd, f, find_restored, NULL)))
            return -1;
    } else {
        client_t *cl = client_restore(w, fd, f, 0, NULL);
        if (!cl)
            return -1;
        c = &cl->conn;
        rc = type == REC_SOURCE     ? source_adopt(c, f, find_restored, NULL)
             : type == REC_FEED     ? events_feed_adopt(c, f)
             : type == REC_READING  ? client_reading_adopt(c, f)
             : type == REC_REPLY    ? reply_adopt(c, f)
             : type == REC_HLS_CONN ? hls_playlists_carry_adopt(c, f)
                                    : handover_listener_restore(c, f, &rs.t, find_restored, NULL);
    }
    if (c->id > rs.max_id)
        rs.max_id = c->id;
    if (rc < 0 || conn_watch(c) < 0) {
        conn_close(c);
        return -1;
    }
    worker_request_pass(w);
    return 0;
}

static int restore_mount(rec_reader_t *f, const char **why)
{
    restored_t *v = realloc(rs.v, (size_t)(rs.n + 1) * sizeof(*v));
    if (!v)
        return -1;
    rs.v = v;
    mount_t *m = handover_mount_restore(f, &rs.t, worker_of, &v[rs.n].queue_start, why);
    if (!m)
        return -1;
    /* a relay's mount carried without its connection still names it: no new one may get that
     * id before the relay starts again on the mount */
    if (m->source_conn_id > rs.max_id)
        rs.max_id = m->source_conn_id;
    v[rs.n++].m = m;
    return 0;
}

/* The HLS windows following a carried mount. */
static int restore_hls_windows(rec_reader_t *f)
{
    char *name = rec_get_str(f);
    mount_t *m = name ? find_restored(name, NULL) : NULL;
    free(name);
    return m ? hls_carry_restore(m, f, &rs.t) : -1;
}

/* The HLS sessions of a carried mount. */
static int restore_hls(rec_reader_t *f)
{
    char *name = rec_get_str(f);
    mount_t *m = name ? find_restored(name, NULL) : NULL;
    free(name);
    return m ? hls_sessions_restore(m, f, &rs.max_id) : -1;
}

int upgrade_restore(char *err, size_t cap)
{
    size_t ml = sizeof(UPGRADE_MAGIC) - 1;
    rec_reader_t r, f;
    rec_reader_init(&r, in.state + ml + 4, in.len - ml - 4);
    uint16_t type;
    int rc, sources = 0, listeners = 0;
    const char *why = "unreadable record";
    while ((rc = rec_next(&r, &type, &f)) > 0) {
        if (type == REC_META)
            rc = handover_meta_load(&rs.t, &f) < 0 ? -1 : 1;
        else if (type == REC_MOUNT)
            rc = restore_mount(&f, &why) < 0 ? -1 : 1;
        else if ((type == REC_SOURCE || type == REC_RELAY) &&
                 (rc = restore_conn(&f, type) < 0 ? -1 : 1) > 0)
            sources++;
        else if ((type == REC_LISTENER || type == REC_LISTENER_AD) &&
                 (rc = restore_conn(&f, type) < 0 ? -1 : 1) > 0)
            listeners++;
        else if (type == REC_HLS_WINDOW)
            rc = restore_hls_windows(&f) < 0 ? -1 : 1;
        else if (type == REC_HLS)
            rc = restore_hls(&f) < 0 ? -1 : 1;
        else if (type == REC_FEED || type == REC_READING || type == REC_REPLY ||
                 type == REC_HLS_CONN)
            rc = restore_conn(&f, type) < 0 ? -1 : 1;
        else if (type == REC_EVENTS)
            rc = events_restore(&f) < 0 ? -1 : 1;
        else if (type == REC_FEED_TOKEN)
            rc = load_feed_token(&f) < 0 ? -1 : 1;
        else if (type == REC_YP)
            rc = yp_restore(&f) < 0 ? -1 : 1;
        else if (type == REC_HISTORY && history_global() &&
                 history_restore(history_global(), &f) < 0)
            rc = -1;
        if (rc < 0)
            break;
    }
    for (int i = 0; i < rs.n; i++) {
        handover_mount_settle(rs.v[i].m, rs.v[i].queue_start);
        /* no source came with it: a relay's that was reconnecting, started again on it */
        mount_t *m = rs.v[i].m;
        if (rc >= 0 && !(m->source_worker && worker_find_conn(m->source_worker, m->source_conn_id)) &&
            relay_hold_mount(m) < 0) {
            why = "out of memory";
            rc = -1;
        }
        mount_unref(rs.v[i].m);
    }
    free(rs.v);
    rs.v = NULL;
    handover_metas_free(&rs.t, 1);
    worker_conn_ids_above(rs.max_id);
    for (int i = 0; i < in.nfds; i++)
        if (!in.used[i])
            close(in.fds[i]);
    free(in.fds);
    free(in.used);
    if (in.state)
        explicit_bzero(in.state, in.len); /* the feed tokens were there */
    free(in.state);
    in.fds = in.used = NULL;
    in.state = NULL;
    if (rc < 0) {
        snprintf(err, cap, "restoring the state: %s", why);
        return -1;
    }
    log_info("upgrade: took over %d source%s and %d listener%s", sources,
             sources == 1 ? "" : "s", listeners, listeners == 1 ? "" : "s");
    return 0;
}

int upgrade_confirm(char *err, size_t cap)
{
    if (FAULT(FAULT_UPGRADE_TAKEOVER))
        _exit(3); /* a test build: dies holding every descriptor, before it confirms */
    int rc = upgrade_send_text(in.sock, 'K', "");
    upgrade_msg_t *m = rc == 0 ? malloc(sizeof(*m)) : NULL;
    if (m) {
        struct pollfd p = {in.sock, POLLIN, 0};
        /* the go-ahead, or the old process's end (it exits right after): either way it no
         * longer touches what it handed over */
        if (poll(&p, 1, UPGRADE_GO_MS) <= 0) {
            snprintf(err, cap, "no go-ahead from the old process");
            rc = -1;
        } else if (upgrade_recv(in.sock, m) > 0 && m->kind != 'G') {
            snprintf(err, cap, "the old process did not give the go-ahead");
            rc = -1;
        }
    } else {
        snprintf(err, cap, "cannot confirm to the old process");
        rc = -1;
    }
    free(m);
    close(in.sock);
    in.sock = -1;
    return rc;
}
