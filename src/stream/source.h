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

typedef struct conn conn_t;
typedef struct http_request http_request_t;
typedef struct worker worker_t;

/* Handles a PUT/SOURCE request on c for the mount in the request path; head_len is the length
 * of the request head in c->rbuf (bytes after it are stream data). */
void source_start(conn_t *c, const http_request_t *req, size_t head_len);
/* Handles a Shoutcast v1 login on a shoutcast-compat socket (password line, then headers). */
void source_start_shoutcast(conn_t *c);
/* Drops sources idle for longer than their source-timeout (worker housekeeping). */
void source_check_timeouts(worker_t *w, uint64_t now_ms);

#endif
