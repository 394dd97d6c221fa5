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

/* Starts the directory thread. 0 or -errno. */
int yp_start(void);
/* Stops the thread: entries still listed get a "remove" (queued; sent if the fetch thread
 * gets to it before it stops) and everything is freed. */
void yp_stop(void);

#endif
