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
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/loop.h"
#include "core/safefile.h"

/* One log file: its descriptor (never closed while running once > 2: reopening and rotating
 * dup2 onto it, so a writer never races a close), the path it was opened at (NULL for the
 * process's standard error or output) and the bytes written since then, which is all rotation
 * by size looks at. */
typedef struct log_file {
    int fd;
    char *path;
    atomic_ullong written;
} log_file_t;

static log_file_t error_log = {2, NULL, 0}, access_log = {2, NULL, 0};
static log_file_t playlist_log = {-1, NULL, 0}, session_log = {-1, NULL, 0};
/* -1 until a playlist (session) log is configured; a reload without one only turns
 * `playlist_on` (`session_on`) off. */
static atomic_int playlist_on, session_on;
static pthread_mutex_t playlist_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int log_level = LOG_INFO;
/* <logsize> in bytes (0: never rotate) and <logarchive>; paths and rotations under file_lock */
static atomic_ullong rotate_bytes;
static atomic_int rotate_archive;
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;

/* A log's descriptor ("-" or NULL: a copy of stderr), or -errno with why set: never through a
 * symbolic link, never another user's file (core/safefile.h). */
static int open_log(const char *path, const char **why)
{
    *why = "";
    if (!path || strcmp(path, "-") == 0)
        return dup(2);
    return safefile_open(path, SAFEFILE_APPEND, why);
}

/* open_log, saying in msg which log could not be opened and why. */
static int open_named(const char *name, const char *path, char *msg, size_t cap)
{
    const char *why;
    int fd = open_log(path, &why);
    if (fd < 0 && msg && cap)
        snprintf(msg, cap, "cannot open the %s log %s: %s", name, path, why);
    return fd;
}

/* Records where lf now points and how much it already holds (rotation counts from there).
 * Called with file_lock held. */
static void set_path(log_file_t *lf, const char *path)
{
    free(lf->path);
    /* standard error ("-", "/dev/stderr") or output ("/dev/stdout"): nothing to rotate */
    lf->path = path && strcmp(path, "-") != 0 && !safefile_std_stream(path) ? strdup(path) : NULL;
    struct stat st;
    atomic_store(&lf->written, lf->path && lf->fd >= 0 && fstat(lf->fd, &st) == 0
                                   ? (unsigned long long)st.st_size : 0);
}

int log_open(const char *error_path, const char *access_path, int level, char *msg, size_t cap)
{
    int efd = open_named("error", error_path, msg, cap);
    if (efd < 0)
        return efd;
    int afd = open_named("access", access_path, msg, cap);
    if (afd < 0) {
        close(efd);
        return afd;
    }
    pthread_mutex_lock(&file_lock);
    error_log.fd = efd;
    access_log.fd = afd;
    set_path(&error_log, error_path);
    set_path(&access_log, access_path);
    pthread_mutex_unlock(&file_lock);
    log_set_level(level);
    return 0;
}

/* Puts nfd in place of lf's descriptor (dup2 onto it once it is a file of ours: writers never
 * see it closed) and records path. */
static void swap_in(log_file_t *lf, int nfd, const char *path)
{
    pthread_mutex_lock(&file_lock);
    if (lf->fd > 2) {
        dup2(nfd, lf->fd);
        close(nfd);
    } else {
        lf->fd = nfd;
    }
    set_path(lf, path);
    pthread_mutex_unlock(&file_lock);
}

/* Sets an optional log (playlist, session) to fd at path, or none (fd < 0, path NULL). */
static void optional_set(log_file_t *lf, atomic_int *on, int fd, const char *path)
{
    pthread_mutex_lock(&playlist_lock);
    if (path)
        swap_in(lf, fd, path);
    atomic_store(on, path != NULL);
    pthread_mutex_unlock(&playlist_lock);
}

static void playlist_set(int fd, const char *path)
{
    optional_set(&playlist_log, &playlist_on, fd, path);
}

int log_reopen(const char *error_path, const char *access_path, const char *playlist_path,
               int level, char *msg, size_t cap)
{
    int efd = -1, afd = -1, pfd = -1, rc;
    if ((rc = efd = open_named("error", error_path, msg, cap)) < 0 ||
        (rc = afd = open_named("access", access_path, msg, cap)) < 0 ||
        (playlist_path && (rc = pfd = open_named("playlist", playlist_path, msg, cap)) < 0)) {
        if (efd >= 0)
            close(efd);
        if (afd >= 0)
            close(afd);
        return rc;
    }
    swap_in(&error_log, efd, error_path);
    swap_in(&access_log, afd, access_path);
    playlist_set(pfd, playlist_path);
    log_set_level(level);
    return 0;
}

void log_set_rotation(unsigned long long max_bytes, int archive)
{
    atomic_store(&rotate_bytes, max_bytes);
    atomic_store(&rotate_archive, archive != 0);
}

/* The name a full log is renamed to: "<path>.old", or with <logarchive> "<path>.YYYYMMDD_HHMMSS"
 * as Icecast names them (".1", ".2" ... added when that name is taken within the second). */
static void archive_name(char *out, size_t cap, const char *path, int archive)
{
    if (!archive) {
        snprintf(out, cap, "%s.old", path);
        return;
    }
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d_%H%M%S", &tm);
    snprintf(out, cap, "%s.%s", path, stamp);
    struct stat st;
    for (int i = 1; i < 1000 && lstat(out, &st) == 0; i++)
        snprintf(out, cap, "%s.%s.%d", path, stamp, i);
}

/* Renames a log that outgrew <logsize> and opens a new one at its path, in place of the old
 * descriptor. Whoever writes the line that crosses the size does it; the others go on writing
 * to the renamed file meanwhile (trylock: no writer ever waits). */
static void rotate(log_file_t *lf, unsigned long long limit)
{
    if (pthread_mutex_trylock(&file_lock) != 0)
        return;
    if (lf->path && lf->fd > 2 && atomic_load(&lf->written) > limit) {
        char old[4200];
        archive_name(old, sizeof(old), lf->path, atomic_load(&rotate_archive));
        int nfd = -1;
        const char *why;
        if (rename(lf->path, old) == 0)
            nfd = open_log(lf->path, &why);
        if (nfd >= 0) {
            dup2(nfd, lf->fd);
            close(nfd);
        }
        /* on failure too: try again after another <logsize> rather than on every line */
        atomic_store(&lf->written, 0);
    }
    pthread_mutex_unlock(&file_lock);
}

/* A log that cannot be written (disk full, quota, I/O error) must never stop or slow
 * streaming: the line is dropped at once. The first failure is said once on stderr; when a
 * write to that log succeeds again, one line in the error log says how many lines were lost. */
typedef struct sink_fault {
    atomic_int failing;       /* 1 from the first failed write until one succeeds */
    atomic_int torn;          /* the failed write left a partial line in the file */
    atomic_int err;           /* errno of the first failure */
    atomic_llong since;       /* time of the first failure */
    atomic_ullong lost;       /* lines dropped since then */
} sink_fault_t;
static sink_fault_t error_fault, access_fault, playlist_fault, session_fault;

static sink_fault_t *fault_of(const log_file_t *lf, const char **name)
{
    if (lf == &access_log) {
        *name = "access";
        return &access_fault;
    }
    if (lf == &playlist_log) {
        *name = "playlist";
        return &playlist_fault;
    }
    if (lf == &session_log) {
        *name = "session";
        return &session_fault;
    }
    *name = "error";
    return &error_fault;
}

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

static void sink_failed(log_file_t *lf, int err, size_t written)
{
    const char *name;
    sink_fault_t *f = fault_of(lf, &name);
    atomic_fetch_add(&f->lost, 1);
    if (written)
        atomic_store(&f->torn, 1);
    if (atomic_exchange(&f->failing, 1))
        return;
    atomic_store(&f->err, err);
    atomic_store(&f->since, (long long)time(NULL));
    if (lf->fd == 2)
        return;
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "rimecast: log write failed: the %s log cannot be written "
                     "(%s); its lines are dropped until writes succeed again\n",
                     name, strerror(err));
    if (n > 0 && write(2, msg, (size_t)n) < 0) {
        /* nowhere left to say it */
    }
}

static void sink_recovered(log_file_t *lf)
{
    const char *name;
    sink_fault_t *f = fault_of(lf, &name);
    if (!atomic_exchange(&f->failing, 0))
        return;
    char since[64];
    time_t t = (time_t)atomic_load(&f->since);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(since, sizeof(since), "%Y-%m-%d %H:%M:%S", &tm);
    log_msg(LOG_WARN, "log_write", "log write failed: the %s log could not be written from %s "
            "until now (%s), %llu lines lost", name, since,
            strerror(atomic_load(&f->err)), (unsigned long long)atomic_exchange(&f->lost, 0));
}

/* One line to lf: dropped at once if it cannot be written (see log.h); counts its bytes and
 * rotates the file when it passed <logsize>. */
static void write_line(log_file_t *lf, const char *line, size_t len)
{
    size_t written;
    const char *name;
    sink_fault_t *f = fault_of(lf, &name);
    if (atomic_load_explicit(&f->torn, memory_order_relaxed) && atomic_exchange(&f->torn, 0))
        (void)write_all(lf->fd, "\n", 1, &written); /* end the partial line the failure left */
    int rc = write_all(lf->fd, line, len, &written);
    if (rc < 0) {
        sink_failed(lf, -rc, written);
        return;
    }
    if (atomic_load_explicit(&f->failing, memory_order_relaxed))
        sink_recovered(lf);
    unsigned long long limit = atomic_load_explicit(&rotate_bytes, memory_order_relaxed);
    if (limit && atomic_fetch_add_explicit(&lf->written, len, memory_order_relaxed) + len > limit)
        rotate(lf, limit);
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
    if (error_log.fd > 2)
        close(error_log.fd);
    if (access_log.fd > 2 && access_log.fd != error_log.fd)
        close(access_log.fd);
    error_log.fd = access_log.fd = 2;
    atomic_store(&playlist_on, 0);
    if (playlist_log.fd > 2)
        close(playlist_log.fd);
    playlist_log.fd = -1;
    atomic_store(&session_on, 0);
    if (session_log.fd > 2)
        close(session_log.fd);
    session_log.fd = -1;
    pthread_mutex_lock(&file_lock);
    set_path(&error_log, NULL);
    set_path(&access_log, NULL);
    set_path(&playlist_log, NULL);
    set_path(&session_log, NULL);
    pthread_mutex_unlock(&file_lock);
}

/* Opens (or reopens in place) an optional log at path, NULL: none from now on. */
static int open_optional(const char *name, log_file_t *lf, atomic_int *on, const char *path,
                         char *msg, size_t cap)
{
    int fd = path ? open_named(name, path, msg, cap) : -1;
    if (path && fd < 0)
        return fd;
    optional_set(lf, on, fd, path);
    return 0;
}

int log_playlist_open(const char *path, char *msg, size_t cap)
{
    return open_optional("playlist", &playlist_log, &playlist_on, path, msg, cap);
}

int log_session_open(const char *path, char *msg, size_t cap)
{
    return open_optional("session", &session_log, &session_on, path, msg, cap);
}

int log_session_active(void)
{
    return atomic_load_explicit(&session_on, memory_order_acquire);
}

void log_session_line(const char *line, size_t len)
{
    if (atomic_load_explicit(&session_on, memory_order_acquire))
        write_line(&session_log, line, len);
}

/* The last LOG_RECENT_LEN error-log lines, a ring under its own mutex (logging is cold: a
 * short copy under a lock is cheaper than anything clever). */
static struct {
    pthread_mutex_t lock;
    log_line_t lines[LOG_RECENT_LEN];
    unsigned long long total;   /* lines ever kept; the next goes to total % LOG_RECENT_LEN */
} recent = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const level_names[] = {"", "EROR", "WARN", "INFO", "DBUG"};

const char *log_level_name(int level)
{
    return level >= LOG_ERROR && level <= LOG_DEBUG ? level_names[level] : "";
}

static void recent_add(time_t when, int level, const char *text, size_t len)
{
    if (len >= LOG_RECENT_TEXT)
        len = LOG_RECENT_TEXT - 1;
    pthread_mutex_lock(&recent.lock);
    log_line_t *l = &recent.lines[recent.total % LOG_RECENT_LEN];
    l->time = when;
    l->level = level;
    memcpy(l->text, text, len);
    l->text[len] = '\0';
    recent.total++;
    pthread_mutex_unlock(&recent.lock);
}

int log_recent(log_line_t *out, int cap)
{
    pthread_mutex_lock(&recent.lock);
    unsigned long long kept = recent.total < LOG_RECENT_LEN ? recent.total : LOG_RECENT_LEN;
    int n = cap < 0 ? 0 : (unsigned long long)cap < kept ? cap : (int)kept;
    /* the newest n of them, oldest first */
    unsigned long long first = recent.total - (unsigned long long)n;
    for (int i = 0; i < n; i++)
        out[i] = recent.lines[(first + (unsigned long long)i) % LOG_RECENT_LEN];
    pthread_mutex_unlock(&recent.lock);
    return n;
}

void log_recent_clear(void)
{
    pthread_mutex_lock(&recent.lock);
    recent.total = 0;
    pthread_mutex_unlock(&recent.lock);
}

void log_msg(int level, const char *func, const char *fmt, ...)
{
    if (level > atomic_load_explicit(&log_level, memory_order_relaxed))
        return;
    char line[2048];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(line, sizeof(line), "[%Y-%m-%d  %H:%M:%S] ", &tm);
    n += (size_t)snprintf(line + n, sizeof(line) - n, "%s ", level_names[level]);
    size_t text_at = n;    /* "func message" starts here (kept in memory) */
    n += (size_t)snprintf(line + n, sizeof(line) - n, "%s ", func);
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
    recent_add(now, level, line + text_at, n - text_at);
    line[n++] = '\n';
    write_line(&error_log, line, n);
}

int log_msg_limited(log_ratelimit_t *rl, unsigned interval_ms, int level, const char *func,
                    const char *fmt, ...)
{
    uint64_t now = loop_now_ms();
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

/* Is the query parameter name (raw, percent-encoded) "pass" or "password", in any case? */
static int secret_name(const char *name, size_t len)
{
    char dec[16];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (n + 1 >= sizeof(dec))
            return 0;
        unsigned hi, lo;
        if (name[i] == '%' && i + 2 < len &&
            sscanf(name + i + 1, "%1x%1x", &hi, &lo) == 2) {
            dec[n++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            dec[n++] = name[i] == '+' ? ' ' : name[i];
        }
    }
    dec[n] = '\0';
    return strcasecmp(dec, "pass") == 0 || strcasecmp(dec, "password") == 0;
}

/* The request URI with the values of pass= and password= query parameters (Shoutcast's
 * /admin.cgi?pass=..., credentials in URLs) replaced, so no password reaches the access log. */
static void redact_uri(char *out, size_t cap, const char *uri)
{
    const char *q = strchr(uri, '?');
    size_t n = q ? (size_t)(q - uri) + 1 : strlen(uri);
    snprintf(out, cap, "%.*s", (int)n, uri);
    if (!q)
        return;
    size_t len = strlen(out);
    const char *p = q + 1;
    while (*p && len + 1 < cap) {
        size_t plen = strcspn(p, "&");
        const char *eq = memchr(p, '=', plen);
        int wrote;
        if (eq && secret_name(p, (size_t)(eq - p)))
            wrote = snprintf(out + len, cap - len, "%.*s=<redacted>", (int)(eq - p), p);
        else
            wrote = snprintf(out + len, cap - len, "%.*s", (int)plen, p);
        if (wrote < 0 || (size_t)wrote >= cap - len)
            break;
        len += (size_t)wrote;
        p += plen;
        if (*p == '&' && len + 1 < cap) {
            out[len++] = '&';
            out[len] = '\0';
            p++;
        }
    }
}

void log_access(const log_access_entry_t *e)
{
    char ip[64], user[256], method[64], uri[2048], proto[32], referer[1024], agent[1024];
    char date[64], line[8192];
    struct tm tm;
    time_t now = time(NULL);
    localtime_r(&now, &tm); /* the end, as Icecast stamps it: start = stamp - duration */
    strftime(date, sizeof(date), "%d/%b/%Y:%H:%M:%S %z", &tm);
    escape_log(ip, sizeof(ip), e->ip ? e->ip : "-", strlen(e->ip ? e->ip : "-"));
    escape_log(user, sizeof(user), e->user ? e->user : "-", strlen(e->user ? e->user : "-"));
    escape_log(method, sizeof(method), e->method ? e->method : "-",
               strlen(e->method ? e->method : "-"));
    char plain_uri[2048];
    redact_uri(plain_uri, sizeof(plain_uri), e->uri ? e->uri : "-");
    escape_log(uri, sizeof(uri), plain_uri, strlen(plain_uri));
    escape_log(proto, sizeof(proto), e->protocol ? e->protocol : "-",
               strlen(e->protocol ? e->protocol : "-"));
    escape_log(referer, sizeof(referer), e->referer ? e->referer : "-",
               strlen(e->referer ? e->referer : "-"));
    escape_log(agent, sizeof(agent), e->agent ? e->agent : "-",
               strlen(e->agent ? e->agent : "-"));
    int n = snprintf(line, sizeof(line), "%s - %s [%s] \"%s %s %s\" %d %llu \"%s\" \"%s\" %lld\n",
                     ip, user, date, method, uri, proto, e->status, (unsigned long long)e->bytes,
                     referer, agent, (long long)((e->end ? e->end : now) - e->start));
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {
        n = sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    write_line(&access_log, line, (size_t)n);
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
    write_line(&playlist_log, line, (size_t)n);
}
