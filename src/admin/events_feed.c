/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events_feed: the server-sent events streams that read the event ring (see events_feed.h).
 *
 * Each recorded event posts one coalesced "pump" message to each worker that owns feeds; the
 * pump, on that worker's thread, sends each of its feeds what it has not seen yet. A feed is
 * owned by its worker like any connection and keeps a 15 s timerfd in that worker's epoll for
 * keepalive comments. The listener hot path is untouched: events happen on joins and leaves.
 */
#include "admin/events_feed.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/escape.h"
#include "core/record.h"
#include "http/client.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/events.h"

#define EVENTS_BATCH 32
#define EVENTS_KEEPALIVE_MS 15000
#define SEND_LIT(c, lit) conn_send((c), (lit), sizeof(lit) - 1, NULL)
#define EVENTS_MAX_PENDING (256 * 1024) /* unsent bytes before a stream is dropped */

typedef struct stream stream_t;
struct stream {
    conn_t *conn;
    uint64_t next_seq;
    int timer_fd;
    loop_handler_t timer;
    stream_t *prev, *next;
};

/* per worker, touched only by that worker's thread */
static stream_t *streams[SERVER_MAX_WORKERS];
static atomic_int stream_count[SERVER_MAX_WORKERS];
static atomic_int pump_pending[SERVER_MAX_WORKERS];

/* ---- delivery (worker thread) ---- */

static size_t format_event(char *out, size_t cap, const event_t *e)
{
    char *mount = escape_json(e->mount, strlen(e->mount));
    char *detail = escape_json(e->detail, strlen(e->detail));
    const char *name = events_type_name(e->type);
    int n = snprintf(out, cap,
                     "id: %llu\nevent: %s\ndata: {\"seq\":%llu,\"type\":\"%s\",\"mount\":\"%s\","
                     "\"id\":%llu,\"time\":%lld,\"%s\":\"%s\"}\n\n",
                     (unsigned long long)e->seq, name, (unsigned long long)e->seq, name,
                     mount ? mount : "", (unsigned long long)e->conn_id, (long long)e->time,
                     e->type == EVENT_METADATA ? "title" : "ip", detail ? detail : "");
    free(mount);
    free(detail);
    return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

static void stream_deliver(stream_t *s)
{
    conn_t *c = s->conn;
    event_t batch[EVENTS_BATCH];
    char buf[2048];
    for (;;) {
        int lost = 0;
        int n = events_take(&s->next_seq, batch, EVENTS_BATCH, &lost);
        if (lost)
            SEND_LIT(c, ": events were dropped\n\n");
        for (int i = 0; i < n && !c->closing; i++) {
            size_t len = format_event(buf, sizeof(buf), &batch[i]);
            if (len)
                conn_send(c, buf, len, NULL);
        }
        if (c->closing)
            return;
        if (c->wlen - c->woff > EVENTS_MAX_PENDING) {
            conn_close(c); /* a dashboard that does not read */
            return;
        }
        if (n < EVENTS_BATCH)
            return;
    }
}

static void pump(worker_t *w, void *arg)
{
    (void)arg;
    atomic_store(&pump_pending[w->id], 0);
    stream_t *next;
    for (stream_t *s = streams[w->id]; s; s = next) {
        next = s->next;
        if (!s->conn->closing)
            stream_deliver(s);
    }
}

/* ---- waking the workers that own feeds (any thread) ---- */

static void notify_workers(void)
{
    int n = atomic_load(&server.nslots); /* a draining worker still serves its feeds */
    for (int i = 0; i < n; i++) {
        if (atomic_load(&stream_count[i]) == 0 || !server.workers[i])
            continue;
        if (!atomic_exchange(&pump_pending[i], 1) && worker_post(server.workers[i], pump, NULL) < 0)
            atomic_store(&pump_pending[i], 0);
    }
}

/* ---- the stream connection ---- */

static void stream_release(conn_t *c)
{
    stream_t *s = c->data;
    if (!s)
        return;
    worker_t *w = c->worker;
    if (s->timer_fd >= 0) {
        loop_del(w->epfd, s->timer_fd);
        close(s->timer_fd);
    }
    if (s->prev)
        s->prev->next = s->next;
    else
        streams[w->id] = s->next;
    if (s->next)
        s->next->prev = s->prev;
    atomic_fetch_sub(&stream_count[w->id], 1);
    events_watch(-1);
    free(s);
    c->data = NULL;
}

static const conn_ops_t stream_ops = {
    .name = "events",
    .on_readable = conn_discard_input,
    .on_writable = conn_write_pending,
    .on_hangup = NULL,
    .on_close = stream_release,
};

static void on_keepalive(loop_handler_t *h, uint32_t events)
{
    (void)events;
    stream_t *s = (stream_t *)((char *)h - offsetof(stream_t, timer));
    uint64_t v;
    if (read(s->timer_fd, &v, sizeof(v)) < 0 || s->conn->closing)
        return;
    SEND_LIT(s->conn, ": keepalive\n\n");
    if (!s->conn->closing)
        stream_deliver(s);
}

static void stream_register(conn_t *c, stream_t *s)
{
    worker_t *w = c->worker;
    s->next = streams[w->id];
    if (s->next)
        s->next->prev = s;
    streams[w->id] = s;
    atomic_fetch_add(&stream_count[w->id], 1);
    events_set_notify(notify_workers);
    events_watch(1);
}

void events_feed_start(conn_t *c, uint64_t last_id, int head_only)
{
    static const char extra[] = "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\n";
    char head[2048];
    size_t hlen = response_head(head, sizeof(head), 200, "text/event-stream; charset=utf-8",
                                -1, extra);
    stream_t *s = head_only ? NULL : calloc(1, sizeof(*s));
    client_of(c)->status = 200;
    if (!s || hlen == 0) {
        if (!head_only || hlen == 0) {
            client_send_error(c, 500, "Internal Server Error");
            return;
        }
        c->ops = &stream_ops;
        conn_send(c, head, hlen, conn_linger_close);
        return;
    }
    s->conn = c;
    s->timer_fd = loop_timerfd(EVENTS_KEEPALIVE_MS);
    s->timer.on_event = on_keepalive;
    if (s->timer_fd >= 0 && loop_add(c->worker->epfd, s->timer_fd, EPOLLIN, &s->timer) < 0) {
        close(s->timer_fd);
        s->timer_fd = -1;
    }
    s->next_seq = events_resume_point(last_id);
    c->data = s;
    c->ops = c->role = &stream_ops;
    stream_register(c, s);
    conn_send(c, head, hlen, NULL);
    if (!c->closing)
        SEND_LIT(c, "retry: 3000\n: connected\n\n");
    if (!c->closing)
        stream_deliver(s); /* what a resuming client missed */
}

int events_feed_save(conn_t *c, buf_t *out)
{
    stream_t *s = c->role == &stream_ops && !c->closing ? c->data : NULL;
    if (!s)
        return -ENOENT;
    rec_u64(out, s->next_seq);
    return 0;
}

int events_feed_adopt(conn_t *c, rec_reader_t *in)
{
    uint64_t next_seq = rec_get_u64(in);
    stream_t *s = in->error ? NULL : calloc(1, sizeof(*s));
    if (!s)
        return in->error ? -EINVAL : -ENOMEM;
    s->conn = c;
    s->next_seq = next_seq;
    s->timer_fd = loop_timerfd(EVENTS_KEEPALIVE_MS);
    s->timer.on_event = on_keepalive;
    if (s->timer_fd >= 0 && loop_add(c->worker->epfd, s->timer_fd, EPOLLIN, &s->timer) < 0) {
        close(s->timer_fd);
        s->timer_fd = -1;
    }
    c->data = s;
    c->ops = c->role = &stream_ops;
    stream_register(c, s);
    return 0;
}
