/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client: accepting HTTP clients, reading request heads, error answers, keep-alive and the
 * access log (see client.h).
 */
#include "http/client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/cidr.h"
#include "core/hugeheap.h"
#include "core/log.h"
#include "core/str.h"
#include "http/response.h"
#include "net/server.h"
#include "net/tls.h"
#include "net/worker.h"

#define CLIENT_MAX_PIPELINE_DEPTH 16

static client_handlers_t handlers;

void client_set_handlers(const client_handlers_t *h)
{
    handlers = *h;
}

static void reading_on_readable(conn_t *c);
static void reading_on_timeout(conn_t *c);

static const conn_ops_t reading_ops = {
    .name = "reading",
    .on_readable = reading_on_readable,
    .on_writable = conn_write_pending,
    .on_timeout = reading_on_timeout,
    .read_ahead = HTTP_MAX_HEAD_BYTES + CONN_READ_CHUNK, /* reading_on_readable's conn_fill */
};

/* A Shoutcast source's login reads to a limit of its own (stream/shoutcast.c): not ahead. */
static const conn_ops_t shoutcast_reading_ops = {
    .name = "reading",
    .on_readable = reading_on_readable,
    .on_writable = conn_write_pending,
    .on_timeout = reading_on_timeout,
};

static const conn_ops_t *reading_ops_of(const client_t *cl)
{
    return cl->shoutcast_mount ? &shoutcast_reading_ops : &reading_ops;
}

/* ---- lifecycle ---- */

void client_set_log_request(client_t *cl, const char *const value[CLIENT_LOG_FIELDS],
                            const size_t len[CLIENT_LOG_FIELDS])
{
    char **dst[CLIENT_LOG_FIELDS] = {&cl->log_method, &cl->log_uri, &cl->log_protocol,
                                     &cl->log_agent, &cl->log_referer};
    free(cl->log_method); /* the allocation holding them all */
    cl->log_in_head = 0;
    size_t total = 0;
    for (size_t i = 0; i < CLIENT_LOG_FIELDS; i++)
        total += value[i] ? len[i] + 1 : 0;
    char *p = value[0] ? malloc(total) : NULL;
    for (size_t i = 0; i < CLIENT_LOG_FIELDS; i++) {
        *dst[i] = NULL;
        if (!p || !value[i])
            continue;
        memcpy(p, value[i], len[i]);
        p[len[i]] = '\0';
        *dst[i] = p;
        p += len[i] + 1;
    }
}

/* The request's fields are only a method ("-": no request was read). */
static void set_log_method_only(client_t *cl)
{
    const char *value[CLIENT_LOG_FIELDS] = {"-"};
    size_t len[CLIENT_LOG_FIELDS] = {1};
    client_set_log_request(cl, value, len);
}

static void clear_log_fields(client_t *cl)
{
    const char *none[CLIENT_LOG_FIELDS] = {NULL};
    size_t len[CLIENT_LOG_FIELDS] = {0};
    client_set_log_request(cl, none, len);
    free(cl->log_user);
    cl->log_user = NULL;
}

void client_keep_log(conn_t *c)
{
    client_t *cl = client_of(c);
    if (cl->log_in_head && cl->req)
        client_capture_request(c, cl->req);
    cl->log_in_head = 0;
}

void client_log_request(conn_t *c)
{
    client_t *cl = client_of(c);
    client_keep_log(c);
    if (!cl->log_method)
        return;
    log_access_entry_t e = {
        .ip = CIDR_SHOWN(c->ip), /* <anonymize-ip>: only the client's network is logged */
        .user = cl->log_user, .start = c->start, .method = cl->log_method,
        .uri = cl->log_uri, .protocol = cl->log_protocol, .status = cl->status,
        .bytes = c->bytes_sent, .referer = cl->log_referer, .agent = cl->log_agent,
    };
    log_access(&e);
    clear_log_fields(cl);
}

void client_skip_log(conn_t *c)
{
    clear_log_fields(client_of(c));
}

static void client_destroy(conn_t *c)
{
    client_t *cl = client_of(c);
    client_log_request(c);
    if (cl->on_end)
        cl->on_end(c, cl->on_end_arg);
    free(cl->req);
    free(cl->peer);
    free(cl);
}

void client_drop_request(conn_t *c)
{
    client_t *cl = client_of(c);
    client_keep_log(c);
    free(c->rbuf);
    free(cl->req);
    c->rbuf = NULL;
    cl->req = NULL;
    c->rlen = c->rcap = cl->parsed_len = 0;
}

/* Over <clients>: the connection counts (it holds a descriptor) until it is closed, so it is
 * answered and closed at once rather than after the usual linger. */
static void refuse(conn_t *c)
{
    static log_ratelimit_t refuse_log;
    size_t len;
    char *resp = response_error(403, "Forbidden: connection limit reached", &len);
    client_t *cl = client_of(c);
    set_log_method_only(cl);
    cl->status = 403;
    atomic_fetch_add(&server.stats.connections_refused, 1);
    log_info_limited(&refuse_log, 10000, "client %s refused: <clients> limit (%d) reached",
                     CIDR_SHOWN(c->ip), server_config()->clients);
    conn_set_deadline(c, 0);
    if (!resp) {
        conn_close(c);
        return;
    }
    c->ops = &conn_writing_ops;
    conn_send(c, resp, len, conn_refuse_close);
    free(resp);
}

client_t *client_new(worker_t *w, int fd, const char *ip, const listen_conf_t *lc)
{
    client_t *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return NULL;
    hugeheap_note(cl); /* a further heap of the worker's, once one is full: on huge pages too */
    conn_t *c = &cl->conn;
    conn_init(c, w, fd, ip, lc->port, client_destroy);
    c->listen = lc;
    if (lc->shoutcast_compat)
        cl->shoutcast_mount = lc->shoutcast_mount ? lc->shoutcast_mount
                                                  : server_config()->shoutcast_mount;
    return cl;
}

void client_accept(worker_t *w, int fd, const char *ip, const listen_conf_t *lc)
{
    const config_t *cfg = server_config();
    client_t *cl = client_new(w, fd, ip, lc);
    if (!cl) {
        close(fd);
        return;
    }
    conn_t *c = &cl->conn;
    c->ops = reading_ops_of(client_of(c));
    atomic_fetch_add(&server.stats.connections, 1);
    /* an HLS session counts as a client too, once with the connection that carries it */
    int sessions = atomic_load(&server.stats.hls_sessions);
    int carriers = atomic_load(&server.stats.session_carriers);
    int over_limit = atomic_load(&server.stats.clients) +
                         (sessions > carriers ? sessions - carriers : 0) > cfg->clients;
    int denied = handlers.admit && !handlers.admit(c);
    if (over_limit && !denied && cfg->siblings) {
        cl->over_limit = 1; /* its request says which mount a sibling should serve */
        over_limit = 0;
    }
    if (lc->tls && (over_limit || denied)) {
        if (over_limit)
            atomic_fetch_add(&server.stats.connections_refused, 1);
        conn_close(c); /* no handshake spent on a client that would get a 403 */
        return;
    }
    /* TLS: the handshake runs first, then the reading ops take over */
    if ((lc->tls && tls_accept(c, lc->tls == LISTEN_TLS_AUTO) < 0) || conn_watch(c) < 0) {
        conn_close(c);
        return;
    }
    conn_set_deadline(c, (uint64_t)cfg->header_timeout * 1000u);
    if (denied) {
        set_log_method_only(cl);
        client_send_error(c, 403, "Forbidden");
    } else if (over_limit) {
        refuse(c);
    }
}

/* ---- answers ---- */

void client_send_error(conn_t *c, int status, const char *message)
{
    size_t len;
    char *resp = response_error(status, message, &len);
    client_of(c)->status = status;
    if (!resp) {
        conn_close(c);
        return;
    }
    c->ops = &conn_writing_ops;
    conn_send(c, resp, len, conn_linger_close);
    free(resp);
}

void client_capture_request(conn_t *c, const http_request_t *req)
{
    char proto[32];
    int plen = snprintf(proto, sizeof(proto), "%s/%d.%d", req->is_ice ? "ICE" : "HTTP",
                        req->version_major, req->version_minor);
    const http_header_t *agent = http_find_header(req, "user-agent");
    const http_header_t *referer = http_find_header(req, "referer");
    const char *value[CLIENT_LOG_FIELDS] = {req->method_str, req->uri, proto,
                                            agent ? agent->value : NULL,
                                            referer ? referer->value : NULL};
    size_t len[CLIENT_LOG_FIELDS] = {req->method_len, req->uri_len,
                                     plen < (int)sizeof(proto) ? (size_t)plen : sizeof(proto) - 1,
                                     agent ? agent->value_len : 0,
                                     referer ? referer->value_len : 0};
    client_set_log_request(client_of(c), value, len);
}

/* ---- reading the request head ---- */

/* For the access log of a request that did not parse: the raw words of its first line. */
static void capture_raw_request_line(conn_t *c)
{
    client_t *cl = client_of(c);
    size_t len = 0, max = c->rlen < 2048 ? c->rlen : 2048;
    while (len < max && c->rbuf[len] != '\r' && c->rbuf[len] != '\n')
        len++;
    const char *p = c->rbuf, *end = c->rbuf + len;
    const char *value[CLIENT_LOG_FIELDS] = {NULL};
    size_t words[CLIENT_LOG_FIELDS] = {0};
    for (size_t i = 0; i < 3; i++) { /* method, URI, protocol */
        while (p < end && *p == ' ')
            p++;
        const char *w = p;
        while (p < end && (*p != ' ' || i == 2))
            p++;
        value[i] = p > w ? w : "-";
        words[i] = p > w ? (size_t)(p - w) : 1;
    }
    client_set_log_request(cl, value, words);
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
        {HTTP_PARSE_NOT_IMPLEMENTED, 501, "Not Implemented: Transfer-Encoding"},
    };
    int status = 400;
    const char *msg = "Bad Request";
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (map[i].err == err) {
            status = map[i].status;
            msg = map[i].msg;
        }
    log_info("client %s: malformed request (%s), answering %d", CIDR_SHOWN(c->ip), msg, status);
    capture_raw_request_line(c);
    client_send_error(c, status, msg);
}

static void reading_on_timeout(conn_t *c)
{
    client_t *cl = client_of(c);
    if (c->rlen == 0 && cl->requests > 0) {
        conn_close(c); /* an idle keep-alive connection: nothing to answer */
        return;
    }
    log_info("client %s: request head not complete within header-timeout", CIDR_SHOWN(c->ip));
    set_log_method_only(cl);
    client_send_error(c, 408, "Request Timeout");
}

static void reading_on_readable(conn_t *c)
{
    client_t *cl = client_of(c);
    if (cl->shoutcast_mount) {
        handlers.shoutcast(c);
        return;
    }
    for (;;) {
        ssize_t r = conn_fill(c, HTTP_MAX_HEAD_BYTES + CONN_READ_CHUNK);
        if (r == -E2BIG) {
            reject_parse_error(c, HTTP_PARSE_TOO_LARGE);
            return;
        }
        if (r < 0) {
            conn_close(c);
            return;
        }
        if (!cl->req && !(cl->req = malloc(sizeof(*cl->req)))) {
            conn_close(c);
            return;
        }
        int p = http_parse_request(c->rbuf, c->rlen, cl->parsed_len, cl->req);
        cl->parsed_len = p > 0 ? (size_t)p : c->rlen; /* complete: where the next one starts */
        if (p < 0) {
            reject_parse_error(c, p);
            return;
        }
        if (p > 0) {
            conn_set_deadline(c, 0);
            cl->log_in_head = 1; /* copied only if a line is written (client_keep_log) */
            cl->requests++;
            handlers.request(c, cl->req, (size_t)p);
            return;
        }
        if (r == 0)
            return; /* partial: wait for more */
    }
}

void client_read_next(conn_t *c)
{
    static __thread int depth;
    client_t *cl = client_of(c);
    if (c->closing)
        return;
    int head = c->rbuf && cl->parsed_len <= c->rlen ? (int)cl->parsed_len : -1;
    if (head == 0 && c->rbuf) {
        /* an answer an upgrade carried over: its head is parsed again for its length. Used
         * before the recursion below, so one per thread serves the nested calls too. */
        static __thread http_request_t scratch;
        head = http_parse_request(c->rbuf, c->rlen, 0, &scratch);
    }
    if (head <= 0) {
        conn_linger_close(c);
        return;
    }
    client_log_request(c);
    c->rlen -= (size_t)head;
    memmove(c->rbuf, c->rbuf + head, c->rlen);
    cl->parsed_len = 0;
    cl->status = 0;
    c->bytes_sent = 0;
    c->start = time(NULL);
    c->ops = reading_ops_of(client_of(c));
    conn_set_deadline(c, (uint64_t)server_config()->header_timeout * 1000u);
    /* edge-triggered epoll: what arrived meanwhile is read now, not on a future event; past
     * CLIENT_MAX_PIPELINE_DEPTH answers in one go (each answered request calls this again),
     * on the loop's next turn, so that a long pipeline neither deepens the stack nor holds the
     * worker */
    if (depth >= CLIENT_MAX_PIPELINE_DEPTH) {
        conn_read_again(c);
        return;
    }
    depth++;
    reading_on_readable(c);
    depth--;
}

int client_reading_save(conn_t *c, buf_t *out)
{
    if ((c->ops != &reading_ops && c->ops != &shoutcast_reading_ops) || c->closing || c->tls)
        return -ENOENT;
    client_input_save(c, out);
    return 0;
}

int client_reading_adopt(conn_t *c, rec_reader_t *in)
{
    int rc = client_input_restore(c, in);
    if (rc == 0)
        c->ops = reading_ops_of(client_of(c));
    return rc;
}
