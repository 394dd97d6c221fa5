/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_intro: an intro file (a mount's <intro>, or a preroll chosen per session) as HLS
 * segments: the file's MP3 or ADTS frames cut into segments of at most the target duration,
 * each a byte range of the file (read once and shared: stream/webfile.h), served behind an
 * ID3 timestamp tag as live segments are. Cut once per file version and target duration
 * and kept while sessions or requests hold it. The URL of a segment names the file and its
 * version, never a session, so a cache serves it to everyone. No HTTP here.
 */
#ifndef RIMECAST_HLS_INTRO_H
#define RIMECAST_HLS_INTRO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct webfile webfile_t;

#define HLS_INTRO_MAX_SEGS 8 /* an intro longer than this many segments is cut short */

typedef struct hls_intro_seg {
    size_t start, end;   /* bytes of the file: whole frames */
    uint64_t samples;
} hls_intro_seg_t;

typedef struct hls_intro {
    atomic_int refs;
    webfile_t *file;     /* a reference: the bytes */
    char *name;          /* as configured, e.g. "/intro.mp3" (a webroot path) */
    long long version;   /* the file's mtime: in the URLs, a changed file gets new ones */
    int target;          /* seconds a segment lasts at most */
    int adts;            /* AAC in ADTS, else MPEG audio */
    uint32_t rate;
    int nsegs;
    hls_intro_seg_t segs[HLS_INTRO_MAX_SEGS];
    struct hls_intro *next; /* the cache: cut intros, by name and target */
} hls_intro_t;

/* The webroot file `name` cut for target duration `target` (seconds): a new reference, or
 * NULL (no such file, or no MP3 / ADTS frames in it). Cold path: stats the file. */
hls_intro_t *hls_intro_get(const char *name, int target);
hls_intro_t *hls_intro_ref(const hls_intro_t *i);
void hls_intro_unref(hls_intro_t *i);

/* Appends the relative URI of segment n (the playlist is <mount>/hls.m3u8):
 * hls/intro/<n>.<ext>?file=<name, percent-coded>&v=<version>. */
int hls_intro_uri(const hls_intro_t *i, int n, buf_t *out);

/* Drops the cache's references (at exit). */
void hls_intro_cache_clear(void);

#endif
