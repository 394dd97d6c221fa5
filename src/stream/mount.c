/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount: the registry of live mounts and each mount's block queue (see mount.h).
 *
 * Queue references: the queue owns one reference on `oldest` and one on `newest`; every block
 * owns one on its successor. Publishing links the new block after `newest`; trimming moves
 * `oldest` forward to the burst start (the oldest sync block at or after head - burst-size), so
 * the queue holds no more than the burst. A listener cursor on an old block keeps that block
 * and all later ones alive until it moves or is closed for lagging.
 */
#include "stream/mount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/str.h"
#include "net/worker.h"

#define REGISTRY_BUCKETS 4096 /* chained hash: stations with 10 000 mounts stay O(1) */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static mount_t *registry[REGISTRY_BUCKETS];
static int registry_count;

static mount_t **bucket(const char *name)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 16777619u;
    return &registry[h % REGISTRY_BUCKETS];
}

void mount_info_free(mount_info_t *i)
{
    free(i->content_type);
    free(i->name);
    free(i->description);
    free(i->genre);
    free(i->url);
    free(i->bitrate);
    free(i->audio_info);
    free(i->subtype);
    free(i->source_ip);
    free(i->user_agent);
    memset(i, 0, sizeof(*i));
}

static mount_t *registry_find_locked(const char *name)
{
    for (mount_t *m = *bucket(name); m; m = m->reg_next)
        if (strcmp(m->name, name) == 0)
            return m;
    return NULL;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* A config value as a stream description field: control characters dropped. */
static char *conf_value(const char *v)
{
    char *out = strdup(v);
    if (!out)
        return NULL;
    size_t n = 0;
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p >= 0x20 && *p != 0x7f)
            out[n++] = *p;
    out[n] = '\0';
    return out;
}

static void pick(char **field, const char *from_source, const char *from_conf)
{
    *field = from_conf ? conf_value(from_conf) : dup_or_null(from_source);
}

/* The listeners' and stats' view: the <mount> settings override the source's headers. */
static mount_info_t *info_merge(const mount_info_t *src, const mount_conf_t *mc)
{
    mount_info_t *i = calloc(1, sizeof(*i));
    if (!i)
        return NULL;
    pick(&i->content_type, src->content_type, mc ? mc->type : NULL);
    pick(&i->name, src->name, mc ? mc->stream_name : NULL);
    pick(&i->description, src->description, mc ? mc->stream_description : NULL);
    pick(&i->genre, src->genre, mc ? mc->genre : NULL);
    pick(&i->url, src->url, mc ? mc->stream_url : NULL);
    pick(&i->bitrate, src->bitrate, mc ? mc->bitrate : NULL);
    pick(&i->subtype, src->subtype, mc ? mc->subtype : NULL);
    i->audio_info = dup_or_null(src->audio_info);
    i->source_ip = dup_or_null(src->source_ip);
    i->user_agent = dup_or_null(src->user_agent);
    i->public = mc && mc->public >= 0 ? mc->public : src->public;
    if (!i->content_type)
        i->content_type = strdup("audio/mpeg");
    return i;
}

const mount_info_t *mount_info(const mount_t *m)
{
    return atomic_load_explicit(&m->info, memory_order_acquire);
}

/* m->lock held: source_info may be replaced by a relay's new upstream meanwhile otherwise */
static void update_info_locked(mount_t *m, const mount_conf_t *mc)
{
    mount_info_t *next = info_merge(&m->source_info, mc);
    if (!next)
        return; /* out of memory: the current view stays */
    mount_info_t *old = atomic_exchange_explicit(&m->info, next, memory_order_acq_rel);
    if (old) {
        old->retired_next = m->info_retired;
        m->info_retired = old;
    }
}

static void update_info(mount_t *m, const mount_conf_t *mc)
{
    pthread_mutex_lock(&m->lock);
    update_info_locked(m, mc);
    pthread_mutex_unlock(&m->lock);
}

void mount_set_source_info(mount_t *m, mount_info_t *info)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    pthread_mutex_lock(&m->lock);
    mount_info_t old = m->source_info;
    m->source_info = *info;
    memset(info, 0, sizeof(*info));
    update_info_locked(m, mc);
    pthread_mutex_unlock(&m->lock);
    mount_info_free(&old);
}

void mount_apply_config(mount_t *m)
{
    const config_t *cfg = server_config();
    const mount_conf_t *mc = config_find_mount(cfg, m->name);
    update_info(m, mc);
    long burst = config_mount_burst_size(cfg, mc), queue = config_mount_queue_size(cfg, mc);
    int maxl = -1, metaint = 16000, hidden = 0;
    if (mc) {
        maxl = mc->max_listeners;
        if (mc->mp3_metadata_interval >= 0)
            metaint = mc->mp3_metadata_interval;
        hidden = mc->hidden;
    }
    if (burst > queue)
        burst = queue;
    atomic_store(&m->burst_size, burst);
    atomic_store(&m->queue_size, queue);
    atomic_store(&m->max_listeners, maxl);
    atomic_store(&m->metaint, atomic_load(&m->is_ogg) ? 0 : metaint);
    atomic_store(&m->hidden, hidden);
}

static _Atomic(mount_name_check_t) name_check;

void mount_set_name_check(mount_name_check_t check)
{
    atomic_store(&name_check, check);
}

const char *mount_name_refused(const char *name, int file_mount)
{
    mount_name_check_t check = atomic_load(&name_check);
    return check ? check(name, file_mount) : NULL;
}

static mount_t *mount_alloc(const char *name, mount_info_t *info, const mount_feed_t *feed,
                            int file_mount, int *err)
{
    const char *why = mount_name_refused(name, file_mount);
    if (why) {
        static log_ratelimit_t refused_log;
        char esc[512];
        escape_log_utf8(esc, sizeof(esc), name, strlen(name));
        log_warn_limited(&refused_log, 10000, "%s %s refused: mountpoint %s %s",
                         file_mount ? "file mount" : "mount", esc, esc, why);
        mount_info_free(info);
        *err = -EPERM;
        return NULL;
    }
    mount_t *m = calloc(1, sizeof(*m));
    block_t *sentinel = block_new(0);
    if (!m || !sentinel || !(m->name = strdup(name))) {
        free(m ? m->name : NULL);
        free(m);
        if (sentinel)
            block_unref(sentinel);
        mount_info_free(info);
        *err = -ENOMEM;
        return NULL;
    }
    atomic_init(&m->refcount, 2); /* registry + caller */
    pthread_mutex_init(&m->lock, NULL);
    sentinel->flags = BLOCK_SYNC;
    m->oldest = sentinel;
    m->newest = block_ref(sentinel);
    m->source_info = *info;
    memset(info, 0, sizeof(*info));
    m->start = time(NULL);
    m->meta = icy_meta_new("", NULL);
    atomic_init(&m->is_ogg, feed->is_ogg);
    m->source_worker = feed->worker;
    m->source_conn_id = feed->conn_id;
    mount_apply_config(m);
    return m;
}

mount_t *mount_create_detached(const char *name, mount_info_t *info, const mount_feed_t *feed)
{
    int err;
    mount_t *m = mount_alloc(name, info, feed, 1, &err);
    if (m)
        atomic_store(&m->refcount, 1);
    return m;
}

mount_t *mount_create(const char *name, mount_info_t *info, const mount_feed_t *feed, int *err)
{
    mount_t *m = mount_alloc(name, info, feed, 0, err);
    if (!m)
        return NULL;
    pthread_mutex_lock(&registry_lock);
    if (registry_find_locked(name)) {
        pthread_mutex_unlock(&registry_lock);
        atomic_store(&m->refcount, 1);
        mount_unref(m);
        *err = -EEXIST;
        return NULL;
    }
    mount_t **b = bucket(name);
    m->reg_next = *b;
    *b = m;
    registry_count++;
    pthread_mutex_unlock(&registry_lock);
    FAULT_HOLD(FAULT_MOUNT_PUBLISHED); /* tests: listeners may find it now, the source waits */
    return m;
}

void mount_set_feed(mount_t *m, const mount_feed_t *feed)
{
    pthread_mutex_lock(&m->lock);
    atomic_store(&m->is_ogg, feed->is_ogg);
    m->source_worker = feed->worker;
    m->source_conn_id = feed->conn_id;
    pthread_mutex_unlock(&m->lock);
    mount_apply_config(m);
}

mount_t *mount_find(const char *name)
{
    pthread_mutex_lock(&registry_lock);
    mount_t *m = registry_find_locked(name);
    if (m)
        mount_ref(m);
    pthread_mutex_unlock(&registry_lock);
    return m;
}

int mount_count(void)
{
    pthread_mutex_lock(&registry_lock);
    int n = registry_count;
    pthread_mutex_unlock(&registry_lock);
    return n;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(mount_t *const *)a)->name, (*(mount_t *const *)b)->name);
}

void mount_foreach(void (*fn)(mount_t *m, void *arg), void *arg)
{
    pthread_mutex_lock(&registry_lock);
    mount_t **all = malloc(sizeof(*all) * (size_t)(registry_count ? registry_count : 1));
    int n = 0;
    for (int i = 0; all && i < REGISTRY_BUCKETS; i++)
        for (mount_t *m = registry[i]; m; m = m->reg_next)
            all[n++] = mount_ref(m);
    pthread_mutex_unlock(&registry_lock);
    if (!all)
        return;
    qsort(all, (size_t)n, sizeof(*all), by_name);
    for (int i = 0; i < n; i++) {
        fn(all[i], arg);
        mount_unref(all[i]);
    }
    free(all);
}

mount_t *mount_ref(mount_t *m)
{
    atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
    return m;
}

static void tags_free(mount_tag_t *t)
{
    while (t) {
        mount_tag_t *n = t->next;
        free(t->key);
        free(t->value);
        free(t);
        t = n;
    }
}

void mount_unref(mount_t *m)
{
    if (!m || atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) != 1)
        return;
    block_unref(m->oldest);
    block_unref(m->newest);
    if (m->headers)
        block_unref(m->headers);
    icy_meta_unref(m->meta);
    tags_free(m->tags);
    free(m->fallback_name);
    free(m->relay_url);
    free(m->stream_title);
    free(m->stream_artist);
    mount_info_t *cur = atomic_load(&m->info);
    if (cur) {
        mount_info_free(cur);
        free(cur);
    }
    for (mount_info_t *r = m->info_retired, *next; r; r = next) {
        next = r->retired_next;
        mount_info_free(r);
        free(r);
    }
    mount_info_free(&m->source_info);
    pthread_mutex_destroy(&m->lock);
    free(m->name);
    free(m);
}

_Static_assert(SERVER_MAX_WORKERS <= 64, "one bit per worker in listening_workers");

void mount_wake_workers(mount_t *m)
{
    int n = atomic_load_explicit(&server.nslots, memory_order_acquire); /* draining too */
    uint64_t listening = atomic_load_explicit(&m->listening_workers, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        if ((listening >> i & 1) && server.workers[i])
            worker_wake(server.workers[i]);
}

void mount_end(mount_t *m)
{
    pthread_mutex_lock(&registry_lock);
    for (mount_t **pp = bucket(m->name); *pp; pp = &(*pp)->reg_next) {
        if (*pp == m) {
            *pp = m->reg_next;
            m->reg_next = NULL;
            registry_count--;
            atomic_store(&m->ended, 1);
            pthread_mutex_unlock(&registry_lock);
            mount_wake_workers(m);
            mount_unref(m); /* the registry's reference */
            return;
        }
    }
    pthread_mutex_unlock(&registry_lock);
    if (!atomic_exchange(&m->ended, 1)) /* a detached mount (file mount) */
        mount_wake_workers(m);
}

/* A text field of m under its lock: replaced by a copy of value (NULL clears it), or read as
 * a copy. */
static int set_locked_text(mount_t *m, char **field, const char *value)
{
    char *copy = NULL;
    if (value && !(copy = strdup(value)))
        return -ENOMEM;
    pthread_mutex_lock(&m->lock);
    char *old = *field;
    *field = copy;
    pthread_mutex_unlock(&m->lock);
    free(old);
    return 0;
}

static char *get_locked_text(mount_t *m, char *const *field)
{
    pthread_mutex_lock(&m->lock);
    char *copy = *field ? strdup(*field) : NULL;
    pthread_mutex_unlock(&m->lock);
    return copy;
}

int mount_set_fallback(mount_t *m, const char *name)
{
    return set_locked_text(m, &m->fallback_name, name);
}

char *mount_get_fallback(mount_t *m)
{
    return get_locked_text(m, &m->fallback_name);
}

int mount_set_relay_url(mount_t *m, const char *url)
{
    return set_locked_text(m, &m->relay_url, url);
}

char *mount_get_relay_url(mount_t *m)
{
    return get_locked_text(m, &m->relay_url);
}

static void kill_source_msg(worker_t *w, void *arg)
{
    uint64_t *id = arg;
    worker_close_conn(w, *id);
    free(id);
}

void mount_kill_source(mount_t *m)
{
    uint64_t *id = malloc(sizeof(*id));
    pthread_mutex_lock(&m->lock);
    worker_t *w = m->source_worker;
    if (id)
        *id = m->source_conn_id;
    pthread_mutex_unlock(&m->lock);
    if (!id || !w || worker_post(w, kill_source_msg, id) < 0)
        free(id);
}

/* The block a listener starts at for a burst point: the oldest sync block at or after target
 * that is not older than from (a chained stream's headers), else the newest sync block before
 * target; NULL when there is none yet. Walks only the queue (a few blocks). */
static block_t *burst_start_locked(mount_t *m, uint64_t target, uint64_t from)
{
    block_t *before = NULL;
    for (block_t *b = m->oldest; b; b = block_next(b)) {
        if (b->len == 0 || !(b->flags & BLOCK_SYNC) || b->offset < from)
            continue;
        if (b->offset >= target)
            return b;
        before = b;
    }
    return before;
}

static uint64_t burst_point(uint64_t head, long burst)
{
    return head > (uint64_t)burst ? head - (uint64_t)burst : 0;
}

/* Drops the blocks no new listener can start at: those before the start of the burst (the
 * oldest sync block at or after head - burst-size, else the newest before it). Without any
 * sync block, every block wholly before the burst point goes. */
static void trim_locked(mount_t *m, uint64_t head_end)
{
    long burst = atomic_load_explicit(&m->burst_size, memory_order_relaxed);
    uint64_t target = burst_point(head_end, burst);
    block_t *keep = burst_start_locked(m, target, 0);
    while (m->oldest != m->newest && m->oldest != keep) {
        block_t *next = block_next(m->oldest);
        if (!keep && next->offset > target)
            break;
        block_ref(next);
        block_unref(m->oldest);
        m->oldest = next;
    }
}

int mount_take_listener_slot(mount_t *m)
{
    /* KH's server-wide limit (-1 and 0: none). Checked, then taken: listeners arriving at the
     * same moment on other workers may pass it by one each. */
    int all = server_config()->max_listeners;
    if (all > 0 && atomic_load(&server.stats.listeners) >= all)
        return -1;
    return mount_take_moving_slot(m);
}

int mount_take_moving_slot(mount_t *m)
{
    int max = atomic_load(&m->max_listeners);
    int now = atomic_fetch_add(&m->listeners, 1) + 1;
    if (max >= 0 && now > max) {
        atomic_fetch_sub(&m->listeners, 1);
        return -1;
    }
    int peak = atomic_load(&m->listener_peak);
    while (now > peak && !atomic_compare_exchange_weak(&m->listener_peak, &peak, now))
        ;
    return 0;
}

static void (*publish_hook)(mount_t *m, void *hls);

void mount_set_publish_hook(void (*fn)(mount_t *m, void *hls))
{
    publish_hook = fn;
}

void mount_publish(mount_t *m, block_t *b)
{
    pthread_mutex_lock(&m->lock);
    b->offset = m->next_offset;
    m->next_offset += b->len;
    b->meta = icy_meta_ref(m->meta);
    block_t *prev = m->newest;
    m->newest = block_ref(b);
    block_link(prev, b);  /* prev now owns b's first reference */
    block_unref(prev);    /* the queue's old newest reference */
    atomic_store_explicit(&m->head_end, m->next_offset, memory_order_release);
    m->gathered = m->gathered > b->len ? m->gathered - b->len : 0; /* now published */
    trim_locked(m, m->next_offset + m->gathered);
    pthread_mutex_unlock(&m->lock);
    void *hls = atomic_load_explicit(&m->hls, memory_order_acquire);
    if (hls && publish_hook)
        publish_hook(m, hls);
    if (server_config()->write_window_ms == 0)
        mount_wake_workers(m);
}

void mount_set_gathered(mount_t *m, size_t bytes)
{
    pthread_mutex_lock(&m->lock);
    m->gathered = bytes;
    trim_locked(m, m->next_offset + bytes);
    pthread_mutex_unlock(&m->lock);
}

void mount_set_headers(mount_t *m, block_t *headers)
{
    pthread_mutex_lock(&m->lock);
    block_t *old = m->headers;
    m->headers = headers;
    m->headers_offset = m->next_offset; /* earlier blocks belong to the previous headers */
    pthread_mutex_unlock(&m->lock);
    if (old)
        block_unref(old);
}

void mount_set_tag(mount_t *m, const char *key, const char *value)
{
    pthread_mutex_lock(&m->lock);
    mount_tag_t **pp = &m->tags;
    while (*pp && strcmp((*pp)->key, key) != 0)
        pp = &(*pp)->next;
    if (*pp && !value) {
        mount_tag_t *t = *pp;
        *pp = t->next;
        free(t->key);
        free(t->value);
        free(t);
    } else if (*pp) {
        char *v = strdup(value);
        if (v) {
            free((*pp)->value);
            (*pp)->value = v;
        }
    } else if (value) {
        mount_tag_t *t = calloc(1, sizeof(*t));
        if (t && (t->key = strdup(key)) && (t->value = strdup(value))) {
            *pp = t;
        } else if (t) {
            free(t->key);
            free(t);
        }
    }
    pthread_mutex_unlock(&m->lock);
}

static const char *tag_locked(mount_t *m, const char *key)
{
    for (mount_tag_t *t = m->tags; t; t = t->next)
        if (strcmp(t->key, key) == 0)
            return t->value;
    return NULL;
}

char *mount_get_tag(mount_t *m, const char *key)
{
    pthread_mutex_lock(&m->lock);
    const char *v = tag_locked(m, key);
    char *copy = v ? strdup(v) : NULL;
    pthread_mutex_unlock(&m->lock);
    return copy;
}

void mount_post_stream_meta(mount_t *m, const char *title, const char *artist)
{
    pthread_mutex_lock(&m->lock);
    free(m->stream_title);
    free(m->stream_artist);
    m->stream_title = title ? strdup(title) : NULL;
    m->stream_artist = artist ? strdup(artist) : NULL;
    atomic_store(&m->stream_meta_waiting, 1);
    pthread_mutex_unlock(&m->lock);
}

int mount_take_stream_meta(mount_t *m, char **title, char **artist)
{
    if (!atomic_load_explicit(&m->stream_meta_waiting, memory_order_relaxed))
        return 0;
    pthread_mutex_lock(&m->lock);
    int waiting = atomic_exchange(&m->stream_meta_waiting, 0);
    *title = m->stream_title;
    *artist = m->stream_artist;
    m->stream_title = m->stream_artist = NULL;
    pthread_mutex_unlock(&m->lock);
    return waiting;
}

static void (*title_hook)(mount_t *m, const char *title);

void mount_set_title_hook(void (*fn)(mount_t *m, const char *title))
{
    title_hook = fn;
}

void mount_update_meta(mount_t *m)
{
    pthread_mutex_lock(&m->lock);
    const char *title = tag_locked(m, "title");
    const char *artist = tag_locked(m, "artist");
    const char *url = tag_locked(m, "url");
    char buf[4096];
    if (artist && *artist && title && *title)
        snprintf(buf, sizeof(buf), "%s - %s", artist, title);
    else
        snprintf(buf, sizeof(buf), "%s", title ? title : (artist ? artist : ""));
    icy_meta_t *nm = icy_meta_new(buf, url);
    if (nm) {
        icy_meta_unref(m->meta);
        m->meta = nm;
    }
    pthread_mutex_unlock(&m->lock);
    /* Every title change (admin update, Ogg comments, inbound ICY) passes here. */
    if (buf[0])
        log_playlist(m->name, atomic_load(&m->listeners), buf);
    if (title_hook)
        title_hook(m, buf);
}

block_t *mount_live_edge(mount_t *m)
{
    pthread_mutex_lock(&m->lock);
    block_t *b = block_ref(m->newest);
    pthread_mutex_unlock(&m->lock);
    return b;
}

int mount_headers_at(mount_t *m, uint64_t offset, block_t **headers)
{
    pthread_mutex_lock(&m->lock);
    int ok = offset >= m->headers_offset;
    *headers = ok && m->headers ? block_ref(m->headers) : NULL;
    pthread_mutex_unlock(&m->lock);
    return ok ? 0 : -1;
}

static block_t *attach(mount_t *m, long burst, uint32_t *pos, block_t **headers)
{
    pthread_mutex_lock(&m->lock);
    uint64_t target = burst_point(m->next_offset + m->gathered, burst);
    if (target < m->headers_offset)
        target = m->headers_offset; /* never start before a chained stream's new headers */
    /* At most burst-size bytes (the start block begins at or after the burst point), less than
     * a block fewer when blocks are sync points; burst-size 0 starts at the live edge. */
    block_t *start = burst > 0 ? burst_start_locked(m, target, m->headers_offset) : NULL;
    if (start) {
        *pos = 0;
    } else {
        start = m->newest; /* live edge: wait for the next block */
        *pos = start->len;
    }
    block_ref(start);
    *headers = m->headers ? block_ref(m->headers) : NULL;
    pthread_mutex_unlock(&m->lock);
    return start;
}

block_t *mount_attach(mount_t *m, uint32_t *pos, block_t **headers)
{
    return attach(m, atomic_load_explicit(&m->burst_size, memory_order_relaxed), pos, headers);
}

block_t *mount_attach_live(mount_t *m, uint32_t *pos, block_t **headers)
{
    return attach(m, 0, pos, headers);
}
