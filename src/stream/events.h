/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events: what happens on the server (listeners join and leave, sources connect and
 * disconnect, titles change), kept in a small ring of the most recent events with sequence
 * numbers, for live dashboards (the server-sent events feed at /admin/events reads it).
 * Emitting is thread-safe and cheap, and does nothing while no feed watches; it never blocks a
 * worker. Consumers copy events out and escape every string: none is trusted.
 */
#ifndef RIMECAST_EVENTS_H
#define RIMECAST_EVENTS_H

#include <stdint.h>
#include <time.h>

typedef enum {
    EVENT_LISTENER_JOIN,
    EVENT_LISTENER_LEAVE,
    EVENT_SOURCE_CONNECT,
    EVENT_SOURCE_DISCONNECT,
    EVENT_METADATA,
} event_type_t;

#define EVENTS_RING 256

typedef struct event {
    uint64_t seq;
    event_type_t type;
    uint64_t conn_id;
    time_t time;
    char mount[256];
    char detail[512];
} event_t;

/* mount: the mount name; conn_id: the listener or source connection (0 if none);
 * detail: free text (the new title for EVENT_METADATA, the client IP otherwise); may be NULL.
 * Strings are copied (truncated to the event's fields). */
void events_emit(event_type_t type, const char *mount, uint64_t conn_id, const char *detail);

/* Copies up to max events from sequence *next on into out and advances *next; *next == 0
 * starts at the next new event. Sets *lost when events between *next and the oldest kept one
 * were overwritten. Returns how many were copied. */
int events_take(uint64_t *next, event_t *out, int max, int *lost);
/* The sequence number to read from to resume after last_id (0: only new events). */
uint64_t events_resume_point(uint64_t last_id);

/* A feed starts (+1) or stops (-1) watching: events are recorded only while one watches. */
void events_watch(int delta);
/* Called (on the emitting thread, outside any lock) after each recorded event. */
void events_set_notify(void (*notify)(void));

/* An upgrade: the ring (the events kept, the next sequence number) as record fields, and
 * read back in the new process, so that feeds carried over and dashboards resuming with
 * Last-Event-ID go on with the same numbers. events_restore: 0 or -1. */
struct buf;
struct rec_reader;
void events_save(struct buf *out);
int events_restore(struct rec_reader *in);

/* Name of an event type as used in the feed ("listener_join", ...). */
const char *events_type_name(event_type_t type);

#endif
