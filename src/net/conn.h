/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conn: one connection, owned by one worker for its whole life; inbound (accepted) or
 * outbound (net/connect.h). It knows bytes, not protocols: a transport moves them, an ops
 * table says what the connection is doing now (reading a request, streaming, ...).
 *
 * Memory: the layer that creates a connection allocates it (usually embedded first in a larger
 * struct of its own), calls conn_init(), and frees it in its destroy callback. conn_close()
 * never frees at once: the worker destroys closed connections at the end of its loop
 * iteration, so a callback can close its own connection safely. Before destroy, the role's
 * on_close (c->role) releases role data (c->data).
 */
#ifndef RIMECAST_CONN_H
#define RIMECAST_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include "core/list.h"
#include "core/loop.h"

typedef struct worker worker_t;
typedef struct conn conn_t;
typedef struct listen_conf listen_conf_t;

/* How bytes move on a connection: the plain socket, or TLS (net/tls.h). Return values follow the
 * system calls: bytes, 0 at end of input (read), or -1 with errno (EAGAIN when it would block).
 * A transport that keeps input of its own (decrypted bytes the caller had no room for) queues
 * the connection with conn_read_again() so that it is reported readable again. */
typedef struct transport {
    const char *name;
    ssize_t (*read)(conn_t *c, void *buf, size_t len);
    ssize_t (*writev)(conn_t *c, const struct iovec *iov, int iovcnt);
    /* Ends our side of the stream (half-close); reading may go on. A transport with bytes of
     * its own still to send (TLS: a record, close_notify) may not be done when the socket is
     * full: it is called again when the socket is writable (lingering) and once more by
     * conn_close; it does nothing once done. */
    void (*shutdown)(conn_t *c);
    /* Frees per-connection transport state; the fd itself is closed by conn_close(). */
    void (*release)(conn_t *c);
} transport_t;

/* The plain-socket transport. */
extern const transport_t transport_plain;

typedef struct conn_ops {
    const char *name;
    void (*on_readable)(conn_t *c);
    void (*on_writable)(conn_t *c);
    /* Peer hung up (EPOLLHUP/ERR); default: close. */
    void (*on_hangup)(conn_t *c);
    /* The deadline (conn_set_deadline) passed; default: close. */
    void (*on_timeout)(conn_t *c);
    /* Frees role data (c->data); called once, from the worker, after close. Taken from
     * c->role, the ops the role installed, since a closing connection swaps its ops. */
    void (*on_close)(conn_t *c);
    /* Writing a response: when a write of the pending output would block, the deadline is
     * (re)armed to client-timeout if bytes went out since it was last armed, so a peer that
     * stops reading is closed (on_timeout, e.g. conn_send_timeout). */
    int send_deadline;
    /* Non-zero: on_readable reads a request through conn_fill(c, read_ahead) first thing, so
     * the loop may do that read ahead, with others of its turn (net/read_ahead.h). */
    size_t read_ahead;
} conn_ops_t;

/* An address as text (inet_ntop: IPv6 at most 45 characters, and its NUL). */
#define CONN_IP_LEN 46

struct conn {
    loop_handler_t handler;
    const conn_ops_t *ops;
    const conn_ops_t *role; /* ops whose on_close frees c->data */
    const transport_t *transport;
    void *transport_data;
    worker_t *worker;
    /* What a listener's write reads and writes follows, in the first 96 bytes with the
     * transport (a write pass finds it out of the caches and fetches it ahead: stream/fanout.c) */
    int fd;
    unsigned char closing;
    unsigned char counted;    /* holds a slot in server.stats.clients */
    unsigned char carrier;    /* counted, and carried an HLS session's request: counted in
                               * server.stats.session_carriers too, until it is no more
                               * counted (conn_uncount) */
    unsigned char ahead;      /* a read was done ahead for this turn's input event: ahead_res
                               * is its result, its bytes already in rbuf (conn_fill) */
    /* pending small output (a response head or page) */
    char *wbuf;
    size_t wlen, woff;
    uint64_t bytes_sent;
    void (*after_write)(conn_t *c);

    uint64_t id;
    char ip[CONN_IP_LEN];
    /* flags, a byte each (a connection is held per listener), in what would be padding */
    unsigned char tls;        /* bytes travel over TLS (net/tls.h): links given to it say https */
    unsigned char draining;   /* kept by a process that handed over to a new one
                               * (conn_drain_keep) */
    unsigned char read_again; /* queued on the worker's read-again list */
    signed char drained;      /* 1: a plain read came back short, nothing to read until
                               * EPOLLIN; -1: the peer ended its side, read until end of stream */
    int local_port;
    int ahead_res;            /* what conn_fill returns for it (-EINTR: conn_fill reads) */
    int send_outq;            /* bytes in the socket's send queue when the send deadline was
                               * armed (SIOCOUTQ) */
    const listen_conf_t *listen; /* the listen socket it came in on (config), NULL if outbound */
    time_t start;
    uint64_t deadline_ms; /* 0 = none */
    uint64_t heap_at;     /* its place in the worker's deadline heap: deadline_ms, or earlier
                           * when that moved later or was cleared (worker_timers.c) */
    size_t heap_pos;      /* slot in the worker's deadline heap, 0 = none */
    uint64_t send_mark;   /* bytes_sent + 1 when the send deadline was armed, else 0 */
    conn_t *again_next;

    /* input buffer (a request head being read); NULL when not needed */
    char *rbuf;
    size_t rlen, rcap;

    void *data; /* role state */
    void (*connect_done)(conn_t *c, int err); /* outbound, while connecting (net/connect.h) */
    void (*destroy)(conn_t *c); /* frees the connection's memory (its creator's) */

    list_t link; /* in the worker's live connections (conns), once closed in its closed list */
};

/* Initialises c (zeroed by the caller) for fd on worker w with the plain transport, and adds it
 * to the worker's connections. destroy frees c after close. Does not register with epoll. */
void conn_init(conn_t *c, worker_t *w, int fd, const char *ip, int local_port,
               void (*destroy)(conn_t *c));
/* Registers c's fd with its worker's epoll (edge-triggered, in and out). 0 or -errno. */
int conn_watch(conn_t *c);
/* Asks the loop to report c again on its next iteration if it is still readable (a role that
 * stopped reading before EAGAIN, to let others run). 0 or -errno. A transport that buffers
 * input of its own (TLS) reports that itself (conn_read_again). */
int conn_rearm(conn_t *c);
/* Queues c to be reported readable at the end of this loop iteration (a transport that holds
 * input the fd will not signal again). Idempotent; dropped when c closes. */
void conn_read_again(conn_t *c);
/* Marks closed, removes from epoll and closes the fd; release happens later in the worker. */
void conn_close(conn_t *c);
/* Runs the role's on_close, the transport release and destroy (worker only, after close). */
void conn_release(conn_t *c);
/* An upgrade handed c's socket to a new process: c is forgotten without ending (no role's
 * on_close, no shutdown, nothing logged): taken off epoll, its deadline and its worker's lists,
 * its copy of the fd closed. Its memory stays (the process exits after its drain). On its
 * worker's thread, or while that worker is parked. */
void conn_forget(conn_t *c);
/* c no longer holds a slot in server.stats.clients (nor, if it was one, in
 * session_carriers): it is closed, lingers or became a feed. */
void conn_uncount(conn_t *c);
/* c carried an HLS session's request: while it is counted, it and that session hold one slot
 * of <clients> between them. */
void conn_mark_carrier(conn_t *c);

/* An upgrade left c with this process, which serves it until it ends (counted until its
 * release); the number of those still open. */
void conn_drain_keep(conn_t *c);
int conn_drain_left(void);
/* Runs on_readable of the connections queued by conn_read_again (worker only, once per
 * iteration after the events). */
void conn_run_read_again(worker_t *w);

/* Deadline: c->ops->on_timeout runs when it passes. ms from now; 0 clears it. A connection
 * that cannot get a deadline (out of memory) is closed. */
void conn_set_deadline(conn_t *c, uint64_t ms);

/* The one read path of every protocol that reads into the connection's input buffer (a
 * request head, a Shoutcast login, a relay's response head, a master's stream list: nothing
 * else reads into it): one read
 * through the transport into c->rbuf after c->rlen, the buffer grown first (doubling from
 * CONN_READ_CHUNK) so that at least a chunk is free, never beyond `limit` bytes in all.
 * Returns the bytes read (> 0, c->rlen advanced), 0 when the socket has nothing now (EAGAIN),
 * -E2BIG when c->rlen already is limit (the rest stays in the socket), -EPIPE at end of stream,
 * -ENOMEM, or another -errno of the transport. EINTR is retried here. On a plain socket, a
 * read that came back short drained it: 0 without a read until the next input event. */
#define CONN_READ_CHUNK 4096
ssize_t conn_fill(conn_t *c, size_t limit);

/* The read ahead of conn_fill (net/read_ahead.h). conn_may_read_ahead: 1 when an input event
 * (events) on c may be read ahead (its ops read ahead, a plain socket, room below the limit).
 * conn_ahead_room: for such an event, the room conn_fill would read into now (*buf, > 0; the
 * buffer grown as it would), else 0 (no read ahead: the handler reads itself).
 * conn_ahead_done: that read's result (bytes, 0 end of stream, -errno), kept for conn_fill. */
int conn_may_read_ahead(const conn_t *c, uint32_t events);
size_t conn_ahead_room(conn_t *c, uint32_t events, char **buf);
void conn_ahead_done(conn_t *c, int res);
/* The connection a loop handler is, or NULL when it is another kind of handler. */
conn_t *conn_of_handler(loop_handler_t *h);

/* Reads into buf through the transport (see transport_t). */
static inline ssize_t conn_read(conn_t *c, void *buf, size_t len)
{
    return c->transport->read(c, buf, len);
}
static inline ssize_t conn_writev(conn_t *c, const struct iovec *iov, int iovcnt)
{
    return c->transport->writev(c, iov, iovcnt);
}

/* Queues bytes to send (copied) and tries to write them now. When all is written,
 * after_write (if set) runs; NULL after_write means keep the connection as it is. On
 * allocation failure the connection is closed. */
void conn_send(conn_t *c, const char *data, size_t len, void (*after_write)(conn_t *c));
/* The same for the pieces of iov (n of them), written in one writev straight from them when
 * nothing is pending before them: only what the socket does not take is copied. */
void conn_sendv(conn_t *c, const struct iovec *iov, int n, void (*after_write)(conn_t *c));
/* Appends bytes (copied) to the pending output without writing. 0 or -ENOMEM. */
int conn_queue(conn_t *c, const char *data, size_t len);
/* Half-closes and drains input briefly before closing, so the peer reads our last bytes. */
void conn_linger_close(conn_t *c);
/* The same with a short linger (a fraction of a second), for connections refused on arrival:
 * many of them must not hold descriptors for long. */
void conn_refuse_close(conn_t *c);
/* Tries to write the pending wbuf; returns 1 when empty, 0 if blocked, -1 on error (closed). */
int conn_flush_wbuf(conn_t *c);
/* Frees the output buffer once it is fully written (a streaming role keeps none). */
void conn_drop_wbuf(conn_t *c);

/* Ready-made ops members: read and drop whatever the peer sends (closing on EOF or error), and
 * write the pending output then run after_write. */
void conn_discard_input(conn_t *c);
void conn_write_pending(conn_t *c);

/* on_timeout of a connection writing a response that made no progress for client-timeout:
 * logs (rate-limited) and closes. */
void conn_send_timeout(conn_t *c);

/* Ops of a connection writing its last bytes: input drained, pending output written. */
extern const conn_ops_t conn_writing_ops;

#endif
