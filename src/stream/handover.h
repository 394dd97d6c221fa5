/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * handover: the stream layer's part of an upgrade (upgrade/): mounts (their queue of blocks,
 * codec headers, description, tags, title, counters) and listeners (their place in the
 * queue, ICY countdown and title last sent) as record fields, and rebuilt from them in the
 * new process. The record types, the sockets and the order are upgrade/'s; sources are
 * source_save / source_adopt (stream/source.h).
 *
 * ICY metadata is shared between blocks and listeners: it is written once per distinct value
 * (handover_metas_t gives each an id) so that what listeners compare by pointer stays equal.
 * Save side: the workers are stopped at a safe point (nothing changes meanwhile). Restore
 * side: before the new process's workers run.
 */
#ifndef RIMECAST_HANDOVER_H
#define RIMECAST_HANDOVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/buf.h"
#include "core/record.h"

typedef struct conn conn_t;
typedef struct mount mount_t;
typedef struct worker worker_t;

typedef struct handover_metas {
    icy_meta_t **v; /* save: borrowed; restore: owned references */
    size_t n, cap;
} handover_metas_t;

/* Save: the id of m (0 for NULL), added to the table on first use. */
uint32_t handover_meta_id(handover_metas_t *t, icy_meta_t *m);
/* Save: the fields of the i-th metadata of the table (one record each). */
void handover_meta_save(const handover_metas_t *t, size_t i, buf_t *out);
/* Restore: the metadata of id (0 or an unknown id: NULL; borrowed from the table). */
icy_meta_t *handover_meta_of(const handover_metas_t *t, uint32_t id);
/* Restore: one metadata record, given the next id. 0 or -EINVAL / -ENOMEM. */
int handover_meta_load(handover_metas_t *t, rec_reader_t *in);
/* Frees the table (restore: drops its references). */
void handover_metas_free(handover_metas_t *t, int owned);

/* Save: block b and those after it (up to `count` of them; 0: to the end of its chain), with
 * their offsets, flags and metadata ids. */
void handover_chain_save(const block_t *b, uint32_t count, handover_metas_t *t, buf_t *out);
/* Restore: such a chain, linked (the first block's reference is the caller's; *last its last
 * block), or NULL: none, or on error (in->error set, or *bad: offsets not contiguous, no
 * memory). */
block_t *handover_chain_load(rec_reader_t *in, const handover_metas_t *t, block_t **last,
                             int *bad);

/* Why m cannot be carried (a mount with no source connection: a file's), or NULL. */
const char *handover_mount_unmovable(mount_t *m);
/* Save: m's fields, its blocks from `from` (the oldest any carried listener is on or an HLS
 * window lists, which may be older than m's oldest; NULL: m's oldest) to the live edge. */
void handover_mount_save(mount_t *m, const block_t *from, handover_metas_t *t, buf_t *out);
/* Restore: a mount registered whole from such fields, fed by the connection the fields name
 * on worker_of(old worker id). The queue starts at its first carried block until
 * handover_mount_settle(m, *queue_start). A new reference, or NULL (err says why). */
mount_t *handover_mount_restore(rec_reader_t *in, const handover_metas_t *t,
                                worker_t *(*worker_of)(int old_id), uint64_t *queue_start,
                                const char **err);
/* Restore: once the listeners hold their blocks, the queue is trimmed back to where it began
 * in the old process (queue_start). */
void handover_mount_settle(mount_t *m, uint64_t queue_start);

/* Save: c's listener fields (with its htpasswd session): 0, or -ENOTSUP when c is no listener
 * that can be carried (a feed, or a login that cannot be written). */
int handover_listener_save(conn_t *c, handover_metas_t *t, buf_t *out);
/* Save: does c's record carry its ad break (REC_LISTENER_AD: a binary that does not know it
 * passes the listener over rather than cut an ad short)? */
int handover_listener_carries_break(conn_t *c);
/* The old process, once the new one took c over: c forgotten without ending (a listener taken
 * out of its mount's fan-out first; net/conn.h conn_forget). Its worker parked. */
void handover_forget(conn_t *c);
/* The block a carried listener is on (save side: to carry blocks from the oldest one). */
const block_t *handover_listener_block(conn_t *c);
/* Restore: c (a restored client, not yet watched) becomes the listener the fields describe,
 * on the mount find(name, arg) returns (borrowed). 0, or -EINVAL / -ENOMEM (c is then left
 * without a role). */
int handover_listener_restore(conn_t *c, rec_reader_t *in, const handover_metas_t *t,
                              mount_t *(*find)(const char *name, void *arg), void *arg);

#endif
