/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_record: a decision's record for the audience figures, from the ask to the end of its
 * ads, and across an upgrade (see ads_record.h); a pod fitted in what is left of its break,
 * and freed, with its record.
 */
#include "ads/ads_record.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/loop.h"

static void (*record_sink)(const ads_record_t *r);

void ads_set_record_sink(void (*sink)(const ads_record_t *r))
{
    record_sink = sink;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ads_record_t *ads_record_new(const ads_ask_t *ask)
{
    ads_record_t *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    const char *mount = ask->vars.mount ? ask->vars.mount : ask->mount ? ask->mount : "";
    r->mount = strdup(mount);
    if (!r->mount) {
        free(r);
        return NULL;
    }
    r->session = ask->vars.session ? strtoull(ask->vars.session, NULL, 10) : 0;
    r->hls = ask->hls != 0;
    r->asked_ms = wall_ms();
    r->deadline_ms = loop_now_ms() + ask->settings->request_timeout_ms;
    r->break_ms = ask->break_ms;
    return r;
}

/* "url:" and the first 8 bytes of SHA-256 over url, in hex. */
static void url_hash(const char *url, char *out, size_t cap)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (!EVP_Digest(url, strlen(url), md, &len, EVP_sha256(), NULL) || len < 8) {
        snprintf(out, cap, "url:");
        return;
    }
    snprintf(out, cap, "url:%02x%02x%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2], md[3], md[4],
             md[5], md[6], md[7]);
}

void ads_record_attach(ads_record_t *rec, ads_pod_t *pod, const char *const *media_urls,
                       const char *const *creative_ids, const char *const *titles)
{
    rec->n = pod->n;
    for (int i = 0; i < pod->n; i++) {
        ads_record_ad_t *e = &rec->ad[i];
        ads_ad_t *a = &pod->ad[i];
        snprintf(e->ad_id, sizeof(e->ad_id), "%s", a->id);
        if (creative_ids[i] && creative_ids[i][0])
            snprintf(e->creative_id, sizeof(e->creative_id), "%s", creative_ids[i]);
        else
            url_hash(media_urls[i] ? media_urls[i] : "", e->creative_id, sizeof(e->creative_id));
        e->title = titles[i] ? strdup(titles[i]) : NULL;
        e->duration_ms = a->creative ? a->creative->duration_ms : 0;
        a->rec = e;
    }
    pod->rec = rec;
}

void ads_record_free(ads_record_t *rec)
{
    if (!rec)
        return;
    for (int i = 0; i < rec->n; i++)
        free(rec->ad[i].title);
    free(rec->mount);
    free(rec);
}

void ads_record_end(ads_record_t *rec)
{
    if (!rec)
        return;
    void (*sink)(const ads_record_t *) = record_sink;
    if (!rec->carried && sink) {
        unsigned any = 0;
        for (int i = 0; i < rec->n; i++)
            any |= rec->ad[i].events;
        if (rec->outcome == ADS_OUT_TIMEOUT && any)
            rec->outcome = ADS_OUT_FILLED; /* late, but played all the same */
        rec->ended_ms = wall_ms();
        sink(rec);
    }
    ads_record_free(rec);
}

void ads_record_sent(const ads_ad_t *ad, uint64_t sent)
{
    ads_record_ad_t *e = ad->rec;
    const ads_creative_t *c = ad->creative;
    if (!e || !c || !c->bytes)
        return;
    if (sent > c->bytes)
        sent = c->bytes;
    uint32_t ms = (uint32_t)((uint64_t)c->duration_ms * sent / c->bytes);
    if (ms > e->delivered_ms)
        e->delivered_ms = ms;
    if (!e->duration_ms)
        e->duration_ms = c->duration_ms;
}

/* ---- across an upgrade ---- */

void ads_record_save(const ads_pod_t *pod, buf_t *out)
{
    ads_record_t *r = pod->rec;
    if (!r)
        return;
    r->carried = 1; /* the next process writes it */
    rec_u8(out, ADS_RECORD_MAGIC);
    rec_u64(out, r->session);
    rec_str(out, r->mount);
    rec_u8(out, (uint8_t)r->hls);
    rec_i64(out, r->asked_ms);
    rec_u8(out, (uint8_t)r->outcome);
    rec_u32(out, (uint32_t)r->vast_code);
    rec_u32(out, r->break_ms);
    rec_u32(out, (uint32_t)r->n);
    for (int i = 0; i < r->n; i++) {
        const ads_record_ad_t *e = &r->ad[i];
        rec_str(out, e->ad_id);
        rec_str(out, e->creative_id);
        rec_str(out, e->title);
        rec_u32(out, e->duration_ms);
        rec_u32(out, e->delivered_ms);
        rec_u32(out, e->events);
    }
}

static void get_id(rec_reader_t *in, char *out, size_t cap)
{
    char *s = rec_get_str(in);
    snprintf(out, cap, "%s", s ? s : "");
    free(s);
}

ads_record_t *ads_record_read(rec_reader_t *in)
{
    if (in->p >= in->end || *in->p != ADS_RECORD_MAGIC)
        return NULL; /* none carried (a process from before writes none) */
    rec_get_u8(in);
    ads_record_t t = {0};
    t.session = rec_get_u64(in);
    t.mount = rec_get_str(in);
    t.hls = rec_get_u8(in) & 1;
    t.asked_ms = rec_get_i64(in);
    uint8_t outcome = rec_get_u8(in);
    t.outcome = outcome < ADS_OUT_KINDS ? (ads_outcome_t)outcome : ADS_OUT_ERROR;
    t.vast_code = (int)rec_get_u32(in);
    t.break_ms = rec_get_u32(in);
    uint32_t n = rec_get_u32(in);
    if (n > ADS_POD_MAX)
        in->error = 1;
    for (uint32_t i = 0; i < n && !in->error; i++) {
        ads_record_ad_t *e = &t.ad[t.n++];
        get_id(in, e->ad_id, sizeof(e->ad_id));
        get_id(in, e->creative_id, sizeof(e->creative_id));
        e->title = rec_get_str(in);
        e->duration_ms = rec_get_u32(in);
        e->delivered_ms = rec_get_u32(in);
        e->events = rec_get_u32(in);
    }
    ads_record_t *r = in->error || !t.mount ? NULL : malloc(sizeof(*r));
    if (!r) { /* malformed, or without memory: the pod plays without it */
        for (int i = 0; i < t.n; i++)
            free(t.ad[i].title);
        free(t.mount);
        return NULL;
    }
    *r = t;
    return r;
}

void ads_record_link(ads_pod_t *pod, ads_record_t *r)
{
    if (!r)
        return;
    int n = 0; /* the pod's ads but a house ad (which has no record) */
    for (int i = 0; i < pod->n; i++)
        n += !pod->ad[i].house;
    if (r->n < n) { /* not its record: the pod plays without it */
        ads_record_free(r);
        return;
    }
    for (int i = pod->n - 1, e = r->n - 1; i >= 0; i--) /* its ads are the record's last ones */
        if (!pod->ad[i].house)
            pod->ad[i].rec = &r->ad[e--];
    pod->rec = r;
}

/* ---- a pod's end (ads.h): its record, then its ads ---- */

static void ad_clear(ads_ad_t *a)
{
    ads_creative_unref(a->creative);
    free(a->media_url);
    free(a->carried_title);
    vast_urls_free(&a->impression);
    vast_urls_free(&a->error);
    for (int e = 0; e < VAST_EV_COUNT; e++)
        vast_urls_free(&a->track[e]);
}

void ads_pod_free(ads_pod_t *pod)
{
    if (!pod)
        return;
    ads_record_end(pod->rec); /* the listener's ads ended: its record (once) */
    for (int i = 0; i < pod->n; i++)
        ad_clear(&pod->ad[i]);
    free(pod);
}

/* The record keeps the ads placed: an ad passed over leaves it, the others keep their order
 * (the pod's ads are the record's last ones, ads_record_link). */
static void record_keep(ads_record_t *r, ads_pod_t *pod, const int *keep)
{
    int base = r->n - pod->n, kept = base;
    for (int i = 0; i < pod->n; i++) {
        ads_record_ad_t *e = &r->ad[base + i];
        if (!keep[i]) {
            free(e->title);
            continue;
        }
        if (kept != base + i)
            r->ad[kept] = *e;
        kept++;
    }
    r->n = kept;
}

ads_pod_t *ads_pod_fit(ads_pod_t *pod, unsigned room_ms)
{
    if (!pod)
        return NULL;
    int keep[ADS_POD_MAX] = {0}, kept = 0;
    uint32_t ms = 0;
    for (int i = 0; i < pod->n; i++) {
        uint32_t d = pod->ad[i].creative ? pod->ad[i].creative->duration_ms : UINT32_MAX;
        keep[i] = room_ms != 0 && d <= room_ms - ms;
        ms += keep[i] ? d : 0;
    }
    if (pod->rec)
        record_keep(pod->rec, pod, keep);
    for (int i = 0; i < pod->n; i++) {
        if (!keep[i]) {
            ad_clear(&pod->ad[i]);
            continue;
        }
        if (kept != i)
            pod->ad[kept] = pod->ad[i];
        kept++;
    }
    pod->n = kept;
    pod->duration_ms = ms;
    if (pod->rec) /* the record's entries moved with their ads */
        for (int i = 0; i < kept; i++)
            pod->ad[i].rec = &pod->rec->ad[pod->rec->n - kept + i];
    if (kept == 0) {
        ads_count(ADS_C_NO_FILLS, 1);
        if (pod->rec) /* its ads came after the listener went on */
            pod->rec->outcome = ADS_OUT_TIMEOUT;
        ads_pod_free(pod);
        return NULL;
    }
    ads_count(ADS_C_FILLS, (unsigned long long)kept);
    return pod;
}

void ads_pod_drop(ads_pod_t *pod)
{
    ads_pod_free(ads_pod_fit(pod, 0));
}
