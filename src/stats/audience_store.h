/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_store: every ended listener session (stream/session.h) kept in an embedded SQLite
 * database (<audience><database>, default audience.db under <logdir>; "none": no store), so
 * that the audience figures survive restarts and reloads.
 *
 * The store has a thread of its own: the session sink only copies a record into a bounded
 * queue (a worker never touches SQLite); the thread inserts what waits in one transaction
 * (WAL journal). A full queue drops records, counted and said in the error log (rate-limited).
 * The database is opened by the thread, after privileges were dropped, and reopened when a
 * reload names another file. Schema: table sessions, indexes (mount, start_ms) and (start_ms).
 */
#ifndef RIMECAST_AUDIENCE_STORE_H
#define RIMECAST_AUDIENCE_STORE_H

#include <stdint.h>

#include "core/buf.h"

typedef struct sqlite3 sqlite3;

#define AUDIENCE_QUEUE_MAX 8192   /* records waiting for the thread at most */

/* Starts the thread and registers the session sink. 0 or -errno (then sessions are only
 * logged). Call once the server runs as its final user. */
int audience_store_start(void);
/* Wakes the thread to follow a reload (another <audience><database>, or "none"). */
void audience_store_reload(void);
/* Unregisters the sink, writes what still waits and closes the database; after the workers
 * stopped. Safe if never started. */
void audience_store_stop(void);

/* Runs fn(db, arg) on the store's thread, after the records queued before it are written;
 * db is NULL when there is no database (none configured, or it could not be opened).
 * -ENOMEM (fn not run), -ESHUTDOWN if the store is not running, else 0. Any thread. */
int audience_store_run(void (*fn)(sqlite3 *db, void *arg), void *arg);

/* The SQL that creates the store's table and index (if not there) in WAL mode. */
const char *audience_store_schema(void);

/* Records stored and records dropped (queue full, or the database could not be written) since
 * start-up. */
uint64_t audience_store_written(void);
uint64_t audience_store_dropped(void);
/* The two as /metrics counter families (rimecast_audience_records_stored_total, _lost_total). */
void audience_store_metrics(buf_t *o);

#endif
