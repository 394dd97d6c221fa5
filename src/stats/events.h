/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events: what happens on the server (listeners join and leave, sources connect and
 * disconnect, titles change), published for live dashboards (server-sent events at
 * /admin/events). Emitting is thread-safe and cheap; it never blocks a worker.
 */
#ifndef RIMECAST_EVENTS_H
#define RIMECAST_EVENTS_H

#include <stdint.h>

typedef struct conn conn_t;

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

/* Turns c (an authenticated GET/HEAD /admin/events, on its worker's thread) into a
 * server-sent events stream: sends the text/event-stream head, then every event as
 * "id: <seq>\nevent: <type>\ndata: <json>\n\n" with type listener_join, listener_leave,
 * source_connect, source_disconnect or metadata and data {"seq","type","mount","id","time"
 * and "ip" or "title"}; a ": keepalive" comment every 15 s. last_id (Last-Event-ID) resumes
 * after that event when it is still in the recent-events ring; 0 starts with new events.
 * A client that reads too slowly is disconnected. */
void events_stream_start(conn_t *c, uint64_t last_id, int head_only);

/* Name of an event type as used in the stream ("listener_join", ...). */
const char *events_type_name(event_type_t type);

#endif
