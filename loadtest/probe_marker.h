/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The latency marker of the load tools: 8 bytes of magic, then the time it was written
 * (CLOCK_MONOTONIC, ns, host byte order). swarm's probe source writes it, writev_floor --marker
 * opens each pass's chunk with it, and swarm's timed listeners look for it in what they read.
 */
#ifndef RIMECAST_LOADTEST_PROBE_MARKER_H
#define RIMECAST_LOADTEST_PROBE_MARKER_H

#define PROBE_MAGIC "\xa5RCLAT\x5a\xc3"
#define MARKER_LEN 16

#endif
