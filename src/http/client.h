/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client: an inbound HTTP connection: what an accepted socket becomes. It reads the request
 * head (header-timeout as its deadline), answers malformed heads and timeouts itself, and
 * hands a parsed request to the dispatcher the layer above registered. It also owns the
 * access-log fields and writes the access-log line when the connection ends.
 *
 * A client_t embeds its conn_t first; every accepted connection is a client, so roles above
 * (listener, source, admin, files) reach the HTTP state with client_of(c).
 */
#ifndef RIMECAST_HTTP_CLIENT_H
#define RIMECAST_HTTP_CLIENT_H

#include <stddef.h>

#include "core/record.h"
#include "http/parser.h"
#include "net/conn.h"

typedef struct client {
    conn_t conn;
    http_request_t *req;       /* the request being read or handled; points into conn.rbuf */
    size_t parsed_len;         /* bytes of conn.rbuf the parser has seen; once the head is
                                * complete and dispatched, its length (0: not known) */
    unsigned requests;         /* requests dispatched on this connection (keep-alive) */
    int log_in_head;           /* the request's access-log fields are still only in its head
                                * (req): copied by client_keep_log when needed */
    const char *shoutcast_mount; /* shoutcast-compat socket: its mount (config string) */
    /* access log: the request's fields in one allocation (log_method's: client_set_log_request),
     * the user apart (set by the roles that authenticate) */
    char *log_method, *log_uri, *log_protocol, *log_agent, *log_referer, *log_user;
    int status;
    int over_limit;            /* came past <clients> with siblings configured: its request is
                                * read only to send it to a sibling (302), else 403 */
    char *peer;                /* the socket's address when ip was replaced by a forwarded one
                                * (allocated then; NULL while ip is the socket's) */
    /* called once when the connection ends, before it is freed (a role above: e.g. an
     * authenticated session; c->bytes_sent and c->start are still valid) */
    void (*on_end)(conn_t *c, void *arg);
    void *on_end_arg;
} client_t;

static inline client_t *client_of(conn_t *c)
{
    return (client_t *)c; /* conn is the first member */
}

/* What a parsed request becomes (registered once at start-up by the router): req points into
 * c->rbuf, head_len is the head's length there. shoutcast handles a connection on a
 * shoutcast-compat socket (its first bytes are a password line, not HTTP). */
typedef struct client_handlers {
    void (*request)(conn_t *c, http_request_t *req, size_t head_len);
    void (*shoutcast)(conn_t *c);
    /* may be NULL: 0 refuses a just-accepted connection (403) before its request is read */
    int (*admit)(conn_t *c);
} client_handlers_t;
void client_set_handlers(const client_handlers_t *h);

/* A client for fd on w that came in on lc, with no ops yet and not watched (client_accept
 * makes it read a request; an upgrade gives it the role it had in the process before).
 * NULL without memory (fd is then the caller's). */
client_t *client_new(worker_t *w, int fd, const char *ip, const listen_conf_t *lc);

/* An upgrade (upgrade/): what a connection is as record fields (its id, address, port, start,
 * bytes sent, output not yet written, access-log fields), and a client rebuilt from them on
 * fd in the new process, with the same id, no ops and not watched; NULL, with fd closed, when
 * the fields do not read or without memory. size 0: an accepted connection (client_new, on
 * the listen socket of its port); else an outbound one whose layer embeds the client_t first
 * in a struct of size bytes (zeroed) freed by destroy. */
void client_save(conn_t *c, buf_t *out);
client_t *client_restore(worker_t *w, int fd, rec_reader_t *in, size_t size,
                         void (*destroy)(conn_t *c));

/* An upgrade: the request bytes c holds and its deadline as record fields, and back on a
 * restored connection (0, -EINVAL, -ENOMEM): for the roles below. */
void client_input_save(conn_t *c, buf_t *out);
int client_input_restore(conn_t *c, rec_reader_t *in);

/* An upgrade: a connection waiting for its (next) request, as record fields (the bytes of it
 * read so far, its deadline): 0, or -ENOENT when c is doing something else; and made so
 * again in the new process (restored, not yet watched): 0 or -errno. */
int client_reading_save(conn_t *c, buf_t *out);
int client_reading_adopt(conn_t *c, rec_reader_t *in);

/* The worker accept hook (see worker_set_accept). */
void client_accept(worker_t *w, int fd, const char *ip, const listen_conf_t *lc);

/* Sends a complete error response with a small HTML body (message escaped), then closes
 * gracefully. */
void client_send_error(conn_t *c, int status, const char *message);

/* Sets the access-log fields of the request, method, URI, protocol, agent and referer, to
 * copies of value[i] (len[i] bytes; NULL: none) in one allocation, replacing the ones set.
 * With no method, or without memory, all five are NULL (the request gets no line). */
#define CLIENT_LOG_FIELDS 5
void client_set_log_request(client_t *cl, const char *const value[CLIENT_LOG_FIELDS],
                            const size_t len[CLIENT_LOG_FIELDS]);
/* Records access-log fields from the parsed request (copies). */
void client_capture_request(conn_t *c, const http_request_t *req);
/* A request read is dispatched with its access-log fields left in its head, which stays as
 * it is while it is answered: the line is written from a copy made only then, and an HLS
 * request, whose line is its session's (client_skip_log), never copies them. A role that
 * reads the fields or frees the head (client_drop_request does) has them copied first. */
void client_keep_log(conn_t *c);
/* Writes the access-log line for the request just answered and clears its fields. */
void client_log_request(conn_t *c);
/* The request being answered gets no access-log line of its own (a role that logs it another
 * way: an HLS session's polls go into the session's line). */
void client_skip_log(conn_t *c);

/* Starts reading the next request on a kept-alive connection (bytes already buffered are
 * parsed at once). */
void client_read_next(conn_t *c);

/* Frees the request buffer and parsed request (a role that no longer needs them). */
void client_drop_request(conn_t *c);

#endif
