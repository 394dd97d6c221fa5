/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount: a live mountpoint: its block queue (the source's worker is the only producer), codec
 * headers, stream info, tags, current ICY metadata and counters; plus the registry of mounts.
 *
 * Lifecycle: mount_create() registers a mount for a new source (fails if the name is live);
 * mount_end() marks it ended and unregisters it; the object lives on while references remain
 * (the source's, and one per worker subscription), so listeners drain what was queued.
 * Readers (listeners on any worker) follow block->next without locks and read head_end
 * atomically. The mount lock covers only cold-path state: attaching a listener, publishing
 * and trimming the queue, headers, tags and metadata.
 */
#ifndef RIMECAST_MOUNT_H
#define RIMECAST_MOUNT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "core/block.h"
#include "net/server.h"

typedef struct mount_tag {
    char *key;
    char *value;
    struct mount_tag *next;
} mount_tag_t;

/* Stream description: what the source's headers (ice-*) said, and the view listeners and stats
 * get, that merged with the <mount> settings (rebuilt on reload). Strings are sanitized (no
 * control characters). A snapshot never changes once published. */
typedef struct mount_info {
    char *content_type;
    char *name, *description, *genre, *url, *bitrate, *audio_info;
    int public; /* -1 unknown */
    char *subtype;
    char *source_ip;
    char *user_agent;
    struct mount_info *retired_next; /* replaced snapshots, freed with the mount */
} mount_info_t;

typedef struct mount mount_t;
struct mount {
    atomic_int refcount;
    char *name;
    pthread_mutex_t lock;

    /* queue (producer: source worker) */
    block_t *oldest;               /* queue's reference; retained for the burst */
    block_t *newest;               /* queue's reference; the live edge */
    _Atomic uint64_t head_end;     /* stream offset after the newest byte */
    uint64_t next_offset;          /* producer only */
    uint64_t gathered;             /* producer, under lock: audio read, not yet published */
    atomic_int ended;

    /* settings (updated on reload) */
    atomic_long burst_size;
    atomic_long queue_size;
    atomic_int max_listeners;      /* -1 unlimited */
    atomic_int metaint;            /* ICY interval for listeners, 0 = none */
    atomic_int hidden;

    /* under lock */
    block_t *headers;              /* codec headers for new listeners */
    uint64_t headers_offset;       /* stream offset from which `headers` apply */
    icy_meta_t *meta;              /* current ICY metadata */
    mount_tag_t *tags;

    mount_info_t source_info;           /* from the source's headers; immutable */
    _Atomic(mount_info_t *) info;       /* merged view; see mount_info() */
    mount_info_t *info_retired;         /* under lock */
    /* Ogg or not: set before the mount is published (mount_create), changed after only by
     * mount_set_feed (a relay that reconnected); readers load it atomically. */
    atomic_int is_ogg;
    /* fallback set at runtime (/admin/fallbacks), by name, under lock; NULL = the config's.
     * Resolved only when listeners move (stream/fallback.h), so it never pins a mount. */
    char *fallback_name;
    /* a relay's mount: the URL of the upstream it pulls from now (under lock), NULL otherwise */
    char *relay_url;
    /* listeners that could not follow it there (full, other format): logged on the first */
    atomic_int fallback_refused;
    /* the source feeding this mount, for killsource (cold path): set before the mount is
     * published, changed after only by mount_set_feed; both under lock after publication */
    struct worker *source_worker;
    uint64_t source_conn_id;
    time_t start;                  /* set before publication, never changed */
    /* its HLS window (hls/hls.h) while HLS clients ask, else NULL: set and cleared by the
     * window, read by the publish hook */
    _Atomic(void *) hls;

    /* counters */
    atomic_int listeners;
    atomic_int listener_peak;
    atomic_ullong slow_listeners;
    atomic_ullong bytes_read;
    atomic_ullong bytes_sent;      /* to its listeners, streaming and HLS */
    atomic_ullong hls_bytes_sent;  /* of those, HLS playlists and pieces (hls/) */
    /* bit i: worker i has listeners on this mount (the workers to wake); each worker sets and
     * clears only its own bit, when its subscription's first listener comes and its last goes */
    _Atomic uint64_t listening_workers;
    /* admin metadata updates in the current second: (monotonic second << 16) | count; the
     * admin layer refuses updates over its per-mount limit (admin/commands.c) */
    atomic_ullong meta_updates;
    /* a metadata update the stream itself must carry (Ogg comments), under lock until the
     * source's worker takes it; stream_meta_waiting is read without the lock */
    char *stream_title, *stream_artist;
    atomic_int stream_meta_waiting;
    /* the last ad break signalled (stream/adbreak.h): written under lock, the id last; 0 none.
     * A subscription whose last id differs starts the break for its listeners. */
    atomic_ullong adbreak_id;
    uint64_t adbreak_start;        /* stream offset where it begins (a frame boundary) */
    unsigned adbreak_ms;           /* how long it lasts */
    uint64_t adbreak_at_ms;        /* loop_now_ms() when it was signalled */
    /* its listeners' ad breaks (stream/adbreak.c): asked for, ads placed, impressions and
     * completes fired */
    atomic_ullong ad_asked, ad_fills, ad_impressions, ad_completes;

    mount_t *reg_next;
};

/* The current description of m (source headers + <mount> settings). Valid while the caller
 * holds a reference to m: replaced snapshots are kept until the mount is freed, so readers
 * take no lock. */
const mount_info_t *mount_info(const mount_t *m);

/* Why no mount may be named `name` (decoded, normalised), or NULL if one may: the server
 * answers that URL itself (its pages, admin routes, the webroot's files). file_mount: the
 * name is a webroot file played as a file mount (its being a file is then no reason). */
typedef const char *(*mount_name_check_t)(const char *name, int file_mount);
/* Sets the check every mount name goes through (start-up, by the router, before workers). */
void mount_set_name_check(mount_name_check_t check);
/* The check above (NULL before one is set): callers that create mounts (a source, a relay's
 * local mount, a master's list, a file mount) ask it first to log their refusal in their own
 * words; mount_create and mount_create_detached apply it again. Any thread. */
const char *mount_name_refused(const char *name, int file_mount);

/* Who feeds a mount: its format family and the connection of its source (worker NULL for a
 * file mount, which has no connection). */
typedef struct mount_feed {
    int is_ogg;
    struct worker *worker;
    uint64_t conn_id;
} mount_feed_t;

/* Creates a mount whole (the feed, the <mount> settings applied as for that feed: no ICY
 * interval on Ogg), then registers it: a listener on any worker that finds it finds it
 * complete. Takes ownership of info's strings (the source's headers). Returns a reference for
 * the caller, or NULL with *err = -EEXIST (name live) / -EPERM (a name the server keeps for
 * itself: mount_name_refused, logged) / -ENOMEM. */
mount_t *mount_create(const char *name, mount_info_t *info, const mount_feed_t *feed, int *err);
/* Creates a mount outside the registry (a file mount): never found by name nor listed.
 * Takes ownership of info's strings. A reference for the caller, or NULL (no memory, or a
 * name mount_name_refused refuses: logged). */
mount_t *mount_create_detached(const char *name, mount_info_t *info, const mount_feed_t *feed);
/* A live mount's new feed (a relay reconnected, maybe to another upstream): the source to kill
 * and the format family change under the mount lock, and the settings are applied again. */
void mount_set_feed(mount_t *m, const mount_feed_t *feed);
/* Looks up a live mount; returns a new reference or NULL. */
mount_t *mount_find(const char *name);
mount_t *mount_ref(mount_t *m);
void mount_unref(mount_t *m);
/* Requests a pass on every worker with listeners on m (any thread). */
void mount_wake_workers(mount_t *m);
/* Marks the mount ended, unregisters it and wakes its listeners' workers. Listeners drain what
 * was queued, then move to m->fallback if set, else close. */
void mount_end(mount_t *m);
/* Sets (or clears, with NULL) the name of the mount listeners of m move to when it ends,
 * overriding <fallback-mount> for the life of this source. 0 or -ENOMEM. */
int mount_set_fallback(mount_t *m, const char *name);
/* The runtime fallback name (malloc'd copy) or NULL when none was set. */
char *mount_get_fallback(mount_t *m);
/* A relay's mount: sets the URL of the upstream it streams from now (shown in the admin
 * stats). 0 or -ENOMEM. mount_get_relay_url: a malloc'd copy, or NULL when none. */
int mount_set_relay_url(mount_t *m, const char *url);
char *mount_get_relay_url(mount_t *m);
/* Asks the source of m to disconnect (its worker closes it). Thread-safe. */
void mount_kill_source(mount_t *m);
/* Number of live mounts. */
int mount_count(void);
/* Calls fn for every live mount in name order. The registry lock is not held during the calls
 * (each mount is referenced meanwhile), so fn may call any mount_* function. */
void mount_foreach(void (*fn)(mount_t *m, void *arg), void *arg);
/* Re-reads per-mount settings from the current config (after a reload): limits, ICY interval,
 * hidden, and the stream description (stream-name, genre ... over the source's headers). */
void mount_apply_config(mount_t *m);

/* Producer side (source worker). Publishes b (takes the reference), trims the queue to the
 * burst window and wakes workers in low-latency mode. */
void mount_publish(mount_t *m, block_t *b);
/* Producer side: the source's format handler holds `bytes` of audio read after the last block
 * published (format_sink_t.gathered). They count in the burst: the queue keeps the blocks a
 * new listener starts at for a burst point of (newest byte read - burst-size), so that what is
 * retained and what waits are at most burst-size together, and mount_attach starts there. */
void mount_set_gathered(mount_t *m, size_t bytes);
/* Sets the function mount_publish calls, after the block is published, for a mount whose `hls`
 * is set (with that pointer). Once, at start-up. */
void mount_set_publish_hook(void (*fn)(mount_t *m, void *hls));
/* Sets the function mount_update_meta calls (outside the lock) with m's new title (never
 * NULL). Once, at start-up. */
void mount_set_title_hook(void (*fn)(mount_t *m, const char *title));
void mount_set_headers(mount_t *m, block_t *headers);
void mount_set_tag(mount_t *m, const char *key, const char *value);
/* Rebuilds the ICY metadata from the "title"/"artist"/"url" tags and writes the resulting title
 * ("artist - title") to the playlist log when it is not empty. */
void mount_update_meta(mount_t *m);
/* A metadata update the stream must carry itself (an Ogg source: a new chain link), for the
 * source's worker to hand to its format handler: title and artist (UTF-8, NULL for none) are
 * copied; a later update replaces one not yet taken. Thread-safe. */
void mount_post_stream_meta(mount_t *m, const char *title, const char *artist);
/* The source's worker: 1 with the waiting update (malloc'd strings, NULL for none, the caller
 * frees them), or 0 when none waits. */
int mount_take_stream_meta(mount_t *m, char **title, char **artist);
/* A reference on the newest block (the live edge): a reader that starts there and follows
 * block->next sees every byte published from now on. */
block_t *mount_live_edge(mount_t *m);
/* Copies a tag value (malloc'd) or NULL. */
char *mount_get_tag(mount_t *m, const char *key);

/* Takes a listener slot on m within max-listeners (the count and the peak go up): 0, or -1
 * when the mount is full, or the server holds <limits><max-listeners> listeners on all mounts
 * (Icecast-KH; nothing taken). Given back with atomic_fetch_sub on m->listeners. */
int mount_take_listener_slot(mount_t *m);
/* The same for a listener already counted that moves to m (a fallback, an override, a move):
 * only m's own max-listeners applies. */
int mount_take_moving_slot(mount_t *m);

/* Listener side. Finds the start for a new listener: the oldest sync block at or after the
 * burst point (head - burst-size), so it gets at most burst-size bytes, and less than a block
 * fewer where every block is a sync point (as Icecast 2.4 counts its burst); the newest sync
 * block before it when there is none; the live edge for burst-size 0.
 * Returns a reference on the block and the offset within it in *pos, and a reference on the
 * codec headers in *headers (or NULL). */
block_t *mount_attach(mount_t *m, uint32_t *pos, block_t **headers);
/* The same at the live edge whatever burst-size says (an upgrade's local feed: its listeners
 * had what came before). */
block_t *mount_attach_live(mount_t *m, uint32_t *pos, block_t **headers);

/* The current codec headers (a new reference, or NULL) if they apply to data at `offset`;
 * -1 if that data predates them (a chained stream switched headers after it). */
int mount_headers_at(mount_t *m, uint64_t offset, block_t **headers);

static inline uint64_t mount_head_end(mount_t *m)
{
    return atomic_load_explicit(&m->head_end, memory_order_acquire);
}

void mount_info_free(mount_info_t *info);
/* Replaces what the source's headers say (a relay reconnected, maybe to another upstream):
 * takes info's contents (info is left empty); the merged view is rebuilt. */
void mount_set_source_info(mount_t *m, mount_info_t *info);

#endif
