/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events: what happens on the server (listeners join and leave, sources connect and
 * disconnect, titles change), published for live dashboards (server-sent events at
 * /admin/events). Emitting is thread-safe and cheap; it never blocks a worker.
 */
#ifndef RIMECAST_EVENTS_H
#define RIMECAST_EVENTS_H

#include <stdint.h>

typedef enum {
    EVENT_LISTENER_JOIN,
    EVENT_LISTENER_LEAVE,
    EVENT_SOURCE_CONNECT,
    EVENT_SOURCE_DISCONNECT,
    EVENT_METADATA,
} event_type_t;

/* mount: the mount name; conn_id: the listener or source connection (0 if none);
 * detail: free text (the new title for EVENT_METADATA, the client IP otherwise); may be NULL.
 * All strings are copied and escaped by the consumer, never trusted. */
void events_emit(event_type_t type, const char *mount, uint64_t conn_id, const char *detail);

#endif
