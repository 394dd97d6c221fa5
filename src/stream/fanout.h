/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fanout: the listener hot path's driver. Each worker keeps one subscription per mount with
 * the list of its listeners on it (stream/sub.h); a pass (the worker's pass hook, requested by
 * the write-window tick or, in low-latency mode, by the producer's wake-up) writes new data to
 * them. A pass over a big audience runs in slices and yields to the event loop in between.
 *
 * Worker thread only, except fanout_register() (start-up, before workers are created).
 */
#ifndef RIMECAST_FANOUT_H
#define RIMECAST_FANOUT_H

/* Registers the fan-out as a worker module (pass hook, write-window timer). */
void fanout_register(void);

#endif
