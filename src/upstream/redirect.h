/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect: sending listeners a full server cannot take to a sibling server that has room.
 *
 * Every server publishes its room at GET /room.txt (redirect_room_text). A server with
 * <redirect-siblings> polls each sibling's /room.txt every poll-interval seconds through the
 * fetch thread (never on a worker's path) and, when a new listener finds it full (<clients>
 * or the mount's max-listeners), answers 302 with the sibling's URL and the same request
 * target. A sibling that does not answer (an Icecast server, or one that is down) is never
 * chosen. A master that lists its slaves as siblings redirects to them (Icecast-KH's
 * master-redirect). Nothing here runs for a listener that gets in.
 *
 * Room document (text/plain, one record a line, fields separated by one space):
 *   rimecast-room 1
 *   clients <open connections> <clients limit>
 *   mount <name> <listeners> <max-listeners, -1 = no limit>
 * Listed mounts: live ones and idle on-demand relays, not hidden ones.
 */
#ifndef RIMECAST_REDIRECT_H
#define RIMECAST_REDIRECT_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* Registers the poller (a timer on worker 0); at start-up, before the workers. */
void redirect_register(void);

/* The room document, malloc'd (*len set), or NULL. Any thread. */
char *redirect_room_text(size_t *len);

/* c asked for mount `name` (req) and this server is full: if a sibling polled recently has
 * room for it, a 302 to it is sent (the connection then closes) and 1 returned; else 0 and
 * nothing is sent. Worker thread of c. */
int redirect_listener(conn_t *c, const http_request_t *req, const char *name);

/* Parses a room document into the room left for `mount` (min of the clients room and the
 * mount's); -1 if the mount is not listed or the text is not a room document. For tests. */
long redirect_parse_room(const char *text, size_t len, const char *mount);

#endif
