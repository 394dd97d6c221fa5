/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * reply: one complete answer to a request (see reply.h).
 */
#include "http/reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>

#include "core/record.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"

static int value_has_token(const http_header_t *h, const char *token)
{
    size_t k = strlen(token);
    for (size_t i = 0; h && i + k <= h->value_len; i++)
        if (strncasecmp(h->value + i, token, k) == 0)
            return 1;
    return 0;
}

int reply_keepalive_wanted(const http_request_t *req)
{
    if (http_find_header(req, "content-length") || http_find_header(req, "transfer-encoding"))
        return 0; /* we never read request bodies */
    if (req->is_ice || req->version_major != 1)
        return 0;
    const http_header_t *h = http_find_header(req, "connection");
    if (req->version_minor >= 1)
        return !value_has_token(h, "close");
    return value_has_token(h, "keep-alive");
}

size_t reply_head(char *buf, size_t cap, int keep, int status, const char *ctype,
                   long long content_length, const char *extra)
{
    return response_head_kept(buf, cap, keep, status, ctype, content_length, extra);
}

const conn_ops_t reply_sending_ops = {
    .name = "responding",
    .on_readable = NULL, /* a pipelined request stays in the socket until we read it */
    .on_writable = conn_write_pending,
    .on_timeout = conn_send_timeout,
    .send_deadline = 1,
};

void reply_next_request(conn_t *c)
{
    client_read_next(c);
}

void reply_send(conn_t *c, const http_request_t *req, int status, const char *ctype,
                  const char *body, size_t len, const char *extra)
{
    int keep = reply_keepalive_wanted(req);
    int head_only = req->method == HTTP_METHOD_HEAD;
    char head[4096];
    size_t hlen = reply_head(head, sizeof(head), keep, status, ctype, (long long)len, extra);
    if (hlen == 0) {
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    client_of(c)->status = status;
    c->ops = &reply_sending_ops;
    /* head and body in one writev, copied only if the socket does not take them */
    struct iovec iov[2] = {{head, hlen}, {(void *)body, len}};
    conn_sendv(c, iov, head_only || len == 0 ? 1 : 2,
               keep ? reply_next_request : conn_linger_close);
}

/* ---- an upgrade: an answer being written goes on in the new process ---- */

int reply_save(conn_t *c, buf_t *out)
{
    int keep = c->after_write == reply_next_request;
    if (c->ops != &reply_sending_ops || c->role || c->closing || c->tls ||
        (!keep && c->after_write != conn_linger_close))
        return -ENOENT;
    rec_u8(out, (uint8_t)keep);
    client_input_save(c, out); /* the request: the next one follows it */
    return 0;
}

int reply_adopt(conn_t *c, rec_reader_t *in)
{
    int keep = rec_get_u8(in);
    int rc = client_input_restore(c, in);
    if (rc == 0) {
        c->ops = &reply_sending_ops;
        c->after_write = keep ? reply_next_request : conn_linger_close;
    }
    return rc;
}
