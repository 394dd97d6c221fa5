/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * router: placeholder until admin, status pages and files exist: everything is 404.
 */
#include "http/router.h"

#include "net/conn.h"

void router_handle(conn_t *c, const http_request_t *req, const char *path)
{
    (void)req;
    (void)path;
    conn_send_error(c, 404, "The file you requested could not be found");
}
