/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay: mounts pulled from another server (<relay>, and every mount a <master-server>
 * lists). A relay is a client connection on one worker's loop (no thread per relay) that sends
 * `GET <mount>`, reads the upstream's response head and then becomes an ordinary source of its
 * local mount (source_become_relay): relayed audio enters the same block path as a local
 * source's.
 *
 * Lifecycle: relay_register() at start-up adds the per-worker module (a 200 ms tick that
 * starts, retries and stops relays); relay_start_all() after the workers started hands each
 * configured relay to a worker, round-robin. A relay whose upstream drops reconnects with
 * backoff (1 s doubling to 60 s, +-20 %; at most 2 s while its mount waits); its mount stays
 * live for a 30 s grace period meanwhile, so listeners wait and go on when data returns; after
 * it, the mount ends (fallbacks apply). A master's relays waiting to reconnect try at once
 * when the master answers its stream list.
 * An on-demand relay connects when a listener asks for its mount (the listener is parked until
 * the mount is live, at most 10 s) and disconnects 10 s after the last listener left.
 * An upstream may speak HTTPS (<tls>1</tls>, an https:// redirect or stream-list line): the
 * connection then runs a verified TLS handshake (net/tls.h) before the request, and the bytes
 * take the same path. A relay may have several upstreams (<host>, <upstream>): each (re)connect
 * starts from the first and a failing one hands over to the next at once; the backoff applies
 * when all failed; it stays on a working later one until that fails (no probing back).
 * A reload (relay_reload) stops the relays whose <relay> went, restarts those whose block
 * changed on the new settings (their mount, and its listeners, stay through the reconnect)
 * and starts the new ones; master.c follows a changed <master-server>.
 * Also: relay_park.h (the on-demand relays' table, the listeners parked on it),
 * relay_handover.h (relays across an upgrade).
 */
#ifndef RIMECAST_RELAY_H
#define RIMECAST_RELAY_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct http_request http_request_t;
typedef struct relay_conf relay_conf_t;
typedef struct worker worker_t;

/* Registers the per-worker relay module (start-up, before workers are created). */
void relay_register(void);
/* Starts the configured relays and the master-server poller (main thread, after the workers
 * started). */
void relay_start_all(void);
/* After a reload (main thread; server_config() is the new snapshot): the configured relays
 * follow the new <relay> blocks, each by its local mount. A block that went: its relay stops
 * and its mount ends (listeners to the fallback, or closed). A changed block (any upstream
 * setting, on-demand): its relay reconnects on the new settings, its mount kept for the grace
 * period. A new block: started as at start-up. Each logged once; a relay whose block did not
 * change is not touched. Changes reach the workers by worker_post. */
void relay_reload(void);
/* Stops name lookups (main thread, before the workers stop); relays end with their workers. */
void relay_shutdown(void);

/* For upstream/master.c (worker thread of the caller): starts a relay of `mount` (a path on
 * host:port, over TLS when tls: the master's credentials go to the master only) as local
 * mount `local`, on a worker chosen round-robin. 0 or -errno (-EPERM: not a path, or a local
 * name no mount may have). */
int relay_start_master(const char *host, int port, int tls, const char *mount,
                       const char *local, const char *user, const char *pass, int on_demand);
/* For upstream/master.c, after a reload changed the master: the master relay of local mount
 * `local` reconnects to the new master (arguments as relay_start_master), keeping its mount.
 * Thread-safe. */
void relay_restart_master(const char *host, int port, int tls, const char *mount,
                          const char *local, const char *user, const char *pass, int on_demand);
/* For upstream/master.c: the master answered its stream list (after the stops and starts it
 * called for): the master's relays waiting to reconnect try at once, instead of waiting out
 * their backoff. Thread-safe. */
void relay_master_listed(void);
/* Splits "http://host[:port]/path" or "https://host[:port]/path" (untrusted: a Location
 * header, a master's list); *tls says which (default port 80 or 443). The host is a name or
 * address of safe characters; the path has no spaces or controls. 0 with *host and *path
 * malloc'd (the caller's), or -1. Any thread. */
int relay_parse_url(const char *url, size_t len, char **host, int *port, char **path, int *tls);
/* Stops the master relay of local mount `local` (its mount ends). Thread-safe. */
void relay_stop_master(const char *local);
/* 1 if a configured <relay> feeds local mount `local` (a master's mount of that name is then
 * not relayed). */
int relay_configured(const char *local);

#endif
