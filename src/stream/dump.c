/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dump: the <dump-file> writer thread (see dump.h).
 *
 * Each recording holds a cursor (one block reference + position) on its mount's chain, taken at
 * the live edge before the source's first block. The thread wakes every DUMP_POLL_MS (or at
 * once when a recording stops), writes whatever was published since with writev, and moves the
 * cursor on, which releases the blocks behind it. The cursor pins every block after it, so a
 * writer that falls behind (slow disk) skips ahead instead of letting memory grow past the
 * mount's queue-size; while one write() is stuck the pinned audio grows at the stream's rate.
 */
#include "stream/dump.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core/block.h"
#include "core/log.h"
#include "core/escape.h"
#include "core/safefile.h"
#include "stream/mount.h"

#define DUMP_POLL_MS 100
#define DUMP_IOV 64
#define DUMP_ERROR_INTERVAL 60      /* seconds between two error lines of one recording */
#define DUMP_MIN_LAG (1024 * 1024) /* never skip ahead for less than this much */

struct dump {
    mount_t *mount;      /* reference */
    char *path;
    char mount_esc[512]; /* the mount name, escaped for log lines */
    int fd;              /* -1 until the writer opened it */
    int failed;          /* cannot open: nothing is written, the cursor is dropped */
    int headers_done;    /* codec headers written before the first data */
    block_t *cursor;     /* the next byte to write is cursor->data[pos] */
    uint32_t pos;
    atomic_int stopped;
    int finished;        /* written and closed: unlink and free (writer thread only) */
    uint64_t written, dropped;
    time_t last_error;
    unsigned errors_suppressed;
    dump_t *next;
};

static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dump_cond = PTHREAD_COND_INITIALIZER;
static dump_t *dumps;
static pthread_t dump_thread;
static int thread_running, quitting, kicked;

/* ---- errors ---- */

static void dump_error(dump_t *d, const char *what, int err)
{
    time_t now = time(NULL);
    if (d->last_error && now - d->last_error < DUMP_ERROR_INTERVAL) {
        d->errors_suppressed++;
        return;
    }
    log_error("dump file %s of %s: %s: %s (streaming goes on; %u similar errors not logged)",
              d->path, d->mount_esc, what, err ? strerror(err) : "", d->errors_suppressed);
    d->last_error = now;
    d->errors_suppressed = 0;
}

/* ---- cursor ---- */

/* Moves the cursor over n bytes of data (which were gathered from it) and off exhausted blocks
 * whose successor exists, releasing them. */
static void cursor_advance(dump_t *d, size_t n)
{
    for (;;) {
        uint32_t avail = d->cursor->len - d->pos;
        size_t take = n < avail ? n : avail;
        d->pos += (uint32_t)take;
        n -= take;
        if (d->pos < d->cursor->len)
            return;
        block_t *next = block_next(d->cursor);
        if (!next)
            return;
        block_ref(next);
        block_unref(d->cursor);
        d->cursor = next;
        d->pos = 0;
    }
}

static void cursor_drop(dump_t *d)
{
    if (d->cursor)
        block_unref(d->cursor);
    d->cursor = NULL;
}

/* ---- writing ---- */

/* Writes n iovecs totalling `total` bytes. 0, or -errno after writing what could be. */
static int write_iov(dump_t *d, struct iovec *iov, int n, size_t total)
{
    while (total > 0) {
        ssize_t w = writev(d->fd, iov, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -ENOSPC;
        d->written += (uint64_t)w;
        total -= (size_t)w;
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

/* Before the first data byte: the codec headers that apply to it (Ogg), as a listener
 * starting there gets them. 0 when done, 1 to wait for data. */
static int write_headers(dump_t *d)
{
    block_t *b = d->cursor;
    uint32_t pos = d->pos;
    while (pos >= b->len) {
        block_t *next = block_next(b);
        if (!next)
            return 1;
        b = next;
        pos = 0;
    }
    block_t *headers = NULL;
    if (mount_headers_at(d->mount, b->offset + pos, &headers) < 0) {
        /* a chained stream switched headers before we wrote anything: start at the next
         * block, where the new group's header pages come inline */
        d->dropped += b->len - pos;
        cursor_advance(d, (size_t)(b->offset + b->len - (d->cursor->offset + d->pos)));
        return 1;
    }
    struct iovec iov[DUMP_IOV];
    int n = 0;
    size_t total = 0;
    for (block_t *h = headers; h && n < DUMP_IOV; h = block_next(h)) {
        if (h->len == 0)
            continue;
        iov[n].iov_base = h->data;
        iov[n++].iov_len = h->len;
        total += h->len;
    }
    int rc = n ? write_iov(d, iov, n, total) : 0;
    if (headers)
        block_unref(headers);
    if (rc < 0)
        dump_error(d, "cannot write the codec headers", -rc);
    d->headers_done = 1;
    return 0;
}

/* Skips to the live edge when the recording lags more than the mount keeps for listeners. */
static void check_lag(dump_t *d)
{
    uint64_t at = d->cursor->offset + d->pos, head = mount_head_end(d->mount);
    uint64_t limit = (uint64_t)atomic_load(&d->mount->queue_size);
    if (limit < DUMP_MIN_LAG)
        limit = DUMP_MIN_LAG;
    if (head <= at || head - at <= limit)
        return;
    block_t *edge = mount_live_edge(d->mount);
    d->dropped += block_end(edge) - at;
    block_unref(d->cursor);
    d->cursor = edge;
    d->pos = edge->len;
    dump_error(d, "the disk does not keep up, audio skipped", 0);
}

/* Writes everything published so far. */
static void dump_drain(dump_t *d)
{
    if (!d->failed && d->fd < 0) {
        const char *why;
        d->fd = safefile_open(d->path, SAFEFILE_APPEND, &why);
        if (d->fd < 0) {
            char what[200];
            snprintf(what, sizeof(what), "cannot open: %s", why);
            dump_error(d, what, 0);
            d->failed = 1;
            cursor_drop(d);
            return;
        }
        log_info("recording %s to %s", d->mount_esc, d->path);
    }
    if (d->failed)
        return;
    check_lag(d);
    if (!d->headers_done && write_headers(d) != 0)
        return;
    for (;;) {
        struct iovec iov[DUMP_IOV];
        int n = 0;
        size_t total = 0;
        block_t *b = d->cursor;
        uint32_t pos = d->pos;
        while (n < DUMP_IOV) {
            if (pos < b->len) {
                iov[n].iov_base = b->data + pos;
                iov[n++].iov_len = b->len - pos;
                total += b->len - pos;
            }
            block_t *next = block_next(b);
            if (!next)
                break;
            b = next;
            pos = 0;
        }
        if (total == 0)
            return;
        int rc = write_iov(d, iov, n, total);
        if (rc < 0) {
            dump_error(d, "cannot write", -rc);
            d->dropped += total; /* approximately: what was not written is lost */
        }
        cursor_advance(d, total);
        if (n < DUMP_IOV)
            return;
    }
}

/* Drains d; 1 when it is stopped and everything is written (it can be freed). */
static int dump_step(dump_t *d, int quit)
{
    int stopped = atomic_load(&d->stopped) || quit; /* read before draining: see dump_stop */
    dump_drain(d);
    if (!stopped)
        return 0;
    if (d->fd >= 0 && d->cursor && (d->pos < d->cursor->len || block_next(d->cursor)))
        return 0; /* a full batch: more to write */
    return 1;
}

static void dump_free(dump_t *d)
{
    if (d->fd >= 0) {
        if (close(d->fd) < 0)
            dump_error(d, "cannot close", errno);
        log_info("recording of %s to %s ended: %llu bytes written, %llu lost", d->mount_esc,
                 d->path, (unsigned long long)d->written, (unsigned long long)d->dropped);
    }
    cursor_drop(d);
    mount_unref(d->mount);
    free(d->path);
    free(d);
}

static void *dump_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&dump_lock);
    for (;;) {
        if (!kicked) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += DUMP_POLL_MS * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&dump_cond, &dump_lock, &ts);
        }
        kicked = 0;
        int quit = quitting;
        dump_t *list = dumps; /* new recordings are added at the head only */
        pthread_mutex_unlock(&dump_lock);

        dump_t *done = NULL;
        for (dump_t *d = list; d; d = d->next)
            d->finished = dump_step(d, quit);

        pthread_mutex_lock(&dump_lock);
        for (dump_t **pp = &dumps; *pp;) {
            if ((*pp)->finished) {
                dump_t *d = *pp;
                *pp = d->next;
                d->next = done;
                done = d;
            } else {
                pp = &(*pp)->next;
            }
        }
        int finished = quit && !dumps;
        pthread_mutex_unlock(&dump_lock);
        while (done) {
            dump_t *d = done;
            done = d->next;
            dump_free(d);
        }
        pthread_mutex_lock(&dump_lock);
        if (finished)
            break;
    }
    pthread_mutex_unlock(&dump_lock);
    return NULL;
}

/* A recording of m into the file `path` (already expanded), from the live edge on. */
static dump_t *dump_begin(mount_t *m, const char *path, int headers_done)
{
    dump_t *d = calloc(1, sizeof(*d));
    if (!d || !(d->path = strdup(path))) {
        log_error("dump file %s: cannot record (no memory)", path);
        free(d);
        return NULL;
    }
    escape_log(d->mount_esc, sizeof(d->mount_esc), m->name, strlen(m->name));
    d->fd = -1;
    d->headers_done = headers_done;
    d->mount = mount_ref(m);
    d->cursor = mount_live_edge(m);
    d->pos = d->cursor->len;
    pthread_mutex_lock(&dump_lock);
    if (!thread_running) {
        if (pthread_create(&dump_thread, NULL, dump_main, NULL) != 0) {
            pthread_mutex_unlock(&dump_lock);
            log_error("dump file %s of %s: cannot start the writer thread", d->path,
                      d->mount_esc);
            d->fd = -1;
            dump_free(d);
            return NULL;
        }
        thread_running = 1;
    }
    d->next = dumps;
    dumps = d;
    pthread_mutex_unlock(&dump_lock);
    return d;
}

dump_t *dump_start(mount_t *m, const char *path)
{
    char expanded[4096];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(expanded, sizeof(expanded), path, &tm);
    if (n == 0) {
        log_error("dump file %s: cannot record (empty name after strftime)", path);
        return NULL;
    }
    return dump_begin(m, expanded, 0);
}

dump_t *dump_continue(mount_t *m, const char *path)
{
    return dump_begin(m, path, 1);
}

const char *dump_path(const dump_t *d)
{
    return d->path;
}

void dump_stop(dump_t *d)
{
    if (!d)
        return;
    /* Everything the source published happened before this store; the writer loads `stopped`
     * before it drains, so once it sees the flag it also sees the last block. */
    atomic_store(&d->stopped, 1);
    pthread_mutex_lock(&dump_lock);
    kicked = 1;
    pthread_cond_signal(&dump_cond);
    pthread_mutex_unlock(&dump_lock);
}

void dump_shutdown(void)
{
    pthread_mutex_lock(&dump_lock);
    int running = thread_running;
    quitting = 1;
    kicked = 1;
    pthread_cond_signal(&dump_cond);
    pthread_mutex_unlock(&dump_lock);
    if (running)
        pthread_join(dump_thread, NULL);
    thread_running = 0;
}
