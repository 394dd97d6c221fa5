/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shoutcast: the Shoutcast v1 source login (password line, "OK2", ICY headers, then data) on a
 * shoutcast-compat listen socket. A wrong password closes the connection silently, as Icecast
 * does; the mount is the socket's shoutcast-mount.
 */
#ifndef RIMECAST_SHOUTCAST_H
#define RIMECAST_SHOUTCAST_H

typedef struct conn conn_t;

/* Takes over a connection accepted on a shoutcast-compat socket (its first bytes arrived). */
void shoutcast_start(conn_t *c);

#endif
