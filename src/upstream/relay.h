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
 * Not here: reloading relay settings on SIGHUP (a restart applies them).
 */
#ifndef RIMECAST_RELAY_H
#define RIMECAST_RELAY_H

#include <stddef.h>

typedef struct conn conn_t;
typedef struct http_request http_request_t;
typedef struct relay_conf relay_conf_t;
typedef struct worker worker_t;

/* An upgrade (upgrade/). relay_save writes the relay that c streams for (its local mount, the
 * upstream it is on) as record fields: 0; -ENOENT when c is no relay's connection; -ENOTSUP
 * when it is one that is not carried (not streaming yet, over TLS, a master's). relay_adopt,
 * in the new process before w runs, rebuilds from the fields of client_save, relay_save and
 * source_save the connection on fd and its relay (the one the config has for that mount,
 * streaming into the mount find(name, arg) returns); relay_start_all then leaves that relay
 * be. The connection (not yet watched), or NULL (fd closed): the relay is no longer
 * configured, or the fields do not read. */
typedef struct buf buf_t;
typedef struct rec_reader rec_reader_t;
typedef struct mount mount_t;
int relay_save(conn_t *c, buf_t *out);
conn_t *relay_adopt(worker_t *w, int fd, rec_reader_t *in,
                    mount_t *(*find)(const char *name, void *arg), void *arg);

/* An upgrade carries the mount of a relay whose connection cannot go (waiting to reconnect,
 * pulling over TLS, a master's) without it: relay_waiting (old process, main thread, workers
 * stopped) says whether one of our relays holds m; relay_hold_mount (new process, before
 * relay_start_all) keeps a carried mount with no source for the relay that starts on it: the
 * config's (relay_start_all) or the master's (its first list: relay_start_master), as if it
 * had lost its upstream now. A held mount no relay takes is ended (its listeners follow its
 * fallbacks): at relay_start_all without a master, else once the first stream list request
 * is over (relay_master_polled, answered or not). */
int relay_waiting(const mount_t *m);
int relay_hold_mount(mount_t *m);
void relay_master_polled(void);

/* Registers the per-worker relay module (start-up, before workers are created). */
void relay_register(void);
/* Starts the configured relays and the master-server poller (main thread, after the workers
 * started). */
void relay_start_all(void);
/* An upgrade handed the relays over (the old process, its workers parked): every relay is
 * forgotten without ending its mount or logging, and none starts here any more (a master's
 * list included): the new process pulls them. Their memory stays: the process exits soon. */
void relay_forget_all(void);
/* An upgrade's local feed (the old process, which keeps TLS listeners of m after the new one
 * took m over): a plain HTTP listener of m's name on the new process at ip:port (loopback),
 * sending `header` (a full header line, no CRLF) with its request, that joins the new
 * process's stream and feeds m quietly (stream/source.h source_become_feed), ICY metadata
 * included. It does not reconnect: when its connection fails or ends, ended(m, why) runs on
 * its worker (m is not ended: the caller closes m's listeners, saying why once). When m has no
 * listener left, it closes (logged). 0 or -errno. */
typedef void (*relay_feed_end_fn)(mount_t *m, const char *why);
int relay_start_feed(mount_t *m, const char *ip, int port, const char *header,
                     relay_feed_end_fn ended);
/* Stops name lookups (main thread, before the workers stop); relays end with their workers. */
void relay_shutdown(void);

/* What a parked listener becomes once its mount m is live (the layer above decides: a full
 * mount sends it elsewhere): takes the reference on m; time_limit_s as given to
 * relay_park_listener. */
typedef struct mount mount_t;
typedef void (*relay_listen_fn)(conn_t *c, mount_t *m, unsigned time_limit_s);

/* A listener asked for `name`, which is not live: if it is an on-demand relay's mount, the
 * relay is asked to connect, c waits (its request kept) and 1 is returned; then listen(c, m,
 * time_limit_s) runs when the mount is live (time_limit_s: what its authentication allowed,
 * 0 = no limit), or c gets 404 after 10 s. 0 if name is no on-demand relay. */
int relay_park_listener(conn_t *c, const char *name, unsigned time_limit_s,
                        relay_listen_fn listen);
/* 1 if name is the local mount of an on-demand relay (connected or not). Any thread. */
int relay_is_on_demand(const char *name);

/* Visits the on-demand relays' mounts that are not connected (stats list them with 0
 * listeners, as Icecast does). Thread-safe; fn must not call back into relay_*. */
void relay_foreach_idle(void (*fn)(const char *mount, void *arg), void *arg);

/* For upstream/master.c (worker thread of the caller): starts a relay of `mount` (a path on
 * host:port, over TLS when tls: the master's credentials go to the master only) as local
 * mount `local`, on a worker chosen round-robin. 0 or -errno (-EPERM: not a path, or a local
 * name no mount may have). */
int relay_start_master(const char *host, int port, int tls, const char *mount,
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
