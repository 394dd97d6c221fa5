/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alias: <alias> rewrites of a request path (see alias.h).
 */
#include "http/alias.h"

#include <string.h>
#include <sys/socket.h>

#include "conf/config.h"
#include "net/conn.h"
#include "net/listen.h"
#include "net/server.h"

/* 1 if the connection came in on the local address addr (numeric, as in the config). */
static int came_in_on(const conn_t *c, const char *addr)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    char local[64];
    if (getsockname(c->fd, (struct sockaddr *)&ss, &len) < 0)
        return 0;
    listen_format_addr(&ss, local, sizeof(local));
    return strcmp(local, addr) == 0;
}

const char *alias_lookup(const conn_t *c, const char *path)
{
    for (const alias_conf_t *a = server_config()->aliases; a; a = a->next)
        if (a->source && strcmp(a->source, path) == 0 &&
            (a->port < 0 || a->port == c->local_port) &&
            (!a->bind_address || came_in_on(c, a->bind_address)))
            return a->destination;
    return NULL;
}
