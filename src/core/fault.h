/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault: failure points for tests, built only with ./configure --enable-fault-injection
 * (RIMECAST_FAULT_INJECTION in config.h). RIMECAST_FAULT="point:N[,point:N]" in the
 * environment, read once at start-up (fault_init), makes the Nth pass through a point fail as
 * if the call made there had run out of memory (a hold point: wait there a while); later
 * passes go through again.
 * In any other build FAULT() is the constant 0 and nothing of this is compiled: no cost on any
 * path. Points are few and named where they fail: never put one in a per-write path.
 */
#ifndef RIMECAST_FAULT_H
#define RIMECAST_FAULT_H

#include <stddef.h>

#include "build-config.h"

typedef enum fault_point {
    FAULT_LISTENER_HEAD,   /* stream/listener.c: queueing a new listener's response head */
    FAULT_MOUNT_PUBLISHED, /* stream/mount.c: a mount just registered (a hold, not a failure) */
    FAULT_UPGRADE_TAKEOVER, /* upgrade/upgrade.c: the new process dies before it confirms */
    FAULT_UPGRADE_VERSION,  /* upgrade/upgrade.c: the state read as of another format version */
    FAULT_SERVER_STARTING,  /* main.c: start-up's end, workers running (a hold, not a failure) */
    FAULT_READ_AHEAD_RING,  /* net/read_ahead.c: the kernel refuses a worker's io_uring (EPERM) */
    FAULT_POINTS
} fault_point_t;

/* A hold point's armed pass sleeps this long on the thread that reached it (a window another
 * thread must not be able to see into), then goes on. */
#define FAULT_HOLD_MS 1500

#ifdef RIMECAST_FAULT_INJECTION
/* Arms the points named in spec (RIMECAST_FAULT's value; NULL or "" arms none). 0, or
 * -EINVAL with a message in err (len bytes) for an unknown point or a count that is not 1 or
 * more. Before any thread that reaches a point starts. */
int fault_init(const char *spec, char *err, size_t len);
/* 1 when this pass through p is the armed one (p then fails), else 0. Any thread. */
int fault_hit(fault_point_t p);
/* The names of all points, space-separated (for --version). */
const char *fault_point_names(void);
#define FAULT(p) fault_hit(p)
/* The hold points: FAULT_HOLD_MS of sleep on the armed pass. */
void fault_hold(fault_point_t p);
#define FAULT_HOLD(p) fault_hold(p)
#else
#define FAULT(p) 0
#define FAULT_HOLD(p) ((void)0)
#endif

#endif
