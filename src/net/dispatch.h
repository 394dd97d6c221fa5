/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dispatch: what a connection becomes once its request head is parsed: a source (PUT,
 * SOURCE), a listener (GET/HEAD on a live mount), a CORS preflight answer, or a request for the
 * router (admin, status pages, files). Shoutcast-compat sockets go to the Shoutcast login.
 */
#ifndef RIMECAST_DISPATCH_H
#define RIMECAST_DISPATCH_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* req points into c->rbuf; head_len is the head's length there. */
void dispatch_request(conn_t *c, http_request_t *req, size_t head_len);
void dispatch_shoutcast(conn_t *c);

#endif
