/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * source: a connection that feeds a mount (HTTP PUT, legacy SOURCE, Shoutcast v1 login).
 * It authenticates, creates the mount, runs bytes through the format handler into blocks and
 * ends the mount when it leaves or times out (source-timeout).
 */
#ifndef RIMECAST_SOURCE_H
#define RIMECAST_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/record.h"

typedef struct conn conn_t;
typedef struct http_request http_request_t;
typedef struct worker worker_t;

/* Handles a PUT/SOURCE request on c for the mount in the request path; head_len is the length
 * of the request head in c->rbuf (bytes after it are stream data). */
void source_start(conn_t *c, const http_request_t *req, size_t head_len);
/* Registers the per-worker source-timeout timer (start-up, before workers are created). */
void source_register(void);

/* For the other source logins (stream/shoutcast.c): */
typedef struct config config_t;
typedef struct mount_conf mount_conf_t;
/* 1 if user/pass are the source credentials of the mount (mc may be NULL: global ones). */
int source_check_password(const config_t *cfg, const mount_conf_t *mc, const char *user,
                          const char *pass);
/* Creates the mount and switches c to the source role; `response` is sent first (NULL for
 * none) and leftover bytes after the head are ingested. 0, or an HTTP status to fail with
 * (then call source_abort before answering). */
int source_become(conn_t *c, const http_request_t *req, const char *mount_name,
                  const char *response, const char *leftover, size_t leftover_len);
/* For relays (upstream/relay.c): like source_become with no response, but the mount belongs to
 * the relay and outlives the connection, so listeners stay through a reconnect. When *mount is
 * NULL the mount is created from the upstream's headers in req and a new reference is stored
 * in *mount for the caller; else the connection feeds *mount (whose stream info stays that of
 * the first connection). The source never ends the mount: the relay does, with
 * source_end_mount(). 0, or an HTTP status (then source_abort). */
typedef struct mount mount_t;
int source_become_relay(conn_t *c, const http_request_t *req, const char *mount_name,
                        mount_t **mount, const char *leftover, size_t leftover_len);
/* The same for an upgrade's local feed (upgrade/, through upstream/relay.c): c feeds mount,
 * a mount of this process that the new one now serves, quietly: no source events, recording,
 * on-connect or on-disconnect script, fallback-override or URL authentication mount_add: the
 * new process does those for the station. */
int source_become_feed(conn_t *c, const http_request_t *req, mount_t *mount,
                       const char *leftover, size_t leftover_len);
/* Ends a mount as a leaving source does: its configured <fallback-mount> (if live) takes the
 * listeners, then mount_end(). The caller keeps its reference. */
void source_end_mount(mount_t *m);
/* Undoes a failed source_become (the connection is left to answer or close). */
void source_abort(conn_t *c);

/* An upgrade (stream/handover.h). source_save writes what c is as a source (its mount's
 * name, its place in a chunked body, its recording's file, its format handler's state) as
 * record fields: 0, or
 * -ENOTSUP when c is no source that can be carried (a format whose state cannot be saved);
 * a relay's connection is saved so too, its relay by upstream/relay.c. source_adopt makes c (restored, not yet watched) the source of the
 * mount find(name, arg) returns (borrowed; its feed names c already) from such fields, with
 * no announcement (no events, scripts or recording: it never left): 0, or -EINVAL / -ENOMEM
 * (c has the source role by then whenever its state was allocated: closing it cleans up). */
int source_save(conn_t *c, buf_t *out);
/* The old process of an upgrade, once the new one took over (workers stopped): every
 * recording written to its last published byte and closed, for the new process to append. */
void source_end_recordings(void);
int source_adopt(conn_t *c, rec_reader_t *in, mount_t *(*find)(const char *name, void *arg),
                 void *arg);

#endif
