/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_comment: what a metadata update carried into an Ogg stream is made of (see ogg.c): the
 * Vorbis comment structure rewritten with a new TITLE and ARTIST (every other comment kept),
 * the header packets laid out as the pages of a fresh logical stream, the empty EOS page that
 * ends the link playing before it, and the relabelling of a source page into the new link;
 * and which codec a mount's header pages are (format_ogg_codec: whether an update may be
 * carried at all is the admin layer's decision).
 * Pure: bytes in, bytes out; no state, no sink. Never reads past a length it was given.
 */
#include "format/format.h"
#include "format/ogg_codec.h"
#include "format/ogg_file.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static int entry_is(const unsigned char *e, size_t len, const char *key)
{
    size_t k = strlen(key);
    return len > k && e[k] == '=' && strncasecmp((const char *)e, key, k) == 0;
}

static size_t put_entry(unsigned char *out, const char *key, const char *value)
{
    size_t k = strlen(key), v = strlen(value);
    put_le32(out, (uint32_t)(k + 1 + v));
    memcpy(out + 4, key, k);
    out[4 + k] = '=';
    memcpy(out + 5 + k, value, v);
    return 4 + k + 1 + v;
}

size_t ogg_comment_extra(const char *title, const char *artist)
{
    return (title ? 4 + 6 + strlen(title) : 0) + (artist ? 4 + 7 + strlen(artist) : 0);
}

long ogg_comment_write(unsigned char *out, const unsigned char *c, size_t clen,
                       const char *title, const char *artist, size_t *used)
{
    if (title && !*title)
        title = NULL;
    if (artist && !*artist)
        artist = NULL;
    if (clen < 8 || ogg_codec_le32(c) > clen - 8)
        return -1;
    size_t pos = 4 + ogg_codec_le32(c), o = pos + 4;
    uint32_t count = ogg_codec_le32(c + pos), kept = 0;
    memcpy(out, c, pos); /* vendor string */
    pos += 4;
    for (uint32_t i = 0; i < count; i++) {
        if (clen - pos < 4 || ogg_codec_le32(c + pos) > clen - pos - 4)
            return -1;
        size_t n = ogg_codec_le32(c + pos);
        const unsigned char *e = c + pos + 4;
        if (!entry_is(e, n, "TITLE") && !entry_is(e, n, "ARTIST")) {
            memcpy(out + o, c + pos, 4 + n);
            o += 4 + n;
            kept++;
        }
        pos += 4 + n;
    }
    if (title) {
        o += put_entry(out + o, "TITLE", title);
        kept++;
    }
    if (artist) {
        o += put_entry(out + o, "ARTIST", artist);
        kept++;
    }
    put_le32(out + 4 + ogg_codec_le32(c), kept);
    *used = pos;
    return (long)o;
}

int ogg_comment_packet(const unsigned char *p, size_t len, size_t prefix, const char *title,
                       const char *artist, unsigned char **out, size_t *outlen)
{
    unsigned char *pk = malloc(len + ogg_comment_extra(title, artist));
    if (!pk)
        return -1;
    size_t used;
    memcpy(pk, p, prefix);
    long n = ogg_comment_write(pk + prefix, p + prefix, len - prefix, title, artist, &used);
    if (n < 0) {
        free(pk);
        return -1;
    }
    size_t rest = len - prefix - used; /* Vorbis's framing bit, Opus's binary data */
    memcpy(pk + prefix + (size_t)n, p + prefix + used, rest);
    *out = pk;
    *outlen = prefix + (size_t)n + rest;
    return 1;
}

/* ---- pages ---- */

static int take_pages(ogg_stream_state *os, int (*get)(ogg_stream_state *, ogg_page *),
                      unsigned char **buf, size_t *len, size_t *cap, int *pages)
{
    ogg_page og;
    while (get(os, &og)) {
        size_t n = (size_t)og.header_len + (size_t)og.body_len;
        if (*len + n > *cap) {
            size_t c = *cap ? *cap * 2 : 16384;
            while (c < *len + n)
                c *= 2;
            unsigned char *b = realloc(*buf, c);
            if (!b)
                return -1;
            *buf = b;
            *cap = c;
        }
        memcpy(*buf + *len, og.header, (size_t)og.header_len);
        memcpy(*buf + *len + og.header_len, og.body, (size_t)og.body_len);
        *len += n;
        (*pages)++;
    }
    return 0;
}

block_t *ogg_head_pages(uint32_t serial, const ogg_head_packet_t *pk, int n, int *pages)
{
    ogg_stream_state os;
    if (ogg_stream_init(&os, (int)serial) != 0)
        return NULL;
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    *pages = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        ogg_packet op = {.packet = (unsigned char *)pk[i].data, .bytes = (long)pk[i].len,
                         .b_o_s = i == 0, .e_o_s = 0, .granulepos = 0, .packetno = i};
        if (ogg_stream_packetin(&os, &op) != 0)
            rc = -1;
        else /* every header packet ends its page: audio starts on a page of its own */
            rc = take_pages(&os, ogg_stream_flush, &buf, &len, &cap, pages);
    }
    ogg_stream_clear(&os);
    block_t *b = rc == 0 && len > 0 ? block_new_copy(buf, len) : NULL;
    free(buf);
    return b;
}

void ogg_page_relabel(unsigned char *page, size_t header_len, size_t body_len, uint32_t serial,
                      uint32_t seq, int64_t granule, int flags)
{
    page[5] = (unsigned char)flags;
    for (int i = 0; i < 8; i++)
        page[6 + i] = (unsigned char)((uint64_t)granule >> (8 * i));
    put_le32(page + 14, serial);
    put_le32(page + 18, seq);
    ogg_page pg = {.header = page, .header_len = (long)header_len, .body = page + header_len,
                   .body_len = (long)body_len};
    ogg_page_checksum_set(&pg);
}

void ogg_eos_page(unsigned char page[OGG_EOS_PAGE_LEN], uint32_t serial, uint32_t seq,
                  int64_t granule)
{
    memset(page, 0, OGG_EOS_PAGE_LEN);
    memcpy(page, "OggS", 4);
    ogg_page_relabel(page, OGG_EOS_PAGE_LEN, 0, serial, seq, granule, 0x04);
}

/* ---- the codec of header pages ---- */

const char *format_ogg_codec(const block_t *headers)
{
    static const ogg_codec_ops_t *const known[] = {&ogg_vorbis_ops, &ogg_opus_ops, &ogg_flac_ops,
                                                   &ogg_theora_ops, &ogg_speex_ops};
    const char *name = NULL;
    int bos = 0;
    for (const block_t *b = headers; b; b = block_next(b)) {
        for (size_t pos = 0, n; pos < b->len; pos += n) {
            if (!(n = ogg_file_page_len(b->data, pos, b->len)))
                return NULL;
            const unsigned char *pg = b->data + pos;
            if (!(pg[5] & 0x02))
                continue;
            if (++bos > 1)
                return NULL;
            size_t nseg = pg[26], len = 0; /* the first packet: lacing values up to one < 255 */
            for (size_t i = 0; i < nseg; i++) {
                len += pg[27 + i];
                if (pg[27 + i] < 255)
                    break;
            }
            for (size_t k = 0; k < sizeof(known) / sizeof(known[0]); k++)
                if (known[k]->bos_matches(pg + 27 + nseg, len) == OGG_BOS_YES)
                    name = known[k]->name;
        }
    }
    return name;
}
