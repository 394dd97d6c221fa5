/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_file: walking an Ogg file held in memory (see ogg_file.h). Page layout (RFC 3533):
 * "OggS", version 0, flags, granule (64-bit LE) at 6, serial at 14, sequence at 18, CRC at 22,
 * segment count at 26, then the lacing values and the body. libogg sets the CRC.
 */
#include "format/ogg_file.h"

#include <ogg/ogg.h>
#include <string.h>

#define OGG_PAGE_HEAD 27

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int64_t le64(const unsigned char *p)
{
    return (int64_t)((uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32);
}

size_t ogg_file_page_len(const unsigned char *data, size_t pos, size_t end)
{
    if (end < pos || end - pos < OGG_PAGE_HEAD || memcmp(data + pos, "OggS", 4) != 0 ||
        data[pos + 4] != 0)
        return 0;
    size_t nseg = data[pos + 26];
    if (end - pos < OGG_PAGE_HEAD + nseg)
        return 0;
    size_t len = OGG_PAGE_HEAD + nseg;
    for (size_t i = 0; i < nseg; i++)
        len += data[pos + OGG_PAGE_HEAD + i];
    return end - pos < len ? 0 : len;
}

/* The sample rate a BOS page's first packet announces (Vorbis, Opus), or 0. */
static long bos_rate(const unsigned char *page, size_t len)
{
    size_t head = OGG_PAGE_HEAD + page[26];
    const unsigned char *p = page + head;
    size_t n = len - head;
    if (n >= 16 && memcmp(p, "\001vorbis", 7) == 0)
        return (long)le32(p + 12);
    if (n >= 8 && memcmp(p, "OpusHead", 8) == 0)
        return 48000; /* Opus granules always count 48 kHz samples */
    return 0;
}

long ogg_file_byte_rate(const unsigned char *data, size_t len)
{
    uint32_t serial = 0;
    long rate = 0;
    int64_t last = 0;
    size_t pos = 0;
    while (pos < len) {
        size_t n = ogg_file_page_len(data, pos, len);
        if (n == 0)
            return -1;
        if (pos == 0) {
            serial = le32(data + 14);
            rate = bos_rate(data, n);
        } else if (le32(data + pos + 14) == serial && le64(data + pos + 6) > last) {
            last = le64(data + pos + 6);
        }
        pos += n;
    }
    if (len == 0)
        return -1;
    if (rate <= 0 || last <= 0)
        return 0;
    return (long)((double)len * (double)rate / (double)last);
}

block_t *ogg_file_page_copy(const unsigned char *data, size_t pos, size_t len, uint32_t delta)
{
    block_t *b = block_new_copy(data + pos, len);
    if (!b)
        return NULL;
    uint32_t serial = le32(b->data + 14) + delta;
    for (int i = 0; i < 4; i++)
        b->data[14 + i] = (unsigned char)(serial >> (8 * i));
    size_t head = OGG_PAGE_HEAD + b->data[26];
    ogg_page pg = {.header = b->data, .header_len = (long)head, .body = b->data + head,
                   .body_len = (long)(len - head)};
    ogg_page_checksum_set(&pg);
    return b;
}
