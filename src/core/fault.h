/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault: failure points for tests, built only with ./configure --enable-fault-injection
 * (RIMECAST_FAULT_INJECTION in config.h). RIMECAST_FAULT="point:N[,point:N]" in the
 * environment, read once at start-up (fault_init), makes the Nth pass through a point fail as
 * if the call made there had run out of memory; later passes succeed again.
 * In any other build FAULT() is the constant 0 and nothing of this is compiled: no cost on any
 * path. Points are few and named where they fail: never put one in a per-write path.
 */
#ifndef RIMECAST_FAULT_H
#define RIMECAST_FAULT_H

#include <stddef.h>

#include "config.h"

typedef enum fault_point {
    FAULT_LISTENER_HEAD, /* stream/listener.c: queueing a new listener's response head */
    FAULT_POINTS
} fault_point_t;

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
#else
#define FAULT(p) 0
#endif

#endif
