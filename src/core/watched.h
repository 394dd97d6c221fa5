/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * watched: a file on disk held as an immutable snapshot (what the file means, built by its
 * kind's parse function) that readers take without a lock, re-read when the file changes.
 *
 * One watched_t per (path, kind), created on first use and kept for the life of the process.
 * Each look costs one stat: a change (device, inode, size or mtime to the nanosecond) makes
 * the looking thread re-read the file into a new snapshot, unless another thread is already
 * doing so, in which case it goes on with the current one. Only a file never read yet has no
 * snapshot, and a look then waits for that first read rather than find nothing.
 *
 * A file that does not exist is parsed as empty text (the file is the list: removed, it lists
 * nobody). A file that exists but cannot be read (permissions, I/O error) keeps the snapshot
 * read before, so a moment's bad mode during an edit never drops a list; with none read before
 * there is no snapshot (NULL) and the caller decides, refusing what the file would allow.
 * Each error is logged once until the file reads again.
 *
 * A replaced snapshot is freed a minute after it was replaced, long after any reader is done
 * with it: readers must not keep a snapshot across calls that may block for long.
 */
#ifndef RIMECAST_WATCHED_H
#define RIMECAST_WATCHED_H

#include <stddef.h>
#include <sys/stat.h>

typedef struct watched watched_t;

typedef struct watched_kind {
    const char *what; /* starts its log lines: "htpasswd", "access file" */
    /* The snapshot of a file's text (text NULL, len 0: the file does not exist); NULL when
     * memory runs out. May log what it found (path for that). */
    void *(*parse)(const char *path, const char *text, size_t len);
    void (*free)(void *snap);
} watched_kind_t;

/* The watched_t of path as kind (kind static), created on first use; NULL on ENOMEM. */
watched_t *watched_get(const char *path, const watched_kind_t *kind);
/* The current snapshot, re-read first if the file changed; NULL if none could be made. */
void *watched_current(watched_t *w);
/* The path it watches. */
const char *watched_path(const watched_t *w);

/* Writers (a program rewriting the file it watches) hold the lock across read-change-write. */
void watched_lock(watched_t *w);
void watched_unlock(watched_t *w);
/* Under the lock: re-reads the file if it changed. The current snapshot into *snap (may be
 * NULL); 0, or -errno when the file could not be read now (*snap then is the one before). */
int watched_reload_locked(watched_t *w, void **snap);
/* Under the lock: snap (the contents just written to the file, whose fstat is st) becomes
 * the current snapshot; it belongs to w from then on (freed at once if memory ran out: the
 * next look reads the file instead). */
void watched_replace_locked(watched_t *w, void *snap, const struct stat *st);

#endif
