/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * master: the slave side of Icecast's master/slave relaying. Every <master-update-interval>
 * it fetches /admin/streamlist.txt from <master-server>:<master-server-port> with
 * <master-username>/<master-password>, starts a relay (stream/relay.h) for every listed mount
 * it does not relay yet and stops those no longer listed. A failed fetch changes nothing.
 * Runs on worker 0's thread only (called from the relay module's tick).
 */
#ifndef RIMECAST_MASTER_H
#define RIMECAST_MASTER_H

#include <stdint.h>

typedef struct worker worker_t;

/* Starts a fetch when one is due (worker 0, every relay tick). */
void master_tick(worker_t *w, uint64_t now_ms);
/* Frees the poller's state (worker 0's module fini). */
void master_fini(void);

#endif
