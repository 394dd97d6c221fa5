/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * webfile: audio files from the webroot used by mounts (fallback files, intros), read once
 * and shared: the bytes as a chain of immutable blocks, and for MP3 where the audio lies and
 * its bitrate. Cached by path; a file whose mtime or size changed is read again for new users
 * while the old copy lives on for those that hold it.
 *
 * Reading happens on the calling thread (a worker, cold path: the first listener that needs
 * the file); files over WEBFILE_MAX bytes are refused.
 */
#ifndef RIMECAST_WEBFILE_H
#define RIMECAST_WEBFILE_H

#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#include "core/block.h"

#define WEBFILE_MAX (16u << 20)

typedef struct webfile webfile_t;
struct webfile {
    atomic_int refcount;
    char *real;            /* absolute path */
    time_t mtime;
    size_t len;
    block_t *blocks;       /* the whole file as a linked chain of blocks (owned), NULL if empty */
    unsigned char *data;   /* the whole file, contiguous (owned) */
    size_t audio_start, audio_end; /* MP3: without ID3 tags; else the whole file */
    long bitrate;          /* bits/s from the MP3 frames, 0 when not MP3 */
    const char *content_type;
    webfile_t *next;
};

/* The webroot file at request path `path` (normalised, e.g. "/silence.mp3"), read if needed;
 * a path with a ".." segment may lead out of the webroot (Icecast-KH's <intro>: see
 * webfile.c). A new reference, or NULL (not a regular file, too big, unreadable). */
webfile_t *webfile_get(const char *path);
webfile_t *webfile_ref(webfile_t *f);
void webfile_unref(webfile_t *f);
/* Drops the cache's references (at shutdown); files still held live on until released. */
void webfile_cache_clear(void);

/* Average bitrate (bits/s) of the MP3 frames in data[start, end), with start and end moved to the
 * first frame and the end of the last whole one; 0 if fewer than 4 frames follow each other. */
long webfile_mp3_bitrate(const unsigned char *data, size_t *start, size_t *end);

/* Bytes from pos (a frame start) through whole MP3 frames until at least `want` bytes, never
 * past end. Where there is no frame at pos, just want (capped at end). */
size_t webfile_mp3_frames(const unsigned char *data, size_t pos, size_t end, size_t want);

#endif
