/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events_feed: /admin/events, the event ring (stream/events.h) as a server-sent events stream.
 */
#ifndef RIMECAST_EVENTS_FEED_H
#define RIMECAST_EVENTS_FEED_H

#include <stdint.h>

typedef struct conn conn_t;

/* Turns c (an authenticated GET/HEAD /admin/events, on its worker's thread) into a
 * server-sent events stream: sends the text/event-stream head, then every event as
 * "id: <seq>\nevent: <type>\ndata: <json>\n\n" with type listener_join, listener_leave,
 * source_connect, source_disconnect or metadata and data {"seq","type","mount","id","time"
 * and "ip" or "title"}; a ": keepalive" comment every 15 s. last_id (Last-Event-ID) resumes
 * after that event when it is still in the recent-events ring; 0 starts with new events.
 * A client that reads too slowly is disconnected. */
void events_feed_start(conn_t *c, uint64_t last_id, int head_only);

/* An upgrade (upgrade/): where the feed on c is in the ring, as record fields: 0, or -ENOENT
 * when c is no feed. events_feed_adopt makes c (restored, not yet watched, its unsent bytes
 * queued) that feed again in the new process, before its worker runs: 0 or -errno. */
typedef struct buf buf_t;
typedef struct rec_reader rec_reader_t;
int events_feed_save(conn_t *c, buf_t *out);
int events_feed_adopt(conn_t *c, rec_reader_t *in);

#endif
