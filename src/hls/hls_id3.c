/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_id3: the ID3v2.4 tag of an HLS piece (hls_id3.h).
 */
#include "hls/hls_id3.h"

#include <string.h>

static void syncsafe(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)((v >> 21) & 0x7f);
    p[1] = (unsigned char)((v >> 14) & 0x7f);
    p[2] = (unsigned char)((v >> 7) & 0x7f);
    p[3] = (unsigned char)(v & 0x7f);
}

/* The tag: the PRIV transportStreamTimestamp ts90 (RFC 8216 3.4); with a title, a TIT2 frame
 * (UTF-8, cut to HLS_TITLE_MAX bytes at a character boundary). */
uint32_t hls_id3_tag(unsigned char *p, uint64_t ts90, const char *title)
{
    static const char owner[] = "com.apple.streaming.transportStreamTimestamp";
    size_t tlen = title ? strlen(title) : 0;
    if (tlen > HLS_TITLE_MAX) {
        tlen = HLS_TITLE_MAX;
        while (tlen > 0 && ((unsigned char)title[tlen] & 0xc0) == 0x80)
            tlen--; /* not inside a UTF-8 sequence */
    }
    unsigned char *f = p + 10;
    unsigned frame = (unsigned)sizeof(owner) + 8; /* owner, its NUL, the timestamp */
    memcpy(f, "PRIV", 4);
    syncsafe(f + 4, frame);
    f[8] = 0, f[9] = 0;
    memcpy(f + 10, owner, sizeof(owner));
    for (int i = 0; i < 8; i++)
        f[10 + sizeof(owner) + i] = (unsigned char)(ts90 >> (56 - 8 * i));
    f += 10 + frame;
    if (tlen) {
        memcpy(f, "TIT2", 4);
        syncsafe(f + 4, 1 + (unsigned)tlen);
        f[8] = 0, f[9] = 0;
        f[10] = 3; /* UTF-8 */
        memcpy(f + 11, title, tlen);
        f += 11 + tlen;
    }
    memcpy(p, "ID3\x04\x00\x00", 6);
    syncsafe(p + 6, (unsigned)(f - p - 10));
    return (uint32_t)(f - p);
}

uint64_t hls_id3_time48(uint64_t ticks)
{
    return (ticks / 48000 * 90000 + ticks % 48000 * 90000 / 48000) & ((1ull << 33) - 1);
}
