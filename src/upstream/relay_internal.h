/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_internal: what the files of relays call in each other: relay.c (the relay
 * objects, their connections, the per-worker tick, starting and stopping), relay_handover.c
 * (relays across an upgrade: carried mounts, saved and adopted connections, the old process's
 * local feed), relay_park.c (the table of on-demand relays, the listeners parked on it) and
 * relay_master.c (the relays a master's list asks for).
 * Nothing else includes it; the APIs are relay.h, relay_handover.h and relay_park.h, none of
 * which it includes.
 */
#ifndef RIMECAST_RELAY_INTERNAL_H
#define RIMECAST_RELAY_INTERNAL_H

#include <stdint.h>

#include "conf/config.h"
#include "core/list.h"
#include "http/client.h"
#include "net/server.h"

typedef struct mount mount_t;
typedef struct relay relay_t;

typedef struct relay_conn {
    client_t client; /* first: the source role uses client_of() */
    relay_t *relay;  /* NULL once the relay let go of it */
} relay_conn_t;

/* One configured upstream (a <relay> may list several: tried in order). */
typedef struct relay_host {
    char *server, *path;  /* upstream host and mount path */
    char *user, *pass;
    char *bind;           /* <bind>: local address to connect from, NULL = any */
    int port, icy;
    int tls;              /* the upstream speaks HTTPS */
    unsigned timeout_ms;  /* to connect (and the TLS handshake), and again for the head */
} relay_host_t;

/* A relay_t belongs to one worker and is touched only on its thread (see relay.c). */
struct relay {
    /* what to pull */
    relay_host_t hosts[RELAY_MAX_HOSTS];
    int nhosts;
    int cur;              /* the upstream of the current (or next) attempt */
    char *local;
    int on_demand, from_master;
    /* where the current attempt goes (the configured place, or a redirect's) */
    char *host, *path;
    int tport, ttls, redirects, redirect_pending;
    int send_creds;       /* the target is still the configured host: credentials go there */
    uint64_t bytes_at_start; /* the mount's bytes_read when this connection became its source */

    worker_t *worker;
    relay_conn_t *rc;     /* connecting, reading the head, or streaming */
    int resolving;        /* a lookup is under way (it holds a pointer to us) */
    int stopping;         /* free when the lookup answers */
    int lookup_stale;     /* the lookup under way is for upstreams r no longer has */
    int streaming;        /* rc is a source now */
    mount_t *mount;       /* ours, kept across reconnects */
    uint64_t next_try_ms, lost_ms, wanted_ms;
    unsigned backoff_ms;
    uint32_t rnd;
    /* an upgrade's local feed (relay_handover.h relay_start_feed): one connection, no retry */
    void (*feed_end)(mount_t *m, const char *why);
    char *feed_header;    /* the request header that proves it to the new process */
    char feed_why[200];   /* why its connection failed, for feed_end's log line */
    char logname[160];    /* local mount, escaped for the log */
    list_t link;          /* in relay_lists[its worker] (an empty list until it is added) */
};

/* ---- relay.c ---- */

/* The relays of each worker, by worker id: each list touched by its worker only. */
extern list_t relay_lists[SERVER_MAX_WORKERS];

/* A relay of local mount `local` with no upstream yet, on no worker; NULL without memory. */
relay_t *relay_new(const char *local, int on_demand);
/* Appends an upstream to r. 0 or -1 (no memory, or too many). */
int relay_add_host(relay_t *r, const char *host, int port, const char *path, const char *user,
                   const char *pass, int icy, int tls, const char *bind, int timeout_s);
/* Ends r's mount (if it still has one) and frees r: it is on no list and has no lookup. */
void relay_free(relay_t *r);
/* Takes r off its worker's list (harmless when it is on none). */
void relay_unlink(relay_t *r);
/* Drops r's connection without hearing back from it. */
void relay_detach_conn(relay_t *r);
/* Starts an attempt (r's worker): a lookup or a connect to the current upstream. */
void relay_try(relay_t *r);
/* The destroy callback of every relay connection (it tells one from other connections). */
void relay_conn_destroy(conn_t *c);
/* The next worker, round-robin (there is at least one). */
worker_t *relay_pick_worker(void);
/* Stops r (its worker's thread): no connection, mount ended (logged with `why`, or not when
 * NULL: the caller said it), freed now or when its lookup answers. */
void relay_stop(relay_t *r, const char *why);
/* r (on its worker's thread) takes the upstreams and on-demand setting of fresh (a relay not
 * on a worker, freed here) and reconnects to them at its next tick. Its mount stays: its
 * listeners wait the grace period for the new upstream, as through any reconnect. */
void relay_retarget(relay_t *r, relay_t *fresh);
/* Gives r (not on a worker yet) to the next worker, or to w, which starts it; frees r when it
 * cannot. 0 or -errno. */
int relay_hand_over(relay_t *r);
int relay_hand_over_to(relay_t *r, worker_t *w);

/* ---- relay_config.c (main thread) ---- */

/* A relay as <relay> rc says, not yet on a worker; NULL without memory. Any thread. */
relay_t *relay_from_conf(const relay_conf_t *rc);
/* The configured relay of rc runs on w (an upgrade brought it over): a reload follows it. */
void relay_track(const relay_conf_t *rc, worker_t *w);

/* ---- relay_handover.c ---- */

/* 1 once this process handed its relays over to a new one: no relay starts here any more. */
int relay_forgotten(void);
/* r (not on a worker yet) starts on the carried mount of its name, if an upgrade held one. */
void relay_take_held(relay_t *r);
/* The held mounts no relay took end (their listeners follow their fallbacks). */
void relay_end_held(void);
/* 1 if an upgrade brought the relay of `local` over streaming (start-up, main thread);
 * relay_adopted_clear forgets them once the configured relays started. */
int relay_adopted(const char *local);
void relay_adopted_clear(void);
/* A local feed's connection ended, or never came up: it says why once, and goes. */
void relay_feed_ended(relay_t *r);
/* The tick of a local feed: it closes when its mount's last listener left. */
void relay_feed_check(relay_t *r);

/* ---- relay_park.c (any thread) ---- */

/* Adds (add: on worker w) or removes the on-demand relay of local mount `name`. */
void relay_demand_set(const char *name, worker_t *w, int add);
/* Says whether the on-demand relay of `name` is connected (its mount live). */
void relay_demand_live(const char *name, int live);

#endif
