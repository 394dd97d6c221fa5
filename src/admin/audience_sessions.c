/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sessions: /admin/audience/sessions?from=&to=&day=&mount=&server=&format=w3c|tsv,
 * the session records of a period as a log (audience/audience_export.h), streamed: the
 * store's thread reads a chunk (AUDIENCE_EXPORT_CHUNK records), the request's worker writes
 * it, and only once the client took it all is the next chunk read. So a period of any length
 * holds one chunk in memory, and a client that stops reading holds the store's thread never
 * (it is closed after client-timeout, as any response it does not take).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/commands.h"
#include "audience/audience_export.h"
#include "audience/audience_store.h"
#include "core/buf.h"
#include "http/client.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/worker.h"
#include "stream/session.h"

typedef struct export_job {
    worker_t *worker;
    uint64_t conn_id;
    admin_req_t *a;            /* until the head is sent */
    audience_export_t x;
    int in_flight;             /* a chunk is being read on the store's thread */
    int orphan;                /* the connection closed meanwhile: freed when it comes back */
    int started;               /* the head was sent */
} export_job_t;

static void job_free(export_job_t *j)
{
    if (j->a)
        admin_req_free(j->a);
    audience_export_clear(&j->x);
    free(j);
}

static void export_release(conn_t *c)
{
    export_job_t *j = c->data;
    c->data = NULL;
    if (!j)
        return;
    if (j->in_flight)
        j->orphan = 1;
    else
        job_free(j);
}

static const conn_ops_t export_ops = {
    .name = "audience-export",
    .on_readable = conn_discard_input,
    .on_writable = conn_write_pending,
    .on_hangup = NULL,
    .on_timeout = conn_send_timeout,
    .on_close = export_release,
    .send_deadline = 1,
};

static void ask_chunk(export_job_t *j);

/* The chunk was written whole: the next one. */
static void chunk_written(conn_t *c)
{
    export_job_t *j = c->data;
    if (j)
        ask_chunk(j);
}

/* The connection the job writes to, or NULL when it is gone. */
static conn_t *job_conn(export_job_t *j)
{
    if (!j->started)
        return admin_conn(j->a);
    conn_t *c = worker_find_conn(j->worker, j->conn_id);
    return c && !c->closing && c->ops == &export_ops && c->data == j ? c : NULL;
}

/* The response head and the log's first lines; the connection becomes the job's. -1 when it
 * closed meanwhile. */
static int start_stream(conn_t *c, export_job_t *j)
{
    int w3c = j->x.format == AUDIENCE_FORMAT_W3C;
    char head[1024];
    size_t hlen = response_head(head, sizeof(head), 200,
                                w3c ? "text/plain; charset=utf-8"
                                    : "text/tab-separated-values; charset=utf-8",
                                -1, w3c ? "Cache-Control: no-store\r\n"
                                          "Content-Disposition: attachment; "
                                          "filename=\"sessions.log\"\r\n"
                                        : "Cache-Control: no-store\r\n"
                                          "Content-Disposition: attachment; "
                                          "filename=\"sessions.tsv\"\r\n");
    buf_t lines = BUF_INIT;
    audience_export_head(&lines, j->x.format, session_now_ms());
    admin_req_free(j->a);
    j->a = NULL;
    j->started = 1;
    client_of(c)->status = 200;
    c->data = j;
    c->ops = c->role = &export_ops;
    conn_send(c, head, hlen, NULL);
    if (!c->closing)
        conn_send(c, lines.data, lines.len, NULL);
    buf_free(&lines);
    return c->closing ? -1 : 0;
}

/* On the worker: a chunk came back. */
static void deliver(worker_t *w, void *arg)
{
    (void)w;
    export_job_t *j = arg;
    j->in_flight = 0;
    if (j->orphan) {
        job_free(j);
        return;
    }
    conn_t *c = job_conn(j);
    if (!c && !j->started) { /* the client left before anything was sent */
        job_free(j);
        return;
    }
    if (!c)
        return; /* closing: export_release frees it */
    if (!j->started && j->x.err) {
        admin_req_t *a = j->a;
        j->a = NULL;
        if (j->x.err == -ENODEV)
            admin_send_error(a, 503, "No audience database (<audience><database>)");
        else if (j->x.err == -EAGAIN)
            admin_send_error(a, 503, "The audience database cannot be reached now");
        else
            admin_send_error(a, 500, "Internal Server Error: the sessions could not be read");
        job_free(j);
        return;
    }
    if (!j->started && start_stream(c, j) < 0)
        return;
    /* a failure after the head: the log ends short (the connection closes early). The chunk
     * is copied or written by conn_send before chunk_written asks for the next one, which the
     * store's thread then reads into the same buffer: nothing here touches it after that. */
    int last = j->x.err || !j->x.more;
    const char *data = j->x.out.data;
    size_t len = j->x.out.len;
    if (len)
        conn_send(c, data, len, last ? conn_linger_close : chunk_written);
    else if (last)
        conn_linger_close(c);
    else
        chunk_written(c);
}

/* On the store's thread. */
static void read_chunk(audience_db_t *db, void *arg)
{
    export_job_t *j = arg;
    audience_export_chunk(db, &j->x);
    if (worker_post(j->worker, deliver, j) < 0) /* its worker is gone, and the client */
        job_free(j);
}

static void ask_chunk(export_job_t *j)
{
    j->in_flight = 1;
    if (audience_store_run(read_chunk, j) < 0) {
        j->in_flight = 0;
        j->x.err = -EIO;
        j->x.more = 0;
        deliver(j->worker, j);
    }
}

void admin_cmd_audience_sessions(admin_req_t *a)
{
    char *format = admin_param(a, "format"), *server = admin_param(a, "server");
    int64_t from = 0, to = 0;
    const char *bad = admin_audience_span(a, 1, &from, &to);
    audience_format_t f = AUDIENCE_FORMAT_W3C;
    if (!bad && format && *format && strcmp(format, "w3c") != 0) {
        if (strcmp(format, "tsv") == 0)
            f = AUDIENCE_FORMAT_TSV;
        else
            bad = "format: w3c (the W3C extended log format, the default) or tsv";
    }
    free(format);
    export_job_t *j = bad ? NULL : calloc(1, sizeof(*j));
    const char *mount = a->mount_name && *a->mount_name ? a->mount_name : NULL;
    if (j && audience_export_init(&j->x, from, to, mount, server && *server ? server : NULL,
                                  f) < 0) {
        job_free(j);
        j = NULL;
    }
    free(server);
    if (!j) {
        admin_send_error(a, bad ? 400 : 500, bad ? bad : "Internal Server Error");
        return;
    }
    j->a = a;
    j->worker = a->worker;
    j->conn_id = a->conn_id;
    conn_t *c = a->conn;
    admin_park(a);
    j->in_flight = 1;
    if (audience_store_run(read_chunk, j) < 0) {
        a->conn = c;
        j->a = NULL;
        job_free(j);
        admin_send_error(a, 503, "The audience store is not running");
    }
}
