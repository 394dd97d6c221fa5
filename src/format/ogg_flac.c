/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_flac: FLAC in Ogg (the "\x7fFLAC" mapping). The first packet carries the mapping version,
 * the number of header packets that follow (0 = unknown) and STREAMINFO; the other headers are
 * FLAC metadata blocks, one per packet, the last one flagged. Headers end at that flag, at the
 * announced count, or at the first audio frame, whichever comes first.
 * Reports FLAC_version, channels and sample rate, and the VORBIS_COMMENT block's tags.
 */
#include "format/ogg_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

#define FLAC_BOS_LEN 51 /* mapping header (13) + metadata block header (4) + STREAMINFO (34) */
#define FLAC_LAST_BLOCK 0x80
#define FLAC_TYPE_VORBIS_COMMENT 4

static int flac_bos_matches(const unsigned char *p, size_t len)
{
    if (len < 5 || p[0] != 0x7F || memcmp(p + 1, "FLAC", 4) != 0)
        return OGG_BOS_NO;
    if (len < FLAC_BOS_LEN || memcmp(p + 9, "fLaC", 4) != 0)
        return OGG_BOS_MALFORMED;
    return OGG_BOS_YES;
}

static int flac_first_packet(ogg_codec_stream_t *s, const unsigned char *p)
{
    char buf[16];
    const unsigned char *si = p + 17; /* STREAMINFO body */
    uint32_t rate = (uint32_t)si[10] << 12 | (uint32_t)si[11] << 4 | si[12] >> 4;
    snprintf(buf, sizeof(buf), "%u.%u", p[5], p[6]);
    ogg_codec_tag(s, "FLAC_version", buf);
    snprintf(buf, sizeof(buf), "%u", ((si[12] >> 1) & 7) + 1);
    ogg_codec_tag(s, "audio_channels", buf);
    snprintf(buf, sizeof(buf), "%u", rate);
    ogg_codec_tag(s, "audio_samplerate", buf);
    uint32_t more = ogg_codec_be(p + 7, 2);
    s->needed = more ? (int)more + 1 : 0;
    return (p[13] & FLAC_LAST_BLOCK) ? OGG_HDR_DONE : OGG_HDR_MORE;
}

static int flac_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    if (s->packets == 0)
        return flac_first_packet(s, p);
    if (len < 4 || (p[0] == 0xFF && (p[1] & 0xFE) == 0xF8))
        return OGG_HDR_NOT; /* an audio frame (sync code 0xFFF8/0xFFF9) */
    if ((p[0] & 0x7F) == FLAC_TYPE_VORBIS_COMMENT) {
        size_t body = ogg_codec_be(p + 1, 3);
        if (ogg_vorbis_comments(s, p + 4, body < len - 4 ? body : len - 4) < 0)
            ogg_codec_log(s, LOG_WARN, "VORBIS_COMMENT block malformed, ignored");
    }
    if ((p[0] & FLAC_LAST_BLOCK) || (s->needed && s->packets + 1 >= s->needed))
        return OGG_HDR_DONE;
    return OGG_HDR_MORE;
}

/* The VORBIS_COMMENT metadata block: its 24-bit length follows the new structure. */
static int flac_comment_rewrite(const unsigned char *p, size_t len, const char *title,
                                const char *artist, unsigned char **out, size_t *outlen)
{
    if (len < 4 || (p[0] & 0x7F) != FLAC_TYPE_VORBIS_COMMENT)
        return 0;
    size_t body = ogg_codec_be(p + 1, 3);
    if (body > len - 4)
        return -1;
    if (ogg_comment_packet(p, 4 + body, 4, title, artist, out, outlen) < 0)
        return -1;
    size_t n = *outlen - 4;
    if (n >= 1u << 24) {
        free(*out);
        return -1;
    }
    (*out)[1] = (unsigned char)(n >> 16);
    (*out)[2] = (unsigned char)(n >> 8);
    (*out)[3] = (unsigned char)n;
    return 1;
}

const ogg_codec_ops_t ogg_flac_ops = {
    .name = "FLAC",
    .bos_matches = flac_bos_matches,
    .header_packet = flac_header_packet,
    .page_is_sync = NULL,
    .comment_rewrite = flac_comment_rewrite,
};
