/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watched: files re-read when they change, as lock-free snapshots (see watched.h).
 */
#include "core/watched.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/log.h"

#define RETIRE_SECONDS 60

/* What identifies one version of the file on disk. */
typedef struct {
    int exists;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
} file_id_t;

/* A snapshot with the identity of the file it was read from (immutable once published). */
typedef struct version {
    void *snap;
    file_id_t id;
    time_t retired; /* when it was replaced */
    struct version *next_retired;
} version_t;

struct watched {
    char *path;
    const watched_kind_t *kind;
    _Atomic(version_t *) cur;
    pthread_mutex_t lock; /* reads of the file and writes; readers never take it */
    version_t *retired;   /* under lock */
    int load_errno;       /* the read error last logged (under lock), to log each once */
    struct watched *next; /* registry: pushed with a compare-and-swap and read without a lock,
                           * never unlinked (a list_t cannot be read that way) */
};

static _Atomic(watched_t *) registry;
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;

static void id_of(const struct stat *st, file_id_t *id)
{
    id->exists = 1;
    id->dev = st->st_dev;
    id->ino = st->st_ino;
    id->size = st->st_size;
    id->mtime = st->st_mtim;
}

static int id_equal(const file_id_t *a, const file_id_t *b)
{
    if (a->exists != b->exists)
        return 0;
    return !a->exists || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
                          a->mtime.tv_sec == b->mtime.tv_sec &&
                          a->mtime.tv_nsec == b->mtime.tv_nsec);
}

static watched_t *find(const char *path, const watched_kind_t *kind)
{
    for (watched_t *w = atomic_load(&registry); w; w = w->next)
        if (w->kind == kind && strcmp(w->path, path) == 0)
            return w;
    return NULL;
}

watched_t *watched_get(const char *path, const watched_kind_t *kind)
{
    watched_t *w = find(path, kind);
    if (w)
        return w;
    pthread_mutex_lock(&registry_lock);
    if (!(w = find(path, kind)) && (w = calloc(1, sizeof(*w)))) {
        if (!(w->path = strdup(path))) {
            free(w);
            w = NULL;
        } else {
            w->kind = kind;
            pthread_mutex_init(&w->lock, NULL);
            w->next = atomic_load(&registry);
            atomic_store(&registry, w);
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return w;
}

const char *watched_path(const watched_t *w)
{
    return w->path;
}

void watched_lock(watched_t *w)
{
    pthread_mutex_lock(&w->lock);
}

void watched_unlock(watched_t *w)
{
    pthread_mutex_unlock(&w->lock);
}

/* Under the lock: v becomes current; the one before is freed RETIRE_SECONDS later. */
static void publish(watched_t *w, version_t *v)
{
    time_t now = time(NULL);
    version_t *old = atomic_exchange_explicit(&w->cur, v, memory_order_acq_rel);
    for (version_t **pp = &w->retired; *pp;) {
        if (now - (*pp)->retired > RETIRE_SECONDS) {
            version_t *dead = *pp;
            *pp = dead->next_retired;
            w->kind->free(dead->snap);
            free(dead);
        } else {
            pp = &(*pp)->next_retired;
        }
    }
    if (old) {
        old->retired = now;
        old->next_retired = w->retired;
        w->retired = old;
    }
}

/* Under the lock: a new version from the file's text (NULL: the file does not exist). */
static int publish_text(watched_t *w, const char *text, size_t len, const file_id_t *id)
{
    version_t *v = calloc(1, sizeof(*v));
    if (!v || !(v->snap = w->kind->parse(w->path, text, len))) {
        free(v);
        return -ENOMEM;
    }
    v->id = *id;
    publish(w, v);
    return 0;
}

static void log_error_once(watched_t *w, int err, int kept)
{
    char esc[512];
    if (err == w->load_errno)
        return;
    w->load_errno = err;
    log_error("%s %s: %s%s", w->kind->what, escape_log(esc, sizeof(esc), w->path, strlen(w->path)),
              strerror(err),
              err == ENOENT ? " (read as empty)"
              : kept        ? " (the version read before stays in use)"
                            : " (nothing read yet: what it would allow is refused)");
}

int watched_reload_locked(watched_t *w, void **snap)
{
    version_t *cur = atomic_load_explicit(&w->cur, memory_order_acquire);
    int fd = open(w->path, O_RDONLY | O_CLOEXEC), err = 0;
    struct stat st;
    file_id_t id = {0};
    char *text = NULL;
    if (fd >= 0 && fstat(fd, &st) == 0)
        id_of(&st, &id);
    else if ((err = errno) == ENOENT && !(cur && !cur->id.exists))
        err = publish_text(w, NULL, 0, &id) < 0 ? ENOMEM : ENOENT;
    if (!err && (!cur || !id_equal(&cur->id, &id))) {
        size_t cap = (size_t)st.st_size + 1, len = 0;
        ssize_t r = 0;
        text = malloc(cap);
        while (text && (r = read(fd, text + len, cap - len)) > 0) {
            len += (size_t)r;
            if (len == cap) {
                char *t = realloc(text, cap *= 2);
                if (!t)
                    break;
                text = t;
            }
        }
        if (!text || len == cap)
            err = ENOMEM;
        else if (r < 0)
            err = errno;
        else if (publish_text(w, text, len, &id) < 0)
            err = ENOMEM;
    }
    if (fd >= 0)
        close(fd);
    free(text);
    cur = atomic_load_explicit(&w->cur, memory_order_acquire);
    if (err)
        log_error_once(w, err, cur != NULL);
    else
        w->load_errno = 0;
    *snap = cur ? cur->snap : NULL;
    return err == ENOENT ? 0 : -err; /* a file that does not exist is read: it is empty */
}

void *watched_current(watched_t *w)
{
    version_t *cur = atomic_load_explicit(&w->cur, memory_order_acquire);
    struct stat st;
    file_id_t id = {0};
    if (stat(w->path, &st) == 0)
        id_of(&st, &id);
    if (cur && id_equal(&cur->id, &id))
        return cur->snap;
    if ((cur ? pthread_mutex_trylock(&w->lock) : pthread_mutex_lock(&w->lock)) == 0) {
        void *snap;
        watched_reload_locked(w, &snap);
        pthread_mutex_unlock(&w->lock);
        return snap;
    }
    return cur->snap; /* another thread is re-reading it */
}

void watched_replace_locked(watched_t *w, void *snap, const struct stat *st)
{
    version_t *v = calloc(1, sizeof(*v));
    if (!v) { /* the file is on disk: the next look reads it */
        w->kind->free(snap);
        return;
    }
    v->snap = snap;
    id_of(st, &v->id);
    publish(w, v);
}
