/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_backend: what a database behind the audience store provides, as a table of
 * functions the store's thread (audience_store.c) calls, and the open database they share.
 * One table per backend: SQLite (audience_sqlite.c, a file) and PostgreSQL (audience_pg.c,
 * a libpq URI, shared by the servers of a network). Everything here runs on the store's
 * thread only. Inside src/audience/ only.
 */
#ifndef RIMECAST_AUDIENCE_BACKEND_H
#define RIMECAST_AUDIENCE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "audience/audience.h"
#include "audience/audience_record.h"
#include "audience/audience_top.h"

typedef struct audience_backend audience_backend_t;
struct audience_export; /* audience_export.h */
struct audience_ads_query; /* audience_ads.h */

/* An open store (audience_store.h names it audience_db_t for the jobs run on it). */
typedef struct audience_db audience_db_t;
struct audience_db {
    const audience_backend_t *be;
    char *where;               /* the file's path, or the URI as configured */
    char *shown;               /* where, as logs and pages may show it (no password) */
    void *impl;                /* the backend's own state */
};

/* What a write of a batch came to. */
typedef enum audience_write {
    AUDIENCE_WRITE_DONE,       /* *written of them written, the rest lost (why says why) */
    AUDIENCE_WRITE_AWAY,       /* the database cannot be reached: none written, keep them */
} audience_write_t;

struct audience_backend {
    const char *name;          /* "SQLite", "PostgreSQL" */
    const char *pruned;        /* what prune removes, for the log: "ended" (over N days ago) */
    /* Opens db->where (db->impl set); quiet: the same store opened again, said only when it
     * fails. 0, or -errno with the error log told why. A backend that can be away may
     * return 0 and connect later. */
    int (*open)(audience_db_t *db, int quiet);
    void (*close)(audience_db_t *db);
    /* Writes the n records of v in order. */
    audience_write_t (*write)(audience_db_t *db, audience_record_t *const *v, size_t n,
                              size_t *written, char *why, size_t cap);
    /* Removes what ended more than days ago (days > 0); the records removed, -1 on failure.
     * *more: 1 when there is more to remove (called again a second later). */
    int64_t (*prune)(audience_db_t *db, int days, int *more);
    /* The figures and the top lists (audience.h, audience_top.h). */
    void (*figures)(audience_db_t *db, audience_query_t *q);
    void (*top)(audience_db_t *db, audience_top_t *t);
    /* The next chunk of x's sessions (audience_export.h): rows after x's cursor, which it
     * moves on. */
    void (*sessions)(audience_db_t *db, struct audience_export *x);
    /* The ads figures (audience_ads.h). write() takes ad decisions' records too (e->ad). */
    void (*ads)(audience_db_t *db, struct audience_ads_query *q);
    /* Optional: 0 when the database cannot be reached now (records are then kept, not
     * written); without it, always 1. */
    int (*ready)(audience_db_t *db);
    /* Optional: called on each turn of the thread, with the monotonic time; returns the
     * monotonic time it wants to be called again at the latest (0: no wish). */
    uint64_t (*tick)(audience_db_t *db, uint64_t now_ms);
};

extern const audience_backend_t audience_sqlite_backend;
extern const audience_backend_t audience_pg_backend;

#endif
