/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_ogg: ads for Ogg Vorbis and Opus mounts (docs/ADS.md, "Ogg"). An Ogg creative is a whole
 * Ogg file of one logical stream, the mount's codec, rate and channels; a listener hears it as a
 * chain link of its own (its header pages, its audio, under its own serial number), then the
 * mount's header pages and live pages as a new link. The creative's pages are checked (CRC,
 * one stream, numbered in order) and cut into shared blocks of whole pages, once per fetch.
 * Pure: bytes in, blocks out; the stream layer splices (stream/adbreak.c).
 */
#ifndef RIMECAST_ADS_OGG_H
#define RIMECAST_ADS_OGG_H

#include <stddef.h>
#include <stdint.h>

#include "ads/ads.h"
#include "core/block.h"

enum { ADS_OGG_VORBIS = 1, ADS_OGG_OPUS = 2 };

/* The format of a mount's Ogg header pages (the chain of header blocks a new listener gets):
 * 0 when they are the header pages of one Vorbis or Opus stream, -1 otherwise (several
 * streams, another codec, not pages). */
int ads_ogg_format_of(const block_t *headers, ads_format_t *f);

/* Is data an Ogg file (it starts with a page's capture pattern)? */
int ads_ogg_is_ogg(const unsigned char *data, size_t len);

/* Checks len bytes of an Ogg file and cuts them into a creative (as ads_creative_build): the
 * pages must follow each other with nothing between them, have valid CRCs, be of one logical
 * stream (a BOS page first, no other BOS page, numbered one after the other) of Vorbis or Opus
 * with its comment header after the id header, and end with a page that has a granule
 * position. samples: the audio it lasts in granule units (less the pre-skip for Opus); blocks:
 * whole pages, 4 KB at most unless one page is larger, each a sync point with no ICY
 * metadata; marks: the end of the page whose granule position reaches them. 0 with *out,
 * VAST_ERR_MEDIA_BROKEN, or -ENOMEM. */
int ads_ogg_creative_build(const unsigned char *data, size_t len, const char *title,
                           ads_creative_t **out);

/* The creative to splice into a link of serial number `serial`: c itself (a new reference)
 * when its serial differs, else its copy under another serial (made once, kept with c: c->alt),
 * or NULL when no copy can be made. Any thread. */
ads_creative_t *ads_ogg_creative_for(ads_creative_t *c, uint32_t serial);

/* The page that ends the logical stream of the last page in b (an empty page flagged end of
 * stream, its serial number, the next page number, the same granule position): a new block,
 * or NULL when b does not end with a whole page, that page ends its stream already, or memory
 * ran out. What a listener gets before an ad's link so that the link it was playing ends. */
block_t *ads_ogg_eos_after(const block_t *b);

/* The granule position of the Ogg page at p (n bytes, a whole page header), or -1 (none, or
 * not a page). */
int64_t ads_ogg_page_granule(const unsigned char *p, size_t n);

#endif
