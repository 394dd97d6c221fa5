/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * playlist: generated playlists for live mounts: /<mount>.m3u, /<mount>.pls and
 * /<mount>.xspf, pointing at http://<Host header><mount> (or <hostname>:<port> when the Host
 * header is absent or not a plain host[:port]); https:// for a client that came over TLS. Static files of the same name win: the router
 * asks here only when there is none. Text from sources is cleaned (no line breaks in .pls,
 * escaped in .xspf).
 */
#ifndef RIMECAST_PLAYLIST_H
#define RIMECAST_PLAYLIST_H

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* If path names a playlist of a live mount, answers it and returns 1; else returns 0 and
 * leaves the connection alone. */
int playlist_try(conn_t *c, const http_request_t *req, const char *path);

#endif
