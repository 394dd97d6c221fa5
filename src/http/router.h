/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * router: requests that are not a source and not a listener of a live mount: admin commands,
 * status pages (XSLT), playlists, static files, metrics and event streams.
 */
#ifndef RIMECAST_ROUTER_H
#define RIMECAST_ROUTER_H

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* path: the request path, percent-decoded and normalised (starts with '/'). The router owns
 * the connection from here: it answers (conn_send / conn_send_error) and closes or lingers. */
void router_handle(conn_t *c, const http_request_t *req, const char *path);

#endif
