/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_live: the sessions going on now, for the audience figures on the SQLite
 * store (audience_sqlite_figures.c): a
 * temporary table temp.live (mount, start_ms, end_ms, ip, user_agent, country, preroll: the
 * columns of the store's sessions, end_ms now) that a query reads beside the stored ones.
 * Only the qualified ones are there: a session that may still end short is not one yet.
 * Store thread; the sessions are copied under the list's lock (which the workers' joins and
 * leaves wait for) and written to SQLite after it is released.
 */
#ifndef RIMECAST_AUDIENCE_LIVE_H
#define RIMECAST_AUDIENCE_LIVE_H

typedef struct sqlite3 sqlite3;

/* Fills temp.live (made when missing) with the sessions going on that lasted qualify_s
 * seconds, their addresses as the store keeps them (anonymize: their network). 0, -ENOMEM or
 * -EIO. */
int audience_live_snapshot(sqlite3 *db, int qualify_s, int anonymize);
/* Empties temp.live. */
void audience_live_clear(sqlite3 *db);

#endif
