/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spawn: the command thread (see spawn.h). Its loop: poll the wake eventfd and the output pipes
 * of running commands (at most SPAWN_TICK_MS), start queued requests, log complete output
 * lines, reap exited commands with waitpid(WNOHANG) and kill those past their deadline.
 * A command is forgotten once it has exited and its pipe is closed; a command that exits while
 * a child of its own keeps the pipe open is followed until its deadline, then its group is
 * killed too.
 */
#include "core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/loop.h"
#include "core/list.h"
#include "core/log.h"

#define SPAWN_TICK_MS 250
#define SPAWN_LINE 512   /* longer output lines are logged in pieces */
#define SPAWN_MAX_FDS 256 /* running commands followed at once (more wait in the queue) */

extern char **environ;

typedef struct spawn_req {
    char *path, *arg;
    char what[600]; /* escaped */
    int timeout_s;
    list_t link; /* in queue */
} spawn_req_t;

typedef struct child {
    pid_t pid;
    int out;                /* read end of the output pipe, -1 after EOF */
    int exited;
    int status;
    int killed;
    uint64_t deadline_ms;   /* 0 = none */
    char what[600];
    char line[SPAWN_LINE];
    size_t line_len;
    size_t logged;          /* output bytes logged so far */
    struct child *next; /* singly linked: walked whole by the runner each turn, unlinked there */
} child_t;

static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static list_t queue = LIST_INIT(queue); /* spawn_req_t.link, oldest first; under spawn_lock */
static int wake_fd = -1, thread_running, quitting;
static pthread_t spawn_thread;
static child_t *children;
static int nchildren;
static int spawn_grace_ms = 2000; /* set by spawn_shutdown before `quitting` */

/* ---- starting ---- */

static pid_t start_child(const spawn_req_t *r, int *out)
{
    int pfd[2];
    pid_t pid = -1;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, reset;
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return -errno;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* no socket, log or pipe leaks */
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigemptyset(&reset);
    int sigs[] = {SIGPIPE, SIGHUP, SIGINT, SIGTERM, SIGCHLD, SIGUSR1, SIGUSR2, SIGALRM};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaddset(&reset, sigs[i]);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &reset);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    char *argv[] = {r->path, r->arg, NULL};
    int rc = posix_spawn(&pid, r->path, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(pfd[1]);
    if (rc != 0) {
        close(pfd[0]);
        return -rc;
    }
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    *out = pfd[0];
    return pid;
}

static void start_request(spawn_req_t *r)
{
    char path[1024];
    escape_log(path, sizeof(path), r->path, strlen(r->path));
    child_t *c = calloc(1, sizeof(*c));
    pid_t pid = c ? start_child(r, &c->out) : -ENOMEM;
    if (pid < 0) {
        log_error("%s: cannot run %s: %s", r->what, path, strerror((int)-pid));
        free(c);
        return;
    }
    c->pid = pid;
    snprintf(c->what, sizeof(c->what), "%s", r->what);
    c->deadline_ms = r->timeout_s > 0 ? loop_now_ms() + (uint64_t)r->timeout_s * 1000u : 0;
    c->next = children;
    children = c;
    nchildren++;
    log_info("%s: started %s (pid %d)", c->what, path, (int)pid);
}

/* ---- output ---- */

static void log_line(child_t *c)
{
    if (c->line_len == 0)
        return;
    if (c->logged < SPAWN_LOG_MAX) {
        char esc[SPAWN_LINE * 4 + 1];
        escape_log(esc, sizeof(esc), c->line, c->line_len);
        log_info("%s [%d]: %s", c->what, (int)c->pid, esc);
        c->logged += c->line_len;
        if (c->logged >= SPAWN_LOG_MAX)
            log_info("%s [%d]: more output not logged", c->what, (int)c->pid);
    }
    c->line_len = 0;
}

static void read_output(child_t *c)
{
    char buf[4096];
    for (;;) {
        ssize_t n = read(c->out, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            log_line(c); /* an unterminated last line */
            close(c->out);
            c->out = -1;
            return;
        }
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                log_line(c);
                continue;
            }
            c->line[c->line_len++] = buf[i];
            if (c->line_len == sizeof(c->line))
                log_line(c);
        }
    }
}

/* ---- reaping ---- */

static void reap(child_t *c, uint64_t now)
{
    if (!c->exited) {
        pid_t r = waitpid(c->pid, &c->status, WNOHANG);
        if (r == c->pid || (r < 0 && errno == ECHILD)) {
            c->exited = 1;
            if (r == c->pid && WIFEXITED(c->status) && WEXITSTATUS(c->status) != 0)
                log_warn("%s [%d]: exited with status %d", c->what, (int)c->pid,
                         WEXITSTATUS(c->status));
            else if (r == c->pid && WIFSIGNALED(c->status) && !c->killed)
                log_warn("%s [%d]: killed by signal %d", c->what, (int)c->pid,
                         WTERMSIG(c->status));
        }
    }
    if (c->deadline_ms && now >= c->deadline_ms && !c->killed && (!c->exited || c->out >= 0)) {
        kill(-c->pid, SIGKILL);
        c->killed = 1;
        log_warn("%s [%d]: still running after its timeout, killed", c->what, (int)c->pid);
    }
    if (c->exited && c->killed && c->out >= 0) {
        read_output(c); /* the group is dead: what is left in the pipe, then EOF */
        if (c->out >= 0) {
            close(c->out);
            c->out = -1;
        }
    }
}

static void forget_finished(void)
{
    for (child_t **pp = &children; *pp;) {
        child_t *c = *pp;
        if (c->exited && c->out < 0) {
            *pp = c->next;
            nchildren--;
            free(c);
        } else {
            pp = &c->next;
        }
    }
}

/* ---- the thread ---- */

static void free_request(spawn_req_t *r)
{
    free(r->path);
    free(r->arg);
    free(r);
}

static int take_requests(void)
{
    list_t batch;
    list_init(&batch);
    pthread_mutex_lock(&spawn_lock);
    if (nchildren < SPAWN_MAX_FDS)
        list_take_all(&batch, &queue);
    int quit = quitting;
    pthread_mutex_unlock(&spawn_lock);
    while (!list_empty(&batch) && nchildren < SPAWN_MAX_FDS) {
        spawn_req_t *r = container_of(batch.next, spawn_req_t, link);
        list_remove(&r->link);
        start_request(r);
        free_request(r);
    }
    if (!list_empty(&batch)) { /* too many at once: back in front of the queue, in order */
        pthread_mutex_lock(&spawn_lock);
        list_t later;
        list_take_all(&later, &queue);
        list_take_all(&queue, &batch);
        while (!list_empty(&later)) {
            list_t *n = later.next;
            list_remove(n);
            list_insert_tail(&queue, n);
        }
        pthread_mutex_unlock(&spawn_lock);
    }
    return quit;
}

static void *spawn_main(void *arg)
{
    (void)arg;
    uint64_t quit_at = 0;
    struct pollfd pfd[SPAWN_MAX_FDS + 1];
    child_t *who[SPAWN_MAX_FDS + 1];
    for (;;) {
        int quit = take_requests();
        uint64_t now = loop_now_ms();
        if (quit && !quit_at)
            quit_at = now + (uint64_t)spawn_grace_ms;
        for (child_t *c = children; c; c = c->next)
            reap(c, now);
        forget_finished();
        if (quit && (!children || now >= quit_at))
            break;
        int n = 0;
        pfd[n].fd = wake_fd;
        pfd[n++].events = POLLIN;
        for (child_t *c = children; c && n <= SPAWN_MAX_FDS; c = c->next) {
            if (c->out < 0)
                continue;
            who[n] = c;
            pfd[n].fd = c->out;
            pfd[n++].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)n, SPAWN_TICK_MS) <= 0)
            continue;
        if (pfd[0].revents) {
            uint64_t v;
            if (read(wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
                log_debug("wake: %s", strerror(errno));
        }
        for (int i = 1; i < n; i++)
            if (pfd[i].revents)
                read_output(who[i]);
    }
    for (child_t *c = children; c; c = c->next)
        log_warn("%s [%d]: still running at shutdown, left alone", c->what, (int)c->pid);
    while (children) {
        child_t *c = children;
        children = c->next;
        if (c->out >= 0)
            close(c->out);
        free(c);
    }
    nchildren = 0;
    return NULL;
}

int spawn_run(const char *path, const char *arg, const char *what, int timeout_s)
{
    spawn_req_t *r = calloc(1, sizeof(*r));
    if (!r || !(r->path = strdup(path)) || !(r->arg = strdup(arg))) {
        if (r)
            free_request(r);
        log_error("cannot run %s: out of memory", path);
        return -ENOMEM;
    }
    escape_log(r->what, sizeof(r->what), what, strlen(what));
    r->timeout_s = timeout_s;
    pthread_mutex_lock(&spawn_lock);
    int rc = 0;
    if (quitting) {
        rc = -ESHUTDOWN;
    } else if (!thread_running) {
        if (wake_fd < 0)
            wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wake_fd < 0 || pthread_create(&spawn_thread, NULL, spawn_main, NULL))
            rc = -EAGAIN;
        else
            thread_running = 1;
    }
    if (rc == 0)
        list_insert_tail(&queue, &r->link);
    pthread_mutex_unlock(&spawn_lock);
    if (rc < 0) {
        log_error("%s: cannot run %s: %s", r->what, path, strerror(-rc));
        free_request(r);
        return rc;
    }
    uint64_t one = 1;
    if (write(wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        log_debug("wake: %s", strerror(errno));
    return 0;
}

void spawn_shutdown(int grace_ms)
{
    pthread_mutex_lock(&spawn_lock);
    int running = thread_running;
    spawn_grace_ms = grace_ms;
    quitting = 1;
    pthread_mutex_unlock(&spawn_lock);
    if (running) {
        uint64_t one = 1;
        if (write(wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
            log_debug("wake: %s", strerror(errno));
        pthread_join(spawn_thread, NULL);
    }
    thread_running = 0;
    if (wake_fd >= 0)
        close(wake_fd);
    wake_fd = -1;
    while (!list_empty(&queue)) {
        spawn_req_t *r = container_of(queue.next, spawn_req_t, link);
        list_remove(&r->link);
        free_request(r);
    }
}
