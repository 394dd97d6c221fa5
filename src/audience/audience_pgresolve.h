/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pgresolve: the name lookups of the PostgreSQL store's connection, bounded by its
 * deadline. libpq looks a host name up with a blocking getaddrinfo() that no deadline bounds
 * (a resolver that does not answer holds the caller for its own timeouts, 10 s and more); so
 * the store looks the names of the URI's hosts up itself, each on a short-lived thread of its
 * own, waits for them until the connect deadline, and hands libpq the addresses (hostaddr=)
 * beside the names (host=, which libpq still uses for TLS's name checks and the password
 * file). A lookup still under way when the deadline passes is not started again: the next
 * try waits for it. Store thread only (the lookup threads share nothing else).
 */
#ifndef RIMECAST_AUDIENCE_PGRESOLVE_H
#define RIMECAST_AUDIENCE_PGRESOLVE_H

#include <stddef.h>
#include <stdint.h>

/* What libpq is to be given after the URI: host and hostaddr lists of the same length, port
 * too when the URI names more than one (NULL: leave libpq's). malloc'd; all NULL when there
 * is nothing to look up (no host, only sockets and numeric addresses, or a hostaddr given). */
typedef struct audience_pg_hosts {
    char *host, *hostaddr, *port;
} audience_pg_hosts_t;

/* Looks up the host names of uri until the monotonic deadline (ms, loop_now_ms()'s clock).
 * 0, or -1 with why said (a name that does not resolve, the deadline passed, no memory). */
int audience_pg_resolve(const char *uri, uint64_t deadline, audience_pg_hosts_t *out,
                        char *why, size_t cap);
void audience_pg_hosts_free(audience_pg_hosts_t *h);

#endif
