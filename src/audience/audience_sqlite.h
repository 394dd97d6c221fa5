/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sqlite: the SQLite backend of the audience store (audience_backend.h): one file
 * (<audience><database>, default audience.db under <logdir>), table sessions in WAL mode,
 * indexes (mount, start_ms) and (start_ms). The figures are made in one pass over the
 * period's sessions read by one indexed query (audience_sqlite_figures.c), the top lists by
 * SQL (audience_top.c). Store thread only; the functions below take the sqlite3 handle so
 * that a test can run them on a database in memory.
 */
#ifndef RIMECAST_AUDIENCE_SQLITE_H
#define RIMECAST_AUDIENCE_SQLITE_H

#include "audience/audience.h"
#include "audience/audience_top.h"

typedef struct sqlite3 sqlite3;

/* The SQL that creates the store's table and indexes (if not there) in WAL mode. */
const char *audience_sqlite_schema(void);
/* Fills q's answer from db (NULL: -ENODEV), the sessions going on now included. */
void audience_sqlite_figures(sqlite3 *db, audience_query_t *q);
/* Fills t's answer from db (NULL: -ENODEV). */
void audience_sqlite_top(sqlite3 *db, audience_top_t *t);
/* The next chunk of x's sessions from db (audience_export.h; NULL: -ENODEV). */
struct audience_export;
void audience_sqlite_sessions(sqlite3 *db, struct audience_export *x);

/* ---- audience_sqlite_ads.c: ad decisions (audience_ads.h) in table ads ---- */
typedef struct sqlite3_stmt sqlite3_stmt;
struct audience_ads_query;
struct audience_record;
/* The SQL that creates the ads table and its index (if not there). */
const char *audience_sqlite_ads_schema(void);
/* Prepares the insert of an ad decision's rows on db; SQLITE_OK or an SQLite error. */
int audience_sqlite_ads_prepare(sqlite3 *db, sqlite3_stmt **insert);
/* Inserts e's rows (one per ad placed, one for a decision without); a row already there (the
 * same record id) is left as it is. 0 or -EIO. */
int audience_sqlite_ads_insert(sqlite3_stmt *insert, const struct audience_record *e);
/* Removes the decisions asked before before_ms; how many rows, -1 on failure. */
int64_t audience_sqlite_ads_prune(sqlite3 *db, int64_t before_ms);
/* Fills q's answer from db (NULL: -ENODEV). */
void audience_sqlite_ads_figures(sqlite3 *db, struct audience_ads_query *q);

#endif
