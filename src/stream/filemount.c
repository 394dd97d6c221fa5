/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * filemount: webroot files played as paced, looped mounts (see filemount.h).
 *
 * The list of file mounts is shared by every worker (filemount_get runs where a listener
 * needs one) and the pacer (a FILEMOUNT_TICK_MS timer on worker 0) under one mutex: cold
 * path. The pacer is the only producer of each file mount's queue. An Ogg file goes through the
 * Ogg format handler page by page, each loop with new serial numbers: the handler sees a
 * chained stream (a BOS page after data) and hands its headers to the mount and, inline, to
 * listeners already playing, as it does for a live source.
 */
#include "stream/filemount.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "format/format.h"
#include "format/ogg_file.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "stream/webfile.h"

#define FILEMOUNT_TICK_MS 100
#define FILEMOUNT_PREFILL_MS 1000 /* queued at once, so the first listener starts at once */
#define FILEMOUNT_DEFAULT_BITRATE 128000

typedef struct filemount filemount_t;
struct filemount {
    char *path;
    mount_t *mount;     /* owned reference */
    webfile_t *file;    /* owned reference */
    long byte_rate;     /* bytes per second */
    uint64_t start_ms;  /* pacing clock */
    uint64_t published; /* bytes published since start */
    size_t pos;         /* next byte of the file's audio to publish */
    format_t *ogg;      /* an Ogg file: the handler its pages go through, else NULL */
    uint32_t loop;      /* loops begun (Ogg: added to the serial numbers) */
    uint64_t last_used_ms;
    filemount_t *next;
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static filemount_t *list;

static void filemount_free(filemount_t *fm)
{
    if (fm->ogg)
        format_free(fm->ogg);
    mount_end(fm->mount);
    mount_unref(fm->mount);
    webfile_unref(fm->file);
    free(fm->path);
    free(fm);
}

/* ---- the Ogg handler's sink: the file mount's own queue, headers and tags ---- */

static void ogg_emit(void *ctx, block_t *b)
{
    mount_publish(((filemount_t *)ctx)->mount, b);
}

static void ogg_set_headers(void *ctx, block_t *headers)
{
    mount_set_headers(((filemount_t *)ctx)->mount, headers);
}

static void ogg_set_tag(void *ctx, const char *key, const char *value)
{
    mount_set_tag(((filemount_t *)ctx)->mount, key, value);
}

static void ogg_tags_done(void *ctx)
{
    mount_update_meta(((filemount_t *)ctx)->mount);
}

static void ogg_log(void *ctx, int level, const char *msg)
{
    filemount_t *fm = ctx;
    char esc[1024];
    escape_log_utf8(esc, sizeof(esc), msg, strlen(msg));
    log_msg(level, "filemount", "%s: %s", fm->path, esc);
}

/* An Ogg file mount: its handler, and its byte rate from the file's granule positions. */
static int ogg_setup(filemount_t *fm, long fallback_rate)
{
    const webfile_t *f = fm->file;
    long rate = ogg_file_byte_rate(f->data + f->audio_start, f->audio_end - f->audio_start);
    format_sink_t sink = {fm, ogg_emit, ogg_set_headers, ogg_set_tag, ogg_tags_done, ogg_log, NULL};
    if (rate < 0 || !(fm->ogg = format_new(&format_ogg_ops, &sink)))
        return -1;
    fm->byte_rate = rate > 0 ? rate : fallback_rate;
    return 0;
}

/* The bit rate a file's name gives in brackets, as Icecast-KH reads "/fallback-[128].mp3"
 * (kbit/s; AzuraCast names its fallback files so); 0 when there is none. */
static long name_bitrate(const char *path)
{
    const char *open = strchr(path, '[');
    char *end;
    long kbps = open ? strtol(open + 1, &end, 10) : 0;
    return open && end != open + 1 && *end == ']' && kbps > 0 && kbps <= 100000 ? kbps * 1000
                                                                                : 0;
}

static filemount_t *filemount_new(const char *path, webfile_t *f, long bitrate_hint)
{
    filemount_t *fm = calloc(1, sizeof(*fm));
    mount_info_t info = {0};
    info.public = 0;
    info.content_type = strdup(f->content_type);
    long named = name_bitrate(path);
    long bitrate = f->bitrate      ? f->bitrate
                   : bitrate_hint ? bitrate_hint
                   : named        ? named
                                  : FILEMOUNT_DEFAULT_BITRATE;
    char br[32];
    snprintf(br, sizeof(br), "%ld", (bitrate + 500) / 1000);
    info.bitrate = strdup(br);
    int is_ogg = format_for_content_type(f->content_type) == &format_ogg_ops;
    mount_feed_t feed = {.is_ogg = is_ogg}; /* no connection to kill: it ends with its use */
    if (!fm || !info.content_type || !info.bitrate || !(fm->path = strdup(path)) ||
        !(fm->mount = mount_create_detached(path, &info, &feed))) {
        mount_info_free(&info);
        if (fm)
            free(fm->path);
        free(fm);
        return NULL;
    }
    fm->file = f;
    fm->byte_rate = bitrate / 8;
    fm->pos = f->audio_start;
    fm->start_ms = loop_now_ms();
    fm->last_used_ms = fm->start_ms;
    if (is_ogg && ogg_setup(fm, bitrate / 8) < 0) {
        fm->file = NULL; /* the caller's reference still */
        filemount_free(fm);
        return NULL;
    }
    char esc[512];
    log_info("playing file %s as a fallback at %ld bit/s%s",
             escape_log(esc, sizeof(esc), path, strlen(path)), fm->byte_rate * 8,
             f->bitrate ? " (its MP3 frames)" : is_ogg ? " (Ogg, looped as a chained stream)" : "");
    return fm;
}

mount_t *filemount_get(const char *path, long bitrate_hint)
{
    webfile_t *f = webfile_get(path);
    if (!f)
        return NULL;
    if (f->audio_end <= f->audio_start) {
        webfile_unref(f);
        return NULL;
    }
    pthread_mutex_lock(&list_lock);
    filemount_t *fm = list;
    while (fm && (strcmp(fm->path, path) != 0 || fm->file != f))
        fm = fm->next;
    if (!fm && (fm = filemount_new(path, f, bitrate_hint))) {
        f = NULL; /* the file mount's reference now */
        fm->next = list;
        list = fm;
    }
    mount_t *m = NULL;
    if (fm) {
        fm->last_used_ms = loop_now_ms();
        m = mount_ref(fm->mount);
    }
    pthread_mutex_unlock(&list_lock);
    if (f)
        webfile_unref(f);
    return m;
}

/* Ogg: whole pages through the handler, which makes the blocks (sync points and headers); a
 * loop begins with the file's BOS pages under new serial numbers, a new link of the chain. */
static void pace_ogg(filemount_t *fm, uint64_t due)
{
    const webfile_t *f = fm->file;
    while (fm->published < due) {
        size_t n = ogg_file_page_len(f->data, fm->pos, f->audio_end);
        block_t *b = n ? ogg_file_page_copy(f->data, fm->pos, n, fm->loop) : NULL;
        if (!b)
            return; /* without memory: the next tick tries again (the file was checked) */
        int rc = fm->ogg->ops->ingest(fm->ogg, b->data, b->len);
        block_unref(b);
        if (rc < 0)
            return;
        fm->published += n;
        fm->pos += n;
        if (fm->pos >= f->audio_end) {
            fm->pos = f->audio_start;
            fm->loop++;
        }
    }
}

/* Publishes the bytes due by now. A block never spans the loop point, and for MP3 it holds
 * whole frames: every block is a sync point where a listener (joining, or moved here) starts
 * on a frame. */
static void pace(filemount_t *fm, uint64_t now)
{
    uint64_t due = (uint64_t)fm->byte_rate * (now - fm->start_ms + FILEMOUNT_PREFILL_MS) / 1000;
    const webfile_t *f = fm->file;
    if (fm->ogg) {
        pace_ogg(fm, due);
        return;
    }
    while (fm->published < due) {
        size_t n = f->audio_end - fm->pos;
        if (n > due - fm->published)
            n = f->bitrate ? webfile_mp3_frames(f->data, fm->pos, f->audio_end,
                                                (size_t)(due - fm->published))
                           : (size_t)(due - fm->published);
        block_t *b = block_new_copy(f->data + fm->pos, n);
        if (!b)
            return;
        b->flags = BLOCK_SYNC;
        mount_publish(fm->mount, b);
        fm->published += n;
        fm->pos += n;
        if (fm->pos >= f->audio_end)
            fm->pos = f->audio_start;
    }
}

static void on_tick(worker_t *w, void *arg)
{
    (void)w;
    (void)arg;
    uint64_t now = loop_now_ms();
    filemount_t *idle = NULL;
    pthread_mutex_lock(&list_lock);
    for (filemount_t **pp = &list; *pp;) {
        filemount_t *fm = *pp;
        if (atomic_load(&fm->mount->listeners) > 0)
            fm->last_used_ms = now;
        if (now - fm->last_used_ms > FILEMOUNT_IDLE_MS) {
            *pp = fm->next;
            fm->next = idle;
            idle = fm;
            continue;
        }
        pace(fm, now);
        pp = &fm->next;
    }
    pthread_mutex_unlock(&list_lock);
    while (idle) {
        filemount_t *next = idle->next;
        filemount_free(idle);
        idle = next;
    }
}

static int filemount_init(worker_t *w)
{
    return w->id == 0 ? worker_timer_add(w, FILEMOUNT_TICK_MS, on_tick, NULL) : 0;
}

/* At shutdown (worker 0 stopped, its connections released): drop every file mount and the
 * cached files. */
static void filemount_fini(worker_t *w)
{
    if (w->id != 0)
        return;
    pthread_mutex_lock(&list_lock);
    filemount_t *fm = list;
    list = NULL;
    pthread_mutex_unlock(&list_lock);
    while (fm) {
        filemount_t *next = fm->next;
        filemount_free(fm);
        fm = next;
    }
    webfile_cache_clear();
}

static const worker_module_t filemount_module = {
    .name = "filemount",
    .init = filemount_init,
    .fini = filemount_fini,
};

void filemount_register(void)
{
    worker_register(&filemount_module);
}
