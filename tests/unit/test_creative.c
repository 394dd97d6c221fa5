/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_creative: an ad's audio checked frame by frame and cut into shared blocks: real MP3 and
 * ADTS files from ffmpeg (the ID3v2 tag and the Info frame left out, an ID3v1 tag at the end
 * too), blocks of whole frames that are each a sync point carrying the ad's title, the
 * tracking marks in order; refused: junk among the frames, a cut last frame, two formats in one
 * file, nothing but a tag; the title made safe for ICY metadata; a mount's <ads> defaults.
 */
#include "ads/ads.h"
#include "conf/config.h"
#include "format/mpeg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpeg_samples.h"
#include "testlib.h"

/* Every block: whole frames, a sync point, its title; together the bytes given, in order. */
static void check_blocks(const ads_creative_t *c, const unsigned char *audio, size_t len)
{
    uint64_t off = 0;
    for (const block_t *b = c->blocks; b; b = block_next(b)) {
        CHECK(b->flags == BLOCK_SYNC && b->offset == off && b->len <= BLOCK_GATHER_MAX);
        CHECK(b->meta && strstr((const char *)b->meta->data + 1, c->title));
        CHECK(off + b->len <= len && memcmp(b->data, audio + off, b->len) == 0);
        for (uint32_t at = 0; at < b->len;) {
            mpeg_frame_t f;
            if (mpeg_frame_parse(b->data + at, b->len - at, &f) != 1 || f.len > b->len - at) {
                CHECK(!"a block holds a part of a frame");
                break;
            }
            at += f.len;
        }
        off += b->len;
    }
    CHECK(off == c->bytes && off == len);
}

static size_t first_frame(const unsigned char *p, size_t len)
{
    size_t at = (size_t)mpeg_id3v2_len(p, len);
    mpeg_frame_t f;
    if (mpeg_frame_parse(p + at, len - at, &f) == 1 && memmem(p + at, f.len, "Info", 4))
        at += f.len; /* ffmpeg's Info frame */
    return at;
}

static void test_mp3_file(void)
{
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(sample_mp3, sizeof(sample_mp3), "Spring sale", &c) == 0);
    if (!c)
        return;
    size_t audio = first_frame(sample_mp3, sizeof(sample_mp3));
    CHECK(audio > 10);
    check_blocks(c, sample_mp3 + audio, sizeof(sample_mp3) - audio);
    CHECK(!c->fmt.adts && c->fmt.samplerate == 8000 && c->fmt.channels == 1);
    CHECK(c->duration_ms >= 1000 && c->duration_ms <= 1200); /* with the encoder's padding */
    /* shorter than the impression's two seconds: counted when it is all delivered */
    CHECK(c->mark[ADS_MARK_IMPRESSION] == c->bytes);
    CHECK(c->mark[ADS_MARK_Q1] < c->mark[ADS_MARK_MID] && c->mark[ADS_MARK_MID] <
          c->mark[ADS_MARK_Q3] && c->mark[ADS_MARK_Q3] < c->bytes);
    CHECK(c->mark[ADS_MARK_MID] > c->bytes * 2 / 5 && c->mark[ADS_MARK_MID] < c->bytes * 3 / 5);
    CHECK_STR(c->title, "Spring sale");
    ads_format_t f;
    CHECK(ads_format_of(sample_mp3 + audio, 4, &f) == 0 && ads_format_equal(&f, &c->fmt));
    ads_creative_unref(c);

    /* with an ID3v1 tag after the frames */
    unsigned char *v1 = malloc(sizeof(sample_mp3) + 128);
    memcpy(v1, sample_mp3, sizeof(sample_mp3));
    memset(v1 + sizeof(sample_mp3), ' ', 128);
    memcpy(v1 + sizeof(sample_mp3), "TAG", 3);
    CHECK(ads_creative_build(v1, sizeof(sample_mp3) + 128, "t", &c) == 0 && c &&
          c->bytes == sizeof(sample_mp3) - audio);
    ads_creative_unref(c);
    free(v1);
}

static void test_adts_file(void)
{
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(sample_adts, sizeof(sample_adts), "AAC ad", &c) == 0);
    if (!c)
        return;
    check_blocks(c, sample_adts, sizeof(sample_adts));
    CHECK(c->fmt.adts && c->fmt.channels >= 1);
    CHECK(c->duration_ms >= 900 && c->duration_ms <= 1200);
    ads_format_t mp3;
    size_t audio = first_frame(sample_mp3, sizeof(sample_mp3));
    CHECK(ads_format_of(sample_mp3 + audio, 4, &mp3) == 0 && !ads_format_equal(&mp3, &c->fmt));
    ads_creative_unref(c);
}

static int refused(const unsigned char *p, size_t len)
{
    ads_creative_t *c = NULL;
    int rc = ads_creative_build(p, len, "x", &c);
    ads_creative_unref(c);
    return rc == VAST_ERR_MEDIA_BROKEN && c == NULL;
}

static void test_refused(void)
{
    size_t audio = first_frame(sample_mp3, sizeof(sample_mp3));
    unsigned char *buf = malloc(sizeof(sample_mp3) + sizeof(sample_adts));
    /* junk between two frames */
    memcpy(buf, sample_mp3, sizeof(sample_mp3));
    mpeg_frame_t f;
    mpeg_frame_parse(buf + audio, sizeof(sample_mp3) - audio, &f);
    buf[audio + f.len] = 0x00;
    CHECK(refused(buf, sizeof(sample_mp3)));
    /* the last frame cut */
    CHECK(refused(sample_mp3, sizeof(sample_mp3) - 5));
    /* MP3 then ADTS */
    memcpy(buf, sample_mp3, sizeof(sample_mp3));
    memcpy(buf + sizeof(sample_mp3), sample_adts, sizeof(sample_adts));
    CHECK(refused(buf, sizeof(sample_mp3) + sizeof(sample_adts)));
    /* a tag and nothing else, nothing, text */
    CHECK(refused(sample_mp3, (size_t)mpeg_id3v2_len(sample_mp3, sizeof(sample_mp3))));
    CHECK(refused(sample_mp3, 0));
    CHECK(refused(sample_mp3, 20)); /* a tag cut short */
    CHECK(refused((const unsigned char *)"<html>not found</html>", 22));
    free(buf);
}

static void test_icy_title(void)
{
    ads_creative_t *c = NULL;
    char long_title[300];
    memset(long_title, 'a', sizeof(long_title));
    memcpy(long_title + 118, "\xc3\xa9", 2); /* a two-byte character across 120 bytes */
    long_title[sizeof(long_title) - 1] = '\0';
    CHECK(ads_creative_build(sample_adts, sizeof(sample_adts), "Bob's';\x01 ad", &c) == 0 && c);
    if (c)
        CHECK_STR(c->title, "Bobs ad");
    ads_creative_unref(c);
    CHECK(ads_creative_build(sample_adts, sizeof(sample_adts), long_title, &c) == 0 && c);
    if (c)
        CHECK(strlen(c->title) == 120 || strlen(c->title) == 118);
    ads_creative_unref(c);
}

static void test_settings(void)
{
    ads_settings_t s = ads_settings(NULL);
    CHECK(!s.vast_url && !s.preroll && !s.allow_private);
    mount_conf_t mc;
    memset(&mc, 0, sizeof(mc));
    mc.ads = (ads_conf_t){.vast_url = "http://a/", .preroll = -1, .preroll_seconds = -1,
                          .allow_private = 1, .request_timeout_ms = -1,
                          .creative_timeout_ms = 500};
    s = ads_settings(&mc);
    CHECK_STR(s.vast_url, "http://a/");
    CHECK(!s.preroll && s.preroll_ms == 30000 && s.allow_private);
    CHECK_STR(s.title_prefix, "ADBREAK_LENGTH_");
    CHECK(s.request_timeout_ms == 2000 && s.creative_timeout_ms == 500);
}

int main(void)
{
    test_mp3_file();
    test_adts_file();
    test_refused();
    test_icy_title();
    test_settings();
    return testlib_done();
}
