/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dispatch: what a connection becomes once its request head is parsed: a source (PUT,
 * SOURCE), a listener (GET/HEAD on a live mount), a CORS preflight answer, or a request for the
 * router (admin, status pages, files). Shoutcast-compat sockets go to the Shoutcast login.
 * Registered with the HTTP client layer at start-up; the top of the call graph.
 */
#ifndef RIMECAST_DISPATCH_H
#define RIMECAST_DISPATCH_H

/* Installs the dispatcher as the HTTP client handlers and registers the stream roles' worker
 * modules (fan-out, source timeouts) and the accept hook. Before workers are created. */
void dispatch_init(void);

#endif
