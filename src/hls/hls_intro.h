/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_intro: an intro file (a mount's <intro>, or a preroll chosen per session) as HLS
 * segments: the file's MP3 or ADTS frames cut into segments of at most the target duration,
 * each a byte range of the file (read once and shared: stream/webfile.h), served behind an
 * ID3 timestamp tag as live segments are; or an Ogg Opus file's packets cut likewise, each
 * segment one fragmented MP4 fragment (hls_fmp4.h) behind an init segment of the file's own
 * OpusHead, all built when the file is cut. Cut once per file version and target duration
 * and kept while sessions or requests hold it. The URL of a segment names the file and its
 * version, never a session, so a cache serves it to everyone. No HTTP here.
 */
#ifndef RIMECAST_HLS_INTRO_H
#define RIMECAST_HLS_INTRO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/block.h"
#include "core/buf.h"

typedef struct webfile webfile_t;

#define HLS_INTRO_MAX_SEGS 8 /* an intro longer than this many segments is cut short */

typedef struct hls_intro_seg {
    size_t start, end;   /* bytes of the file: whole frames (MPEG audio, ADTS) */
    uint64_t samples;
    block_t *frag;       /* Opus: the segment (emsg, moof, mdat), else NULL */
} hls_intro_seg_t;

typedef struct hls_intro {
    atomic_int refs;
    webfile_t *file;     /* a reference: the bytes */
    char *name;          /* as configured, e.g. "/intro.mp3" (a webroot path) */
    long long version;   /* the file's mtime: in the URLs, a changed file gets new ones */
    int target;          /* seconds a segment lasts at most */
    int adts;            /* AAC in ADTS, else MPEG audio (or Opus) */
    block_t *init;       /* Ogg Opus: the init segment of its OpusHead; NULL: MPEG or ADTS */
    uint32_t rate;       /* 48000 for Opus */
    int nsegs;
    hls_intro_seg_t segs[HLS_INTRO_MAX_SEGS];
    struct hls_intro *next; /* the cache: cut intros, by name and target */
} hls_intro_t;

/* The webroot file `name` cut for target duration `target` (seconds): a new reference, or
 * NULL (no such file, or no MP3 / ADTS frames or Ogg Opus stream in it: logged, rate-limited).
 * Cold path: stats the file. */
hls_intro_t *hls_intro_get(const char *name, int target);
hls_intro_t *hls_intro_ref(const hls_intro_t *i);
void hls_intro_unref(hls_intro_t *i);

/* 1 if intro i can open the HLS of a stream of that kind (Opus; else ADTS or MPEG audio at
 * that sample rate), else 0 with a line logged (rate-limited) for mount `mount`. */
int hls_intro_fits(const hls_intro_t *i, const char *mount, int opus, int adts, uint32_t rate);

#define HLS_INTRO_INIT (-1) /* the init segment, in place of a segment number */

/* Appends the relative URI of segment n (the playlist is <mount>/hls.m3u8):
 * hls/intro/<n>.<ext>?file=<name, percent-coded>&v=<version>; for HLS_INTRO_INIT
 * hls/intro/init.mp4?file=...&v=... */
int hls_intro_uri(const hls_intro_t *i, int n, buf_t *out);

/* Appends the EXT-X-MAP line of an Opus intro's init segment (nothing for MPEG or ADTS). */
int hls_intro_map(const hls_intro_t *i, buf_t *out);

/* Drops the cache's references (at exit). */
void hls_intro_cache_clear(void);

#endif
