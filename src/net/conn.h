/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conn: one client connection, owned by one worker for its whole life.
 *
 * A connection's behaviour is the ops table it points to: reading the request head, writing a
 * short response, lingering before close, then (after dispatch) source or listener ops. The
 * read buffer exists only while a head is being read. conn_close() never frees at once: the
 * worker releases closed connections at the end of its loop iteration, so a callback can close
 * its own connection safely. Access-log fields are captured at dispatch and logged on release.
 */
#ifndef RIMECAST_CONN_H
#define RIMECAST_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>

#include "core/loop.h"
#include "http/parser.h"

typedef struct worker worker_t;
typedef struct conn conn_t;
typedef struct listen_conf listen_conf_t;

typedef struct conn_ops {
    const char *name;
    void (*on_readable)(conn_t *c);
    void (*on_writable)(conn_t *c);
    /* Peer hung up (EPOLLRDHUP/HUP/ERR); default: close. */
    void (*on_hangup)(conn_t *c);
    /* Frees role data (c->data); called once, from the worker, after close. Taken from
     * c->role, the ops the role installed, since a closing connection swaps its ops. */
    void (*release)(conn_t *c);
} conn_ops_t;

typedef enum { CONN_KIND_CLIENT, CONN_KIND_LISTENER, CONN_KIND_SOURCE } conn_kind_t;

struct conn {
    loop_handler_t handler;
    const conn_ops_t *ops;
    const conn_ops_t *role; /* listener/source ops whose release frees c->data */
    worker_t *worker;
    int fd;
    uint64_t id;
    conn_kind_t kind;
    char ip[64];
    int local_port;
    const char *shoutcast_mount; /* set for a shoutcast-compat socket (points into config) */
    time_t start;
    uint64_t deadline_ms;        /* for the worker's timeout list, 0 = none */
    int closing;
    unsigned requests;           /* requests dispatched on this connection (keep-alive) */

    /* request head being read */
    char *rbuf;
    size_t rlen, rcap, parsed_len;
    http_request_t *req;

    /* pending small response (head or error page) */
    char *wbuf;
    size_t wlen, woff;
    void (*after_write)(conn_t *c);

    /* access log */
    char *log_method, *log_uri, *log_protocol, *log_agent, *log_referer, *log_user;
    int status;
    uint64_t bytes_sent;

    void *data; /* role state: source_t *, listener_t * */

    conn_t *prev, *next;   /* worker's list of all connections */
    conn_t *tprev, *tnext; /* worker's timeout list (ordered by deadline) */
};

/* Creates a connection for an accepted fd and starts reading the request head. */
conn_t *conn_new(worker_t *w, int fd, const char *ip, int local_port,
                 const char *shoutcast_mount);
/* Marks closed, removes from epoll and closes the fd; release happens later in the worker. */
void conn_close(conn_t *c);
/* Frees everything (worker only, after close). Writes the access-log line. */
void conn_release(conn_t *c);

/* Queues bytes to send (copied) and tries to write them now. When all is written,
 * after_write (if set) runs; NULL after_write means keep the connection as it is. */
void conn_send(conn_t *c, const char *data, size_t len, void (*after_write)(conn_t *c));
/* Appends bytes (copied) to the pending response without writing. 0 or -ENOMEM. */
int conn_queue(conn_t *c, const char *data, size_t len);
/* Sends a complete response with a short text/html body for an error, then closes gracefully. */
void conn_send_error(conn_t *c, int status, const char *message);
/* Half-closes and drains input briefly before closing, so the peer reads our response. */
void conn_linger_close(conn_t *c);
/* Tries to write the pending wbuf; returns 1 when empty, 0 if blocked, -1 on error (closed). */
int conn_flush_wbuf(conn_t *c);

/* Ready-made ops members: read and drop whatever the peer sends (closing on EOF or error), and
 * write the pending response then run after_write. */
void conn_discard_input(conn_t *c);
void conn_write_pending(conn_t *c);

/* Records access-log fields from the parsed request (copies). */
void conn_capture_request(conn_t *c, const http_request_t *req);

/* The ops of a connection reading its request head (exported for the shoutcast login). */
extern const conn_ops_t conn_reading_ops;

#endif
