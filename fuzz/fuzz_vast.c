// fuzz-sources: src/ads/vast.c src/ads/ads_url.c src/ads/creative.c src/ads/ads_ogg.c src/core/block.c src/format/mpeg.c src/core/buf.c src/core/utf8.c src/core/str.c
// fuzz-pkgs: libxml-2.0 ogg
// fuzz-args: -max_len=65536
/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_vast: the VAST reader (ads/vast.c) on an ad server's answer, and the VAST macros
 * (ads/ads_url.c) on every URL it keeps. What comes out must be within the reader's limits:
 * ad, media and URL counts; every URL http or https, printable ASCII without blanks, at most
 * VAST_URL_MAX bytes, and still so once its macros are replaced; titles valid UTF-8 without
 * control characters, at most VAST_TITLE_MAX bytes; a wrapper always has its tag URI. The
 * input's first line is also expanded as a <vast-url> template: the result never holds a byte
 * the listener's values could not put there unencoded. The whole input is also taken as a
 * creative (ads/creative.c, ads/ads_ogg.c): when it is one, its blocks are whole frames of
 * one format (or whole Ogg pages of one logical stream, its serial number), sync points, the
 * input's bytes in order, and its tracking marks are in order within it; an Ogg creative's
 * copy under another serial number is the same pages but for it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ads/ads.h"
#include "ads/ads_ogg.h"
#include "ads/ads_url.h"
#include "ads/vast.h"
#include "core/utf8.h"
#include "format/mpeg.h"
#include "fuzz.h"

static void check_url(const char *u)
{
    size_t len = strlen(u);
    REQUIRE(len > 0 && len <= VAST_URL_MAX);
    REQUIRE(strncasecmp(u, "http://", 7) == 0 || strncasecmp(u, "https://", 8) == 0);
    for (size_t i = 0; i < len; i++)
        REQUIRE((unsigned char)u[i] > 0x20 && (unsigned char)u[i] < 0x7f);
    char *m = ads_url_macros(u, 405, 12345678, 1700000000);
    if (m) {
        for (const char *p = m; *p; p++)
            REQUIRE((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f);
        free(m);
    }
}

static void check_urls(const vast_urls_t *l)
{
    REQUIRE(l->n >= 0 && l->n <= VAST_MAX_URLS);
    for (int i = 0; i < l->n; i++)
        check_url(l->v[i]);
}

static void check_ad(const vast_ad_t *a)
{
    REQUIRE(!a->wrapper || a->tag_uri);
    if (a->tag_uri)
        check_url(a->tag_uri);
    if (a->title) {
        size_t len = strlen(a->title);
        REQUIRE(len <= VAST_TITLE_MAX && utf8_valid(a->title, len));
        for (size_t i = 0; i < len; i++)
            REQUIRE((unsigned char)a->title[i] >= 0x20 && a->title[i] != 0x7f);
    }
    check_urls(&a->impression);
    check_urls(&a->error);
    for (int e = 0; e < VAST_EV_COUNT; e++)
        check_urls(&a->track[e]);
    REQUIRE(a->nmedia >= 0 && a->nmedia <= VAST_MAX_MEDIA);
    for (int i = 0; i < a->nmedia; i++) {
        check_url(a->media[i].url);
        REQUIRE(strlen(a->media[i].type) < sizeof(a->media[i].type));
    }
    REQUIRE(a->sequence >= 0 && a->sequence < 1000);
}

static void check_template(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t len = nl ? (size_t)(nl - data) : size;
    if (len > 4096 || memchr(data, '\0', len))
        return;
    char *tmpl = strndup((const char *)data, len);
    ads_url_vars_t v = {.ip = "::1", .ua = "a b&c={ua}", .country = "\xff", .session = "1",
                        .mount = "/m", .duration = 30, .cachebuster = 9};
    char *u = tmpl ? ads_url_expand(tmpl, &v) : NULL;
    if (u) {
        REQUIRE(strlen(u) <= ADS_URL_MAX);
        if (!strstr(tmpl, "a b&c"))
            REQUIRE(!strstr(u, "a b&c"));
        if (!strchr(tmpl, '\xff'))
            REQUIRE(!strchr(u, '\xff'));
    }
    free(u);
    free(tmpl);
}

/* The pages of b (whole, of serial s): their count. */
static int whole_pages(const block_t *b, uint32_t s)
{
    int n = 0;
    for (uint32_t at = 0; at < b->len; n++) {
        const unsigned char *p = b->data + at;
        REQUIRE(b->len - at >= 27 && memcmp(p, "OggS", 4) == 0 && b->len - at >= 27u + p[26]);
        size_t len = 27u + p[26];
        for (int i = 0; i < p[26]; i++)
            len += p[27 + i];
        REQUIRE(len <= b->len - at);
        REQUIRE(((uint32_t)p[14] | (uint32_t)p[15] << 8 | (uint32_t)p[16] << 16 |
                 (uint32_t)p[17] << 24) == s);
        at += (uint32_t)len;
    }
    return n;
}

static void check_ogg_creative(ads_creative_t *c, const uint8_t *data, size_t size)
{
    uint64_t off = 0;
    for (const block_t *b = c->blocks; b; b = block_next(b)) {
        REQUIRE(b->flags == BLOCK_SYNC && b->offset == off && b->len > 0);
        REQUIRE(off + b->len <= size && memcmp(data + off, b->data, b->len) == 0);
        int pages = whole_pages(b, c->fmt.serial);
        REQUIRE(pages == 1 || b->len <= BLOCK_GATHER_MAX);
        off += b->len;
    }
    REQUIRE(off == c->bytes && c->bytes == size && c->samples > 0);
    for (int i = 0; i < ADS_MARKS; i++)
        REQUIRE(c->mark[i] > 0 && c->mark[i] <= c->bytes);
    REQUIRE(c->mark[ADS_MARK_Q1] <= c->mark[ADS_MARK_MID] &&
            c->mark[ADS_MARK_MID] <= c->mark[ADS_MARK_Q3]);
    for (const char *t = c->title; *t; t++)
        REQUIRE((unsigned char)*t >= 0x20 && *t != 0x7f);
    ads_creative_t *alt = ads_ogg_creative_for(c, c->fmt.serial);
    if (alt) {
        REQUIRE(alt != c && alt->fmt.serial != c->fmt.serial && alt->bytes == c->bytes);
        const block_t *a = alt->blocks, *b = c->blocks;
        for (; a && b; a = block_next(a), b = block_next(b)) {
            REQUIRE(a->len == b->len && whole_pages(a, alt->fmt.serial) > 0);
            for (uint32_t at = 0; at < a->len;) { /* page by page: the serial and CRC apart */
                const unsigned char *p = b->data + at;
                uint32_t len = 27u + p[26];
                for (int i = 0; i < p[26]; i++)
                    len += p[27 + i];
                for (uint32_t i = 0; i < len; i++)
                    REQUIRE(a->data[at + i] == p[i] || (i >= 14 && i < 18) ||
                            (i >= 22 && i < 26));
                at += len;
            }
        }
        REQUIRE(!a && !b);
        ads_creative_unref(alt);
    }
    ads_creative_unref(c);
}

static void check_creative(const uint8_t *data, size_t size)
{
    ads_creative_t *c = NULL;
    char title[200];
    size_t tl = size < sizeof(title) - 1 ? size : sizeof(title) - 1;
    memcpy(title, data, tl);
    title[tl] = '\0';
    int rc = ads_creative_build(data, size, title, &c);
    if (rc != 0) {
        REQUIRE(rc == VAST_ERR_MEDIA_BROKEN && !c);
        return;
    }
    if (c->fmt.ogg) {
        check_ogg_creative(c, data, size);
        return;
    }
    uint64_t off = 0;
    for (const block_t *b = c->blocks; b; b = block_next(b)) {
        REQUIRE(b->flags == BLOCK_SYNC && b->offset == off && b->len > 0);
        REQUIRE(memmem(data, size, b->data, b->len) != NULL);
        for (uint32_t at = 0; at < b->len;) {
            mpeg_frame_t f;
            ads_format_t ff;
            REQUIRE(mpeg_frame_parse(b->data + at, b->len - at, &f) == 1 && f.len <= b->len - at);
            REQUIRE(ads_format_of(b->data + at, b->len - at, &ff) == 0 &&
                    ads_format_equal(&ff, &c->fmt));
            at += f.len;
        }
        off += b->len;
    }
    REQUIRE(off == c->bytes && c->bytes <= size);
    for (int i = 0; i < ADS_MARKS; i++)
        REQUIRE(c->mark[i] > 0 && c->mark[i] <= c->bytes);
    REQUIRE(c->mark[ADS_MARK_Q1] <= c->mark[ADS_MARK_MID] &&
            c->mark[ADS_MARK_MID] <= c->mark[ADS_MARK_Q3]);
    REQUIRE(strlen(c->title) <= 120 && !strchr(c->title, '\'') && !strchr(c->title, ';'));
    ads_creative_unref(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vast_doc_t doc;
    int rc = vast_parse((const char *)data, size, &doc);
    if (rc == 0) {
        REQUIRE(doc.nads >= 0 && doc.nads <= VAST_MAX_ADS);
        for (int i = 0; i < doc.nads; i++)
            check_ad(&doc.ads[i]);
        check_urls(&doc.error);
    } else {
        REQUIRE(doc.nads == 0 && doc.error.n == 0);
        REQUIRE(rc == VAST_ERR_XML || rc == VAST_ERR_SCHEMA || rc == VAST_ERR_VERSION ||
                rc == VAST_ERR_UNDEFINED);
    }
    vast_free(&doc);
    check_template(data, size);
    check_creative(data, size);
    return 0;
}
