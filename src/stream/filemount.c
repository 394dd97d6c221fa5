/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * filemount: webroot files played as paced, looped mounts (see filemount.h).
 *
 * The list of file mounts is shared by every worker (filemount_get runs where a listener
 * needs one) and the pacer (a FILEMOUNT_TICK_MS timer on worker 0) under one mutex: cold
 * path. The pacer is the only producer of each file mount's queue.
 */
#include "stream/filemount.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "format/format.h"
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
    uint64_t last_used_ms;
    filemount_t *next;
};

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static filemount_t *list;

static void filemount_free(filemount_t *fm)
{
    mount_end(fm->mount);
    mount_unref(fm->mount);
    webfile_unref(fm->file);
    free(fm->path);
    free(fm);
}

static filemount_t *filemount_new(const char *path, webfile_t *f, long bitrate_hint)
{
    filemount_t *fm = calloc(1, sizeof(*fm));
    mount_info_t info = {0};
    info.public = 0;
    info.content_type = strdup(f->content_type);
    long bitrate = f->bitrate ? f->bitrate : bitrate_hint ? bitrate_hint
                                                           : FILEMOUNT_DEFAULT_BITRATE;
    char br[32];
    snprintf(br, sizeof(br), "%ld", (bitrate + 500) / 1000);
    info.bitrate = strdup(br);
    if (!fm || !info.content_type || !info.bitrate || !(fm->path = strdup(path)) ||
        !(fm->mount = mount_create_detached(path, &info))) {
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
    char esc[512];
    log_info("playing file %s as a fallback at %ld bit/s%s",
             escape_log(esc, sizeof(esc), path, strlen(path)), bitrate,
             f->bitrate ? " (its MP3 frames)" : "");
    return fm;
}

mount_t *filemount_get(const char *path, long bitrate_hint)
{
    webfile_t *f = webfile_get(path);
    if (!f)
        return NULL;
    if (format_for_content_type(f->content_type) == &format_ogg_ops || f->audio_end <= f->audio_start) {
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

/* Publishes the bytes due by now. A block never spans the loop point, and for MP3 it holds
 * whole frames: every block is a sync point where a listener (joining, or moved here) starts
 * on a frame. */
static void pace(filemount_t *fm, uint64_t now)
{
    uint64_t due = (uint64_t)fm->byte_rate * (now - fm->start_ms + FILEMOUNT_PREFILL_MS) / 1000;
    const webfile_t *f = fm->file;
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
