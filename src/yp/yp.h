/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * yp: listing public mounts in YP directories (<directory>), as Icecast 2.4 does: "add" once a
 * source has streamed for the directory's add-delay, "touch" (listeners, title) every
 * TouchFreq the directory asked for (else touch-interval), "remove" when the source ends or
 * stops being public. Answers: YPResponse: 1 is success, SID names the entry for touch and
 * remove, YPMessage is logged. A failure backs off (touch-interval, doubling, at most an hour).
 *
 * Its own thread wakes once a second, reads the mounts (stream/mount.h) and the config
 * snapshot, and hands requests to the HTTP client thread (http/fetch.h): a directory that is
 * slow or down never delays streaming or admin. yp_start() at start-up after the fetch
 * thread, yp_stop() before it stops.
 */
#ifndef RIMECAST_YP_H
#define RIMECAST_YP_H

#include <stdint.h>

#include "core/buf.h"
#include "core/record.h"

/* Starts the directory thread. 0 or -errno. */
int yp_start(void);
/* Stops the thread: entries still listed get a "remove" (queued; sent if the fetch thread
 * gets to it before it stops) and everything is freed. */
void yp_stop(void);

/* Upgrade, old side: every listing (directory, mount, source start, SID, touch interval, time
 * until its next request, back-off) appended to out as a record of `type`. From then on the
 * directory thread sends nothing until yp_resume (the hand-over failed: it goes on as before)
 * or yp_abandon (the new process took over). */
void yp_save(buf_t *out, uint16_t type);
void yp_resume(void);
/* The thread stopped and the listings forgotten without a "remove": the new process goes on
 * touching them. Nothing is listed from this process again. */
void yp_abandon(void);
/* Upgrade, new side, before yp_start: one listing yp_save wrote, touched on at its pace under
 * its SID while its mount has the same source (else removed as any listing whose source
 * ended). 0, or -1 on a record that does not read. */
int yp_restore(rec_reader_t *in);

#endif
