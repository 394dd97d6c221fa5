/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conn: connection lifecycle, reading the request head, small responses and lingering close
 * (see conn.h). Dispatch of a parsed request lives in dispatch.c.
 */
#include "net/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/str.h"
#include "http/response.h"
#include "net/dispatch.h"
#include "net/worker.h"
#include "server.h"

#define CONN_READ_CHUNK 4096
#define CONN_LINGER_MS 2000

static void reading_on_readable(conn_t *c);

const conn_ops_t conn_reading_ops = {
    .name = "reading",
    .on_readable = reading_on_readable,
    .on_writable = conn_write_pending,
};

conn_t *conn_new(worker_t *w, int fd, const char *ip, int local_port, const char *sc_mount)
{
    conn_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->worker = w;
    c->fd = fd;
    c->id = worker_next_conn_id();
    c->kind = CONN_KIND_CLIENT;
    snprintf(c->ip, sizeof(c->ip), "%s", ip);
    c->local_port = local_port;
    c->shoutcast_mount = sc_mount;
    c->start = time(NULL);
    c->ops = &conn_reading_ops;
    c->next = w->conns;
    if (w->conns)
        w->conns->prev = c;
    w->conns = c;
    atomic_fetch_add(&server.stats.clients, 1);
    atomic_fetch_add(&server.stats.connections, 1);
    int timeout = server_config()->header_timeout;
    worker_timeout_add(w, c, loop_now_ms() + (uint64_t)timeout * 1000u);
    return c;
}

void conn_close(conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    worker_t *w = c->worker;
    worker_timeout_remove(w, c);
    if (c->fd >= 0) {
        loop_del(w->epfd, c->fd);
        close(c->fd);
        c->fd = -1;
    }
    /* move from the live list to the closed list */
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = NULL;
    c->next = w->closed;
    w->closed = c;
}

void conn_release(conn_t *c)
{
    if (c->role && c->role->release)
        c->role->release(c);
    if (c->log_method) {
        log_access_entry_t e = {
            .ip = c->ip, .user = c->log_user, .start = c->start, .method = c->log_method,
            .uri = c->log_uri, .protocol = c->log_protocol, .status = c->status,
            .bytes = c->bytes_sent, .referer = c->log_referer, .agent = c->log_agent,
        };
        log_access(&e);
    }
    atomic_fetch_sub(&server.stats.clients, 1);
    free(c->rbuf);
    free(c->req);
    free(c->wbuf);
    free(c->log_method);
    free(c->log_uri);
    free(c->log_protocol);
    free(c->log_agent);
    free(c->log_referer);
    free(c->log_user);
    free(c);
}

int conn_flush_wbuf(conn_t *c)
{
    while (c->woff < c->wlen) {
        ssize_t n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            conn_close(c);
            return -1;
        }
        c->woff += (size_t)n;
        c->bytes_sent += (uint64_t)n;
    }
    c->woff = c->wlen = 0;
    return 1;
}

int conn_queue(conn_t *c, const char *data, size_t len)
{
    if (c->woff == c->wlen)
        c->woff = c->wlen = 0;
    char *nb = realloc(c->wbuf, c->wlen + len);
    if (!nb)
        return -ENOMEM;
    memcpy(nb + c->wlen, data, len);
    c->wbuf = nb;
    c->wlen += len;
    return 0;
}

void conn_write_pending(conn_t *c)
{
    if (c->woff >= c->wlen)
        return;
    if (conn_flush_wbuf(c) == 1 && c->after_write) {
        void (*fn)(conn_t *) = c->after_write;
        c->after_write = NULL;
        fn(c);
    }
}

void conn_send(conn_t *c, const char *data, size_t len, void (*after_write)(conn_t *c))
{
    if (conn_queue(c, data, len) < 0) {
        conn_close(c);
        return;
    }
    c->after_write = after_write;
    conn_write_pending(c);
}

/* ---- graceful close: half-close, drain, then close ---- */

void conn_discard_input(conn_t *c)
{
    char scratch[4096];
    for (;;) {
        ssize_t n = read(c->fd, scratch, sizeof(scratch));
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        conn_close(c);
        return;
    }
}

static const conn_ops_t linger_ops = {
    .name = "linger",
    .on_readable = conn_discard_input,
    .on_writable = NULL,
};

/* Writing a final response: input is drained and ignored. */
static const conn_ops_t writing_ops = {
    .name = "writing",
    .on_readable = conn_discard_input,
    .on_writable = conn_write_pending,
};

static void start_linger(conn_t *c)
{
    if (c->closing)
        return;
    shutdown(c->fd, SHUT_WR);
    c->ops = &linger_ops;
    worker_timeout_remove(c->worker, c);
    worker_timeout_add(c->worker, c, loop_now_ms() + CONN_LINGER_MS);
    conn_discard_input(c);
}

void conn_linger_close(conn_t *c)
{
    if (c->closing)
        return;
    if (c->woff < c->wlen) {
        c->after_write = start_linger;
        return;
    }
    start_linger(c);
}

void conn_send_error(conn_t *c, int status, const char *message)
{
    size_t len;
    char *resp = response_error(status, message, &len);
    c->status = status;
    if (!resp) {
        conn_close(c);
        return;
    }
    c->ops = &writing_ops;
    conn_send(c, resp, len, start_linger);
    free(resp);
}

void conn_capture_request(conn_t *c, const http_request_t *req)
{
    free(c->log_method);
    free(c->log_uri);
    free(c->log_protocol);
    free(c->log_agent);
    free(c->log_referer);
    c->log_method = str_ndup(req->method_str, req->method_len);
    c->log_uri = str_ndup(req->uri, req->uri_len);
    char proto[32];
    snprintf(proto, sizeof(proto), "%s/%d.%d", req->is_ice ? "ICE" : "HTTP", req->version_major,
             req->version_minor);
    c->log_protocol = strdup(proto);
    c->log_agent = http_header_dup(req, "user-agent");
    c->log_referer = http_header_dup(req, "referer");
}

/* ---- reading the request head ---- */

/* For the access log of a request that did not parse: the raw words of its first line. */
static void capture_raw_request_line(conn_t *c)
{
    size_t len = 0, max = c->rlen < 2048 ? c->rlen : 2048;
    while (len < max && c->rbuf[len] != '\r' && c->rbuf[len] != '\n')
        len++;
    const char *p = c->rbuf, *end = c->rbuf + len;
    char **fields[] = {&c->log_method, &c->log_uri, &c->log_protocol};
    for (size_t i = 0; i < 3; i++) {
        while (p < end && *p == ' ')
            p++;
        const char *w = p;
        while (p < end && (*p != ' ' || i == 2))
            p++;
        free(*fields[i]);
        *fields[i] = p > w ? str_ndup(w, (size_t)(p - w)) : strdup("-");
    }
}

static void reject_parse_error(conn_t *c, int err)
{
    static const struct {
        int err, status;
        const char *msg;
    } map[] = {
        {HTTP_PARSE_TOO_LARGE, 431, "Request Header Fields Too Large"},
        {HTTP_PARSE_TOO_MANY_HEADERS, 431, "Too Many Request Header Fields"},
        {HTTP_PARSE_URI_TOO_LONG, 414, "URI Too Long"},
        {HTTP_PARSE_BAD_VERSION, 505, "HTTP Version Not Supported"},
    };
    int status = 400;
    const char *msg = "Bad Request";
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].err == err) {
            status = map[i].status;
            msg = map[i].msg;
        }
    log_info("client %s: malformed request (%s), answering %d", c->ip, msg, status);
    capture_raw_request_line(c);
    conn_send_error(c, status, msg);
}

static int read_more(conn_t *c)
{
    if (c->rcap - c->rlen < CONN_READ_CHUNK) {
        size_t ncap = c->rcap ? c->rcap * 2 : CONN_READ_CHUNK;
        if (ncap > HTTP_MAX_HEAD_BYTES + CONN_READ_CHUNK)
            ncap = HTTP_MAX_HEAD_BYTES + CONN_READ_CHUNK;
        if (ncap <= c->rlen)
            return -E2BIG;
        char *nb = realloc(c->rbuf, ncap);
        if (!nb)
            return -ENOMEM;
        c->rbuf = nb;
        c->rcap = ncap;
    }
    ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
    if (n > 0) {
        c->rlen += (size_t)n;
        return 1;
    }
    if (n == 0)
        return -EPIPE;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
    return errno == EINTR ? 1 : -errno;
}

static void reading_on_readable(conn_t *c)
{
    if (c->shoutcast_mount) {
        dispatch_shoutcast(c);
        return;
    }
    for (;;) {
        int r = read_more(c);
        if (r == -E2BIG) {
            reject_parse_error(c, HTTP_PARSE_TOO_LARGE);
            return;
        }
        if (r < 0) {
            conn_close(c);
            return;
        }
        if (!c->req && !(c->req = malloc(sizeof(*c->req)))) {
            conn_close(c);
            return;
        }
        int p = http_parse_request(c->rbuf, c->rlen, c->parsed_len, c->req);
        c->parsed_len = c->rlen;
        if (p < 0) {
            reject_parse_error(c, p);
            return;
        }
        if (p > 0) {
            worker_timeout_remove(c->worker, c);
            dispatch_request(c, c->req, (size_t)p);
            return;
        }
        if (r == 0)
            return; /* partial: wait for more */
    }
}
