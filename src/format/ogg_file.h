/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_file: an Ogg file in memory, walked page by page, for playing it in a loop as a chained
 * stream (stream/filemount.c). Checks that a file is nothing but whole pages, measures its byte
 * rate from the granule positions, and copies a page with its serial number changed (each loop
 * is a new link of the chain, and links must not share serial numbers) and its CRC set again.
 * Pure functions over the caller's buffer; no state, no allocation but the copies it returns.
 */
#ifndef RIMECAST_OGG_FILE_H
#define RIMECAST_OGG_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/block.h"

/* Length of the whole page at data[pos, end), or 0 if there is none (no capture pattern,
 * version, or the page runs past end). The CRC is not checked. */
size_t ogg_file_page_len(const unsigned char *data, size_t pos, size_t end);

/* Bytes per second of the file data[0, len) when played at its sample rate: the first
 * logical stream's last granule position over its sample rate (Vorbis and Opus headers).
 * -1 if the file is not whole pages from its first byte to its last; 0 if its rate or
 * duration cannot be told (another codec). */
long ogg_file_byte_rate(const unsigned char *data, size_t len);

/* A new block holding the page at data[pos] (len bytes, from ogg_file_page_len) with `delta`
 * added to its serial number and its CRC set again; NULL without memory. */
block_t *ogg_file_page_copy(const unsigned char *data, size_t pos, size_t len, uint32_t delta);

#endif
