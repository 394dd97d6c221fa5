/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_backlog: the records the store's thread holds until its database takes them, in
 * the order they ended: first those in the spool (audience_spool.h), then those in memory.
 * A database that is away (audience_backend.h: ready 0, or a write answering AWAY) keeps
 * them: in memory up to AUDIENCE_HOLD_MAX records or AUDIENCE_HOLD_MS, then all in the spool,
 * which takes the ones that follow too (the order kept) until it is written out; past
 * <spool-size> they are lost.
 * Once the database answers, the spool is written first, a few batches a turn, then memory.
 * Each record gets its id here, once (audience_record_t.uid: a random 64-bit prefix drawn at
 * start-up and a counter), so that writing it again after a failure or a restart does not
 * count it twice. Every change of state is one line in the error log. Store thread only.
 */
#ifndef RIMECAST_AUDIENCE_BACKLOG_H
#define RIMECAST_AUDIENCE_BACKLOG_H

#include <stddef.h>
#include <stdint.h>

#include "audience/audience_backend.h"
#include "audience/audience_spool.h"

#define AUDIENCE_HOLD_MAX 4096     /* records held in memory for an away database */
#define AUDIENCE_HOLD_MS 5000      /* ... while it has been away for less than this */

typedef struct audience_tally {
    uint64_t written, lost, spooled; /* records written, lost, put in the spool */
    char why[200];             /* why the last ones were lost */
} audience_tally_t;

typedef struct audience_backlog {
    audience_record_t *head, **tail; /* in memory, after those of the spool */
    size_t n;
    audience_spool_t spool;    /* opened when first needed, or at start when one is left */
    int spooling;              /* the spool takes what follows (said when it began) */
    int full;                  /* the spool was full (said) */
    int replaying;             /* writing the spool out (said) */
    uint64_t away_since;       /* monotonic ms: the database took nothing since; 0: it does */
    char *logdir;              /* where the spool is */
    int left_held;             /* a spool left there is another process's still */
    uint8_t prefix[8];         /* of the records' ids */
    uint64_t seq;
} audience_backlog_t;

/* Ready for records; a spool an earlier run left in logdir is opened and counted. */
void audience_backlog_init(audience_backlog_t *b, const char *logdir);
/* Frees what is in memory (the caller spilled what it wanted kept) and closes the spool. */
void audience_backlog_fini(audience_backlog_t *b);

/* The new records (a list, oldest first; taken) behind those that wait, each given its id. */
void audience_backlog_add(audience_backlog_t *b, audience_record_t *list);
/* Writes what waits to db (NULL: no store, everything lost), at most batches batches of
 * batch records. 1 when more waits that db would take now, else 0. */
int audience_backlog_write(audience_backlog_t *b, audience_db_t *db, size_t batch,
                           int batches, long spool_max, audience_tally_t *t);
/* For a database that is away: the records in memory go to the spool when there are more
 * than AUDIENCE_HOLD_MAX, or all of them with all (the server stops). */
void audience_backlog_spill(audience_backlog_t *b, audience_db_t *db, int all, long spool_max,
                            audience_tally_t *t);
/* Records in memory, and in the spool. */
size_t audience_backlog_held(const audience_backlog_t *b);
uint64_t audience_backlog_spooled(const audience_backlog_t *b);

#endif
