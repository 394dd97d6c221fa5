/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade: the old process's side of an upgrade (see upgrade.h and docs/UPGRADE.md): it starts
 * the installed binary, stops its workers at a safe point once the new process asks, writes
 * and sends the state (upgrade_proto.h), and exits when the new process confirms, or resumes
 * its workers and serves on when anything fails. The new process's side is upgrade_take.c.
 */
#include "upgrade/upgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "admin/events_feed.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/record.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/events.h"
#include "stream/handover.h"
#include "stream/hls.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stats/history.h"
#include "stream/source.h"
#include "upgrade/upgrade_proto.h"
#include "upstream/relay_handover.h"
#include "yp/yp.h"

#define UPGRADE_START_MS 30000   /* the new process loads its config and asks */
#define UPGRADE_PARK_MS 5000     /* every worker stops at a safe point */
#define UPGRADE_RESTORE_MS 30000 /* the new process rebuilds the state */

extern char **environ;

/* ---- the binary and its arguments ---- */

static char *installed_path;
static char **saved_argv;

/* name searched in $PATH as a shell would; a malloc'd real path, or NULL. */
static char *resolve_binary(const char *name)
{
    if (strchr(name, '/'))
        return realpath(name, NULL);
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t n = strcspn(p, ":");
        char cand[PATH_MAX];
        if (n && snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, p, name) < (int)sizeof(cand) &&
            access(cand, X_OK) == 0)
            return realpath(cand, NULL);
        p += n + (p[n] == ':');
    }
    return NULL;
}

void upgrade_remember(int argc, char **argv)
{
    installed_path = argc > 0 ? resolve_binary(argv[0]) : NULL;
    saved_argv = argv; /* main's: valid for the life of the process */
}


/* ---- old side: stopping the workers at a safe point ---- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int parked;
    unsigned gen;     /* this hand-over's; a stale message (a park that timed out) goes on */
    int release;
} park = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 1};

/* On a worker: waits here, touching nothing, until the main thread releases it. */
static void park_msg(worker_t *w, void *arg)
{
    pthread_mutex_lock(&park.lock);
    if ((unsigned)(uintptr_t)arg == park.gen && !park.release) {
        park.parked++;
        pthread_cond_broadcast(&park.cond);
        while (!park.release)
            pthread_cond_wait(&park.cond, &park.lock);
        park.parked--;
    }
    pthread_mutex_unlock(&park.lock);
}

static void unpark_workers(void)
{
    pthread_mutex_lock(&park.lock);
    park.release = 1;
    pthread_cond_broadcast(&park.cond);
    pthread_mutex_unlock(&park.lock);
}

/* Every live worker stopped in park_msg: 0, or -ETIMEDOUT (then they are released). */
static int park_workers(void)
{
    pthread_mutex_lock(&park.lock);
    park.gen++;
    park.release = 0;
    park.parked = 0;
    pthread_mutex_unlock(&park.lock);
    int want = 0, slots = atomic_load(&server.nslots);
    for (int i = 0; i < slots; i++)
        if (server.workers[i] &&
            worker_post(server.workers[i], park_msg, (void *)(uintptr_t)park.gen) == 0)
            want++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += UPGRADE_PARK_MS / 1000;
    pthread_mutex_lock(&park.lock);
    int rc = 0;
    while (park.parked < want && rc == 0)
        rc = pthread_cond_timedwait(&park.cond, &park.lock, &until);
    int ok = park.parked >= want;
    pthread_mutex_unlock(&park.lock);
    if (!ok)
        unpark_workers();
    return ok ? 0 : -ETIMEDOUT;
}

/* ---- old side: the state ---- */

typedef struct fdlist {
    int *v;
    int n, cap;
} fdlist_t;

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

/* ---- old side: the local feeds of the TLS listeners kept ---- */

/* The mounts whose TLS listeners stay here, each fed from the new process by a plain listener
 * of its own there (upstream/relay.h relay_start_feed) that proves itself with a one-time
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

/* m gets a feed and its token (once). */
static void feed_add(mount_t *m)
{
    unsigned char raw[UPGRADE_TOKEN_BYTES];
    feed_t *v;
    if (feed_of(m) || getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) ||
        !(v = realloc(feeds, (size_t)(nfeeds + 1) * sizeof(*v))))
        return; /* no feed: its listeners are closed at the hand-over, with a log line */
    feeds = v;
    feeds[nfeeds].m = mount_ref(m);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(feeds[nfeeds].token + 2 * i, 3, "%02x", raw[i]);
    nfeeds++;
}

static void feeds_free(void)
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

/* A mount being carried, and the oldest block one of its carried listeners is on. */
typedef struct carried {
    mount_t *m;
    const block_t *from;
} carried_t;

typedef struct state {
    buf_t head, metas, mounts, conns;
    handover_metas_t t;
    fdlist_t fds;
    carried_t *mv;
    int nm;
    int sources, listeners, others, left; /* connections carried, and those that stay */
    int tls;                              /* of those that stay: TLS ones */
    conn_t **cv;                          /* the connections carried: forgotten once taken */
    int nc, ccap;
} state_t;

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
            if (k && c->tls && feed_port >= 0)
                feed_add(l->mount); /* a TLS listener stays: fed from the new process */
            if (k && !c->tls && save_conn(s, c, REC_LISTENER, save_listener_role) == 0) {
                if (!k->from || l->blk->offset < k->from->offset)
                    k->from = l->blk;
                s->listeners++;
            } else if (!l && !c->tls && (save_conn(s, c, REC_FEED, save_feed_role) == 0 ||
                                         save_conn(s, c, REC_READING, save_reading_role) == 0 ||
                                         save_conn(s, c, REC_REPLY, save_reply_role) == 0)) {
                s->others++;
            }
        }
    }
    s->left = all - s->listeners - s->sources - s->others;
}

static void save_mounts(state_t *s)
{
    for (int i = 0; i < s->nm; i++) {
        size_t at = rec_begin(&s->mounts, REC_MOUNT);
        handover_mount_save(s->mv[i].m, s->mv[i].from, &s->t, &s->mounts);
        rec_end(&s->mounts, at);
        at = rec_begin(&s->mounts, REC_HLS);
        rec_str(&s->mounts, s->mv[i].m->name);
        hls_sessions_save(s->mv[i].m->name, &s->mounts);
        rec_end(&s->mounts, at);
    }
    for (int i = 0; i < nfeeds; i++) {
        size_t at = rec_begin(&s->mounts, REC_FEED_TOKEN);
        rec_str(&s->mounts, feeds[i].m->name);
        rec_str(&s->mounts, feeds[i].token);
        rec_end(&s->mounts, at);
    }
    yp_save(&s->mounts, REC_YP); /* nothing listed from here until the hand-over ends */
    for (size_t i = 0; i < s->t.n; i++) {
        size_t at = rec_begin(&s->metas, REC_META);
        handover_meta_save(&s->t, i, &s->metas);
        rec_end(&s->metas, at);
    }
}

static void state_free(state_t *s)
{
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

/* Sends the descriptors, then the bytes of the parts in order, then the end. 0 or -errno. */
static int send_state(int sock, state_t *s)
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

/* ---- old side: the steps ---- */

typedef struct run {
    int sock, sfd;
    pid_t pid;
    int *stop;
    char why[512];
} run_t;

/* Reads a signal that came while waiting (sfd is readable; one at a time: it blocks):
 * SIGUSR2 and SIGHUP are ignored (logged), SIGTERM and SIGINT abandon the upgrade. 0, or
 * -ECANCELED. */
static int drain_signals(run_t *r)
{
    struct signalfd_siginfo si;
    if (read(r->sfd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGUSR2) {
            log_warn("upgrade: SIGUSR2 ignored: an upgrade is already running");
        } else if (si.ssi_signo == SIGHUP) {
            log_warn("upgrade: SIGHUP ignored while an upgrade is running");
        } else {
            *r->stop = 1;
            snprintf(r->why, sizeof(r->why), "signal %d: shutting down instead",
                     (int)si.ssi_signo);
            return -ECANCELED;
        }
    }
    return 0;
}

/* Waits up to ms for a message from the new process, reading signals meanwhile. 1 with *m,
 * or 0 with why set (timeout, exit, signal). */
static int wait_msg(run_t *r, upgrade_msg_t *m, int ms, const char *step)
{
    uint64_t until = loop_now_ms() + (uint64_t)ms;
    for (;;) {
        uint64_t now = loop_now_ms();
        if (now >= until) {
            snprintf(r->why, sizeof(r->why), "the new process did not answer within %d s "
                     "(%s)", ms / 1000, step);
            return 0;
        }
        struct pollfd p[2] = {{r->sock, POLLIN, 0}, {r->sfd, POLLIN, 0}};
        int n = poll(p, 2, (int)(until - now));
        if (n < 0 && errno != EINTR)
            return 0;
        if (n > 0 && (p[1].revents & POLLIN) && drain_signals(r) < 0)
            return 0;
        if (n > 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            int rc = upgrade_recv(r->sock, m);
            for (int i = 0; rc > 0 && i < m->nfds; i++)
                close(m->fds[i]); /* the new process sends none */
            if (rc > 0)
                return 1;
            snprintf(r->why, sizeof(r->why), "the new process went away (%s)", step);
            return 0;
        }
    }
}

/* The new process's answer of kind `want`: 1; else 0 with why set (its own words for 'R'
 * and 'X'). */
static int expect(run_t *r, char want, int ms, const char *step)
{
    upgrade_msg_t *m = malloc(sizeof(*m));
    int ok = m && wait_msg(r, m, ms, step);
    if (ok && m->kind != want) {
        int text = m->kind == 'R' || m->kind == 'X';
        snprintf(r->why, sizeof(r->why), "%s%.*s", text ? "the new process says: " :
                 "unexpected message from the new process",
                 text ? (int)(m->len > 400 ? 400 : m->len) : 0, (const char *)m->data);
        ok = 0;
    }
    if (!m)
        snprintf(r->why, sizeof(r->why), "out of memory");
    free(m);
    return ok;
}

/* In the child before exec: of our descriptors only `keep` goes on (besides 0-2). Libraries
 * open some without O_CLOEXEC (libcurl's wake-up socket pair), and each would otherwise stay
 * open in every new process, one more set at each upgrade. */
static void keep_only(int keep)
{
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
        long max = sysconf(_SC_OPEN_MAX);
        for (int fd = 3; fd < (max > 0 ? max : 65536); fd++)
            if (fd != keep)
                fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    fcntl(keep, F_SETFD, 0);
}

/* Starts the installed binary with our arguments and the socket's number in the
 * environment. The child's pid, or -errno. */
static pid_t spawn_new(int child_end)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof(*env));
    char var[64];
    if (!env)
        return -ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], UPGRADE_ENV "=", sizeof(UPGRADE_ENV)) != 0)
            env[k++] = environ[i];
    snprintf(var, sizeof(var), "%s=%d", UPGRADE_ENV, child_end);
    env[k++] = var;
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        keep_only(child_end);
        execve(installed_path, saved_argv, env);
        _exit(127);
    }
    int err = errno;
    free(env);
    return pid < 0 ? -err : pid;
}

/* The new process reaped: one that went away is given a moment to finish exiting (its
 * status then says why), one that still runs is killed. */
static void end_child(run_t *r)
{
    int status = 0;
    pid_t got = 0;
    if (r->pid <= 0)
        return;
    for (int i = 0; i < 200 && strstr(r->why, "went away") && got == 0; i++) {
        struct timespec ts = {0, 10 * 1000000};
        if ((got = waitpid(r->pid, &status, WNOHANG)) == 0)
            nanosleep(&ts, NULL);
    }
    if (got == 0 && (got = waitpid(r->pid, &status, WNOHANG)) == 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, &status, 0);
    } else if (got > 0) {
        size_t len = strlen(r->why);
        if (WIFEXITED(status))
            snprintf(r->why + len, sizeof(r->why) - len, ": it exited with status %d",
                     WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
            snprintf(r->why + len, sizeof(r->why) - len, ": it was killed by signal %d",
                     WTERMSIG(status));
    }
    r->pid = -1;
}

/* ---- old side: the drain ---- */

static int tls_listeners(void)
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
static void keep_tls_listeners(state_t *s)
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
    feeds_free();
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
    unpark_workers();
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

/* With the workers parked: the state written and sent, the new process's confirmation
 * awaited. 1 when it took over. */
static int hand_over(run_t *r, const upgrade_pidfile_t *pf)
{
    state_t s;
    memset(&s, 0, sizeof(s));
    feed_port = server_config()->upgrade_drain > 0 ?
                upgrade_plain_listen(server_config(), 1, feed_host, sizeof(feed_host)) : -1;
    save_listens(&s, pf);
    mount_foreach(collect_mount, &s);
    save_conns(&s);
    save_mounts(&s);
    int ok = 0;
    if (s.head.error || s.metas.error || s.mounts.error || s.conns.error) {
        snprintf(r->why, sizeof(r->why), "out of memory writing the state");
    } else {
        int rc = send_state(r->sock, &s);
        if (rc < 0)
            snprintf(r->why, sizeof(r->why), "sending the state: %s", strerror(-rc));
        else
            ok = expect(r, 'K', UPGRADE_RESTORE_MS, "taking the state");
    }
    if (ok)
        yp_abandon(); /* the new process touches the listings on: no "remove" from here */
    else
        yp_resume();
    if (ok) {
        /* TLS listeners stay here, served until they leave (not closed) */
        int drain = server_config()->upgrade_drain, keep = drain ? tls_listeners() : 0;
        log_info("upgrade: handed over to PID %d (%d source%s, %d listener%s, %d other "
                 "connection%s; %d closed: not carried)", (int)r->pid, s.sources,
                 s.sources == 1 ? "" : "s", s.listeners, s.listeners == 1 ? "" : "s",
                 s.others, s.others == 1 ? "" : "s", s.left - keep);
        source_end_recordings(); /* before the new process appends to the same files */
        if (keep) {
            keep_tls_listeners(&s);
            log_info("upgrade: serving %d TLS listener%s until %s, for at most %d s", keep,
                     keep == 1 ? "" : "s", keep == 1 ? "it leaves" : "they leave", drain);
            ok = 2;
        } else if (s.tls) {
            log_warn("upgrade: %d TLS connection%s closed: TLS state stays in the old process, "
                     "which exits", s.tls, s.tls == 1 ? "" : "s");
        }
        upgrade_send_text(r->sock, 'G', "");
    }
    feeds_free(); /* started, or this process serves on */
    state_free(&s);
    return ok;
}

int upgrade_run(int sfd, const upgrade_pidfile_t *pidfile, int *stop)
{
    run_t r = {.sock = -1, .sfd = sfd, .pid = -1, .stop = stop};
    int sv[2] = {-1, -1}, handed = 0;
    log_info("upgrade: SIGUSR2: starting %s", installed_path ? installed_path : "(unknown)");
    if (!installed_path) {
        snprintf(r.why, sizeof(r.why), "the path this binary was started from is unknown");
    } else if (server_config()->chroot) {
        snprintf(r.why, sizeof(r.why), "not possible with <chroot>");
    } else if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(r.why, sizeof(r.why), "socketpair: %s", strerror(errno));
    } else if ((r.pid = spawn_new(sv[1])) < 0) {
        snprintf(r.why, sizeof(r.why), "fork: %s", strerror(-r.pid));
    } else {
        close(sv[1]);
        sv[1] = -1;
        r.sock = sv[0];
        struct timeval tv = {UPGRADE_RESTORE_MS / 1000, 0};
        setsockopt(r.sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        if (expect(&r, 'H', UPGRADE_START_MS, "starting")) {
            if (park_workers() < 0) {
                snprintf(r.why, sizeof(r.why), "a worker did not stop within %d s",
                         UPGRADE_PARK_MS / 1000);
            } else {
                handed = hand_over(&r, pidfile);
                if (!handed)
                    unpark_workers();
            }
        }
    }
    if (!handed) {
        end_child(&r);
        log_error("upgrade: failed: %s", r.why);
    }
    for (int i = 0; i < 2; i++)
        if (sv[i] >= 0)
            close(sv[i]);
    return handed;
}

