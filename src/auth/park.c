/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * park: connections waiting for an authentication verdict (see park.h). The ops tables are
 * what marks a connection as parked: auth_park_take accepts no other.
 */
#include "auth/park.h"

#include "core/cidr.h"
#include "core/log.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/worker.h"

static void parked_timeout(conn_t *c)
{
    log_error("auth: no verdict on the credentials of client %s in time: refused",
              CIDR_SHOWN(c->ip));
    client_send_error(c, 403, "Forbidden: authentication timed out");
}

static const conn_ops_t parked_listener_ops = {
    .name = "auth-wait",
    .on_readable = conn_discard_input,
    .on_timeout = parked_timeout,
};

static void ignore_input(conn_t *c)
{
    (void)c;
}

static const conn_ops_t parked_source_ops = {
    .name = "auth-wait",
    .on_readable = ignore_input,
    .on_timeout = parked_timeout,
};

void auth_park(conn_t *c, auth_park_kind_t kind, unsigned timeout_ms)
{
    c->ops = kind == AUTH_PARK_SOURCE ? &parked_source_ops : &parked_listener_ops;
    conn_set_deadline(c, timeout_ms);
}

conn_t *auth_park_take(worker_t *w, uint64_t id)
{
    conn_t *c = w ? worker_find_conn(w, id) : NULL;
    if (!c || c->closing || (c->ops != &parked_listener_ops && c->ops != &parked_source_ops))
        return NULL;
    conn_set_deadline(c, 0);
    return c;
}
