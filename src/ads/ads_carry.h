/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_carry: a listener's ads across an upgrade (docs/UPGRADE.md, docs/ADS.md). The old
 * process writes the ads a listener has still to hear (each one's id, creative URL, title,
 * length, tracking URLs) as record fields; the new one reads them back without their creatives
 * and fetches each again when its turn comes (kept by URL, as any creative), checked to be the
 * same length in the mount's format. The stream layer carries where the listener is in them
 * and which events fired (stream/adbreak.c). The tracking URLs waiting for a retry go over too
 * (beacon.c).
 */
#ifndef RIMECAST_ADS_CARRY_H
#define RIMECAST_ADS_CARRY_H

#include <stdint.h>

#include "ads/ads.h"
#include "core/buf.h"
#include "core/record.h"

/* Save: pod's ads from `from` on, and its allow_private (an ad of a loaded pod whose creative
 * is not back yet is written as it was loaded). 0, or -ENOTSUP when one of them has no
 * creative URL to fetch it again by: then nothing was written. */
int ads_pod_save(const ads_pod_t *pod, int from, buf_t *out);
/* Restore: such a pod, its creatives NULL until ads_refetch brings them (a->creative; the
 * title and length they had in a->carried_title, a->carried_bytes); NULL on a malformed record
 * (in->error set) or without memory. */
ads_pod_t *ads_pod_load(rec_reader_t *in);

/* The creative of a loaded pod's ad i, fetched again (or kept): done runs once on worker w
 * (the caller's thread) with a new reference, or NULL when it cannot be had, is not in format
 * fmt or is not the length it had (Ogg: under a serial other than fmt's, ads_ogg.h). owner and
 * tag are handed back. */
typedef void (*ads_refetch_fn)(worker_t *w, uint64_t owner, uint64_t tag, ads_creative_t *c);
void ads_refetch(worker_t *w, const ads_pod_t *pod, int i, const ads_format_t *fmt,
                 unsigned timeout_ms, uint64_t owner, uint64_t tag, ads_refetch_fn done);

/* The tracking and error URLs waiting to be tried again (beacon.c), for an upgrade: the old
 * process writes them (each URL, whether it may reach internal addresses, its tries so far and
 * the time until its next), and forgets them once the new process took the state; the new one
 * reads them into its own retry list (bounded as any retry: those past the bound are dropped
 * and counted). ads_beacons_waiting: how many wait. Load: how many were taken, or -1 on a
 * malformed record (in->error set; those read before it are kept). */
unsigned ads_beacons_waiting(void);
void ads_beacons_save(buf_t *out);
int ads_beacons_load(rec_reader_t *in);
void ads_beacons_forget(void);

#endif
