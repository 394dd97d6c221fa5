/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_route: answering a mount's HLS URLs: <mount>/hls.m3u8 (the media playlist, blocking
 * reloads included) and the segments and parts under <mount>/hls/.
 */
#ifndef RIMECAST_HLS_ROUTE_H
#define RIMECAST_HLS_ROUTE_H

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* If path (decoded, normalised, alias applied) is an HLS URL of a live mount, answers it (or
 * parks it) and returns 1; else 0 and c is untouched. The request is read once, here, into
 * the value the HLS answers receive (hls_route_internal.h); nothing in src/hls/ decodes req's
 * path again. */
int hls_route(conn_t *c, const http_request_t *req, const char *path);
/* 1 if path has the form of an HLS URL (a playlist, segment, part, init or intro URL of some
 * mount name), live or not. */
int hls_route_names(const char *path);
/* If path (decoded, normalised) is a mount's playlist URL (<mount>/hls.m3u8) and req's query
 * has no session token (a player's first request, which a full server may send to a
 * sibling): the mount's name, copied into name (HTTP_MAX_URI + 1 bytes); else NULL. */
const char *hls_route_first_playlist(const http_request_t *req, const char *path, char *name);

#endif
