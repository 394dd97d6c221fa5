/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_id3: the ID3v2.4 tag of an HLS piece: the PRIV frame
 * com.apple.streaming.transportStreamTimestamp with its 90 kHz time (RFC 8216 3.4), and a TIT2
 * frame where the title changed. In front of packed audio (hls.c), and in the emsg box of an
 * Opus fragment (hls_opus.c, and the fragments of Opus intros, hls_intro.c). A pure function.
 */
#ifndef RIMECAST_HLS_ID3_H
#define RIMECAST_HLS_ID3_H

#include <stdint.h>

#define HLS_ID3_LEN 73       /* the ID3v2 tag in front of every segment and part: its time */
#define HLS_TITLE_MAX 255    /* bytes of a title carried in a TIT2 frame */
#define HLS_ID3_MAX (HLS_ID3_LEN + 11 + HLS_TITLE_MAX) /* the tag with a title */

/* Writes the ID3v2.4 tag that opens a piece to p (HLS_ID3_MAX bytes): its 90 kHz time
 * (33 bits) and, with a title (NULL: none), a TIT2 frame. Returns its length. */
uint32_t hls_id3_tag(unsigned char *p, uint64_t ts90, const char *title);

/* The 33-bit 90 kHz time of `ticks` 48 kHz ticks (an Opus fragment's decode time). */
uint64_t hls_id3_time48(uint64_t ticks);

#endif
