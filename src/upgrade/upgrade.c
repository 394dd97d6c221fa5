/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade: the old process's side of an upgrade (see upgrade.h and docs/UPGRADE.md): it starts
 * the installed binary, stops its workers at a safe point once the new process asks, writes
 * and sends the state (upgrade_proto.h), and exits when the new process confirms, or resumes
 * its workers and serves on when anything fails. The state is written in upgrade_save.c, the
 * TLS listeners kept after the hand-over are upgrade_drain.c's (upgrade_internal.h: what the
 * three share). The new process's side is upgrade_take.c.
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ads/ads_carry.h"
#include "conf/config.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/source.h"
#include "upgrade/upgrade_internal.h"
#include "upgrade/upgrade_proto.h"
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

void upgrade_unpark_workers(void)
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
        upgrade_unpark_workers();
    return ok ? 0 : -ETIMEDOUT;
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

/* With the workers parked: the state written and sent, the new process's confirmation
 * awaited. 1 when it took over. */
static int hand_over(run_t *r, const upgrade_pidfile_t *pf)
{
    state_t s;
    memset(&s, 0, sizeof(s));
    upgrade_feeds_prepare();
    upgrade_state_write(&s, pf);
    int ok = 0;
    if (s.head.error || s.metas.error || s.mounts.error || s.conns.error) {
        snprintf(r->why, sizeof(r->why), "out of memory writing the state");
    } else {
        int rc = upgrade_state_send(r->sock, &s);
        if (rc < 0)
            snprintf(r->why, sizeof(r->why), "sending the state: %s", strerror(-rc));
        else
            ok = expect(r, 'K', UPGRADE_RESTORE_MS, "taking the state");
    }
    if (ok) {
        yp_abandon(); /* the new process touches the listings on: no "remove" from here */
        ads_beacons_forget(); /* the tracking retries are the new process's now */
    } else {
        yp_resume();
    }
    if (ok) {
        /* TLS listeners stay here, served until they leave (not closed) */
        int drain = server_config()->upgrade_drain, keep = drain ? upgrade_tls_listeners() : 0;
        log_info("upgrade: handed over to PID %d (%d source%s, %d listener%s, %d other "
                 "connection%s; %d closed: not carried)", (int)r->pid, s.sources,
                 s.sources == 1 ? "" : "s", s.listeners, s.listeners == 1 ? "" : "s",
                 s.others, s.others == 1 ? "" : "s", s.left - keep);
        source_end_recordings(); /* before the new process appends to the same files */
        if (keep) {
            upgrade_keep_tls_listeners(&s);
            log_info("upgrade: serving %d TLS listener%s until %s, for at most %d s", keep,
                     keep == 1 ? "" : "s", keep == 1 ? "it leaves" : "they leave", drain);
            ok = 2;
        } else if (s.tls) {
            log_warn("upgrade: %d TLS connection%s closed: TLS state stays in the old process, "
                     "which exits", s.tls, s.tls == 1 ? "" : "s");
        }
        upgrade_send_text(r->sock, 'G', "");
    }
    upgrade_feeds_free(); /* started, or this process serves on */
    upgrade_state_free(&s);
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
    } else if (access(installed_path, X_OK) < 0) {
        /* said by name here: once forked, a binary that is not there is only an exit status */
        snprintf(r.why, sizeof(r.why), "the new binary %s cannot be run: %s", installed_path,
                 strerror(errno));
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
                    upgrade_unpark_workers();
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

