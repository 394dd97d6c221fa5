/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * conn: connection lifecycle, the plain transport, pending output and lingering close
 * (see conn.h). Nothing here knows what the bytes mean.
 */
#include "net/conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/cidr.h"
#include "core/log.h"
#include "net/server.h"
#include "net/worker.h"

#define CONN_LINGER_MS 2000
#define CONN_EVENTS (EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET)
/* a connection refused on arrival gives its descriptor back quickly: the peer has our answer
 * and our FIN by then, or never reads them anyway */
#define CONN_REFUSE_LINGER_MS 200

/* ---- the plain transport ---- */

static ssize_t plain_read(conn_t *c, void *buf, size_t len)
{
    return read(c->fd, buf, len);
}

static ssize_t plain_writev(conn_t *c, const struct iovec *iov, int iovcnt)
{
    return writev(c->fd, iov, iovcnt);
}

static void plain_shutdown(conn_t *c)
{
    shutdown(c->fd, SHUT_WR);
}

const transport_t transport_plain = {
    .name = "plain",
    .read = plain_read,
    .writev = plain_writev,
    .shutdown = plain_shutdown,
    .release = NULL,
};

/* ---- lifecycle ---- */

void conn_init(conn_t *c, worker_t *w, int fd, const char *ip, int local_port,
               void (*destroy)(conn_t *c))
{
    c->worker = w;
    c->fd = fd;
    c->id = worker_next_conn_id();
    c->transport = &transport_plain;
    snprintf(c->ip, sizeof(c->ip), "%s", ip ? ip : "");
    c->local_port = local_port;
    c->start = time(NULL);
    c->destroy = destroy;
    list_insert_head(&w->conns, &c->link);
    worker_index_conn(w, c);
    c->counted = 1;
    atomic_fetch_add(&server.stats.clients, 1);
}

static void conn_on_event(loop_handler_t *h, uint32_t events)
{
    conn_t *c = (conn_t *)h;
    if (c->closing)
        return;
    /* a peer's end of stream may come in the same event as its last data: after it, a short
     * read no longer means nothing is left (the read of end of stream raises no new edge) */
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) && !c->ahead) /* else noted ahead */
        c->drained = events & (EPOLLRDHUP | EPOLLHUP) ? -1 : 0;
    if (events & (EPOLLIN | EPOLLRDHUP)) {
        if (c->ops->on_readable)
            c->ops->on_readable(c);
        if (c->closing)
            return;
    }
    if ((events & EPOLLOUT) && c->ops->on_writable) {
        c->ops->on_writable(c);
        if (c->closing)
            return;
    }
    if (events & (EPOLLERR | EPOLLHUP)) {
        if (c->ops->on_hangup)
            c->ops->on_hangup(c);
        else
            conn_close(c);
    }
}

int conn_watch(conn_t *c)
{
    c->handler.on_event = conn_on_event;
    c->drained = 0;
    return loop_add(c->worker->epfd, c->fd, CONN_EVENTS, &c->handler);
}

int conn_rearm(conn_t *c)
{
    /* EPOLL_CTL_MOD makes the kernel poll the fd again and queue it on the ready list if it is
     * still readable or writable: with edge triggering, data left unread raises no new edge */
    struct epoll_event ev = {.events = CONN_EVENTS, .data.ptr = &c->handler};
    c->drained = 0;
    return epoll_ctl(c->worker->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0 ? -errno : 0;
}

void conn_read_again(conn_t *c)
{
    if (c->read_again || c->closing)
        return;
    c->read_again = 1;
    c->again_next = c->worker->read_again;
    c->worker->read_again = c;
}

void conn_run_read_again(worker_t *w)
{
    conn_t *list = w->read_again;
    w->read_again = NULL;
    while (list) {
        conn_t *c = list;
        list = c->again_next;
        c->again_next = NULL;
        c->read_again = 0;
        if (!c->closing && c->ops->on_readable)
            c->ops->on_readable(c);
    }
}

static void read_again_remove(conn_t *c)
{
    conn_t **p = &c->worker->read_again;
    while (*p && *p != c)
        p = &(*p)->again_next;
    if (*p)
        *p = c->again_next;
    c->again_next = NULL;
    c->read_again = 0;
}

void conn_set_deadline(conn_t *c, uint64_t ms)
{
    c->send_mark = 0;
    if (!ms)
        worker_timeout_clear(c->worker, c);
    else if (worker_timeout_add(c->worker, c, loop_now_ms() + ms) < 0)
        conn_close(c);
}

/* Grows c's input buffer (doubling from CONN_READ_CHUNK, never beyond limit) so that at least
 * a chunk, or what is left below limit, is free: 0, or -ENOMEM. c->rlen is below limit. */
static int fill_grow(conn_t *c, size_t limit)
{
    size_t want = limit - c->rlen < CONN_READ_CHUNK ? limit - c->rlen : CONN_READ_CHUNK;
    if (c->rcap - c->rlen < want) {
        size_t ncap = c->rcap ? c->rcap : CONN_READ_CHUNK;
        while (ncap - c->rlen < want)
            ncap *= 2;
        if (ncap > limit)
            ncap = limit;
        char *nb = realloc(c->rbuf, ncap);
        if (!nb)
            return -ENOMEM;
        c->rbuf = nb;
        c->rcap = ncap;
    }
    return 0;
}

/* What a read into the room of `room` bytes that returned n (or -1 with errno) means for
 * conn_fill: bytes (c->rlen advanced), 0 nothing now, -EPIPE end of stream, -EINTR to read
 * again, or another -errno. */
static ssize_t fill_result(conn_t *c, ssize_t n, size_t room, int err)
{
    if (n > 0) {
        c->rlen += (size_t)n;
        /* a stream socket that gave less than asked has nothing more now, and what comes
         * next raises a new edge (epoll(7)): the read after an answer is not needed. Not
         * under TLS, whose records end short of the buffer with more behind them. */
        if (c->drained >= 0)
            c->drained = (size_t)n < room && c->transport == &transport_plain;
        return n;
    }
    if (n == 0)
        return -EPIPE;
    if (err == EAGAIN || err == EWOULDBLOCK) {
        if (c->drained >= 0)
            c->drained = c->transport == &transport_plain;
        return 0;
    }
    return -err;
}

ssize_t conn_fill(conn_t *c, size_t limit)
{
    if (c->ahead) { /* read ahead for this event: its bytes are in (net/read_ahead.h) */
        c->ahead = 0;
        if (c->ahead_res != -EINTR)
            return c->ahead_res;
    }
    if (c->rlen >= limit)
        return -E2BIG;
    if (c->drained > 0 && c->transport == &transport_plain)
        return 0;
    if (fill_grow(c, limit) < 0)
        return -ENOMEM;
    for (;;) {
        size_t room = c->rcap - c->rlen;
        ssize_t n = conn_read(c, c->rbuf + c->rlen, room);
        ssize_t r = fill_result(c, n, room, n < 0 ? errno : 0);
        if (r != -EINTR)
            return r;
    }
}

int conn_may_read_ahead(const conn_t *c, uint32_t events)
{
    return c->ops->read_ahead && (events & EPOLLIN) && !c->closing && !c->ahead &&
           c->transport == &transport_plain && c->rlen < c->ops->read_ahead;
}

size_t conn_ahead_room(conn_t *c, uint32_t events, char **buf)
{
    if (!conn_may_read_ahead(c, events) || fill_grow(c, c->ops->read_ahead) < 0)
        return 0;
    /* what conn_on_event would note of this event, before the read's result is noted */
    c->drained = events & (EPOLLRDHUP | EPOLLHUP) ? -1 : 0;
    *buf = c->rbuf + c->rlen;
    return c->rcap - c->rlen;
}

void conn_ahead_done(conn_t *c, int res)
{
    size_t room = c->rcap - c->rlen;
    c->ahead_res = (int)fill_result(c, res < 0 ? -1 : res, room, res < 0 ? -res : 0);
    c->ahead = 1;
}

conn_t *conn_of_handler(loop_handler_t *h)
{
    return h->on_event == conn_on_event ? (conn_t *)h : NULL;
}

void conn_close(conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    worker_t *w = c->worker;
    worker_timeout_remove(w, c);
    if (c->read_again)
        read_again_remove(c);
    if (c->fd >= 0) {
        if (c->tls) /* a TLS peer reading to the end gets close_notify, when the socket has room */
            c->transport->shutdown(c);
        loop_del(w->epfd, c->fd);
        close(c->fd);
        c->fd = -1;
    }
    /* move from the live list to the closed list */
    worker_unindex_conn(w, c);
    list_remove(&c->link);
    list_insert_head(&w->closed, &c->link);
}

static atomic_int drain_left;

void conn_forget(conn_t *c)
{
    worker_t *w = c->worker;
    c->closing = 1; /* any event or close still on its way does nothing */
    worker_timeout_remove(w, c);
    if (c->read_again)
        read_again_remove(c);
    if (c->fd >= 0) {
        loop_del(w->epfd, c->fd);
        close(c->fd);
        c->fd = -1;
    }
    list_remove(&c->link);
    conn_uncount(c);
}

void conn_uncount(conn_t *c)
{
    if (c->counted)
        atomic_fetch_sub(&server.stats.clients, 1);
    if (c->counted && c->carrier)
        atomic_fetch_sub(&server.stats.session_carriers, 1);
    c->counted = 0;
    c->carrier = 0;
}

void conn_mark_carrier(conn_t *c)
{
    if (c->counted && !c->carrier) {
        c->carrier = 1;
        atomic_fetch_add(&server.stats.session_carriers, 1);
    }
}

void conn_drain_keep(conn_t *c)
{
    if (!c->draining)
        atomic_fetch_add(&drain_left, 1);
    c->draining = 1;
}

int conn_drain_left(void)
{
    return atomic_load(&drain_left);
}

void conn_release(conn_t *c)
{
    if (c->draining)
        atomic_fetch_sub(&drain_left, 1);
    if (c->role && c->role->on_close)
        c->role->on_close(c);
    if (c->transport->release)
        c->transport->release(c);
    conn_uncount(c);
    /* the request head is still there for destroy (the access-log fields of an HTTP client
     * may not have been copied out of it yet); c is gone after destroy */
    char *rbuf = c->rbuf, *wbuf = c->wbuf;
    if (c->destroy)
        c->destroy(c);
    else
        c->rbuf = c->wbuf = NULL;
    free(rbuf);
    free(wbuf);
}

/* ---- pending output ---- */

/* The pending output would block: a response must make progress within client-timeout. Only
 * here, when the socket is full, so a response written at once costs nothing. */
static void arm_send_deadline(conn_t *c)
{
    if (!c->ops->send_deadline || c->send_mark == c->bytes_sent + 1)
        return; /* not a response, or no progress since the deadline was armed */
    int timeout = server_config()->client_timeout;
    if (timeout <= 0)
        return;
    conn_set_deadline(c, (uint64_t)timeout * 1000u);
    c->send_mark = c->bytes_sent + 1;
    if (ioctl(c->fd, SIOCOUTQ, &c->send_outq) < 0)
        c->send_outq = 0;
}

void conn_send_timeout(conn_t *c)
{
    static log_ratelimit_t limit;
    /* A peer that reads slowly may not free enough of a large send buffer to wake us within
     * the timeout: what left the socket's queue counts as progress too. */
    int queued;
    if (c->send_mark && ioctl(c->fd, SIOCOUTQ, &queued) == 0 && queued < c->send_outq) {
        uint64_t mark = c->send_mark;
        conn_set_deadline(c, (uint64_t)server_config()->client_timeout * 1000u);
        c->send_mark = mark;
        c->send_outq = queued;
        return;
    }
    log_info_limited(&limit, 10000, "client %s: no write progress within client-timeout "
                     "(%d s), closing", CIDR_SHOWN(c->ip), server_config()->client_timeout);
    conn_close(c);
}

int conn_flush_wbuf(conn_t *c)
{
    while (c->woff < c->wlen) {
        struct iovec iov = {c->wbuf + c->woff, c->wlen - c->woff};
        ssize_t n = conn_writev(c, &iov, 1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                arm_send_deadline(c);
                return 0;
            }
            conn_close(c);
            return -1;
        }
        c->woff += (size_t)n;
        c->bytes_sent += (uint64_t)n;
    }
    c->woff = c->wlen = 0;
    return 1;
}

void conn_drop_wbuf(conn_t *c)
{
    if (c->wbuf && c->woff >= c->wlen) {
        free(c->wbuf);
        c->wbuf = NULL;
        c->woff = c->wlen = 0;
    }
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

void conn_sendv(conn_t *c, const struct iovec *iov, int n, void (*after_write)(conn_t *c))
{
    size_t done = 0;
    if (c->woff >= c->wlen) {
        ssize_t w;
        while ((w = conn_writev(c, iov, n)) < 0 && errno == EINTR)
            ;
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            conn_close(c);
            return;
        }
        done = w > 0 ? (size_t)w : 0;
        c->bytes_sent += done;
    }
    for (int i = 0; i < n; i++) {
        size_t len = iov[i].iov_len, sent = done < len ? done : len;
        done -= sent;
        if (len > sent && conn_queue(c, (const char *)iov[i].iov_base + sent, len - sent) < 0) {
            conn_close(c);
            return;
        }
    }
    c->after_write = after_write;
    if (c->woff < c->wlen) {
        conn_write_pending(c); /* the rest when the socket has room */
    } else if (after_write) {
        c->after_write = NULL;
        after_write(c);
    }
}

/* ---- graceful close: half-close, drain, then close ---- */

void conn_discard_input(conn_t *c)
{
    char scratch[4096];
    for (;;) {
        ssize_t n = conn_read(c, scratch, sizeof(scratch));
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

/* The transport's end may wait for room in the socket (see transport_t.shutdown). */
static void linger_writable(conn_t *c)
{
    c->transport->shutdown(c);
}

static const conn_ops_t linger_ops = {
    .name = "linger",
    .on_readable = conn_discard_input,
    .on_writable = linger_writable,
};

const conn_ops_t conn_writing_ops = {
    .name = "writing",
    .on_readable = conn_discard_input,
    .on_writable = conn_write_pending,
    .on_timeout = conn_send_timeout,
    .send_deadline = 1,
};

static void linger_for(conn_t *c, uint64_t ms)
{
    if (c->closing)
        return;
    c->transport->shutdown(c);
    c->ops = &linger_ops;
    /* a connection that only drains before closing no longer holds a <clients> slot */
    conn_uncount(c);
    conn_set_deadline(c, ms);
    conn_discard_input(c);
}

static void start_linger(conn_t *c)
{
    linger_for(c, CONN_LINGER_MS);
}

static void start_short_linger(conn_t *c)
{
    linger_for(c, CONN_REFUSE_LINGER_MS);
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

void conn_refuse_close(conn_t *c)
{
    if (c->closing)
        return;
    if (c->woff < c->wlen) {
        c->after_write = start_short_linger;
        return;
    }
    start_short_linger(c);
}
