/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_speex: the Speex codec in Ogg: an 80-byte "Speex   " header, a Vorbis-style comment
 * packet, then as many extra header packets as the first header announces (capped, since that
 * count is the source's word and Speex frames cannot be told from headers).
 * Reports channels, sample rate and the comments' tags.
 */
#include "format/ogg_codec.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

#define SPEEX_HEADER_LEN 80
#define SPEEX_EXTRA_MAX 8

static int speex_bos_matches(const unsigned char *p, size_t len)
{
    if (len < 8 || memcmp(p, "Speex   ", 8) != 0)
        return OGG_BOS_NO;
    return len < SPEEX_HEADER_LEN ? OGG_BOS_MALFORMED : OGG_BOS_YES;
}

static void speex_first_packet(ogg_codec_stream_t *s, const unsigned char *p)
{
    char buf[16];
    uint32_t extra = ogg_codec_le32(p + 68);
    if (extra > SPEEX_EXTRA_MAX) {
        ogg_codec_log(s, LOG_WARN, "header announces %u extra headers, using %d", extra,
                      SPEEX_EXTRA_MAX);
        extra = SPEEX_EXTRA_MAX;
    }
    s->needed = 2 + (int)extra;
    snprintf(buf, sizeof(buf), "%u", ogg_codec_le32(p + 48));
    ogg_codec_tag(s, "audio_channels", buf);
    snprintf(buf, sizeof(buf), "%u", ogg_codec_le32(p + 36));
    ogg_codec_tag(s, "audio_samplerate", buf);
}

static int speex_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    if (s->packets == 0) {
        speex_first_packet(s, p);
        return OGG_HDR_MORE;
    }
    if (s->packets == 1 && ogg_vorbis_comments(s, p, len) < 0)
        ogg_codec_log(s, LOG_WARN, "comment packet malformed, ignored");
    return s->packets + 1 >= s->needed ? OGG_HDR_DONE : OGG_HDR_MORE;
}

const ogg_codec_ops_t ogg_speex_ops = {
    .name = "Speex",
    .bos_matches = speex_bos_matches,
    .header_packet = speex_header_packet,
    .page_is_sync = NULL,
};
