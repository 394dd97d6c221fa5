/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reply: the small response helpers every non-stream answer shares: one complete reply with
 * keep-alive when the client wants it (HTTP/1.1 without "Connection: close", HTTP/1.0 with
 * "Connection: keep-alive", no body), after which the connection goes back to reading its
 * next request.
 */
#ifndef RIMECAST_REPLY_H
#define RIMECAST_REPLY_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct conn_ops conn_ops_t;
typedef struct http_request http_request_t;

/* 1 if the connection may be kept for another request after this one's response. */
int reply_keepalive_wanted(const http_request_t *req);

/* Builds a response head like response_head(), with "Connection: keep-alive" when keep is
 * set. Returns the length or 0 if it did not fit. */
size_t reply_head(char *buf, size_t cap, int keep, int status, const char *ctype,
                  long long content_length, const char *extra);

/* Sends a complete response (body left out for HEAD; Content-Length always set), then keeps
 * the connection (reply_keepalive_wanted) or closes it gracefully. Must be the last thing a
 * handler does with req: with keep-alive, the next request may be parsed into it at once. */
void reply_send(conn_t *c, const http_request_t *req, int status, const char *ctype,
                const char *body, size_t len, const char *extra);

/* after_write callback: the response is complete; log it and read the next request. */
void reply_next_request(conn_t *c);

/* Ops of a connection writing a response: writes the pending buffer and runs after_write;
 * input is left in the socket for the next request. */
extern const conn_ops_t reply_sending_ops;

/* Headers of every dynamic answer (admin, status pages): no caching, as Icecast sends. */
#define REPLY_NO_CACHE \
    "Cache-Control: no-cache, no-store\r\nExpires: Mon, 26 Jul 1997 05:00:00 GMT\r\n" \
    "Pragma: no-cache\r\n"

/* An upgrade: a complete answer still being written (its bytes are the connection's pending
 * output, client_save carries them) as record fields: whether the connection is kept alive
 * after it, the request it answers; 0, or -ENOENT when c is doing something else. And made
 * so again in the new process (restored, not yet watched): 0 or -errno. */
typedef struct buf buf_t;
typedef struct rec_reader rec_reader_t;
int reply_save(conn_t *c, buf_t *out);
int reply_adopt(conn_t *c, rec_reader_t *in);

#endif
