/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_spool: libFuzzer driver for what the audience store reads back or shows: a line of the
 * spool (audience_spool_decode) and a libpq URI as logs show it (audience_pg_shown).
 *
 * A line that decodes (an R3 line, or an R2 or R1 line of an earlier version) must encode to
 * one R3 line (a newline at its end only, 19 fields) that decodes to the same record; an A1
 * line (an ad decision) to one A1 line of 12 fields and 6 per ad that decodes to the same
 * decision; a URI shown has *** where its user part's password was.
 */
// fuzz-sources: src/audience/audience_spool.c src/audience/audience_record.c src/audience/audience_ads.c src/audience/audience_pgconn.c src/core/buf.c src/core/loop.c src/core/escape.c src/core/utf8.c src/core/str.c src/audience/audience_pgresolve.c
// fuzz-pkgs: libpq
// fuzz-args: -max_len=4096
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_pgconn.h"
#include "audience/audience_spool.h"

#include "fuzz.h"

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* An ad decision's line: encoded again, it decodes to the same decision. */
static void ad_round_trip(audience_record_t *e, buf_t *b, size_t tabs)
{
    const ads_record_t *a = e->ad;
    REQUIRE(tabs == 11 + 6 * (size_t)a->n && memcmp(b->data, "A1\t", 3) == 0);
    audience_record_t *again = audience_spool_decode(b->data, b->len - 1);
    REQUIRE(again != NULL && again->ad != NULL);
    const ads_record_t *z = again->ad;
    REQUIRE(memcmp(e->uid, again->uid, 16) == 0 && same_text(e->server, again->server));
    REQUIRE(a->session == z->session && a->hls == z->hls && a->asked_ms == z->asked_ms &&
            a->ended_ms == z->ended_ms && a->outcome == z->outcome &&
            a->vast_code == z->vast_code && a->break_ms == z->break_ms && a->n == z->n &&
            same_text(a->mount, z->mount) && e->r.id == again->r.id);
    for (int i = 0; i < a->n; i++)
        REQUIRE(strcmp(a->ad[i].ad_id, z->ad[i].ad_id) == 0 &&
                strcmp(a->ad[i].creative_id, z->ad[i].creative_id) == 0 &&
                same_text(a->ad[i].title, z->ad[i].title) &&
                a->ad[i].duration_ms == z->ad[i].duration_ms &&
                a->ad[i].delivered_ms == z->ad[i].delivered_ms &&
                a->ad[i].events == z->ad[i].events);
    free(again);
    free(e);
    buf_free(b);
}

static void line_round_trip(const uint8_t *data, size_t size)
{
    audience_record_t *e = audience_spool_decode((const char *)data, size);
    if (!e)
        return;
    buf_t b = BUF_INIT;
    REQUIRE(audience_spool_encode(&b, e) == 0);
    REQUIRE(b.len > 0 && b.data[b.len - 1] == '\n' && !memchr(b.data, '\n', b.len - 1));
    size_t tabs = 0;
    for (size_t i = 0; i < b.len; i++)
        tabs += b.data[i] == '\t';
    if (e->ad) {
        ad_round_trip(e, &b, tabs);
        return;
    }
    REQUIRE(tabs == 18);
    audience_record_t *again = audience_spool_decode(b.data, b.len - 1);
    REQUIRE(again != NULL);
    REQUIRE(memcmp(e->uid, again->uid, 16) == 0 && same_text(e->server, again->server));
    REQUIRE(e->r.id == again->r.id && e->r.start_ms == again->r.start_ms &&
            e->r.end_ms == again->r.end_ms && e->r.bytes == again->r.bytes &&
            e->r.end == again->r.end && e->r.preroll == again->r.preroll &&
            e->r.hls == again->r.hls && same_text(e->r.invalid, again->r.invalid));
    REQUIRE(same_text(e->r.mount, again->r.mount) && same_text(e->r.served, again->r.served) &&
            same_text(e->r.address, again->r.address) && same_text(e->r.agent, again->r.agent) &&
            same_text(e->r.referer, again->r.referer) && same_text(e->r.user, again->r.user) &&
            same_text(e->r.country, again->r.country) && same_text(e->r.key, again->r.key));
    free(again);
    free(e);
    buf_free(&b);
}

static void uri_shown(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    if (!uri)
        return;
    memcpy(uri, data, size);
    uri[size] = '\0';
    char *shown = audience_pg_shown(uri);
    if (shown && audience_pg_is_uri(uri)) {
        /* the user part ends at the first '@' before any '/'; its password is after its first
         * ':': shown keeps what comes before and puts *** in its place */
        const char *rest = strstr(uri, "://") + 3;
        size_t end = strcspn(rest, "@/");
        const char *colon = memchr(rest, ':', end);
        if (rest[end] == '@' && colon && colon + 1 < rest + end) { /* a password, not empty */
            size_t keep = (size_t)(colon + 1 - uri);
            REQUIRE(strncmp(shown, uri, keep) == 0 && strncmp(shown + keep, "***@", 4) == 0);
        }
    }
    free(shown);
    free(uri);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    line_round_trip(data, size);
    uri_shown(data, size);
    return 0;
}
