/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls: the per-mount HLS window (see hls.h): the registry of windows by mount name, attaching
 * one to a mount, following the mount's blocks frame by frame into parts and segments, the
 * waiters, and the timer that drops idle windows. The playlist text is in hls_playlist.c, what
 * a request asks of a window in hls_query.c.
 *
 * Geometry: a part holds the largest whole number of frames that lasts at most the part
 * target; a segment the number of parts that fits in the target duration. So no EXTINF ever
 * rounds above the target duration, and every segment starts with an independent part.
 */
#include "hls/hls.h"
#include "hls/hls_window_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/config.h"
#include "core/log.h"
#include "core/loop.h"
#include "format/mpeg.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/fallback.h"
#include "hls/hls_intro.h"
#include "stream/mount.h"

#define REDATE_MS 10 /* an epoch is dated again when it began at least this much earlier */
/* ... and only in its first seconds, or in those of a window made from what a mount held: a
 * page or packet shows its sending time by then, and dates that players have seen move no more
 * (some players lose their place when a segment's date changes between reloads) */
#define REDATE_SPAN_MS 5000

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static hls_t *registry; /* every window made; never freed before exit */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hls_type_supported(const char *ct)
{
    static const char *const types[] = {"audio/mpeg", "audio/mp3", "audio/aac", "audio/aacp",
                                        "audio/x-aac", "audio/x-mpeg", NULL};
    if (!ct)
        return 0;
    size_t n = strcspn(ct, "; ");
    for (int i = 0; types[i]; i++)
        if (strlen(types[i]) == n && strncasecmp(ct, types[i], n) == 0)
            return 1;
    return 0;
}

/* The <hls> settings of mount name `name` whose normal <mount> block is mc (as
 * config_find_mount finds it in cfg): mc's, then for what that leaves unset a default <mount>
 * block's, then the global ones. */
static hls_conf_t settings_of(const config_t *cfg, const char *name, const mount_conf_t *mc)
{
    hls_conf_t g = cfg->hls;
    const mount_conf_t *layers[2] = {config_find_default_mount(cfg, name), mc};
    for (int i = 0; i < 2; i++) {
        const hls_conf_t *o = layers[i] ? &layers[i]->hls : NULL;
        if (!o)
            continue;
        g.enabled = o->enabled >= 0 ? o->enabled : g.enabled;
        g.target_duration = o->target_duration > 0 ? o->target_duration : g.target_duration;
        g.segments = o->segments > 0 ? o->segments : g.segments;
        g.part_target_ms = o->part_target_ms > 0 ? o->part_target_ms : g.part_target_ms;
        g.sessions = o->sessions >= 0 ? o->sessions : g.sessions;
        g.sessions_per_address =
            o->sessions_per_address >= 0 ? o->sessions_per_address : g.sessions_per_address;
    }
    return g;
}

static hls_conf_t settings_for(const config_t *cfg, const char *name)
{
    return settings_of(cfg, name, config_find_mount(cfg, name));
}

/* Whether the Ogg mount m is served: HLS_OFFERED when it carries one logical stream, Opus;
 * HLS_STARTING before its codec headers came. */
static int ogg_offered(mount_t *m)
{
    pthread_mutex_lock(&m->lock);
    block_t *headers = m->headers ? block_ref(m->headers) : NULL;
    pthread_mutex_unlock(&m->lock);
    if (!headers)
        return HLS_STARTING;
    int opus = hls_opus_headers(headers);
    block_unref(headers);
    return opus ? HLS_OFFERED : HLS_WRONG_TYPE;
}

int hls_offered(mount_t *m)
{
    const config_t *cfg = server_config();
    const mount_conf_t *mc = config_find_mount(cfg, m->name);
    hls_conf_t g = settings_of(cfg, m->name, mc);
    if (!g.enabled)
        return HLS_DISABLED;
    if (!atomic_load(&m->is_ogg) && !hls_type_supported(mount_info(m)->content_type))
        return HLS_WRONG_TYPE;
    /* listener authentication is passed by a session's first playlist request */
    if (mc && mc->auth && !g.sessions)
        return HLS_NEEDS_AUTH;
    return atomic_load(&m->is_ogg) ? ogg_offered(m) : HLS_OFFERED;
}

int hls_sessions_wanted(const char *name)
{
    return settings_for(server_config(), name).sessions;
}

int hls_sessions_wanted_conf(const config_t *cfg, const char *name, const mount_conf_t *mc)
{
    return settings_of(cfg, name, mc).sessions;
}

int hls_sessions_per_address(const char *name)
{
    return settings_for(server_config(), name).sessions_per_address;
}

/* ---- the window's segments ---- */

hls_seg_t *hls_seg_at(hls_t *h, uint64_t seq)
{
    if (!h->segs || seq < h->first_seq || seq > h->open_seq)
        return NULL;
    hls_seg_t *s = &h->segs[seq % (uint64_t)h->nsegs];
    return s->seq == seq && s->used ? s : NULL;
}

static void seg_clear(hls_seg_t *s)
{
    for (int i = 0; i < s->nparts; i++)
        if (s->parts[i].blk)
            block_unref(s->parts[i].blk);
    if (s->open.blk)
        block_unref(s->open.blk);
    if (s->init)
        block_unref(s->init);
    memset(s, 0, sizeof(*s));
}

/* Starts segment open_seq in its ring slot (the segment there before leaves the window). */
static hls_seg_t *seg_open(hls_t *h)
{
    hls_seg_t *s = &h->segs[h->open_seq % (uint64_t)h->nsegs];
    if (s->used && s->discontinuity)
        h->disc_dropped++;
    seg_clear(s); /* a slot left unused by a break may still hold its init segment */
    h->version++;
    s->used = 1;
    s->seq = h->open_seq;
    s->discontinuity = h->disc_next;
    h->disc_next = 0;
    s->rate = h->rate;
    s->pdt_ms = h->anchor_ms + (int64_t)(h->epoch_samples * 1000 / h->rate);
    s->epoch = h->epoch;
    s->epoch_samples = h->epoch_samples;
    s->init = h->init ? block_ref(h->init) : NULL;
    s->init_id = h->init_id;
    if (h->open_seq >= (uint64_t)h->nsegs && h->first_seq < h->open_seq - (uint64_t)h->nsegs + 1)
        h->first_seq = h->open_seq - (uint64_t)h->nsegs + 1;
    return s;
}

/* 1 if a waiter following the open part as it fills has more to send (or it is complete). */
static int part_grew(hls_t *h, const hls_waiter_t *w)
{
    if (hls_locate(h, w->msn, w->part) != HLS_PENDING)
        return 1;
    const hls_seg_t *s = hls_seg_at(h, w->msn);
    return s && !s->complete && s->nparts == w->part && s->open.blk && s->open.end > w->seen_end;
}

/* The waiters whose part is there are posted back to their workers, one message a worker. */
static void wake_waiters(hls_t *h)
{
    hls_waiter_t *w, *tmp;
    worker_batch_t batch = {.n = 0};
    int gone = 0;
    list_foreach_safe(w, tmp, &h->waiters, hls_waiter_t, link) {
        if (w->follow ? !part_grew(h, w) : hls_locate(h, w->msn, w->part) == HLS_PENDING)
            continue;
        list_remove(&w->link);
        w->linked = 0;
        gone += worker_batch_add(&batch, w->worker, w->fn, w->arg) < 0;
    }
    if (gone + worker_batch_post(&batch) > 0)
        log_debug("hls: a waiting request's worker is gone");
}

/* The open part is complete: it joins its segment, which completes when full (or when
 * `close` says the stream breaks here). */
void hls_part_close(hls_t *h, int close)
{
    hls_seg_t *s = hls_seg_at(h, h->open_seq);
    if (!s)
        return;
    h->version++;
    if (s->open.frames > 0) {
        s->open.done = 1;
        s->parts[s->nparts++] = s->open;
        s->samples += s->open.samples;
        memset(&s->open, 0, sizeof(s->open));
    } else if (s->open.blk) {
        block_unref(s->open.blk);
        memset(&s->open, 0, sizeof(s->open));
    }
    if (s->nparts == h->parts_per_seg || (close && s->nparts > 0)) {
        s->complete = 1;
        h->open_seq++;
        h->have_open = 0;
    } else if (close) {
        s->used = 0; /* nothing in it: the sequence number is used by the next one */
        h->disc_next |= s->discontinuity;
        h->have_open = 0;
    }
    /* the followers' window ticks count from the part's start: a part of up to two windows
     * is sent in two writes (a window in, then its end), whatever the phase of the clock */
    h->followers_sent_ms = loop_now_ms();
    wake_waiters(h);
}

/* The stream breaks (source replaced, frames lost, format changed): what was cut so far is
 * closed as it is, and what follows starts with a discontinuity. */
void hls_stream_break(hls_t *h)
{
    if (h->is_opus)
        hls_opus_cut_locked(h);
    if (h->have_open)
        hls_part_close(h, 1);
    if (h->open_seq > h->first_seq || h->ever)
        h->disc_next = 1;
    h->frames_known = 0;
}

/* One more complete frame ended at `end`. */
static void frame_done(hls_t *h, uint32_t samples, uint64_t end)
{
    hls_seg_t *s = hls_seg_at(h, h->open_seq);
    s->open.frames++;
    s->open.samples += samples;
    h->epoch_samples += samples;
    h->clock_samples += samples;
    if (s->open.frames == h->frames_per_part) {
        s->open.end = end;
        hls_part_close(h, 0);
    } else {
        s->open.end = end;
    }
}

/* The first frame after a start or a break: sets the geometry for its format. */
void hls_clock_begin(hls_t *h, uint32_t rate)
{
    if (h->rate != rate) {
        if (h->rate)
            h->clock90 += h->clock_samples * 90000 / h->rate;
        h->clock_samples = 0;
        h->epoch_samples = 0;
        h->anchor_ms = wall_ms();
        h->redate_until_ms = h->anchor_ms + REDATE_SPAN_MS;
        h->epoch++;
    }
    h->rate = rate;
    h->frames_known = 1;
    h->ever = 1;
}

static void frames_begin(hls_t *h, const mpeg_frame_t *f)
{
    hls_clock_begin(h, f->samplerate);
    h->key = f->key;
    h->adts = f->kind == MPEG_KIND_ADTS;
    uint64_t fpp = (uint64_t)h->part_ms * f->samplerate / (1000u * f->samples);
    h->frames_per_part = fpp ? (uint32_t)fpp : 1;
}

/* 1 if m's title is not the one announced last (it becomes that one). */
int hls_title_changed(hls_t *h, icy_meta_t *m)
{
    const char *t = m && m->title ? m->title : "";
    const char *last = h->last_meta && h->last_meta->title ? h->last_meta->title : "";
    if (strcmp(t, last) == 0)
        return 0;
    if (h->last_meta)
        icy_meta_unref(h->last_meta);
    h->last_meta = m ? icy_meta_ref(m) : NULL;
    return t[0] != '\0';
}

hls_seg_t *hls_part_begin(hls_t *h)
{
    if (!h->have_open) {
        seg_open(h);
        h->have_open = 1;
    }
    return hls_seg_at(h, h->open_seq);
}

/* A frame header begins at `at` in block b: a part opens there if none is open. */
static void frame_start(hls_t *h, block_t *b, uint64_t at)
{
    hls_seg_t *s = hls_part_begin(h);
    if (!s->open.blk) {
        s->open.blk = block_ref(b);
        s->open.start = at;
        s->open.end = at;
        s->open.titled = hls_title_changed(h, b->meta);
        s->open.ts90 = (h->clock90 + h->clock_samples * 90000 / h->rate) & ((1ull << 33) - 1);
    }
}

/* Follows bytes [pos, end) of b. */
static void scan_block(hls_t *h, block_t *b)
{
    uint64_t end = block_end(b);
    while (h->pos < end) {
        if (h->state == SCAN_SEEK) {
            h->pos = end; /* the next sync block starts frames again */
            return;
        }
        if (h->state == SCAN_BODY) {
            uint64_t n = h->frame_end - h->pos < end - h->pos ? h->frame_end - h->pos
                                                              : end - h->pos;
            h->pos += n;
            if (h->pos == h->frame_end) {
                frame_done(h, h->frame_samples, h->frame_end);
                h->state = SCAN_HEAD;
                h->have = 0;
            }
            continue;
        }
        if (h->have == 0)
            h->frame_at = h->pos;
        while (h->have < MPEG_HEADER_MAX && h->pos < end)
            h->hdr[h->have++] = b->data[h->pos++ - b->offset];
        mpeg_frame_t f;
        int rc = mpeg_frame_parse(h->hdr, h->have, &f);
        if (rc == -EAGAIN && h->have < MPEG_HEADER_MAX)
            continue; /* the rest of the header is in the next block */
        if (rc != 1 || f.samples == 0 || (h->frames_known && f.key != h->key)) {
            if (rc == 1 && h->frames_known) {
                hls_stream_break(h); /* another format: begins again at this frame */
                h->pos = h->frame_at;
                h->have = 0;
                continue;
            }
            hls_stream_break(h);
            h->state = SCAN_SEEK;
            continue;
        }
        if (!h->frames_known)
            frames_begin(h, &f);
        if (h->frame_at < b->offset) {
            /* a header split over two blocks: the part starts in the previous block, which is
             * no longer held here; such a frame begins no part (frames are cut whole, so this
             * happens only with an unframed source) */
            hls_stream_break(h);
            h->state = SCAN_SEEK;
            continue;
        }
        frame_start(h, b, h->frame_at);
        h->frame_end = h->frame_at + f.len;
        h->frame_samples = f.samples;
        h->state = SCAN_BODY;
        if (h->pos > h->frame_end) { /* a frame shorter than a header: never valid */
            hls_stream_break(h);
            h->state = SCAN_SEEK;
        }
    }
}

/* Follows the mount's blocks from where the scan stands to the live edge. Under h->lock. */
static void advance_locked(hls_t *h)
{
    block_t *b = h->scan;
    if (!b)
        return;
    for (;;) {
        if (h->pos < b->offset) /* entering a new block */
            h->pos = b->offset;
        if (h->is_opus) {
            hls_opus_scan_locked(h, b);
        } else {
            if (h->pos == b->offset && h->state == SCAN_SEEK && (b->flags & BLOCK_SYNC)) {
                h->state = SCAN_HEAD;
                h->have = 0;
            }
            scan_block(h, b);
        }
        block_t *next = block_next(b);
        if (!next)
            break;
        block_ref(next);
        block_unref(b);
        b = h->scan = next;
    }
}

/* Whether the parts followed as they fill are sent what the window cut since last time: once
 * a write window (as plain listeners are written), each a chunk of several source blocks;
 * every block at window 0. A part that completes is sent at once (hls_part_close). */
static int followers_due(hls_t *h)
{
    int window = server_config()->write_window_ms;
    uint64_t now = loop_now_ms();
    if (window > 0 && now - h->followers_sent_ms < (uint64_t)window)
        return 0;
    h->followers_sent_ms = now;
    return 1;
}

/* The segments of the current epoch dated again from anchor_ms, the wall clock of its first
 * sample. */
static void date_epoch_locked(hls_t *h, int64_t anchor_ms)
{
    h->anchor_ms = anchor_ms;
    for (uint64_t q = h->first_seq; q <= h->open_seq; q++) {
        hls_seg_t *s = hls_seg_at(h, q);
        if (s && s->epoch == h->epoch)
            s->pdt_ms = h->anchor_ms + (int64_t)(s->epoch_samples * 1000 / s->rate);
    }
}

/* A block was just followed as it came: the source sent the last sample it holds no later
 * than now, so the epoch began no later than now less the epoch's samples. A source sends
 * its audio in pages or packets of its own (an Ogg muxer about a page a second), so the first
 * sample of a block was sent before the block came: the earliest bound of the blocks so far
 * is the anchor (an epoch dated first when it began, or when a window was made from what the
 * mount held, is dated again when a block shows it began earlier). */
static void redate_locked(hls_t *h)
{
    if (!h->rate || !h->frames_known)
        return;
    int64_t now = wall_ms();
    if (now > h->redate_until_ms)
        return;
    int64_t begun = now - (int64_t)(h->epoch_samples * 1000 / h->rate);
    if (begun > h->anchor_ms - REDATE_MS)
        return;
    date_epoch_locked(h, begun);
    h->version++;
}

static void publish_hook(mount_t *m, void *arg)
{
    /* the windows that follow m: its own, and those of sourceless mounts it is the fallback
     * of (a window moved to another mount meanwhile is passed over) */
    for (hls_t *h = arg; h; h = atomic_load(&h->next_on_mount)) {
        pthread_mutex_lock(&h->lock);
        if (h->mount == m) {
            advance_locked(h);
            redate_locked(h);
            if (!list_empty(&h->waiters) && followers_due(h))
                wake_waiters(h); /* parts being followed as they fill */
        }
        pthread_mutex_unlock(&h->lock);
    }
}

/* m->hls heads the list of windows that follow m (linked by next_on_mount). Changed under
 * this lock; the publish hook walks it without: windows are never freed, and each one it
 * meets is checked under its own lock. */
static pthread_mutex_t on_mount_lock = PTHREAD_MUTEX_INITIALIZER;

static void on_mount_add(hls_t *h, mount_t *m)
{
    pthread_mutex_lock(&on_mount_lock);
    hls_t *head = atomic_load(&m->hls), *o = head;
    while (o && o != h)
        o = atomic_load(&o->next_on_mount);
    if (!o) {
        atomic_store(&h->next_on_mount, head);
        atomic_store(&m->hls, (void *)h);
    }
    pthread_mutex_unlock(&on_mount_lock);
}

static void on_mount_remove(hls_t *h, mount_t *m)
{
    pthread_mutex_lock(&on_mount_lock);
    hls_t *head = atomic_load(&m->hls);
    if (head == h) {
        atomic_store(&m->hls, (void *)atomic_load(&h->next_on_mount));
    } else {
        for (hls_t *o = head; o; o = atomic_load(&o->next_on_mount))
            if (atomic_load(&o->next_on_mount) == h) {
                atomic_store(&o->next_on_mount, atomic_load(&h->next_on_mount));
                break;
            }
    }
    pthread_mutex_unlock(&on_mount_lock);
}

/* ---- attaching to a mount, dropping the window ---- */

static void window_free_locked(hls_t *h)
{
    for (int i = 0; h->segs && i < h->nsegs; i++)
        seg_clear(&h->segs[i]);
    free(h->segs);
    h->segs = NULL;
    if (h->scan)
        block_unref(h->scan);
    h->scan = NULL;
    h->have_open = 0;
    if (h->last_meta)
        icy_meta_unref(h->last_meta);
    h->last_meta = NULL;
    hls_opus_free_locked(h);
    h->version++;
    for (int ll = 0; ll < 2; ll++) {
        buf_free(&h->playlist_text[ll]);
        h->playlist_at[ll] = 0;
    }
}

static void detach_locked(hls_t *h)
{
    if (!h->mount)
        return;
    on_mount_remove(h, h->mount);
    mount_unref(h->mount);
    h->mount = NULL;
}

static void settings_locked(hls_t *h, const mount_t *m)
{
    (void)m;
    hls_conf_t g = settings_for(server_config(), h->name);
    int target_ms = g.target_duration * 1000;
    int part = g.part_target_ms < target_ms ? g.part_target_ms : target_ms;
    if (target_ms / part > HLS_MAX_PARTS)
        part = (target_ms + HLS_MAX_PARTS - 1) / HLS_MAX_PARTS;
    h->target = g.target_duration;
    h->part_ms = part;
    h->parts_per_seg = target_ms / part;
    h->listed = g.segments;
}

/* Attaches the window to m from its burst point: what the mount still holds is cut at once. */
static int attach_locked(hls_t *h, mount_t *m)
{
    if (h->mount) {
        hls_stream_break(h);
        if (h->scan)
            block_unref(h->scan);
        h->scan = NULL;
        detach_locked(h);
    }
    if (!h->segs) {
        settings_locked(h, m);
        h->nsegs = 2 * h->listed + 2; /* as many kept after they leave the playlist */
        if (!(h->segs = calloc((size_t)h->nsegs, sizeof(hls_seg_t))))
            return -ENOMEM;
        h->first_seq = h->open_seq;
        if (h->ever)
            h->disc_next = 1;
    }
    uint32_t pos;
    block_t *headers = NULL;
    block_t *b = mount_attach(m, &pos, &headers);
    h->is_opus = headers && atomic_load(&m->is_ogg) && hls_opus_headers(headers);
    int rc = h->is_opus ? hls_opus_attach_locked(h, headers) : 0;
    if (!h->is_opus && h->init) { /* no init segment for packed audio */
        block_unref(h->init);
        h->init = NULL;
    }
    if (headers)
        block_unref(headers);
    if (!b || rc < 0) {
        if (b)
            block_unref(b);
        return -ENOMEM;
    }
    h->scan = b;
    h->pos = b->offset + pos;
    h->state = SCAN_SEEK;
    if (pos == 0 && (b->flags & BLOCK_SYNC))
        h->state = SCAN_HEAD;
    h->have = 0;
    h->frames_known = 0;
    if (h->rate) /* the first frame starts the clock's next epoch */
        h->clock90 += h->clock_samples * 90000 / h->rate;
    h->clock_samples = 0;
    h->rate = 0;
    h->mount = mount_ref(m);
    hls_sessions_follow_locked(h, m);
    h->epoch_samples = 0;
    advance_locked(h);
    /* the burst was cut at once: date it back so that its end is now (the blocks that come
     * next date it better: redate_locked) */
    if (h->rate) {
        int64_t now = wall_ms();
        date_epoch_locked(h, now - (int64_t)(h->epoch_samples * 1000 / h->rate));
        h->redate_until_ms = now + REDATE_SPAN_MS;
    }
    h->version++; /* the segments were dated again */
    on_mount_add(h, m);
    return 0;
}

static hls_t *find_locked(const char *name)
{
    hls_t *h = registry;
    while (h && strcmp(h->name, name) != 0)
        h = h->next;
    return h;
}

hls_t *hls_find(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    hls_t *h = find_locked(name);
    pthread_mutex_unlock(&registry_lock);
    return h;
}

/* An upgrade: the windows the new process makes first number their segments after those
 * the old process handed out (see hls_sessions_restore), so no URL is used twice. */
static uint64_t seq_floor;

void hls_number_after(uint64_t seq)
{
    if (seq > seq_floor)
        seq_floor = seq;
}

hls_t *hls_registry_get(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    hls_t *h = find_locked(name);
    if (!h && (h = calloc(1, sizeof(*h)))) {
        if (!(h->name = strdup(name))) {
            free(h);
            h = NULL;
        } else {
            pthread_mutex_init(&h->lock, NULL);
            list_init(&h->waiters);
            /* sequence numbers from the wall clock: a restarted server never reuses a
             * segment's URL a cache may still hold (segments last at least a second) */
            h->open_seq = h->first_seq = (uint64_t)time(NULL);
            if (h->open_seq <= seq_floor)
                h->open_seq = h->first_seq = seq_floor + 1;
            h->next = registry;
            registry = h;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    return h;
}

hls_t *hls_touch(mount_t *m)
{
    return hls_touch_as(m->name, m);
}

hls_t *hls_touch_as(const char *name, mount_t *m)
{
    hls_t *h = hls_registry_get(name);
    if (!h)
        return NULL;
    pthread_mutex_lock(&h->lock);
    h->last_request_ms = loop_now_ms();
    int rc = 0;
    if (h->mount != m)
        rc = attach_locked(h, m);
    else
        advance_locked(h);
    pthread_mutex_unlock(&h->lock);
    return rc < 0 ? NULL : h;
}

/* ---- an upgrade: a window carried (hls_carry.c) ---- */

void hls_follow_locked(hls_t *h, mount_t *m)
{
    detach_locked(h);
    h->mount = mount_ref(m);
    on_mount_add(h, m);
}

void hls_window_drop_locked(hls_t *h)
{
    detach_locked(h);
    window_free_locked(h);
}

/* ---- waiting for a part (the queries on a window are in hls_query.c) ---- */

int hls_wait(hls_t *h, hls_waiter_t *w)
{
    pthread_mutex_lock(&h->lock);
    int rc = w->follow ? (part_grew(h, w) ? HLS_READY : HLS_PENDING)
                       : hls_locate(h, w->msn, w->part);
    if (rc == HLS_PENDING && !w->linked) {
        /* linked at most once: a part followed as it fills may ask again (its socket drained)
         * before the wake-up posted for it ran, and a second link would make the list a loop */
        w->hls = h;
        w->linked = 1;
        list_insert_tail(&h->waiters, &w->link);
        h->last_request_ms = loop_now_ms();
    }
    pthread_mutex_unlock(&h->lock);
    return rc == HLS_PENDING ? 1 : rc == HLS_TOO_FAR ? -1 : 0;
}

void hls_unwait(hls_waiter_t *w)
{
    hls_t *h = w->hls;
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    if (w->linked) {
        list_remove(&w->link);
        w->linked = 0;
    }
    pthread_mutex_unlock(&h->lock);
}

/* ---- the timer: idle windows, replaced sources ---- */

/* The window's mount ended, or the window serves a sourceless mount's fallback: it follows
 * what serves its name now (its own source back, as <fallback-override> moves listeners;
 * else the fallback), with a discontinuity. */
static void follow_locked(hls_t *h)
{
    mount_t *m = mount_find(h->name);
    if (!m && !atomic_load(&h->mount->ended))
        return; /* the fallback still serves */
    if (!m)
        m = fallback_for_sourceless(h->name);
    if (m && m != h->mount && !atomic_load(&m->is_ogg) &&
        hls_type_supported(mount_info(m)->content_type))
        attach_locked(h, m);
    if (m)
        mount_unref(m);
}

#define TICK_MS 1000
#define TICK_BUSY_MS 50 /* while sessions are left to expire */

static void hls_tick(worker_t *w, void *arg)
{
    (void)arg;
    uint64_t now = loop_now_ms();
    int more = 0;
    pthread_mutex_lock(&registry_lock);
    for (hls_t *h = registry; h; h = h->next) {
        pthread_mutex_lock(&h->lock);
        uint64_t idle_ms = h->target * 6000u > 20000u ? h->target * 6000u : 20000u;
        /* a crowd of sessions that ended together is ended in batches, one a turn */
        more |= !more && hls_sessions_expire_locked(h, now, 0);
        if (h->segs && now - h->last_request_ms > idle_ms && list_empty(&h->waiters) &&
            !h->sessions) {
            hls_stream_break(h);
            detach_locked(h);
            window_free_locked(h);
            log_debug("hls: %s: no client asked for %llu s, window dropped", h->name,
                      (unsigned long long)(idle_ms / 1000));
        } else if (h->mount && (atomic_load(&h->mount->ended) ||
                                strcmp(h->mount->name, h->name) != 0)) {
            follow_locked(h);
        }
        pthread_mutex_unlock(&h->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    static int busy; /* worker 0's only */
    if (busy != more)
        worker_timer_period(w, hls_tick, more ? TICK_BUSY_MS : TICK_MS);
    busy = more;
}

static int hls_module_init(worker_t *w)
{
    return w->id == 0 ? worker_timer_add(w, TICK_MS, hls_tick, NULL) : 0;
}

/* At exit, once every worker stopped (worker 0 is freed first): the sessions end with their
 * access-log lines and the windows give their blocks back. The windows themselves stay:
 * connections of other workers, closed later, may still unlink from them. */
static void hls_module_fini(worker_t *w)
{
    if (w->id != 0)
        return;
    uint64_t now = loop_now_ms();
    pthread_mutex_lock(&registry_lock);
    for (hls_t *h = registry; h; h = h->next) {
        pthread_mutex_lock(&h->lock);
        hls_sessions_expire_locked(h, now, 1);
        detach_locked(h);
        window_free_locked(h);
        pthread_mutex_unlock(&h->lock);
    }
    pthread_mutex_unlock(&registry_lock);
    hls_intro_cache_clear();
}

static const worker_module_t hls_module = {
    .name = "hls",
    .init = hls_module_init,
    .fini = hls_module_fini,
};

void hls_register(void)
{
    mount_set_publish_hook(publish_hook);
    worker_register(&hls_module);
}
