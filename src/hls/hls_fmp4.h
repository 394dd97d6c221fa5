/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_fmp4: the fragmented MP4 boxes (ISO/IEC 14496-12) of an Opus HLS stream, per the
 * "Encapsulation of Opus in ISO Base Media File Format" mapping: the init segment (ftyp,
 * moov with one audio track whose sample entry is 'Opus' with its 'dOps' box, mvex/trex) and
 * the fragment of each part (moof with mfhd, traf/tfhd/tfdt/trun, then mdat), plus the
 * duration of an Opus packet from its TOC (RFC 6716 section 3.1); and the reading of Ogg pages
 * and their Opus packets. Pure functions: no window, no lock. The window's Opus branch that
 * uses them is hls_opus.c (declared in hls.h); Opus intros (hls_intro.h) use them too.
 */
#ifndef RIMECAST_HLS_FMP4_H
#define RIMECAST_HLS_FMP4_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"

#define FMP4_TIMESCALE 48000 /* Opus always decodes at 48 kHz */
#define OPUS_HEAD_MIN 19     /* the fixed part of an OpusHead packet (RFC 7845 5.1) */
#define OPUS_PACKET_MAX 65536 /* a longer packet is not Opus (48 frames of 1275 bytes) */

/* Samples (at 48 kHz) the Opus packet p[0..len) decodes to: frame count x frame size from
 * its TOC byte; 0 for an empty or malformed packet, or one over 120 ms (RFC 6716 3.2.5). */
uint32_t fmp4_opus_packet_samples(const unsigned char *p, size_t len);

/* 1 if head[0..len) is an OpusHead packet this writer can describe (version 0.x, channel
 * count and mapping table consistent with its length), else 0. */
int fmp4_opus_head_valid(const unsigned char *head, size_t len);

/* The init segment (ftyp + moov) for the OpusHead packet head[0..len) (fmp4_opus_head_valid):
 * a new block (offset 0, refcount 1), or NULL when memory ran out. */
block_t *fmp4_init_segment(const unsigned char *head, size_t len);

/* What a fragment holds: n Opus packets back to back in payload[0..len) (len = the sum of
 * sizes), each lasting durs[i] 48 kHz ticks, the first at decode time tfdt; seq numbers the
 * fragment (mfhd). id3[0..id3_len): an ID3 tag to carry in an emsg box at the fragment's
 * time (scheme https://aomedia.org/emsg/ID3, as hls.js and Apple's players read timed
 * metadata in fMP4), or NULL. */
typedef struct fmp4_frag {
    uint32_t seq;
    uint64_t tfdt;
    const uint32_t *durs, *sizes;
    uint32_t n;
    const unsigned char *payload;
    size_t len;
    const unsigned char *id3;
    size_t id3_len;
} fmp4_frag_t;

/* Makes room for sample n in the arrays *durs and *sizes of *cap entries each (doubled when
 * full): 0, or -ENOMEM (the arrays kept as they were). */
int fmp4_sample_room(uint32_t **durs, uint32_t **sizes, uint32_t *cap, uint32_t n);

/* The fragment: [emsg] moof (mfhd, traf: tfhd, tfdt, trun with each sample's duration and
 * size) then mdat. A new block (refcount 1, offset 0), or NULL when memory ran out. */
block_t *fmp4_fragment(const fmp4_frag_t *f);

/* An Ogg page in p[0..len) (fmp4_page_at): 1 with its fields, 0 if there is no whole page. */
typedef struct fmp4_page {
    int flags;
    uint32_t serial;
    int nsegs;
    const unsigned char *lacing, *body;
    size_t len; /* the whole page */
} fmp4_page_t;
int fmp4_page_at(const unsigned char *p, size_t len, fmp4_page_t *pg);

/* The first packet of a BOS page when it ends on the page: its length, else 0. */
size_t fmp4_bos_packet(const fmp4_page_t *pg);

/* The packets of a page in turn: a packet ends where a lacing value is under 255. Start with
 * {0, pg->body}. */
typedef struct fmp4_lacing {
    int i;                   /* the next lacing value */
    const unsigned char *at; /* the next packet's bytes */
} fmp4_lacing_t;
/* The next piece of pg: 1 with its bytes in *p, *len and *ended (the packet ends on this
 * page), 0 when the page has no more. */
int fmp4_lacing_next(const fmp4_page_t *pg, fmp4_lacing_t *w, const unsigned char **p,
                     size_t *len, int *ended);

/* The Opus packets of an Ogg Opus file d[0..len): its first logical stream, which must be Opus
 * (a chained link ends the walk). *head, *head_len: its OpusHead (within d); then fn(arg,
 * packet, length, samples) for each audio packet in order (the header packets and malformed
 * packets skipped; a packet spread over pages is passed from a copy). fn returns 0 to go on,
 * else the walk stops. 0, or -1 when d does not begin an Opus stream. */
typedef int (*fmp4_packet_fn)(void *arg, const unsigned char *p, size_t len, uint32_t samples);
int fmp4_ogg_opus_walk(const unsigned char *d, size_t len, const unsigned char **head,
                       size_t *head_len, fmp4_packet_fn fn, void *arg);

#endif
