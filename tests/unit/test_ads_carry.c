/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_ads_carry: a listener's ads as an upgrade carries them (ads/ads_carry.h): a pod written
 * from its second ad on reads back with those ads' ids, creative URLs, titles, lengths and
 * tracking URLs, and no creative; a pod read back is written again the same way (an upgrade
 * after an upgrade); an ad without a creative URL is not carried; a record cut short or with
 * too many URLs is refused; the tracking URLs waiting to be tried again read back in due order
 * (beacon.c).
 */
#include "ads/ads.h"
#include "ads/ads_carry.h"
#include "ads/ads_record.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpeg_samples.h"
#include "testlib.h"

static ads_pod_t *make_pod(ads_creative_t *c)
{
    ads_pod_t *pod = calloc(1, sizeof(*pod));
    pod->allow_private = 1;
    pod->duration_ms = 3000;
    pod->n = 2;
    for (int i = 0; i < 2; i++) {
        ads_ad_t *a = &pod->ad[i];
        a->creative = ads_creative_ref(c);
        snprintf(a->id, sizeof(a->id), "ad%d", i);
        char url[64];
        snprintf(url, sizeof(url), "http://ads.example/m%d.mp3", i);
        a->media_url = strdup(url);
        vast_urls_add(&a->impression, "http://t.example/imp");
        vast_urls_add(&a->error, "http://t.example/err?c=[ERRORCODE]");
        vast_urls_add(&a->track[VAST_EV_COMPLETE], "http://t.example/complete");
        vast_urls_add(&a->track[VAST_EV_START], "http://t.example/start");
    }
    return pod;
}

static void check_loaded(const ads_pod_t *p, const ads_creative_t *c)
{
    CHECK(p && p->n == 1 && p->allow_private == 1 && p->duration_ms == 3000);
    if (!p || p->n != 1)
        return;
    const ads_ad_t *a = &p->ad[0];
    CHECK(!a->creative && a->carried_bytes == c->bytes);
    CHECK_STR(a->id, "ad1");
    CHECK_STR(a->media_url, "http://ads.example/m1.mp3");
    CHECK_STR(a->carried_title, c->title);
    CHECK(a->impression.n == 1 && a->error.n == 1 && a->track[VAST_EV_COMPLETE].n == 1);
    CHECK(a->track[VAST_EV_START].n == 1 && a->track[VAST_EV_MIDPOINT].n == 0);
    CHECK_STR(a->track[VAST_EV_COMPLETE].v[0], "http://t.example/complete");
    CHECK_STR(a->error.v[0], "http://t.example/err?c=[ERRORCODE]");
}

static ads_pod_t *read_back(const buf_t *b)
{
    rec_reader_t in;
    rec_reader_init(&in, b->data, b->len);
    ads_pod_t *p = ads_pod_load(&in);
    CHECK(!in.error && in.p == in.end);
    return p;
}

static void test_round_trip(void)
{
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(sample_mp3, sizeof(sample_mp3), "Spot one", &c) == 0);
    if (!c)
        return;
    ads_pod_t *pod = make_pod(c);
    buf_t b = {0};
    CHECK(ads_pod_save(pod, 1, &b) == 0 && !b.error);
    ads_pod_t *p = read_back(&b);
    check_loaded(p, c);
    buf_t again = {0}; /* a second upgrade before its creative came back */
    CHECK(p && ads_pod_save(p, 0, &again) == 0);
    CHECK(again.len == b.len && memcmp(again.data, b.data, b.len) == 0);
    ads_pod_t *q = read_back(&again);
    check_loaded(q, c);
    /* cut short anywhere: refused, never read past */
    for (size_t n = 0; n < b.len; n += 7) {
        rec_reader_t in;
        rec_reader_init(&in, b.data, n);
        CHECK(ads_pod_load(&in) == NULL && in.error);
    }
    /* an ad without a creative URL: not carried, nothing written */
    free(pod->ad[1].media_url);
    pod->ad[1].media_url = NULL;
    buf_t none = {0};
    CHECK(ads_pod_save(pod, 0, &none) == -ENOTSUP && none.len == 0);
    ads_pod_free(pod);
    ads_pod_free(p);
    ads_pod_free(q);
    buf_free(&b);
    buf_free(&again);
    buf_free(&none);
    ads_creative_unref(c);
}

static void test_too_many_urls(void)
{
    buf_t b = {0};
    rec_u8(&b, 0);
    rec_u32(&b, 1000);
    rec_u32(&b, 1);
    rec_str(&b, "id");
    rec_str(&b, "http://a/");
    rec_str(&b, "t");
    rec_u64(&b, 10);
    rec_u32(&b, VAST_MAX_URLS + 1);
    rec_reader_t in;
    rec_reader_init(&in, b.data, b.len);
    CHECK(ads_pod_load(&in) == NULL && in.error);
    buf_free(&b);
}

/* The tracking retries: read into the retry list, written back the same (their wait no
 * longer), forgotten; a retry this binary does not make (no try yet, or all of them) is not
 * taken; a record cut short is refused, what was read before it kept. */
static void test_beacon_retries(void)
{
    buf_t b = {0};
    rec_u32(&b, 3);
    rec_str(&b, "http://t.example/imp?cb=1");
    rec_u8(&b, 1);
    rec_u8(&b, 2);
    rec_u32(&b, 1500);
    rec_str(&b, "http://t.example/none");
    rec_u8(&b, 0);
    rec_u8(&b, 0); /* never tried: not a retry */
    rec_u32(&b, 0);
    rec_str(&b, "http://t.example/complete");
    rec_u8(&b, 0);
    rec_u8(&b, 1);
    rec_u32(&b, 0);
    rec_reader_t in;
    rec_reader_init(&in, b.data, b.len);
    CHECK(ads_beacons_load(&in) == 2 && !in.error && in.p == in.end);
    CHECK(ads_beacons_waiting() == 2);
    buf_t out = {0};
    ads_beacons_save(&out);
    rec_reader_init(&in, out.data, out.len);
    CHECK(rec_get_u32(&in) == 2);
    char *first = rec_get_str(&in); /* in due order: the one due now first */
    CHECK(first && strcmp(first, "http://t.example/complete") == 0);
    CHECK(rec_get_u8(&in) == 0 && rec_get_u8(&in) == 1 && rec_get_u32(&in) == 0);
    char *second = rec_get_str(&in);
    CHECK(second && strcmp(second, "http://t.example/imp?cb=1") == 0);
    CHECK(rec_get_u8(&in) == 1 && rec_get_u8(&in) == 2);
    uint32_t due = rec_get_u32(&in);
    CHECK(due > 0 && due <= 1500 && !in.error && in.p == in.end);
    free(first);
    free(second);
    ads_beacons_forget();
    CHECK(ads_beacons_waiting() == 0);
    rec_reader_init(&in, b.data, b.len - 3); /* cut in the last one */
    CHECK(ads_beacons_load(&in) == -1 && in.error);
    CHECK(ads_beacons_waiting() == 1);
    ads_beacons_forget();
    buf_free(&b);
    buf_free(&out);
}

/* A pod's record (ads_record.h) goes with it: the process before writes none (carried), the
 * one after has it whole, its ads linked to the ads still to play. */
static void test_record_carried(void)
{
    ads_creative_t *c = NULL;
    CHECK(ads_creative_build(sample_mp3, sizeof(sample_mp3), "Spot one", &c) == 0);
    if (!c)
        return;
    ads_pod_t *pod = make_pod(c);
    ads_settings_t set = {.request_timeout_ms = 2000};
    ads_ask_t ask = {.settings = &set, .break_ms = 30000, .hls = 1,
                     .vars = {.session = "4242", .mount = "/live.mp3"}};
    ads_record_t *rec = ads_record_new(&ask);
    CHECK(rec != NULL);
    if (!rec)
        return;
    const char *urls[] = {"http://ads.example/m0.mp3", "http://ads.example/m1.mp3"};
    const char *cids[] = {"cr-0", ""}, *titles[] = {"Spot <zero>", NULL};
    ads_record_attach(rec, pod, urls, cids, titles);
    unsigned fired = ADS_FIRED_START | ADS_FIRED_IMPRESSION; /* as ads_track_sent notes them */
    pod->ad[0].rec->events |= fired;
    ads_record_sent(&pod->ad[0], c->bytes); /* the first ad all delivered */
    CHECK(rec->ad[0].events == fired && rec->ad[0].delivered_ms == c->duration_ms);
    CHECK(strncmp(rec->ad[1].creative_id, "url:", 4) == 0 && strlen(rec->ad[1].creative_id) == 20);
    buf_t b = {0};
    CHECK(ads_pod_save(pod, 1, &b) == 0 && !b.error && rec->carried);
    ads_pod_t *p = read_back(&b);
    CHECK(p && p->rec && p->rec->n == 2 && p->ad[0].rec == &p->rec->ad[1]);
    if (p && p->rec) {
        CHECK(p->rec->session == 4242 && p->rec->hls == 1 && p->rec->break_ms == 30000);
        CHECK_STR(p->rec->mount, "/live.mp3");
        CHECK_STR(p->rec->ad[0].title, "Spot <zero>");
        CHECK_STR(p->rec->ad[0].creative_id, "cr-0");
        CHECK(p->rec->ad[0].events == fired && !p->rec->carried);
    }
    /* cut short anywhere: refused, never read past (the record's part too) */
    for (size_t n = 0; n < b.len; n += 5) {
        rec_reader_t in;
        rec_reader_init(&in, b.data, n);
        CHECK(ads_pod_load(&in) == NULL && in.error);
    }
    /* what a process from before saved (no record): a pod without one */
    ads_pod_t *old = NULL;
    pod->rec = NULL;
    buf_t before = {0};
    CHECK(ads_pod_save(pod, 1, &before) == 0 && before.len > 0 && before.data[0] != (char)0xa7);
    old = read_back(&before);
    CHECK(old && !old->rec && !old->ad[0].rec);
    pod->rec = rec;
    ads_pod_free(pod); /* carried: nothing written here */
    ads_pod_free(p);
    ads_pod_free(old);
    buf_free(&b);
    buf_free(&before);
    ads_creative_unref(c);
}

int main(void)
{
    test_round_trip();
    test_record_carried();
    test_too_many_urls();
    test_beacon_retries();
    return testlib_done();
}
