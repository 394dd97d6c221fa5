/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_theora: the Theora video codec in Ogg: three header packets (id 0x80, comment 0x81,
 * setup 0x82) and keyframe detection, so that a listener only ever starts on a page that
 * begins with a keyframe. Reports frame_size, frame_rate, video_bitrate and video_quality
 * like Icecast does, plus the comment header's tags. Never decodes video.
 */
#include "format/ogg_codec.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

#define THEORA_ID_LEN 42

static int theora_bos_matches(const unsigned char *p, size_t len)
{
    if (len < 7 || p[0] != 0x80 || memcmp(p + 1, "theora", 6) != 0)
        return OGG_BOS_NO;
    return len < THEORA_ID_LEN ? OGG_BOS_MALFORMED : OGG_BOS_YES;
}

static void theora_id_header(ogg_codec_stream_t *s, const unsigned char *p)
{
    char buf[48];
    uint32_t width = ogg_codec_be(p + 14, 3), height = ogg_codec_be(p + 17, 3);
    uint32_t fps_num = ogg_codec_be(p + 22, 4), fps_den = ogg_codec_be(p + 26, 4);
    snprintf(buf, sizeof(buf), "%ux%u", width, height);
    ogg_codec_tag(s, "frame_size", buf);
    if (fps_den) {
        snprintf(buf, sizeof(buf), "%.2f", (double)fps_num / fps_den);
        ogg_codec_tag(s, "frame_rate", buf);
    }
    snprintf(buf, sizeof(buf), "%u", ogg_codec_be(p + 37, 3));
    ogg_codec_tag(s, "video_bitrate", buf);
    snprintf(buf, sizeof(buf), "%u", p[40] >> 2);
    ogg_codec_tag(s, "video_quality", buf);
}

static int theora_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    s->needed = 3;
    if (s->packets == 0) {
        theora_id_header(s, p);
        return OGG_HDR_MORE;
    }
    if (len == 0 || !(p[0] & 0x80))
        return OGG_HDR_NOT; /* a video frame */
    if (len >= 7 && p[0] == 0x81 && memcmp(p + 1, "theora", 6) == 0 &&
        ogg_vorbis_comments(s, p + 7, len - 7) < 0)
        ogg_codec_log(s, LOG_WARN, "comment header malformed, ignored");
    if (p[0] == 0x82 || s->packets + 1 >= s->needed)
        return OGG_HDR_DONE;
    return OGG_HDR_MORE;
}

/* A page begins with a keyframe when it does not continue a packet and its first packet is a
 * non-empty frame with the frame-type bit (0x40) clear; an empty packet repeats a frame. */
static int theora_page_is_sync(const ogg_codec_stream_t *s, const ogg_page *pg)
{
    (void)s;
    if (ogg_page_continued(pg) || pg->header_len < 28 || pg->header[26] == 0)
        return 0;
    if (pg->header[27] == 0 || pg->body_len < 1)
        return 0;
    return (pg->body[0] & 0xC0) == 0;
}

const ogg_codec_ops_t ogg_theora_ops = {
    .name = "Theora",
    .bos_matches = theora_bos_matches,
    .header_packet = theora_header_packet,
    .page_is_sync = theora_page_is_sync,
};
