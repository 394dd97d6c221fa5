/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pgconn: one libpq connection driven with deadlines, for the PostgreSQL backend of
 * the audience store. Connecting and every command are libpq's non-blocking calls waited on
 * with poll(2) until a deadline, the host names looked up within it (audience_pgresolve.h): a
 * database or a resolver that does not answer costs the store's thread that time, never more,
 * and the connection is then dropped (the caller connects again later).
 * Also what may be shown of a libpq URI: the password replaced, wherever it is. Store thread
 * only; no state of its own.
 */
#ifndef RIMECAST_AUDIENCE_PGCONN_H
#define RIMECAST_AUDIENCE_PGCONN_H

#include <stddef.h>

#include <libpq-fe.h>

/* 1 when where names a PostgreSQL database (a libpq URI: postgresql:// or postgres://). */
int audience_pg_is_uri(const char *where);
/* The URI as logs and pages may show it (malloc'd; NULL without memory): the password of its
 * user part and a password= parameter replaced by "***". */
char *audience_pg_shown(const char *uri);

/* What went wrong with a connection or a command. */
typedef struct audience_pg_err {
    char why[256];             /* one line, the password never in it */
    char state[6];             /* the SQLSTATE of a command's error, "" when none */
    int gone;                  /* the connection can no longer be used (lost, or the deadline
                                * passed: then it was cut) */
} audience_pg_err_t;

/* Connects to uri within timeout_ms. The connection, or NULL with err said. */
PGconn *audience_pg_connect(const char *uri, int timeout_ms, audience_pg_err_t *err);

/* Runs a command within timeout_ms: with params == NULL one or more statements as text (the
 * result is the last one's), else one statement with n parameters (texts, NULL for SQL
 * NULL). The result (the caller PQclear()s it) when it succeeded; else NULL with err said. */
PGresult *audience_pg_exec(PGconn *c, const char *sql, int n, const char *const *params,
                           int timeout_ms, audience_pg_err_t *err);

#endif
