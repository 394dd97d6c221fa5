/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_park: on-demand relays seen from the listeners' side. A listener asking for the mount
 * of an on-demand relay that is not connected is parked while the relay connects, then handed
 * to the layer above; the stats and the room document list the relays not connected.
 * The relays themselves (connecting on demand, disconnecting when idle): relay.h.
 */
#ifndef RIMECAST_RELAY_PARK_H
#define RIMECAST_RELAY_PARK_H

typedef struct conn conn_t;

/* What a parked listener becomes once its mount m is live (the layer above decides: a full
 * mount sends it elsewhere): takes the reference on m; time_limit_s as given to
 * relay_park_listener. */
typedef struct mount mount_t;
typedef void (*relay_listen_fn)(conn_t *c, mount_t *m, unsigned time_limit_s);

/* A listener asked for `name`, which is not live: if it is an on-demand relay's mount, the
 * relay is asked to connect, c waits (its request kept) and 1 is returned; then listen(c, m,
 * time_limit_s) runs when the mount is live (time_limit_s: what its authentication allowed,
 * 0 = no limit), or c gets 404 after 10 s. A role c has (c->role, c->data: what the layer
 * above keeps with it, an HLS request) is set aside meanwhile and given back before listen
 * runs or the 404 is sent; if c closes while it waits, that role's on_close runs. 0 if name
 * is no on-demand relay (c untouched). */
int relay_park_listener(conn_t *c, const char *name, unsigned time_limit_s,
                        relay_listen_fn listen);
/* 1 if name is the local mount of an on-demand relay (connected or not). Any thread. */
int relay_is_on_demand(const char *name);

/* Visits the on-demand relays' mounts that are not connected (stats list them with 0
 * listeners, as Icecast does). Thread-safe; fn must not call back into relay_*. */
void relay_foreach_idle(void (*fn)(const char *mount, void *arg), void *arg);

#endif
