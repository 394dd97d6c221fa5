/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_store: every ended listener session (stream/session.h) kept in a database
 * (<audience><database>: an SQLite file, default audience.db under <logdir>, or a libpq URI
 * naming the PostgreSQL database a network's servers share; "none": no store), so that the
 * audience figures survive restarts and reloads. The database is a backend behind one
 * interface (audience_backend.h).
 *
 * Listeners' ad decisions (ads/ads_record.h) take the same road, as records of their own.
 * The store has a thread of its own: the session sink only copies a record into a bounded
 * queue (a worker never touches the database); the thread writes what waits in one
 * transaction, or keeps it while the database is away (audience_backlog.h: memory, then the
 * spool). A full queue drops records, counted and said in the error log (rate-limited).
 * The database is opened by the thread, after privileges were dropped, and opened again when
 * a reload names another one. Queries (the figures, the top lists) run on the thread too.
 */
#ifndef RIMECAST_AUDIENCE_STORE_H
#define RIMECAST_AUDIENCE_STORE_H

#include <stdint.h>

#include "audience/audience.h"
#include "audience/audience_top.h"
#include "core/buf.h"

#define AUDIENCE_QUEUE_MAX 8192   /* records waiting for the thread at most */

/* An open store, whatever its backend. */
typedef struct audience_db audience_db_t;

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
int audience_store_run(void (*fn)(audience_db_t *db, void *arg), void *arg);

/* On the store's thread (in a function given to audience_store_run): the figures of q, and
 * the top list of t, from db (NULL: -ENODEV in their err). */
void audience_store_figures(audience_db_t *db, audience_query_t *q);
void audience_store_top(audience_db_t *db, audience_top_t *t);
/* The ads figures of q (audience_ads.h), likewise. */
struct audience_ads_query;
void audience_store_ads(audience_db_t *db, struct audience_ads_query *q);

/* The name this server's records carry: <audience><server-name>, else <hostname>. Any
 * thread. */
const char *audience_store_server_name(void);

/* Records stored and records dropped (queue full, or the database could not be written) since
 * start-up. */
uint64_t audience_store_written(void);
uint64_t audience_store_dropped(void);
/* The store's /metrics families: records written (rimecast_audience_records_written_total),
 * lost (_lost_total), waiting in memory (_queued) and in the spool (_spooled), put in the
 * spool (_spooled_total), and whether the database takes records (_database_up). */
void audience_store_metrics(buf_t *o);

#endif
