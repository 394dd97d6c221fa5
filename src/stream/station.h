/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * station: what a mount's settings ask for when its source comes and goes: the <dump-file>
 * recording (stream/dump.c) and the <on-connect>/<on-disconnect> scripts (core/spawn.c), run
 * with the mount name as their only argument, as Icecast does. Called by the source on its
 * worker; every slow part (files, processes) happens on other threads.
 */
#ifndef RIMECAST_STATION_H
#define RIMECAST_STATION_H

typedef struct mount mount_t;
typedef struct dump dump_t;

/* The source of m is live (before its first block): starts the recording and on-connect.
 * Returns the recording to hand back to station_source_ended (NULL: none). */
dump_t *station_source_started(mount_t *m);
/* The source left, after mount_end(m): ends the recording and runs on-disconnect. */
void station_source_ended(mount_t *m, dump_t *dump);
/* Shutdown, after the workers stopped: finishes the recordings and the scripts. */
void station_shutdown(void);

#endif
