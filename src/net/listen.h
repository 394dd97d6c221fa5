/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listen: opening listening sockets. Every worker opens its own socket per <listen-socket>
 * with SO_REUSEPORT, so the kernel spreads new connections and accepting needs no lock.
 */
#ifndef RIMECAST_LISTEN_H
#define RIMECAST_LISTEN_H

#include <sys/socket.h>

typedef struct listen_conf listen_conf_t;

#define LISTEN_BACKLOG 4096

/* Opens, binds and listens (non-blocking, close-on-exec). Returns the fd or -errno; on error
 * a message is logged. */
int listen_open(const listen_conf_t *lc);

/* Formats a peer address as text ("127.0.0.1", "::1"; IPv4-mapped IPv6 shown as IPv4). */
void listen_format_addr(const struct sockaddr_storage *ss, char *out, size_t outlen);

#endif
