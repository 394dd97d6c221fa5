/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * alias: the config's <alias source= destination= [port=] [bind-address=]> rewrites of a
 * decoded request path. Read by everything that maps a path to what answers it (the router,
 * the HLS URLs); reads the config snapshot only.
 */
#ifndef RIMECAST_ALIAS_H
#define RIMECAST_ALIAS_H

typedef struct conn conn_t;

/* The destination of the alias that applies to `path` (decoded, normalised) on c (its local
 * port and address), or NULL when none does. Valid while the config snapshot is. */
const char *alias_lookup(const conn_t *c, const char *path);

#endif
