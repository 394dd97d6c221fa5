/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server: process-wide state: the current config snapshot, the workers, global gauges and
 * counters. The config is swapped atomically on reload; old snapshots are retired (kept until
 * exit) because any thread may still be reading one. Nothing here is on the listener hot path.
 */
#ifndef RIMECAST_SERVER_H
#define RIMECAST_SERVER_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "conf/config.h"

#define SERVER_MAX_WORKERS 64
#define SERVER_NAME "Rimecast"

typedef struct worker worker_t;

typedef struct server_stats {
    atomic_int clients;            /* open client connections of every kind */
    atomic_int sources;            /* connected sources */
    atomic_int listeners;          /* streaming listeners */
    atomic_int hls_sessions;       /* HLS sessions, pending or listening */
    atomic_int session_carriers;   /* open connections that carried an HLS session's requests:
                                    * <clients> counts such a connection and its session once */
    atomic_ullong connections;     /* accepted connections */
    atomic_ullong connections_refused; /* closed on arrival: out of descriptors, <clients> */
    atomic_ullong client_connections;
    atomic_ullong listener_connections;
    atomic_ullong source_client_connections;
    atomic_ullong source_relay_connections;
    atomic_ullong source_total_connections;
    atomic_ullong file_connections;
    atomic_ullong stats_connections;
    atomic_int workers_draining;   /* workers past <workers> still serving their connections */
    /* Turns of a worker's loop (from epoll_wait's return to its next call) longer than
     * SERVER_SLOW_TURN_MS[i], and the longest turn seen (µs): a stalled loop delays every
     * connection of its worker. Written only for turns of 10 ms or more, and for a new max. */
    atomic_ullong slow_turns[4];
    atomic_ullong turn_max_us;
    /* Request reads done ahead through a worker's io_uring (net/read_ahead.h), and the system
     * calls that entered them. */
    atomic_ullong reads_ahead;
    atomic_ullong read_ahead_enters;
} server_stats_t;

#define SERVER_SLOW_TURN_MS {10, 100, 500, 1000}

/* What the process is doing, as /health and the room document say it: starting (the workers
 * accept, start-up is not over), serving, or stopping (a signal came: <shutdown-grace>, then
 * the exit). Written by the main thread only. */
typedef enum server_state {
    SERVER_STARTING,
    SERVER_SERVING,
    SERVER_STOPPING,
} server_state_t;

typedef struct server {
    _Atomic(config_t *) config;
    /* Workers 0..nworkers-1 accept. Slots nworkers..nslots-1 hold workers that a reload to
     * fewer <workers> is draining (serving their connections until those end) or that have
     * stopped (thread gone, resources freed; the slot is reused when the count grows again).
     * A slot once filled keeps its worker_t until exit, so any thread may walk the table up to
     * nslots without a lock; worker_post() to a stopped worker fails (-ESHUTDOWN). Written by
     * the main thread only. */
    atomic_int nworkers;
    atomic_int nslots;
    worker_t *workers[SERVER_MAX_WORKERS];
    time_t start_time;
    atomic_int running;
    atomic_int state; /* server_state_t */
    server_stats_t stats;
    char server_id[128]; /* "Rimecast 0.1.0" or <server-id> */
} server_t;

extern server_t server;

/* The config snapshot in force. Valid until process exit (snapshots are retired, not freed). */
static inline const config_t *server_config(void)
{
    return atomic_load_explicit(&server.config, memory_order_acquire);
}

/* Installs a new snapshot; the old one is retired. Main thread only. */
void server_set_config(config_t *c);
/* Frees every snapshot (at exit, after the workers stopped). */
void server_free_configs(void);
/* The name of a server_state_t ("starting", "serving", "stopping"). */
const char *server_state_name(int state);
/* The Server: header value. */
const char *server_ident(void);

#endif
