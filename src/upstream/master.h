/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * master: the slave side of Icecast's master/slave relaying. Every <master-update-interval>
 * it fetches /admin/streamlist.txt from <master-server>:<master-server-port> with
 * <master-username>/<master-password>, starts a relay (upstream/relay.h) for every listed mount
 * it does not relay yet and stops those no longer listed. A failed fetch changes nothing.
 * Lines name mounts on the master: a full URL is taken only when it is the master's own (same
 * scheme, host as written, port); any other line, or one naming a URL the server answers
 * itself, is refused and logged once while it stays listed.
 * Runs on worker 0's thread only (a timer of its own there).
 */
#ifndef RIMECAST_MASTER_H
#define RIMECAST_MASTER_H

#include <stddef.h>
#include <stdint.h>

typedef struct worker worker_t;

#define MASTER_TICK_MS 200 /* how often worker 0 looks whether a fetch is due */

/* Registers the poller as a worker module: a timer on worker 0 starts a fetch when one is
 * due; its state is freed with worker 0. At start-up, before the workers. */
void master_register(void);

#define MASTER_PARSE_MAX_NAME 512

/* A line of the stream list (without its newline; a trailing CR is the caller's to cut) as
 * the mount path to relay: "/name" or "http[s]://host:port/name" gives "/name". NULL when the
 * line is no clean mount path (empty, "/", longer than MASTER_PARSE_MAX_NAME, control bytes or
 * blanks, not in normal form). A new string, freed by the caller. Any thread. */
char *master_parse_name(const char *line, size_t len);

#endif
