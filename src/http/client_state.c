/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * client_state: an HTTP connection as record fields and back, for an upgrade (see client.h:
 * client_save, client_restore). The role the connection has (listener, source) is saved and
 * restored by its own layer after this; a transport other than the plain socket is not
 * carried (upgrade/ keeps such connections out).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/loop.h"
#include "http/client.h"
#include "net/server.h"
#include "net/worker.h"

void client_save(conn_t *c, buf_t *out)
{
    client_t *cl = client_of(c);
    client_keep_log(c);
    rec_u64(out, c->id);
    rec_str(out, c->ip);
    rec_u32(out, (uint32_t)c->local_port);
    rec_i64(out, (int64_t)c->start);
    rec_u64(out, c->bytes_sent);
    rec_bytes(out, c->wbuf ? c->wbuf + c->woff : NULL, c->wbuf ? c->wlen - c->woff : 0);
    const char *fields[] = {cl->log_method, cl->log_uri, cl->log_protocol,
                            cl->log_agent,  cl->log_referer, cl->log_user};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
        rec_str(out, fields[i]);
    rec_u32(out, (uint32_t)cl->status);
    rec_u32(out, cl->requests);
    rec_str(out, cl->peer ? cl->peer : "");
}

/* The listen socket of the new config a connection on port came in on (the first one with
 * that port; the first of all when the port is no longer configured). */
static const listen_conf_t *listen_of_port(int port)
{
    const config_t *cfg = server_config();
    for (const listen_conf_t *lc = cfg->listen; lc; lc = lc->next)
        if (lc->port == port)
            return lc;
    return cfg->listen;
}

/* An outbound connection's struct (size bytes, a client_t first) for fd, freed by destroy. */
static client_t *outbound_new(worker_t *w, int fd, const char *ip, size_t size,
                              void (*destroy)(conn_t *c))
{
    client_t *cl = calloc(1, size);
    if (cl)
        conn_init(&cl->conn, w, fd, ip, 0, destroy);
    return cl;
}

client_t *client_restore(worker_t *w, int fd, rec_reader_t *in, size_t size,
                         void (*destroy)(conn_t *c))
{
    uint64_t id = rec_get_u64(in);
    char *ip = rec_get_str(in);
    int port = (int)rec_get_u32(in);
    time_t start = (time_t)rec_get_i64(in);
    uint64_t sent = rec_get_u64(in);
    size_t pending;
    const unsigned char *wbuf = rec_get_bytes(in, &pending);
    char *fields[6];
    for (size_t i = 0; i < 6; i++)
        fields[i] = rec_get_str(in);
    int status = (int)rec_get_u32(in);
    unsigned requests = rec_get_u32(in);
    char *peer = rec_get_str(in);
    const listen_conf_t *lc = size ? NULL : listen_of_port(port);
    client_t *cl = NULL;
    if (!in->error && ip && (lc || size))
        cl = size ? outbound_new(w, fd, ip, size, destroy) : client_new(w, fd, ip, lc);
    if (cl) {
        conn_t *c = &cl->conn;
        worker_unindex_conn(w, c); /* found by its id: the index follows the carried one */
        c->id = id;
        worker_index_conn(w, c);
        c->start = start;
        c->bytes_sent = sent;
        c->local_port = port;
        int queued = !pending || conn_queue(c, (const char *)wbuf, pending) == 0;
        size_t len[CLIENT_LOG_FIELDS];
        for (size_t i = 0; i < CLIENT_LOG_FIELDS; i++)
            len[i] = fields[i] ? strlen(fields[i]) : 0;
        client_set_log_request(cl, (const char *const *)fields, len);
        cl->log_user = fields[5];
        fields[5] = NULL;
        cl->status = status;
        cl->requests = requests;
        if (peer && *peer) {
            cl->peer = peer;
            peer = NULL;
        }
        if (!queued) {
            conn_close(c); /* closes fd; released with the worker's closed connections */
            cl = NULL;
        }
    } else {
        close(fd);
    }
    for (size_t i = 0; i < 6; i++)
        free(fields[i]);
    free(ip);
    free(peer);
    return cl;
}

void client_input_save(conn_t *c, buf_t *out)
{
    rec_bytes(out, c->rbuf, c->rbuf ? c->rlen : 0);
    uint64_t now = loop_now_ms();
    rec_u64(out, c->deadline_ms > now ? c->deadline_ms - now : c->deadline_ms ? 1 : 0);
}

int client_input_restore(conn_t *c, rec_reader_t *in)
{
    size_t n;
    const unsigned char *p = rec_get_bytes(in, &n);
    uint64_t deadline = rec_get_u64(in);
    if (in->error || n > HTTP_MAX_HEAD_BYTES + CONN_READ_CHUNK)
        return -EINVAL;
    if (n) {
        if (!(c->rbuf = malloc(n)))
            return -ENOMEM;
        memcpy(c->rbuf, p, n);
        c->rlen = c->rcap = n;
    }
    if (deadline)
        conn_set_deadline(c, deadline);
    return 0;
}
