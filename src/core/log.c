/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log: error and access logs (see log.h). One write() per line; reopen swaps fds with dup2 so
 * other threads never see a closed descriptor.
 */
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/escape.h"

static int error_fd = 2, access_fd = 2;
/* -1 until a playlist log is configured; once opened the fd is never closed while running (a
 * reload without <playlistlog> only turns `playlist_on` off), so a writer never races a close. */
static int playlist_fd = -1;
static atomic_int playlist_on;
static pthread_mutex_t playlist_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int log_level = LOG_INFO;

static int open_log(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return fd < 0 ? -errno : fd;
}

int log_open(const char *error_path, const char *access_path, int level)
{
    int efd = open_log(error_path);
    if (efd < 0)
        return efd;
    int afd = open_log(access_path);
    if (afd < 0) {
        close(efd);
        return afd;
    }
    error_fd = efd;
    access_fd = afd;
    log_set_level(level);
    return 0;
}

static int reopen_one(int *fd, const char *path)
{
    int nfd = open_log(path);
    if (nfd < 0)
        return nfd;
    if (*fd > 2) {
        dup2(nfd, *fd);
        close(nfd);
    } else {
        *fd = nfd;
    }
    return 0;
}

int log_reopen(const char *error_path, const char *access_path, int level)
{
    int r1 = reopen_one(&error_fd, error_path);
    int r2 = reopen_one(&access_fd, access_path);
    log_set_level(level);
    return r1 < 0 ? r1 : r2;
}

void log_set_level(int level)
{
    if (level < LOG_ERROR)
        level = LOG_ERROR;
    if (level > LOG_DEBUG)
        level = LOG_DEBUG;
    atomic_store(&log_level, level);
}

void log_close(void)
{
    if (error_fd > 2)
        close(error_fd);
    if (access_fd > 2 && access_fd != error_fd)
        close(access_fd);
    error_fd = access_fd = 2;
    atomic_store(&playlist_on, 0);
    if (playlist_fd > 2)
        close(playlist_fd);
    playlist_fd = -1;
}

int log_playlist_open(const char *path)
{
    int rc = 0;
    pthread_mutex_lock(&playlist_lock);
    if (!path) {
        atomic_store(&playlist_on, 0);
    } else if (playlist_fd < 0) {
        int fd = open_log(path);
        if (fd < 0)
            rc = fd;
        else
            playlist_fd = fd;
    } else {
        rc = reopen_one(&playlist_fd, path);
    }
    if (path && rc == 0)
        atomic_store(&playlist_on, 1);
    pthread_mutex_unlock(&playlist_lock);
    return rc;
}

/* A log that cannot be written (disk full, quota, I/O error) must never stop or slow
 * streaming: the line is dropped at once. The first failure is said once on stderr; when a
 * write to that log succeeds again, one line in the error log says how many lines were lost. */
enum { SINK_ERROR, SINK_ACCESS, SINK_PLAYLIST, SINK_COUNT };
typedef struct sink_fault {
    atomic_int failing;       /* 1 from the first failed write until one succeeds */
    atomic_int torn;          /* the failed write left a partial line in the file */
    atomic_int err;           /* errno of the first failure */
    atomic_llong since;       /* time of the first failure */
    atomic_ullong lost;       /* lines dropped since then */
} sink_fault_t;
static sink_fault_t faults[SINK_COUNT];
static const char *const sink_names[SINK_COUNT] = {"error", "access", "playlist"};

/* 0, or -errno with *written set to the bytes that did go out. */
static int write_all(int fd, const char *buf, size_t len, size_t *written)
{
    *written = 0;
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -errno : -ENOSPC;
        buf += n;
        len -= (size_t)n;
        *written += (size_t)n;
    }
    return 0;
}

static void sink_failed(int sink, int fd, int err, size_t written)
{
    sink_fault_t *f = &faults[sink];
    atomic_fetch_add(&f->lost, 1);
    if (written)
        atomic_store(&f->torn, 1);
    if (atomic_exchange(&f->failing, 1))
        return;
    atomic_store(&f->err, err);
    atomic_store(&f->since, (long long)time(NULL));
    if (fd == 2)
        return;
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "rimecast: log write failed: the %s log cannot be written "
                     "(%s); its lines are dropped until writes succeed again\n",
                     sink_names[sink], strerror(err));
    if (n > 0 && write(2, msg, (size_t)n) < 0) {
        /* nowhere left to say it */
    }
}

static void sink_recovered(int sink)
{
    sink_fault_t *f = &faults[sink];
    if (!atomic_exchange(&f->failing, 0))
        return;
    char since[64];
    time_t t = (time_t)atomic_load(&f->since);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(since, sizeof(since), "%Y-%m-%d %H:%M:%S", &tm);
    log_msg(LOG_WARN, "log_write", "log write failed: the %s log could not be written from %s "
            "until now (%s), %llu lines lost", sink_names[sink], since,
            strerror(atomic_load(&f->err)), (unsigned long long)atomic_exchange(&f->lost, 0));
}

static void write_line(int sink, int fd, const char *line, size_t len)
{
    size_t written;
    sink_fault_t *f = &faults[sink];
    if (atomic_load_explicit(&f->torn, memory_order_relaxed) && atomic_exchange(&f->torn, 0))
        (void)write_all(fd, "\n", 1, &written); /* end the partial line the failure left */
    int rc = write_all(fd, line, len, &written);
    if (rc < 0)
        sink_failed(sink, fd, -rc, written);
    else if (atomic_load_explicit(&f->failing, memory_order_relaxed))
        sink_recovered(sink);
}

void log_msg(int level, const char *func, const char *fmt, ...)
{
    static const char *const names[] = {"", "EROR", "WARN", "INFO", "DBUG"};
    if (level > atomic_load_explicit(&log_level, memory_order_relaxed))
        return;
    char line[2048];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(line, sizeof(line), "[%Y-%m-%d  %H:%M:%S] ", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %s ", names[level], func);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    n = (m < 0) ? n : n + (size_t)m;
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    /* A message must stay one line even if a caller forgot to escape something. */
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] < 0x20)
            line[i] = '?';
    line[n++] = '\n';
    write_line(SINK_ERROR, error_fd, line, n);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int log_msg_limited(log_ratelimit_t *rl, unsigned interval_ms, int level, const char *func,
                    const char *fmt, ...)
{
    uint64_t now = now_ms();
    unsigned long long next = atomic_load_explicit(&rl->next_ms, memory_order_relaxed);
    if (now < next || !atomic_compare_exchange_strong(&rl->next_ms, &next, now + interval_ms)) {
        atomic_fetch_add_explicit(&rl->suppressed, 1, memory_order_relaxed);
        return 0;
    }
    unsigned long long skipped = atomic_exchange(&rl->suppressed, 0);
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (skipped)
        log_msg(level, func, "%s (%llu similar lines suppressed)", msg, skipped);
    else
        log_msg(level, func, "%s", msg);
    return 1;
}

void log_access(const log_access_entry_t *e)
{
    char ip[64], user[256], method[64], uri[2048], proto[32], referer[1024], agent[1024];
    char date[64], line[8192];
    struct tm tm;
    time_t now = time(NULL);
    localtime_r(&e->start, &tm);
    strftime(date, sizeof(date), "%d/%b/%Y:%H:%M:%S %z", &tm);
    escape_log(ip, sizeof(ip), e->ip ? e->ip : "-", strlen(e->ip ? e->ip : "-"));
    escape_log(user, sizeof(user), e->user ? e->user : "-", strlen(e->user ? e->user : "-"));
    escape_log(method, sizeof(method), e->method ? e->method : "-",
               strlen(e->method ? e->method : "-"));
    escape_log(uri, sizeof(uri), e->uri ? e->uri : "-", strlen(e->uri ? e->uri : "-"));
    escape_log(proto, sizeof(proto), e->protocol ? e->protocol : "-",
               strlen(e->protocol ? e->protocol : "-"));
    escape_log(referer, sizeof(referer), e->referer ? e->referer : "-",
               strlen(e->referer ? e->referer : "-"));
    escape_log(agent, sizeof(agent), e->agent ? e->agent : "-",
               strlen(e->agent ? e->agent : "-"));
    int n = snprintf(line, sizeof(line), "%s - %s [%s] \"%s %s %s\" %d %llu \"%s\" \"%s\" %lld\n",
                     ip, user, date, method, uri, proto, e->status, (unsigned long long)e->bytes,
                     referer, agent, (long long)(now - e->start));
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    write_line(SINK_ACCESS, access_fd, line, (size_t)n);
}

void log_playlist(const char *mount, int listeners, const char *title)
{
    if (!atomic_load_explicit(&playlist_on, memory_order_acquire))
        return;
    char date[64], m[1024], t[4096], line[5200];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(date, sizeof(date), "%d/%b/%Y:%H:%M:%S %z", &tm);
    escape_log_utf8(m, sizeof(m), mount, strlen(mount));
    escape_log_utf8(t, sizeof(t), title, strlen(title));
    int n = snprintf(line, sizeof(line), "%s|", date);
    for (const char *p = m; *p && n < (int)sizeof(line) - 8; p++) {
        if (*p == '|')
            n += snprintf(line + n, sizeof(line) - (size_t)n, "\\x7C");
        else
            line[n++] = *p;
    }
    n += snprintf(line + n, sizeof(line) - (size_t)n, "|%d|%s\n", listeners, t);
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    write_line(SINK_PLAYLIST, playlist_fd, line, (size_t)n);
}
