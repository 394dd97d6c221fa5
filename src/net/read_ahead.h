/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * read_ahead: the request reads of one loop turn entered into the kernel at once. When a turn's
 * events make several connections readable that wait for a request (their ops' read_ahead),
 * each one's read into its input buffer goes to the worker's io_uring and all are entered in
 * one system call, before the handlers run; conn_fill then hands each handler its read's
 * result instead of reading. Built without liburing, or where the kernel refuses a ring, the
 * handlers read as before. The data path of a listener (a block written to many) is untouched.
 */
#ifndef RIMECAST_READ_AHEAD_H
#define RIMECAST_READ_AHEAD_H

#include <sys/epoll.h>

#include "net/worker.h"

/* Reads ahead for the connections of ev[0..n) that qualify, when at least two do (one read is
 * no cheaper through a ring). Worker thread; before the events' handlers run. */
void read_ahead_turn(worker_t *w, const struct epoll_event *ev, int n);
/* Frees w's ring (the worker's loop ended). */
void read_ahead_free(worker_t *w);

#endif
