/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_codec: the per-codec vtable behind the Ogg handler, one implementation file per codec.
 *
 * The Ogg handler (ogg.c) owns page sync, logical streams and the header chain; a codec only
 * recognises its BOS packet, says which packets are headers (and reads the id and comment
 * headers into tags on the way), and, for video, which pages a listener may start on.
 * Codecs never see the sink directly: tags and log lines go through ogg_codec_tag/_log.
 * Codecs keep no allocated state; what they remember fits in ogg_codec_stream_t.
 */
#ifndef RIMECAST_OGG_CODEC_H
#define RIMECAST_OGG_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include <ogg/ogg.h>

#include "core/block.h"

/* Result of bos_matches. */
enum { OGG_BOS_NO = 0, OGG_BOS_YES = 1, OGG_BOS_MALFORMED = -1 };

/* Result of header_packet. */
enum {
    OGG_HDR_NOT = 0,  /* not a header packet: the stream's headers are complete before it */
    OGG_HDR_MORE = 1, /* a header packet, more header packets follow */
    OGG_HDR_DONE = 2, /* the last header packet */
};

typedef struct ogg_codec_stream ogg_codec_stream_t;

typedef struct ogg_codec_ops {
    const char *name; /* "Vorbis", "Opus", ... as shown in log lines */
    /* 1 if the BOS packet p[0..len) belongs to this codec, 0 if not, -1 if it carries this
     * codec's signature but is too short or otherwise unusable (logged, passed through as an
     * unknown codec). */
    int (*bos_matches)(const unsigned char *p, size_t len);
    /* Called for each packet of the stream, starting with the BOS packet, until it returns
     * OGG_HDR_NOT or OGG_HDR_DONE. s->packets counts the header packets before this one.
     * Id and comment headers report tags through ogg_codec_tag. Must never read past len. */
    int (*header_packet)(ogg_codec_stream_t *s, const unsigned char *p, size_t len);
    /* Video codecs: 1 if a listener may start decoding at this page (it begins with a
     * keyframe). NULL for audio codecs, where any page not continuing a packet will do. */
    int (*page_is_sync)(const ogg_codec_stream_t *s, const ogg_page *pg);
    /* A metadata update carried into the stream: if the header packet p[0..len) is this
     * codec's comment packet, its copy with TITLE and ARTIST replaced (title, artist: UTF-8,
     * NULL or empty for none) goes to *out (malloc'd, *outlen bytes) and 1 is returned; 0 if p
     * is another header packet; -1 if it is malformed or memory ran out. NULL: the codec's
     * comments are not rewritten (updates show in the stats only). */
    int (*comment_rewrite)(const unsigned char *p, size_t len, const char *title,
                           const char *artist, unsigned char **out, size_t *outlen);
} ogg_codec_ops_t;

struct ogg_codec_stream {
    const ogg_codec_ops_t *ops; /* NULL: unknown codec (only the BOS page is a header) */
    void *owner;                /* the Ogg handler state, for ogg_codec_tag/_log */
    int packets;                /* header packets seen so far */
    int needed;                 /* header packets expected; 0 = until a non-header packet */
};

/* Reports a stream tag for the current group of streams (key: static lowercase string,
 * value: UTF-8). The first value of a key within a group wins. */
void ogg_codec_tag(ogg_codec_stream_t *s, const char *key, const char *value);
/* printf-style log line through the handler's sink, prefixed with the codec name. */
void ogg_codec_log(ogg_codec_stream_t *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parses a Vorbis comment structure (vendor string, count, "KEY=value" entries, little-endian
 * lengths) found at p[0..len), as used by Vorbis, Opus, FLAC, Speex and Theora. Known keys
 * (title, artist, album, ...) are reported lowercased through ogg_codec_tag; values that are
 * not UTF-8 are read as ISO-8859-1. Lengths past the end stop the parse silently.
 * Returns the number of entries read, or -1 if even the vendor string does not fit. */
int ogg_vorbis_comments(ogg_codec_stream_t *s, const unsigned char *p, size_t len);

/* ---- metadata updates carried into the stream (ogg_comment.c) ---- */

/* Bytes a rewritten comment structure may need beyond the original's. */
size_t ogg_comment_extra(const char *title, const char *artist);
/* Writes at out (room: clen + ogg_comment_extra bytes) the Vorbis comment structure c[0..clen)
 * without its TITLE and ARTIST entries (any case), then TITLE=title and ARTIST=artist when
 * given (non-NULL, non-empty). Returns the bytes written and sets *used to the bytes of c the
 * structure took; -1 if c is not a whole structure. */
long ogg_comment_write(unsigned char *out, const unsigned char *c, size_t clen,
                       const char *title, const char *artist, size_t *used);
/* A comment packet p[0..len) whose structure starts after prefix bytes, rewritten as above
 * (the prefix and whatever follows the structure copied): for comment_rewrite. 1, or -1. */
int ogg_comment_packet(const unsigned char *p, size_t len, size_t prefix, const char *title,
                       const char *artist, unsigned char **out, size_t *outlen);

typedef struct ogg_head_packet {
    const unsigned char *data;
    size_t len;
} ogg_head_packet_t;

/* The header pages of a fresh logical stream `serial` for the packets pk[0..n) (pk[0] on the
 * BOS page), each packet ending its page, granule positions 0: one block (flags unset), its
 * page count in *pages. NULL on ENOMEM. */
block_t *ogg_head_pages(uint32_t serial, const ogg_head_packet_t *pk, int n, int *pages);

/* Sets a page's flags (header_type), granule position, serial and sequence number, and its
 * CRC again. */
void ogg_page_relabel(unsigned char *page, size_t header_len, size_t body_len, uint32_t serial,
                      uint32_t seq, int64_t granule, int flags);

#define OGG_EOS_PAGE_LEN 27
/* A page without packets, flagged end of stream: ends a logical stream after its last page. */
void ogg_eos_page(unsigned char page[OGG_EOS_PAGE_LEN], uint32_t serial, uint32_t seq,
                  int64_t granule);

/* Little-endian / big-endian readers (callers check the length first). */
static inline uint32_t ogg_codec_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint32_t ogg_codec_be(const unsigned char *p, int bytes)
{
    uint32_t v = 0;
    for (int i = 0; i < bytes; i++)
        v = v << 8 | p[i];
    return v;
}

extern const ogg_codec_ops_t ogg_vorbis_ops;
extern const ogg_codec_ops_t ogg_opus_ops;
extern const ogg_codec_ops_t ogg_flac_ops;
extern const ogg_codec_ops_t ogg_theora_ops;
extern const ogg_codec_ops_t ogg_speex_ops;

#endif
