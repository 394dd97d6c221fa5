/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * connect: non-blocking outbound connect with a deadline (see connect.h). While connecting,
 * the connection's ops wait for writability, then read SO_ERROR; the deadline ends it with
 * -ETIMEDOUT.
 */
#include "net/connect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/conn.h"

static void finish(conn_t *c, int err)
{
    void (*done)(conn_t *, int) = c->connect_done;
    c->connect_done = NULL;
    c->ops = &conn_writing_ops; /* until the caller installs its own */
    conn_set_deadline(c, 0);
    if (err)
        conn_close(c);
    done(c, err);
}

static void connecting_on_writable(conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err == EINPROGRESS || err == EALREADY)
        return;
    finish(c, -err);
}

static void connecting_on_hangup(conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err == 0)
        err = ECONNRESET;
    finish(c, -err);
}

static void connecting_on_timeout(conn_t *c)
{
    finish(c, -ETIMEDOUT);
}

static const conn_ops_t connecting_ops = {
    .name = "connecting",
    .on_readable = NULL,
    .on_writable = connecting_on_writable,
    .on_hangup = connecting_on_hangup,
    .on_timeout = connecting_on_timeout,
};

static int parse_addr(const char *host, int port, struct sockaddr_storage *ss, socklen_t *len)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    memset(ss, 0, sizeof(*ss));
    if (port <= 0 || port > 65535)
        return -EINVAL;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof(*in4);
        return 0;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*in6);
        return 0;
    }
    return -EINVAL;
}

int connect_start(conn_t *c, worker_t *w, const char *host, int port, unsigned timeout_ms,
                  void (*done)(conn_t *c, int err), void (*destroy)(conn_t *c))
{
    return connect_start_from(c, w, NULL, host, port, timeout_ms, done, destroy);
}

int connect_start_from(conn_t *c, worker_t *w, const char *local, const char *host, int port,
                       unsigned timeout_ms, void (*done)(conn_t *c, int err),
                       void (*destroy)(conn_t *c))
{
    struct sockaddr_storage ss, ls;
    socklen_t slen, llen;
    int rc = parse_addr(host, port, &ss, &slen);
    if (rc < 0)
        return rc;
    /* the local side: port 1 only to pass parse_addr's check, then 0 (any port) */
    if (local && (rc = parse_addr(local, 1, &ls, &llen)) < 0)
        return rc;
    if (local && ls.ss_family != ss.ss_family)
        return -EAFNOSUPPORT;
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (local) {
        if (ls.ss_family == AF_INET)
            ((struct sockaddr_in *)&ls)->sin_port = 0;
        else
            ((struct sockaddr_in6 *)&ls)->sin6_port = 0;
        if (bind(fd, (struct sockaddr *)&ls, llen) < 0) {
            rc = -errno;
            close(fd);
            return rc;
        }
    }
    if (connect(fd, (struct sockaddr *)&ss, slen) < 0 && errno != EINPROGRESS) {
        rc = -errno;
        close(fd);
        return rc;
    }
    conn_init(c, w, fd, host, 0, destroy);
    c->connect_done = done;
    c->ops = &connecting_ops;
    rc = conn_watch(c);
    if (rc < 0) {
        finish(c, rc);
        return 0;
    }
    conn_set_deadline(c, timeout_ms);
    return 0;
}
