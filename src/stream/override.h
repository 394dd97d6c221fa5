/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * override: <fallback-override>: the listeners that asked for a mount and sit on a fallback
 * come back when its source returns.
 */
#ifndef RIMECAST_OVERRIDE_H
#define RIMECAST_OVERRIDE_H

typedef struct mount mount_t;
typedef struct worker worker_t;

/* A source started on m (on worker w's thread). With <fallback-override>, every listener
 * that asked for m (or whose chain now resolves to m first) and sits on another mount, on
 * any worker, moves back to m (unless m's authentication refuses it). Each worker moves only
 * its own listeners. */
void override_source_started(worker_t *w, mount_t *m);

#endif
