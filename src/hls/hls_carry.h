/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_carry: the HLS layer's part of an upgrade (upgrade/): the windows of a carried mount
 * (hls_carry.c) and the HLS requests in flight (hls_playlists.c: blocking reloads and pieces
 * parked until their part exists, segments and parts being sent) as record fields, and
 * rebuilt from them in the new process before its workers run. The session table is
 * hls_sessions_save / hls_sessions_restore (hls.h). The record types, the sockets and the
 * order are upgrade/'s: a mount's windows are read after the mount and before its sessions
 * and the connections.
 */
#ifndef RIMECAST_HLS_CARRY_H
#define RIMECAST_HLS_CARRY_H

#include "core/block.h"
#include "core/buf.h"
#include "core/record.h"
#include "stream/handover.h"

typedef struct conn conn_t;
typedef struct mount mount_t;

/* Save (workers parked): the oldest block of m's queue one of the windows following m lists
 * (borrowed), or NULL when none does: the mount's queue is carried from there at least. */
const block_t *hls_carry_oldest(mount_t *m);
/* Save: the windows following m, their segments and parts, as record fields (metadata ids
 * from t). */
void hls_carry_save(mount_t *m, handover_metas_t *t, buf_t *out);
/* Restore: those windows, following m (its carried queue not yet settled: it still reaches
 * back to the oldest block they list). 0, or -EINVAL when the fields do not read; a window
 * whose parts are not found in the carried blocks is dropped (logged), and made again when
 * asked for, as after a restart. */
int hls_carry_restore(mount_t *m, rec_reader_t *in, const handover_metas_t *t);

/* Save: an HLS request in flight on c (a parked blocking reload or piece, a segment or part
 * being sent) as record fields after c's client fields: 0, or -ENOENT when c is not one. */
int hls_playlists_carry_save(conn_t *c, buf_t *out);
/* Restore: c (a restored client, not yet watched) takes up that request again: a piece being
 * sent goes on with its bytes not yet written, a waiting request waits again on the carried
 * window (or is answered at once on its worker's first turn). 0 or -errno. */
int hls_playlists_carry_adopt(conn_t *c, rec_reader_t *in);

#endif
