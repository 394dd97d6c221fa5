/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_live: the sessions going on, as the audience figures read them (see
 * audience_live.h).
 */
#include "audience/audience_live.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cidr.h"
#include "stream/session.h"

/* The sessions going on now are copied into a temporary table for each query (with the
 * addresses as the store keeps them); the figures read the stored and the live ones as one.
 * Only those already qualified count: a session that may still end short is not one yet. */
static const char live_sql[] =
    "CREATE TEMP TABLE IF NOT EXISTS live (mount TEXT NOT NULL, start_ms INTEGER NOT NULL,"
    " end_ms INTEGER NOT NULL, ip TEXT NOT NULL, user_agent TEXT, country TEXT,"
    " preroll INTEGER NOT NULL);"
    "DELETE FROM temp.live;";
static const char live_insert_sql[] =
    "INSERT INTO temp.live VALUES (?,?,?,?,?,?,?)";

/* The sessions going on, copied under the list's lock (which joins and leaves on the workers
 * wait for) and written to SQLite after it is released. */
typedef struct live_row {
    session_record_t r;
    char ip[CIDR_SHOWN_MAX];
    char cc[8];
    char *mount, *agent;
} live_row_t;

typedef struct live_copy {
    live_row_t *v;
    size_t n, cap;
    int64_t qualify_ms;
    int truncate;
    int err;
} live_copy_t;

static void copy_live(const session_record_t *r, void *arg)
{
    live_copy_t *lc = arg;
    if (lc->err || r->end_ms - r->start_ms < lc->qualify_ms)
        return;
    if (lc->n == lc->cap) {
        size_t ncap = lc->cap ? lc->cap * 2 : 64;
        live_row_t *v = realloc(lc->v, ncap * sizeof(*v));
        if (!v) {
            lc->err = -ENOMEM;
            return;
        }
        lc->v = v;
        lc->cap = ncap;
    }
    live_row_t *e = &lc->v[lc->n];
    *e = (live_row_t){.r = *r, .mount = strdup(r->mount ? r->mount : ""),
                      .agent = r->agent ? strdup(r->agent) : NULL};
    session_address(r->address, lc->truncate, e->ip, sizeof(e->ip));
    snprintf(e->cc, sizeof(e->cc), "%s", r->country ? r->country : "");
    lc->n++;
    if (!e->mount || (r->agent && !e->agent))
        lc->err = -ENOMEM;
}

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int insert_live(sqlite3_stmt *s, const live_row_t *e)
{
    sqlite3_reset(s);
    bind_text_or_null(s, 1, e->mount);
    sqlite3_bind_int64(s, 2, e->r.start_ms);
    sqlite3_bind_int64(s, 3, e->r.end_ms);
    bind_text_or_null(s, 4, e->ip);
    bind_text_or_null(s, 5, e->agent);
    bind_text_or_null(s, 6, e->cc[0] ? e->cc : NULL);
    sqlite3_bind_int(s, 7, e->r.preroll);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
}

int audience_live_snapshot(sqlite3 *db, int qualify_s, int anonymize)
{
    live_copy_t lc = {.qualify_ms = (int64_t)qualify_s * 1000, .truncate = anonymize};
    sqlite3_stmt *ins = NULL;
    session_live_each(copy_live, &lc);
    int err = lc.err;
    if (!err && (sqlite3_exec(db, live_sql, NULL, NULL, NULL) != SQLITE_OK ||
                 sqlite3_prepare_v2(db, live_insert_sql, -1, &ins, NULL) != SQLITE_OK))
        err = -EIO;
    for (size_t i = 0; i < lc.n; i++) {
        if (!err)
            err = insert_live(ins, &lc.v[i]);
        free(lc.v[i].mount);
        free(lc.v[i].agent);
    }
    free(lc.v);
    sqlite3_finalize(ins);
    return err;
}

void audience_live_clear(sqlite3 *db)
{
    sqlite3_exec(db, "DELETE FROM temp.live", NULL, NULL, NULL);
}
