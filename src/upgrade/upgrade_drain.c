/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_drain: the TLS listeners the old process keeps after an upgrade (<upgrade-drain>;
 * see upgrade.h upgrade_drain and docs/UPGRADE.md): their mounts' local feeds from the new
 * process (a token each, sent in the state), everything else let go once the new process took
 * over, and the wait until the last of them left or the drain time is over. The hand-over's
 * steps are upgrade.c's, the state's writing upgrade_save.c's.
 */
#include "upgrade/upgrade.h"

#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/record.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/handover.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "upgrade/upgrade_internal.h"
#include "upgrade/upgrade_proto.h"
#include "upstream/relay_handover.h"

/* ---- the local feeds of the TLS listeners kept ---- */

/* The mounts whose TLS listeners stay here, each fed from the new process by a plain listener
 * of its own there (upstream/relay_handover.h relay_start_feed) that proves itself with a one-time
 * token sent in the state; and where the new process listens in plain HTTP. Main thread
 * (workers parked) until the feeds start. */
typedef struct feed {
    mount_t *m;
    char token[UPGRADE_TOKEN_HEX + 1];
} feed_t;

static feed_t *feeds;
static int nfeeds;
static char feed_host[64];
static int feed_port = -1;

static feed_t *feed_of(const mount_t *m)
{
    for (int i = 0; i < nfeeds; i++)
        if (feeds[i].m == m)
            return &feeds[i];
    return NULL;
}

void upgrade_feeds_prepare(void)
{
    feed_port = server_config()->upgrade_drain > 0 ?
                upgrade_plain_listen(server_config(), 1, feed_host, sizeof(feed_host)) : -1;
}

/* m gets a feed and its token (once). */
void upgrade_feed_add(mount_t *m)
{
    unsigned char raw[UPGRADE_TOKEN_BYTES];
    feed_t *v;
    if (feed_port < 0)
        return;
    if (feed_of(m) || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
        !(v = realloc(feeds, (size_t)(nfeeds + 1) * sizeof(*v))))
        return; /* no feed: its listeners are closed at the hand-over, with a log line */
    feeds = v;
    feeds[nfeeds].m = mount_ref(m);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(feeds[nfeeds].token + 2 * i, 3, "%02x", raw[i]);
    nfeeds++;
}

void upgrade_feeds_save(buf_t *out)
{
    for (int i = 0; i < nfeeds; i++) {
        size_t at = rec_begin(out, REC_FEED_TOKEN);
        rec_str(out, feeds[i].m->name);
        rec_str(out, feeds[i].token);
        rec_end(out, at);
    }
}

void upgrade_feeds_free(void)
{
    for (int i = 0; i < nfeeds; i++)
        mount_unref(feeds[i].m);
    free(feeds);
    feeds = NULL;
    nfeeds = 0;
}

static void close_mount_msg(worker_t *w, void *arg)
{
    mount_t *m = arg;
    conn_t *c, *tmp;
    list_foreach_safe(c, tmp, &w->conns, conn_t, link) {
        listener_t *l = c->draining ? listener_of(c) : NULL;
        if (l && l->mount == m)
            conn_close(c);
    }
    mount_unref(m);
}

/* The TLS listeners of m here are closed, with one line saying why. Any thread. */
static void close_mount_listeners(mount_t *m, const char *why)
{
    char esc[512];
    log_warn("upgrade: closing the TLS listeners of %s: %s",
             escape_log_utf8(esc, sizeof(esc), m->name, strlen(m->name)), why);
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++)
        if (server.workers[i] && worker_post(server.workers[i], close_mount_msg, mount_ref(m)) < 0)
            mount_unref(m);
}

static int mount_listed(mount_t *const *v, int n, const mount_t *m)
{
    for (int i = 0; i < n; i++)
        if (v[i] == m)
            return 1;
    return 0;
}

/* Each mount's feed starts (workers parked: they connect once they run). */
static void feeds_start(void)
{
    char header[sizeof("X-Rimecast-Feed: ") + UPGRADE_TOKEN_HEX];
    for (int i = 0; i < nfeeds; i++) {
        snprintf(header, sizeof(header), "X-Rimecast-Feed: %s", feeds[i].token);
        if (relay_start_feed(feeds[i].m, feed_host, feed_port, header, close_mount_listeners) < 0)
            close_mount_listeners(feeds[i].m, "cannot start its feed from the new process");
        explicit_bzero(feeds[i].token, sizeof(feeds[i].token));
    }
    explicit_bzero(header, sizeof(header));
}

/* ---- the drain ---- */

int upgrade_tls_listeners(void)
{
    int n = 0, slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++) {
        worker_t *w = server.workers[i];
        conn_t *c;
        if (w && !w->gone)
            list_foreach(c, &w->conns, conn_t, link)
                n += c->tls && listener_of(c);
    }
    return n;
}

/* With the workers parked, once the new process took over and before it goes on: what it took
 * is forgotten (nothing of it ends here), the listening sockets (its own now) closed here, the
 * TLS listeners kept and every other connection closed as an exit would close it (nothing
 * ends, nothing is logged), the relays forgotten (the new process pulls them), the local feeds
 * of the TLS listeners' mounts started, and the TLS listeners of a mount with no feed closed
 * (a line says why). */
void upgrade_keep_tls_listeners(state_t *s)
{
    mount_t **lost = NULL; /* mounts of TLS listeners with no feed */
    int nlost = 0;
    for (int i = 0; i < s->nc; i++)
        handover_forget(s->cv[i]);
    int slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++) {
        worker_t *w = server.workers[i];
        conn_t *c, *tmp;
        if (!w || w->gone)
            continue;
        for (int j = 0; j < w->nlisten; j++) {
            worker_listen_t *ls = w->listens[j];
            if (ls && ls->fd >= 0) {
                loop_del(w->epfd, ls->fd);
                close(ls->fd);
                ls->fd = -1;
            }
        }
        list_foreach_safe(c, tmp, &w->conns, conn_t, link) {
            listener_t *l = c->tls ? listener_of(c) : NULL;
            mount_t **v;
            if (!l) {
                handover_forget(c); /* closed without a word, as the exit would */
                continue;
            }
            conn_drain_keep(c);
            /* a TLS listener of a mount with no feed would hear nothing: closed below */
            if (feed_of(l->mount) || mount_listed(lost, nlost, l->mount))
                continue;
            if ((v = realloc(lost, (size_t)(nlost + 1) * sizeof(*v)))) {
                lost = v;
                lost[nlost++] = l->mount;
            } else {
                conn_close(c); /* without memory: closed without the line */
            }
        }
    }
    relay_forget_all();
    /* the sources here were forgotten with their slots: the feeds need them */
    atomic_store(&server.stats.sources, 0);
    feeds_start();
    for (int k = 0; k < nlost; k++)
        close_mount_listeners(lost[k], feed_port < 0 ? "no plain HTTP listening socket on a "
                              "wildcard or loopback address to feed them from the new process"
                              : "their mount did not go to the new process");
    free(lost);
    upgrade_feeds_free();
}

static void close_drained(worker_t *w, void *arg)
{
    conn_t *c, *tmp;
    (void)arg;
    list_foreach_safe(c, tmp, &w->conns, conn_t, link)
        if (c->draining)
            conn_close(c);
}

void upgrade_drain(int sfd)
{
    int secs = server_config()->upgrade_drain, stop = 0;
    uint64_t until = loop_now_ms() + (uint64_t)secs * 1000;
    upgrade_unpark_workers();
    while (conn_drain_left() > 0 && !stop && loop_now_ms() < until) {
        struct pollfd p = {sfd, POLLIN, 0};
        struct signalfd_siginfo si;
        if (poll(&p, 1, 200) > 0 && read(sfd, &si, sizeof(si)) == sizeof(si)) {
            stop = si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT;
            if (!stop)
                log_warn("upgrade: signal %d ignored: this process handed over and only serves "
                         "its TLS listeners until they leave", (int)si.ssi_signo);
        }
    }
    int left = conn_drain_left();
    if (left > 0) {
        log_warn("upgrade: %s: closing %d TLS listener%s", stop ? "signal to stop" :
                 "drain time over", left, left == 1 ? "" : "s");
        int slots = atomic_load(&server.nslots);
        for (int i = 0; i < slots; i++)
            if (server.workers[i])
                worker_post(server.workers[i], close_drained, NULL);
        for (uint64_t end = loop_now_ms() + 5000; conn_drain_left() > 0 && loop_now_ms() < end;)
            poll(NULL, 0, 20);
    } else {
        log_info("upgrade: the last TLS listener left: exiting");
    }
}
