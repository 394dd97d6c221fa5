/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg_vorbis: the Vorbis codec in Ogg (three header packets: id, comment, setup) and the
 * Vorbis comment parser that Opus, FLAC, Speex and Theora share.
 * Reads channels, sample rate and nominal bitrate from the id header and the known comment
 * keys into tags. Never decodes audio; never trusts a length without checking it.
 */
#include "format/ogg_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/utf8.h"

#define VORBIS_TAG_MAX 4080 /* longest value kept: what fits an ICY metadata block */

/* Comment keys reported as tags; others (ENCODER, METADATA_BLOCK_PICTURE, ...) are ignored so a
 * source cannot overwrite unrelated stats through its comments. */
static const char *const vorbis_tag_keys[] = {
    "title", "artist", "album", "genre", "date", "tracknumber", "comment", "performer",
    "organization",
};

static const char *vorbis_known_key(const unsigned char *k, size_t len)
{
    for (size_t i = 0; i < sizeof(vorbis_tag_keys) / sizeof(vorbis_tag_keys[0]); i++) {
        const char *key = vorbis_tag_keys[i];
        if (strlen(key) == len && strncasecmp((const char *)k, key, len) == 0)
            return key;
    }
    return NULL;
}

/* Copies value as UTF-8 (ISO-8859-1 if it is not valid UTF-8), at most VORBIS_TAG_MAX bytes,
 * never cutting a character, stopping at a NUL. malloc'd, NULL on ENOMEM. */
static char *vorbis_tag_value(const unsigned char *v, size_t len)
{
    int utf8 = 1;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_char_len((const char *)v + i, len - i);
        if (n == 0) {
            utf8 = 0;
            break;
        }
        i += n;
    }
    char *out = malloc(VORBIS_TAG_MAX + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len && v[i] != '\0';) {
        size_t n = utf8 ? utf8_char_len((const char *)v + i, len - i) : (v[i] < 0x80 ? 1 : 2);
        if (o + n > VORBIS_TAG_MAX)
            break;
        if (utf8) {
            memcpy(out + o, v + i, n);
            i += n;
        } else if (n == 1) {
            out[o] = (char)v[i++];
        } else {
            out[o] = (char)(0xC0 | v[i] >> 6);
            out[o + 1] = (char)(0x80 | (v[i++] & 0x3F));
        }
        o += n;
    }
    out[o] = '\0';
    return out;
}

static void vorbis_comment_entry(ogg_codec_stream_t *s, const unsigned char *e, size_t len)
{
    const unsigned char *eq = memchr(e, '=', len);
    if (!eq)
        return;
    const char *key = vorbis_known_key(e, (size_t)(eq - e));
    if (!key)
        return;
    char *value = vorbis_tag_value(eq + 1, len - (size_t)(eq - e) - 1);
    if (value)
        ogg_codec_tag(s, key, value);
    free(value);
}

int ogg_vorbis_comments(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    if (len < 4)
        return -1;
    size_t vendor = ogg_codec_le32(p);
    if (vendor > len - 4)
        return -1;
    size_t pos = 4 + vendor;
    if (len - pos < 4)
        return 0;
    uint32_t count = ogg_codec_le32(p + pos);
    pos += 4;
    int read = 0;
    for (uint32_t i = 0; i < count && len - pos >= 4; i++) {
        size_t n = ogg_codec_le32(p + pos);
        pos += 4;
        if (n > len - pos)
            break;
        vorbis_comment_entry(s, p + pos, n);
        pos += n;
        read++;
    }
    return read;
}

static int vorbis_bos_matches(const unsigned char *p, size_t len)
{
    if (len < 7 || p[0] != 0x01 || memcmp(p + 1, "vorbis", 6) != 0)
        return OGG_BOS_NO;
    return len < 30 ? OGG_BOS_MALFORMED : OGG_BOS_YES;
}

static void vorbis_id_header(ogg_codec_stream_t *s, const unsigned char *p)
{
    char buf[16];
    snprintf(buf, sizeof(buf), "%u", p[11]);
    ogg_codec_tag(s, "audio_channels", buf);
    snprintf(buf, sizeof(buf), "%u", ogg_codec_le32(p + 12));
    ogg_codec_tag(s, "audio_samplerate", buf);
    int32_t nominal = (int32_t)ogg_codec_le32(p + 20);
    if (nominal > 0) {
        snprintf(buf, sizeof(buf), "%d", nominal);
        ogg_codec_tag(s, "audio_bitrate", buf);
    }
}

static int vorbis_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    s->needed = 3;
    if (s->packets == 0) {
        vorbis_id_header(s, p); /* bos_matches checked the length */
        return OGG_HDR_MORE;
    }
    /* Audio packets have the low bit of the first byte clear; header packets set it. */
    if (len == 0 || !(p[0] & 1))
        return OGG_HDR_NOT;
    if (len >= 7 && p[0] == 0x03 && memcmp(p + 1, "vorbis", 6) == 0 &&
        ogg_vorbis_comments(s, p + 7, len - 7) < 0)
        ogg_codec_log(s, LOG_WARN, "comment header malformed, ignored");
    if (len >= 7 && p[0] == 0x05 && memcmp(p + 1, "vorbis", 6) == 0)
        return OGG_HDR_DONE;
    return s->packets + 1 >= s->needed ? OGG_HDR_DONE : OGG_HDR_MORE;
}

static int vorbis_comment_rewrite(const unsigned char *p, size_t len, const char *title,
                                  const char *artist, unsigned char **out, size_t *outlen)
{
    if (len < 7 || p[0] != 0x03 || memcmp(p + 1, "vorbis", 6) != 0)
        return 0;
    return ogg_comment_packet(p, len, 7, title, artist, out, outlen);
}

const ogg_codec_ops_t ogg_vorbis_ops = {
    .name = "Vorbis",
    .bos_matches = vorbis_bos_matches,
    .header_packet = vorbis_header_packet,
    .page_is_sync = NULL,
    .comment_rewrite = vorbis_comment_rewrite,
};
