/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listen: listening sockets (see listen.h).
 */
#include "net/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/log.h"

static int open_on(const struct addrinfo *ai, const listen_conf_t *lc)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (lc->so_sndbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &lc->so_sndbuf, sizeof(lc->so_sndbuf));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, LISTEN_BACKLOG) < 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

int listen_open(const listen_conf_t *lc)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", lc->port);
    struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                             .ai_family = lc->bind_address ? AF_UNSPEC : AF_INET6,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(lc->bind_address, port, &hints, &res);
    if (rc != 0 && !lc->bind_address) {
        hints.ai_family = AF_INET; /* no IPv6 on this host */
        rc = getaddrinfo(NULL, port, &hints, &res);
    }
    if (rc != 0) {
        log_error("cannot resolve bind address %s: %s",
                  lc->bind_address ? lc->bind_address : "*", gai_strerror(rc));
        return -EINVAL;
    }
    int fd = -EADDRNOTAVAIL;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = open_on(ai, lc);
    if (fd < 0 && !lc->bind_address) {
        struct addrinfo h4 = hints, *r4 = NULL;
        h4.ai_family = AF_INET;
        if (getaddrinfo(NULL, port, &h4, &r4) == 0) {
            fd = open_on(r4, lc);
            freeaddrinfo(r4);
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        log_error("cannot listen on %s:%d: %s", lc->bind_address ? lc->bind_address : "*",
                  lc->port, strerror(-fd));
    return fd;
}

void listen_format_addr(const struct sockaddr_storage *ss, char *out, size_t outlen)
{
    if (ss->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, out, (socklen_t)outlen);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
            inet_ntop(AF_INET, &s6->sin6_addr.s6_addr[12], out, (socklen_t)outlen);
        else
            inet_ntop(AF_INET6, &s6->sin6_addr, out, (socklen_t)outlen);
    } else {
        snprintf(out, outlen, "unknown");
    }
}
