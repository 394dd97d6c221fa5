/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_opus: the Opus codec in Ogg (RFC 7845): two header packets, "OpusHead" and "OpusTags".
 * Reads channels and the input sample rate from OpusHead and the comments from OpusTags.
 * An OpusHead shorter than its 19 fixed bytes is refused here (the stream is then passed
 * through as an unknown codec); nothing past a packet's length is ever read.
 */
#include "format/ogg_codec.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

#define OPUS_HEAD_LEN 19

static int opus_bos_matches(const unsigned char *p, size_t len)
{
    if (len < 8 || memcmp(p, "OpusHead", 8) != 0)
        return OGG_BOS_NO;
    return len < OPUS_HEAD_LEN ? OGG_BOS_MALFORMED : OGG_BOS_YES;
}

static void opus_id_header(ogg_codec_stream_t *s, const unsigned char *p)
{
    char buf[16];
    uint32_t rate = ogg_codec_le32(p + 12);
    snprintf(buf, sizeof(buf), "%u", p[9]);
    ogg_codec_tag(s, "audio_channels", buf);
    snprintf(buf, sizeof(buf), "%u", rate ? rate : 48000);
    ogg_codec_tag(s, "audio_samplerate", buf);
}

static int opus_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    s->needed = 2;
    if (s->packets == 0) {
        opus_id_header(s, p);
        return OGG_HDR_MORE;
    }
    if (len < 8 || memcmp(p, "OpusTags", 8) != 0) {
        ogg_codec_log(s, LOG_WARN, "second packet is not OpusTags, headers end here");
        return OGG_HDR_NOT;
    }
    if (ogg_vorbis_comments(s, p + 8, len - 8) < 0)
        ogg_codec_log(s, LOG_WARN, "OpusTags malformed, ignored");
    return OGG_HDR_DONE;
}

static int opus_comment_rewrite(const unsigned char *p, size_t len, const char *title,
                                const char *artist, unsigned char **out, size_t *outlen)
{
    if (len < 8 || memcmp(p, "OpusTags", 8) != 0)
        return 0;
    return ogg_comment_packet(p, len, 8, title, artist, out, outlen);
}

const ogg_codec_ops_t ogg_opus_ops = {
    .name = "Opus",
    .bos_matches = opus_bos_matches,
    .header_packet = opus_header_packet,
    .page_is_sync = NULL,
    .comment_rewrite = opus_comment_rewrite,
};
