/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_ogg: Ogg Vorbis and Opus creatives (see ads_ogg.h): the format of a mount's header
 * pages, an Ogg file checked page by page with libogg (capture pattern, CRC) and cut into
 * shared blocks of whole pages, and its copy under another serial number when a mount's
 * clashes. Never decodes audio.
 */
#include "ads/ads_ogg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <ogg/ogg.h>

#include "format/ogg_codec.h"

#define OGG_PAGE_MIN 27
#define TITLE_MAX 200

static uint16_t le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* The header and body lengths of the page at p (n bytes): 0, or -1 when it is not all there. */
static int page_lens(const unsigned char *p, size_t n, size_t *hlen, size_t *blen)
{
    if (n < OGG_PAGE_MIN || memcmp(p, "OggS", 4) != 0 || n < (size_t)OGG_PAGE_MIN + p[26])
        return -1;
    *hlen = (size_t)OGG_PAGE_MIN + p[26];
    *blen = 0;
    for (int i = 0; i < p[26]; i++)
        *blen += p[OGG_PAGE_MIN + i];
    return *hlen + *blen <= n ? 0 : -1;
}

int64_t ads_ogg_page_granule(const unsigned char *p, size_t n)
{
    if (n < OGG_PAGE_MIN || memcmp(p, "OggS", 4) != 0)
        return -1;
    uint64_t g = 0;
    for (int i = 7; i >= 0; i--)
        g = g << 8 | p[6 + i];
    return (int64_t)g;
}

/* The codec's id packet p[0..len) (a BOS page's first packet) read into f. 0, or -1. */
static int id_packet(const unsigned char *p, size_t len, ads_format_t *f)
{
    if (len >= 30 && memcmp(p, "\x01vorbis", 7) == 0 && p[11] > 0 && ogg_codec_le32(p + 12)) {
        *f = (ads_format_t){.ogg = ADS_OGG_VORBIS, .channels = p[11],
                            .samplerate = ogg_codec_le32(p + 12)};
        return 0;
    }
    if (len >= 19 && memcmp(p, "OpusHead", 8) == 0 && p[9] > 0) {
        /* granule positions count 48 kHz samples whatever the input rate was */
        *f = (ads_format_t){.ogg = ADS_OGG_OPUS, .channels = p[9], .samplerate = 48000};
        return 0;
    }
    return -1;
}

/* The first packet of a page's body, when it ends on the page: its length, or -1. */
static long first_packet(const unsigned char *p, size_t hlen)
{
    long len = 0;
    for (size_t i = OGG_PAGE_MIN; i < hlen; i++) {
        len += p[i];
        if (p[i] < 255)
            return len;
    }
    return -1;
}

int ads_ogg_format_of(const block_t *headers, ads_format_t *f)
{
    int pages = 0;
    uint32_t serial = 0;
    for (const block_t *b = headers; b; b = block_next(b)) {
        for (size_t at = 0; at < b->len;) {
            size_t hlen, blen;
            const unsigned char *p = b->data + at;
            if (page_lens(p, b->len - at, &hlen, &blen) < 0)
                return -1;
            uint32_t s = ogg_codec_le32(p + 14);
            if (pages == 0) {
                long plen = first_packet(p, hlen);
                if (!(p[5] & 0x02) || plen < 0 || (size_t)plen > blen ||
                    id_packet(p + hlen, (size_t)plen, f) < 0)
                    return -1;
                serial = s;
            } else if (s != serial) {
                return -1; /* several logical streams: a link of ours could not replace them */
            }
            pages++;
            at += hlen + blen;
        }
    }
    if (pages == 0)
        return -1;
    f->serial = serial;
    return 0;
}

block_t *ads_ogg_eos_after(const block_t *b)
{
    const unsigned char *last = NULL;
    size_t hlen, blen;
    for (size_t at = 0; at < b->len; at += hlen + blen) {
        if (page_lens(b->data + at, b->len - at, &hlen, &blen) < 0)
            return NULL;
        last = b->data + at;
    }
    if (!last || (last[5] & 0x04))
        return NULL;
    block_t *e = block_new(OGG_PAGE_MIN);
    if (!e)
        return NULL;
    unsigned char *p = e->data;
    memset(p, 0, OGG_PAGE_MIN);
    memcpy(p, "OggS", 4);
    p[5] = 0x04;
    memcpy(p + 6, last + 6, 12); /* granule position and serial number */
    uint32_t seq = ogg_codec_le32(last + 18) + 1;
    for (int i = 0; i < 4; i++)
        p[18 + i] = (unsigned char)(seq >> (8 * i));
    ogg_page pg = {.header = p, .header_len = OGG_PAGE_MIN, .body = p + OGG_PAGE_MIN,
                   .body_len = 0};
    ogg_page_checksum_set(&pg);
    e->len = OGG_PAGE_MIN;
    return e;
}

int ads_ogg_is_ogg(const unsigned char *data, size_t len)
{
    return len >= 4 && memcmp(data, "OggS", 4) == 0;
}

/* The comment header, on the page after the id header's. */
static int comment_page_fits(const unsigned char *p, size_t hlen, size_t blen, int codec)
{
    const char *sig = codec == ADS_OGG_VORBIS ? "\x03vorbis" : "OpusTags";
    size_t sl = codec == ADS_OGG_VORBIS ? 7 : 8;
    return !(p[5] & 0x01) && blen >= sl && memcmp(p + hlen, sig, sl) == 0;
}

/* Walks the pages of data[0..len): each found by libogg (capture pattern, CRC) exactly where
 * the one before ended, of one stream numbered in order. Fills c->fmt and c->samples (from
 * the last granule position); -1 when anything is off. */
static int pages_check(const unsigned char *data, size_t len, ads_creative_t *c,
                       unsigned *preskip)
{
    ogg_sync_state oy;
    ogg_sync_init(&oy);
    char *buf = ogg_sync_buffer(&oy, (long)len);
    int rc = -1;
    if (!buf)
        goto out;
    memcpy(buf, data, len);
    ogg_sync_wrote(&oy, (long)len);
    size_t at = 0;
    long n = 0;
    int64_t last = -1;
    *preskip = 0;
    ogg_page og;
    for (long got; (got = ogg_sync_pageseek(&oy, &og)) != 0; n++, at += (size_t)got) {
        const unsigned char *p = data + at;
        size_t hlen = (size_t)og.header_len, blen = (size_t)og.body_len;
        if (got < 0 || ogg_page_pageno(&og) != n ||
            (n > 0 && (ogg_page_bos(&og) || (uint32_t)ogg_page_serialno(&og) != c->fmt.serial)))
            goto out;
        if (n == 0) {
            long plen = first_packet(p, hlen);
            if (!ogg_page_bos(&og) || plen < 0 || (size_t)plen > blen ||
                id_packet(p + hlen, (size_t)plen, &c->fmt) < 0)
                goto out;
            c->fmt.serial = (uint32_t)ogg_page_serialno(&og);
            if (c->fmt.ogg == ADS_OGG_OPUS)
                *preskip = le16(p + hlen + 10);
        } else if (n == 1 && !comment_page_fits(p, hlen, blen, c->fmt.ogg)) {
            goto out;
        }
        if (ogg_page_granulepos(&og) >= 0)
            last = ogg_page_granulepos(&og);
    }
    if (at != len || n < 3 || last <= (int64_t)*preskip)
        goto out;
    c->samples = (uint64_t)(last - (int64_t)*preskip);
    rc = 0;
out:
    ogg_sync_clear(&oy);
    return rc;
}

/* Cuts data's pages (checked) into blocks of whole pages and sets the marks: the end of the
 * page whose granule position (less the pre-skip) reaches each. */
static int cut_pages(ads_creative_t *c, const unsigned char *data, size_t len, uint64_t preskip)
{
    uint64_t want[ADS_MARKS] = {(uint64_t)ADS_IMPRESSION_MS * c->fmt.samplerate / 1000,
                                c->samples / 4, c->samples / 2, c->samples * 3 / 4};
    for (int i = 0; i < ADS_MARKS; i++)
        c->mark[i] = len;
    block_t *tail = NULL;
    for (size_t at = 0; at < len;) {
        size_t take = 0, hlen, blen;
        while (at + take < len && page_lens(data + at + take, len - at - take, &hlen, &blen) == 0) {
            if (take > 0 && take + hlen + blen > BLOCK_GATHER_MAX)
                break;
            int64_t g = ads_ogg_page_granule(data + at + take, hlen);
            take += hlen + blen;
            for (int i = 0; i < ADS_MARKS; i++)
                if (c->mark[i] == len && g >= 0 && (uint64_t)g >= preskip &&
                    (uint64_t)g - preskip >= want[i])
                    c->mark[i] = at + take;
        }
        block_t *b = take ? block_new_copy(data + at, take) : NULL;
        if (!b)
            return -ENOMEM;
        b->flags = BLOCK_SYNC;
        b->offset = at;
        if (tail)
            block_link(tail, b);
        else
            c->blocks = b;
        tail = b;
        at += take;
    }
    return 0;
}

/* The ad's title as the log names it: printable, cut after a whole character. */
static char *clean_title(const char *title)
{
    size_t len = title ? strlen(title) : 0, j = 0;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)title[i] >= 0x20 && title[i] != 0x7f)
            out[j++] = title[i];
    if (j > TITLE_MAX) {
        j = TITLE_MAX;
        while (j > 0 && ((unsigned char)out[j] & 0xC0) == 0x80)
            j--;
    }
    out[j] = '\0';
    return out;
}

int ads_ogg_creative_build(const unsigned char *data, size_t len, const char *title,
                           ads_creative_t **out)
{
    *out = NULL;
    if (len == 0 || len > ADS_CREATIVE_MAX)
        return VAST_ERR_MEDIA_BROKEN;
    ads_creative_t *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    atomic_init(&c->refcount, 1);
    unsigned preskip;
    if (pages_check(data, len, c, &preskip) < 0) {
        free(c);
        return VAST_ERR_MEDIA_BROKEN;
    }
    c->bytes = len;
    c->duration_ms = (uint32_t)(c->samples * 1000 / c->fmt.samplerate);
    c->title = clean_title(title);
    int rc = c->title ? cut_pages(c, data, len, preskip) : -ENOMEM;
    if (rc < 0) {
        ads_creative_unref(c);
        return rc;
    }
    *out = c;
    return 0;
}

/* c's copy with every page under serial s (CRCs set again). */
static ads_creative_t *relabelled(const ads_creative_t *c, uint32_t s)
{
    ads_creative_t *n = calloc(1, sizeof(*n));
    if (!n)
        return NULL;
    *n = (ads_creative_t){.fmt = c->fmt, .bytes = c->bytes, .samples = c->samples,
                          .duration_ms = c->duration_ms, .title = strdup(c->title)};
    atomic_init(&n->refcount, 1);
    n->fmt.serial = s;
    memcpy(n->mark, c->mark, sizeof(n->mark));
    block_t *tail = NULL;
    for (const block_t *b = c->blocks; b && n->title; b = block_next(b)) {
        block_t *nb = block_new_copy(b->data, b->len);
        if (!nb)
            goto fail;
        nb->flags = b->flags;
        nb->offset = b->offset;
        if (tail)
            block_link(tail, nb);
        else
            n->blocks = nb;
        tail = nb;
        size_t hlen, blen;
        for (size_t at = 0; page_lens(nb->data + at, nb->len - at, &hlen, &blen) == 0;
             at += hlen + blen) {
            unsigned char *p = nb->data + at;
            for (int i = 0; i < 4; i++)
                p[14 + i] = (unsigned char)(s >> (8 * i));
            ogg_page pg = {.header = p, .header_len = (long)hlen, .body = p + hlen,
                           .body_len = (long)blen};
            ogg_page_checksum_set(&pg);
        }
    }
    if (n->title)
        return n;
fail:
    ads_creative_unref(n);
    return NULL;
}

ads_creative_t *ads_ogg_creative_for(ads_creative_t *c, uint32_t serial)
{
    if (c->fmt.serial != serial)
        return ads_creative_ref(c);
    ads_creative_t *alt = atomic_load_explicit(&c->alt, memory_order_acquire);
    if (!alt) {
        ads_creative_t *made = relabelled(c, serial ^ 0x5ad0a11u);
        ads_creative_t *none = NULL;
        if (!made)
            return NULL;
        if (atomic_compare_exchange_strong_explicit(&c->alt, &none, made, memory_order_acq_rel,
                                                    memory_order_acquire))
            alt = made;
        else {
            ads_creative_unref(made); /* another worker made it first */
            alt = none;
        }
    }
    return ads_creative_ref(alt);
}
