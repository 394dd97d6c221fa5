/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect: sending new listeners to sibling servers (<redirect-siblings>): when this server is
 * full, to a sibling with room; with <redirect-share> under 100, once it is past that share of
 * its limits, to the sibling with the most room among those less loaded than itself.
 *
 * Every server publishes its load at GET /room.txt (redirect_room_text). A server with siblings
 * polls each sibling's /room.txt every poll-interval seconds through the fetch thread (never on
 * a worker's path). A sibling that does not answer 200 with a room document (an Icecast server,
 * one that is down, starting or stopping) is never chosen. A redirect carries sibling-redirect=1
 * in its query, and a request that carries it is never redirected again; nor is one that logs
 * in as the relay user (a slave relaying from its master). Nothing here runs for a listener of
 * a server that has no siblings, and only a load check for one that is not past its share.
 *
 * Room document (text/plain, one record a line, fields separated by one space; answered with
 * 503 instead of 200 while the server is not serving):
 *   rimecast-room 1
 *   clients <open connections, HLS sessions included> <clients limit>
 *   listeners <listeners of all mounts> <<limits><max-listeners>, -1 = no limit>
 *   state <serving|starting|stopping>
 *   mount <name> <listeners> <max-listeners, -1 = no limit>
 * Listed mounts: live ones and idle on-demand relays, not hidden ones. Readers skip lines they
 * do not know (the state and listeners lines are later additions: a document without them is
 * a serving server's with no server-wide listener limit).
 */
#ifndef RIMECAST_REDIRECT_H
#define RIMECAST_REDIRECT_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* The query parameter a redirect adds; a request that has it is never redirected. */
#define REDIRECT_MARK "sibling-redirect"

/* A server's load as it bears on one mount: each count beside its limit (a limit below 0:
 * none). Counts read from a sibling are clamped (never negative, never near LONG_MAX). */
typedef struct redirect_load {
    long clients, clients_max;     /* connections and HLS sessions, <limits><clients> */
    long listeners, listeners_max; /* listeners of every mount, <limits><max-listeners> */
    long mount, mount_max;         /* the mount's listeners, its max-listeners */
    int serving;                   /* 0: the server says it is starting or stopping */
} redirect_load_t;

/* Registers the poller (a timer on worker 0); at start-up, before the workers. */
void redirect_register(void);

/* The room document, malloc'd (*len set), or NULL. Any thread. */
char *redirect_room_text(size_t *len);

/* This server's load now for mount `mount` (live, or an idle on-demand relay's; NULL: only the
 * server-wide counts, the mount's unlimited). Any thread. */
void redirect_load_here(const char *mount, redirect_load_t *out);

/* The largest share of a limit the load uses, in parts per million (0: no limits); a limit of 0
 * counts as full. */
long redirect_load_ppm(const redirect_load_t *l);

/* The room the load leaves: the smallest of its limits' (LONG_MAX: no limits). */
long redirect_load_room(const redirect_load_t *l);

/* What redirect_admit is asked to do (may be or'ed). */
enum {
    REDIRECT_FULL = 1,   /* this server is full for the mount: a sibling with room */
    REDIRECT_SPREAD = 2, /* past <redirect-share> (or stopping), not full: a less loaded one */
};

/* The admission step of a new listener of mount `name` (req on c) that involves siblings.
 * REDIRECT_FULL: the caller found the server full. REDIRECT_SPREAD: the load decides (a full
 * server is left to the caller's own full path, unless REDIRECT_FULL is or'ed in: the server
 * may be full too). When a sibling is chosen, a 302 to it (same request target, marked) is
 * sent, the connection then closes, and 1 is returned; else 0 and nothing is sent. Worker
 * thread of c. */
int redirect_admit(conn_t *c, const http_request_t *req, const char *name, int modes);

/* redirect_admit(c, req, name, REDIRECT_FULL): this server is full for `name`. */
int redirect_listener(conn_t *c, const http_request_t *req, const char *name);

/* Parses a room document for `mount` into *out: 0, or -1 if the text is not a room document,
 * has no clients line or does not list the mount. Untrusted text. */
int redirect_parse_load(const char *text, size_t len, const char *mount, redirect_load_t *out);

/* Parses a room document into the room left for `mount` (redirect_load_room); -1 if the mount
 * is not listed or the text is not a room document. For tests. */
long redirect_parse_room(const char *text, size_t len, const char *mount);

#endif
