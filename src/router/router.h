/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * router: requests that are not a source and not a listener of a live mount: admin commands,
 * status pages (XSLT), playlists, static files, metrics and event streams; and which names
 * belong to the server rather than to mounts.
 */
#ifndef RIMECAST_ROUTER_H
#define RIMECAST_ROUTER_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* path: the request path, percent-decoded and normalised (starts with '/'). The router owns
 * the connection from here: it answers (conn_send / client_send_error) and closes or lingers. */
void router_handle(conn_t *c, const http_request_t *req, const char *path);

/* 1 if the server answers path itself (admin URLs, *.xsl pages, /metrics, the front page):
 * such a path is never looked up as a mount. */
int router_owns(const char *path);

/* Why no mount may be named `name` (decoded, normalised), or NULL if one may: a name the
 * server answers itself, a file served from the webroot (unless file_mount: a webroot file
 * played as a file mount), or control characters. The one check for every way a mount comes
 * to exist (stream/mount.h mount_set_name_check), and what a GET serves before any mount. */
const char *router_refuses_mount(const char *name, int file_mount);

#endif
