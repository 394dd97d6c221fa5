/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pg: the PostgreSQL backend of the audience store (audience_backend.h), for a
 * network of servers sharing one database (<audience><database> a libpq URI). Its state and
 * what its files share: audience_pg.c connects (again, after a back-off, when the database was
 * away), creates and migrates the schema (a version table), makes the day partitions of the
 * sessions table ahead, writes batches (each record once: its id is unique), drops the
 * partitions <retention-days> leaves behind and publishes this server's sessions going on;
 * audience_pg_figures.c makes the figures and the top lists by SQL in the database. Store
 * thread only; inside src/audience/ only.
 */
#ifndef RIMECAST_AUDIENCE_PG_H
#define RIMECAST_AUDIENCE_PG_H

#include <stdint.h>

#include "audience/audience_backend.h"
#include "audience/audience_pgconn.h"

#define AUDIENCE_PG_DAY_MS 86400000LL
#define AUDIENCE_PG_PARTITION_LOCK "7236120937" /* pg_advisory_xact_lock key of partitions */
#define AUDIENCE_PG_HOUR_MS 3600000LL
/* A live session another server published counts while its row is younger than this (each
 * server publishes its own every AUDIENCE_PG_LIVE_EVERY_MS). */
#define AUDIENCE_PG_LIVE_EVERY_MS 30000
#define AUDIENCE_PG_LIVE_STALE_MS (3 * AUDIENCE_PG_LIVE_EVERY_MS)

/* The servers with sessions in a kept bucket, as an ask found them (fp: the bucket's
 * fingerprint then; "" when the bucket is not kept). */
typedef struct audience_pg_memo {
    int64_t from, to;
    char fp[48];
    char **names;
    size_t n;
    int known;                 /* while an ask runs: read from what was remembered */
    size_t todo;               /* while an ask runs: its number among those looked up (1...) */
} audience_pg_memo_t;

typedef struct audience_pg {
    PGconn *conn;              /* NULL: away (or not reached yet) */
    int reached;               /* it was reached once since the store was opened */
    int away_said;             /* that it cannot be used was said (until it answers again) */
    int backoff_ms;            /* before the next try */
    uint64_t retry_at;         /* monotonic: the next try to connect */
    uint64_t next_partitions, next_live, next_ahead;
    /* figures made ahead, a turn at a time: the servers whose turn is to come (ahead.servers
     * from ahead_next), the days made so far and when the first turn began */
    audience_query_t ahead;
    size_t ahead_next;
    int ahead_made, ahead_theirs;
    uint64_t ahead_t0;
    audience_pg_memo_t *memo;  /* the servers of the last ask's kept buckets */
    size_t nmemo;
    int tries;                 /* of the batch that keeps failing (not for being away) */
    audience_pg_err_t err;     /* the last failure */
} audience_pg_t;

extern const audience_backend_t audience_pg_backend;

/* Runs a command on db's connection (audience_pg_exec); when the connection is gone it is
 * closed (the next tick connects again) and the change said in the error log. NULL when there
 * is no connection or the command failed (p->err says why). */
PGresult *audience_pg_run(audience_db_t *db, const char *sql, int n,
                          const char *const *params, int timeout_ms);
/* Replaces this server's rows of sessions going on with the qualified ones now. 0 or -1. */
int audience_pg_publish_live(audience_db_t *db, int qualify_s, int anonymize);

/* The figures and the top lists (audience_pg_figures.c). */
void audience_pg_figures(audience_db_t *db, audience_query_t *q);
/* The figures of q, this server's sessions going on as last published, and with servers
 * the servers with sessions in the period (q->servers; a kept bucket's remembered from the
 * ask before while its hours are unchanged); the buckets made (those not read from the
 * cache). */
int audience_pg_make_figures(audience_db_t *db, audience_query_t *q, int servers);
void audience_pg_memo_free(audience_pg_t *p);
void audience_pg_top(audience_db_t *db, audience_top_t *t);
/* The next chunk of x's sessions (audience_export.h; audience_pg_export.c). */
struct audience_export;
void audience_pg_sessions(audience_db_t *db, struct audience_export *x);

/* Ad decisions (audience_pg_ads.c): the migration that makes their table (version 7), a
 * write of n of them (e->ad set; 0, or -1 with p->err saying why) and the ads figures. */
extern const char audience_pg_ads_migration[];
int audience_pg_ads_write(audience_db_t *db, audience_record_t *const *v, size_t n);
struct audience_ads_query;
void audience_pg_ads_figures(audience_db_t *db, struct audience_ads_query *q);

#endif
