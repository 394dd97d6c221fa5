/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics: the live counters in the Prometheus text exposition format (version 0.0.4), for
 * GET /metrics: server gauges and counters, and per mount (label mount="...", hidden mounts
 * included) listeners (all and HLS), peak, slow listeners, bytes received and sent (all and
 * HLS), stream start time, and whether a source feeds it (also 0 for a mount the config names
 * that has none). Label values are escaped as the format requires. docs/METRICS.md lists every
 * family. Access control is the router's job.
 */
#ifndef RIMECAST_METRICS_H
#define RIMECAST_METRICS_H

#include <stddef.h>

/* Returns the exposition text (malloc'd, *len bytes) or NULL on ENOMEM. */
char *metrics_render(size_t *len);

#endif
