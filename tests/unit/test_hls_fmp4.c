/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hls_fmp4: the fragmented MP4 writer of Opus HLS: packet durations from the TOC byte
 * (every frame size and count code, and what is refused), which OpusHead packets it takes,
 * the init segment's box tree and dOps fields, and a fragment's moof/trun/mdat layout (with
 * an emsg box in front when it carries a title).
 */
#include "hls/hls_fmp4.h"

#include <stdint.h>
#include <string.h>

#include "testlib.h"

static uint32_t samples_of(unsigned char toc, unsigned char count)
{
    unsigned char p[2] = {toc, count};
    return fmp4_opus_packet_samples(p, sizeof(p));
}

static void test_packet_durations_from_the_toc(void)
{
    CHECK(samples_of(0 << 3, 0) == 480);       /* SILK 10 ms */
    CHECK(samples_of(1 << 3, 0) == 960);       /* SILK 20 ms */
    CHECK(samples_of(3 << 3, 0) == 2880);      /* SILK 60 ms */
    CHECK(samples_of(12 << 3, 0) == 480);      /* hybrid 10 ms */
    CHECK(samples_of(13 << 3, 0) == 960);      /* hybrid 20 ms */
    CHECK(samples_of(16 << 3, 0) == 120);      /* CELT 2.5 ms */
    CHECK(samples_of(31 << 3, 0) == 960);      /* CELT 20 ms */
    CHECK(samples_of(31 << 3 | 1, 0) == 1920); /* two frames, equal sizes */
    CHECK(samples_of(31 << 3 | 2, 0) == 1920); /* two frames, sizes differ */
    CHECK(samples_of(31 << 3 | 3, 6) == 5760); /* six 20 ms frames: 120 ms */
    CHECK(samples_of(31 << 3 | 3, 0x80 | 3) == 2880); /* padding and VBR flags ignored */
    CHECK(samples_of(31 << 3 | 3, 7) == 0);    /* over 120 ms */
    CHECK(samples_of(3 << 3 | 3, 3) == 0);     /* 3 x 60 ms */
    CHECK(samples_of(31 << 3 | 3, 0) == 0);    /* no frame */
    unsigned char code3 = 31 << 3 | 3;
    CHECK(fmp4_opus_packet_samples(&code3, 1) == 0); /* the count byte is missing */
    CHECK(fmp4_opus_packet_samples(&code3, 0) == 0);
}

/* An OpusHead: channels, pre-skip 312, 44.1 kHz input, gain -256, family. */
static size_t opus_head(unsigned char *h, unsigned channels, unsigned family)
{
    memcpy(h, "OpusHead", 8);
    h[8] = 1;
    h[9] = (unsigned char)channels;
    h[10] = 312 & 0xff, h[11] = 312 >> 8;
    h[12] = 0x44, h[13] = 0xac, h[14] = 0, h[15] = 0;
    h[16] = 0x00, h[17] = 0xff; /* -256 */
    h[18] = (unsigned char)family;
    if (family == 0)
        return 19;
    h[19] = 4; /* streams */
    h[20] = 2; /* coupled */
    for (unsigned i = 0; i < channels; i++)
        h[21 + i] = (unsigned char)i;
    return 21 + channels;
}

static void test_which_opus_heads_are_taken(void)
{
    unsigned char h[300];
    CHECK(fmp4_opus_head_valid(h, opus_head(h, 2, 0)));
    CHECK(!fmp4_opus_head_valid(h, 18));
    CHECK(!fmp4_opus_head_valid(h, opus_head(h, 3, 0)));  /* family 0 is mono or stereo */
    CHECK(fmp4_opus_head_valid(h, opus_head(h, 6, 1)));
    CHECK(!fmp4_opus_head_valid(h, opus_head(h, 6, 1) - 1)); /* mapping table cut */
    opus_head(h, 2, 0);
    h[8] = 0x10; /* major version 1 */
    CHECK(!fmp4_opus_head_valid(h, 19));
    opus_head(h, 0, 0);
    CHECK(!fmp4_opus_head_valid(h, 19));
    memcpy(h, "OpusTags", 8);
    CHECK(!fmp4_opus_head_valid(h, 19));
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The body of the box `type` among the boxes of p[0..len) (its length in *n), or NULL. */
static const unsigned char *find_box(const unsigned char *p, size_t len, const char *type,
                                     size_t *n)
{
    for (size_t at = 0; at + 8 <= len;) {
        uint32_t size = be32(p + at);
        if (size < 8 || at + size > len)
            return NULL;
        if (memcmp(p + at + 4, type, 4) == 0) {
            *n = size - 8;
            return p + at + 8;
        }
        at += size;
    }
    return NULL;
}

static void test_init_segment_box_tree_and_dops(void)
{
    unsigned char h[300];
    size_t hlen = opus_head(h, 6, 1);
    block_t *b = fmp4_init_segment(h, hlen);
    CHECK(b != NULL);
    if (!b)
        return;
    size_t n;
    const unsigned char *p = find_box(b->data, b->len, "ftyp", &n);
    CHECK(p && memcmp(p, "iso6", 4) == 0);
    p = find_box(b->data, b->len, "moov", &n);
    CHECK(p && be32(b->data) + be32(b->data + be32(b->data)) == b->len); /* ftyp + moov */
    const char *path[] = {"trak", "mdia", "minf", "stbl", "stsd"};
    for (int i = 0; p && i < 5; i++)
        p = find_box(p, n, path[i], &n);
    CHECK(p && be32(p + 4) == 1); /* one sample entry */
    p = p ? find_box(p + 8, n - 8, "Opus", &n) : NULL;
    CHECK(p && p[16] == 0 && p[17] == 6);      /* channelcount */
    CHECK(p && be32(p + 24) == 48000u << 16);  /* samplerate 16.16 */
    p = p ? find_box(p + 28, n - 28, "dOps", &n) : NULL;
    CHECK(p && n == 11 + 2 + 6);
    if (p) {
        CHECK(p[0] == 0 && p[1] == 6);
        CHECK(p[2] == 312 >> 8 && p[3] == (312 & 0xff)); /* pre-skip, big-endian */
        CHECK(be32(p + 4) == 44100);
        CHECK(p[8] == 0xff && p[9] == 0x00); /* gain -256 */
        CHECK(p[10] == 1 && p[11] == 4 && p[12] == 2 && p[13 + 5] == 5);
    }
    block_unref(b);
    CHECK(fmp4_init_segment(h, 18) == NULL); /* not an OpusHead it takes */
}

static void test_fragment_layout(void)
{
    const uint32_t durs[3] = {960, 960, 480};
    const uint32_t sizes[3] = {3, 2, 1};
    const unsigned char payload[6] = {1, 2, 3, 4, 5, 6};
    fmp4_frag_t f = {.seq = 7, .tfdt = 0x123456789ull, .durs = durs, .sizes = sizes, .n = 3,
                     .payload = payload, .len = sizeof(payload)};
    block_t *b = fmp4_fragment(&f);
    CHECK(b != NULL);
    if (!b)
        return;
    size_t moof_len = be32(b->data), n;
    CHECK(moof_len == 88 + 8 * 3 && b->len == moof_len + 8 + 6);
    CHECK(memcmp(b->data + moof_len + 4, "mdat", 4) == 0 && be32(b->data + moof_len) == 14);
    CHECK(memcmp(b->data + b->len - 6, payload, 6) == 0);
    const unsigned char *moof = find_box(b->data, b->len, "moof", &n);
    const unsigned char *mfhd = find_box(moof, n, "mfhd", &n);
    CHECK(mfhd && be32(mfhd + 4) == 7);
    moof = find_box(b->data, b->len, "moof", &n);
    const unsigned char *traf = find_box(moof, n, "traf", &n);
    size_t tn = n;
    const unsigned char *tfdt = traf ? find_box(traf, tn, "tfdt", &n) : NULL;
    CHECK(tfdt && tfdt[0] == 1 && be32(tfdt + 4) == 1 && be32(tfdt + 8) == 0x23456789);
    const unsigned char *trun = traf ? find_box(traf, tn, "trun", &n) : NULL;
    CHECK(trun && be32(trun) == 0x301 && be32(trun + 4) == 3);
    CHECK(trun && be32(trun + 8) == moof_len + 8); /* data offset: the first packet */
    CHECK(trun && be32(trun + 12) == 960 && be32(trun + 16) == 3 && be32(trun + 28) == 480);
    block_unref(b);

    /* with a title: an emsg box first, the fragment after it unchanged */
    static const unsigned char id3[] = "ID3\x04\0\0\0\0\0\0";
    f.id3 = id3;
    f.id3_len = 10;
    b = fmp4_fragment(&f);
    CHECK(b != NULL);
    if (!b)
        return;
    const unsigned char *emsg = find_box(b->data, b->len, "emsg", &n);
    CHECK(emsg == b->data + 8 && emsg[0] == 1);
    CHECK(emsg && be32(emsg + 4) == 48000 && be32(emsg + 12) == 0x23456789);
    CHECK(emsg && strcmp((const char *)emsg + 24, "https://aomedia.org/emsg/ID3") == 0);
    CHECK(emsg && n == 24 + 29 + 1 + 10 && memcmp(emsg + n - 10, id3, 10) == 0);
    CHECK(b->len == be32(b->data) + moof_len + 8 + 6);
    block_unref(b);
}

int main(void)
{
    RUN(test_packet_durations_from_the_toc);
    RUN(test_which_opus_heads_are_taken);
    RUN(test_init_segment_box_tree_and_dops);
    RUN(test_fragment_layout);
    return testlib_done();
}
