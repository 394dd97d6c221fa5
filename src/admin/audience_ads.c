/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_ads: /admin/audience/ads[.json|.csv]?period=&from=&to=&day=&mount=&server=&traffic=
 * (or format=json|xml|csv): the ads figures of a period (audience/audience_ads.h) per mount
 * and per creative, made by SQL on the store's thread like the audience figures (the request
 * is parked meanwhile); and the <ads> element the audience page (/admin/audience.xsl) shows
 * them from. Names (mounts, ids, titles) are escaped for each output by its own writer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/commands.h"
#include "audience/audience.h"
#include "audience/audience_ads.h"
#include "audience/audience_store.h"
#include "core/buf.h"
#include "core/escape.h"
#include "http/reply.h"
#include "net/worker.h"
#include "stats/stats.h"

typedef struct ads_job {
    admin_req_t *a;
    int view;
    audience_ads_query_t q;
} ads_job_t;

static void iso(char *out, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void ratio(char *out, size_t cap, uint64_t num, uint64_t den)
{
    snprintf(out, cap, "%.4f", den ? (double)num / (double)den : 0.0);
}

/* A mount row's figures as text, by their published names, in order. */
#define MOUNT_FIELDS 9
static void mount_fields(const audience_ads_mount_t *m, const char *names[MOUNT_FIELDS],
                         char text[MOUNT_FIELDS][32])
{
    static const char *const n[MOUNT_FIELDS] = {"requests", "fills", "fill_rate", "impressions",
                                                "starts", "completes", "completion_rate",
                                                "ad_seconds", NULL};
    const uint64_t counts[] = {m->requests, m->fills, 0, m->impressions, m->starts,
                               m->completes};
    for (int i = 0; i < MOUNT_FIELDS; i++)
        names[i] = n[i];
    for (int i = 0; i < 6; i++)
        snprintf(text[i], 32, "%llu", (unsigned long long)counts[i]);
    ratio(text[2], 32, m->fills, m->requests);
    ratio(text[6], 32, m->completes, m->impressions);
    snprintf(text[7], 32, "%llu.%03u", (unsigned long long)(m->delivered_ms / 1000),
             (unsigned)(m->delivered_ms % 1000));
}

#define CREATIVE_FIELDS 8
static void creative_fields(const audience_ads_creative_t *c, const char *names[],
                            char text[CREATIVE_FIELDS][32])
{
    static const char *const n[CREATIVE_FIELDS] = {"impressions", "starts", "first_quartiles",
                                                   "midpoints", "third_quartiles", "completes",
                                                   "completion_rate", NULL};
    const uint64_t counts[] = {c->impressions, c->starts, c->q1, c->mid, c->q3, c->completes};
    for (int i = 0; i < CREATIVE_FIELDS; i++)
        names[i] = n[i];
    for (int i = 0; i < 6; i++)
        snprintf(text[i], 32, "%llu", (unsigned long long)counts[i]);
    ratio(text[6], 32, c->completes, c->impressions);
}

void admin_audience_ads_xml(void *parent_node, const audience_ads_query_t *q)
{
    xmlNodePtr parent = parent_node;
    char t[64], text[MOUNT_FIELDS][32];
    const char *names[MOUNT_FIELDS];
    for (size_t i = 0; i < q->nmounts; i++) {
        const audience_ads_mount_t *m = &q->mounts[i];
        xmlNodePtr f = xmlNewChild(parent, NULL, BAD_CAST "ads_mount", NULL);
        iso(t, sizeof(t), m->from_ms);
        stats_add_text(f, "start", t);
        iso(t, sizeof(t), m->to_ms);
        stats_add_text(f, "end", t);
        stats_add_text(f, "mount", m->mount ? m->mount : "");
        mount_fields(m, names, text);
        for (int k = 0; names[k]; k++)
            stats_add_text(f, names[k], text[k]);
    }
    for (size_t i = 0; i < q->ncreatives; i++) {
        const audience_ads_creative_t *c = &q->creatives[i];
        xmlNodePtr f = xmlNewChild(parent, NULL, BAD_CAST "ads_creative", NULL);
        iso(t, sizeof(t), c->from_ms);
        stats_add_text(f, "start", t);
        iso(t, sizeof(t), c->to_ms);
        stats_add_text(f, "end", t);
        stats_add_text(f, "creative_id", c->creative_id);
        stats_add_text(f, "ad_id", c->ad_id);
        stats_add_text(f, "title", c->title ? c->title : "");
        creative_fields(c, names, text);
        for (int k = 0; names[k]; k++)
            stats_add_text(f, names[k], text[k]);
    }
}

static const char *period_name(int64_t step)
{
    return step == 3600000 ? "hour" : step == 86400000 ? "day" : "all";
}

static xmlDocPtr ads_doc(const audience_ads_query_t *q)
{
    xmlDocPtr doc = stats_new_doc("audience_ads");
    if (!doc)
        return NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    char t[64];
    iso(t, sizeof(t), q->from_ms);
    stats_add_text(root, "from", t);
    iso(t, sizeof(t), q->to_ms);
    stats_add_text(root, "to", t);
    stats_add_text(root, "period", period_name(q->step_ms));
    stats_add_text(root, "traffic", q->gross ? "gross" : "net");
    if (q->mount)
        stats_add_text(root, "mount", q->mount);
    if (q->server)
        stats_add_text(root, "server", q->server);
    admin_audience_ads_xml(root, q);
    return doc;
}

static void json_text(buf_t *b, const char *key, const char *s)
{
    buf_appendf(b, ",\"%s\":", key);
    if (s)
        escape_json_buf(b, s, strlen(s), 1);
    else
        buf_append_str(b, "null");
}

/* {"from", "to", "period", "traffic", "mounts": [{start, end, mount (null: the server's),
 * the figures}], "creatives": [{start, end, creative_id, ad_id, title, the figures}]} */
static char *ads_json(const audience_ads_query_t *q, size_t *len)
{
    buf_t b = BUF_INIT;
    char s[32], e[32], text[MOUNT_FIELDS][32];
    const char *names[MOUNT_FIELDS];
    iso(s, sizeof(s), q->from_ms);
    iso(e, sizeof(e), q->to_ms);
    buf_appendf(&b, "{\"from\":\"%s\",\"to\":\"%s\",\"period\":\"%s\",\"traffic\":\"%s\","
                "\"mounts\":[", s, e, period_name(q->step_ms), q->gross ? "gross" : "net");
    for (size_t i = 0; i < q->nmounts; i++) {
        const audience_ads_mount_t *m = &q->mounts[i];
        iso(s, sizeof(s), m->from_ms);
        iso(e, sizeof(e), m->to_ms);
        buf_appendf(&b, "%s{\"start\":\"%s\",\"end\":\"%s\"", i ? "," : "", s, e);
        json_text(&b, "mount", m->mount);
        mount_fields(m, names, text);
        for (int k = 0; names[k]; k++)
            buf_appendf(&b, ",\"%s\":%s", names[k], text[k]);
        buf_append_str(&b, "}");
    }
    buf_append_str(&b, "],\"creatives\":[");
    for (size_t i = 0; i < q->ncreatives; i++) {
        const audience_ads_creative_t *c = &q->creatives[i];
        iso(s, sizeof(s), c->from_ms);
        iso(e, sizeof(e), c->to_ms);
        buf_appendf(&b, "%s{\"start\":\"%s\",\"end\":\"%s\"", i ? "," : "", s, e);
        json_text(&b, "creative_id", c->creative_id);
        json_text(&b, "ad_id", c->ad_id);
        json_text(&b, "title", c->title);
        creative_fields(c, names, text);
        for (int k = 0; names[k]; k++)
            buf_appendf(&b, ",\"%s\":%s", names[k], text[k]);
        buf_append_str(&b, "}");
    }
    buf_append_str(&b, "]}\n");
    return buf_take(&b, len);
}

/* A quoted CSV field: control characters dropped, quotes doubled. */
static void csv_field(buf_t *b, const char *s)
{
    buf_append_char(b, '"');
    admin_audience_csv_text(b, s ? s : "");
    buf_append_char(b, '"');
}

/* CSV: one header line; a line per period and mount (kind "mount"; the server's with an empty
 * mount) and per period and creative (kind "creative"); a figure a kind has not is empty. */
static char *ads_csv(const audience_ads_query_t *q, size_t *len)
{
    buf_t b = BUF_INIT;
    char s[32], e[32], text[MOUNT_FIELDS][32];
    const char *names[MOUNT_FIELDS];
    buf_append_str(&b, "kind,start,end,mount,creative_id,ad_id,title,requests,fills,fill_rate,"
                       "impressions,starts,first_quartiles,midpoints,third_quartiles,completes,"
                       "completion_rate,ad_seconds\r\n");
    for (size_t i = 0; i < q->nmounts; i++) {
        const audience_ads_mount_t *m = &q->mounts[i];
        iso(s, sizeof(s), m->from_ms);
        iso(e, sizeof(e), m->to_ms);
        buf_appendf(&b, "mount,%s,%s,", s, e);
        csv_field(&b, m->mount);
        mount_fields(m, names, text);
        buf_appendf(&b, ",,,,%s,%s,%s,%s,%s,,,,%s,%s,%s\r\n", text[0], text[1], text[2], text[3],
                    text[4], text[5], text[6], text[7]);
    }
    for (size_t i = 0; i < q->ncreatives; i++) {
        const audience_ads_creative_t *c = &q->creatives[i];
        iso(s, sizeof(s), c->from_ms);
        iso(e, sizeof(e), c->to_ms);
        buf_appendf(&b, "creative,%s,%s,,", s, e);
        csv_field(&b, c->creative_id);
        buf_append_char(&b, ',');
        csv_field(&b, c->ad_id);
        buf_append_char(&b, ',');
        csv_field(&b, c->title);
        creative_fields(c, names, text);
        buf_appendf(&b, ",,,,%s,%s,%s,%s,%s,%s,%s,\r\n", text[0], text[1], text[2], text[3],
                    text[4], text[5], text[6]);
    }
    return buf_take(&b, len);
}

static void job_free(ads_job_t *j)
{
    audience_ads_query_clear(&j->q);
    free(j);
}

/* On the request's worker: the figures came back. */
static void deliver(worker_t *w, void *arg)
{
    (void)w;
    ads_job_t *j = arg;
    admin_req_t *a = j->a;
    if (admin_audience_failed(a, j->q.err, "ads figures")) {
        /* answered */
    } else if (j->view == ADMIN_VIEW_CSV || j->view == ADMIN_VIEW_JSON) {
        int csv = j->view == ADMIN_VIEW_CSV;
        size_t len = 0;
        char *body = csv ? ads_csv(&j->q, &len) : ads_json(&j->q, &len);
        admin_audience_send(a, csv, body, len, "audience-ads.csv");
    } else {
        admin_send_doc(a, ads_doc(&j->q));
    }
    job_free(j);
}

/* On the store's thread. */
static void compute(audience_db_t *db, void *arg)
{
    ads_job_t *j = arg;
    audience_store_ads(db, &j->q);
    if (worker_post(j->a->worker, deliver, j) < 0) { /* its worker is gone, and the client */
        admin_req_free(j->a);
        job_free(j);
    }
}

/* The query a request asks for: NULL, or what is wrong with it. */
static const char *read_query(admin_req_t *a, audience_ads_query_t *q)
{
    char *server = admin_param(a, "server");
    const char *bad = admin_audience_span(a, 0, &q->from_ms, &q->to_ms);
    const char *cut = admin_audience_cut(a, q->from_ms, q->to_ms, &q->step_ms, &q->gross);
    q->mount = a->mount_name && *a->mount_name ? strdup(a->mount_name) : NULL;
    q->server = server && *server ? strdup(server) : NULL;
    free(server);
    return bad ? bad : cut;
}

void admin_cmd_audience_ads(admin_req_t *a)
{
    ads_job_t *j = calloc(1, sizeof(*j));
    if (!j) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    char *format = admin_param(a, "format");
    j->view = a->view;
    const char *bad = read_query(a, &j->q);
    if (!bad && format && *format) {
        j->view = strcmp(format, "json") == 0  ? ADMIN_VIEW_JSON
                  : strcmp(format, "csv") == 0 ? ADMIN_VIEW_CSV
                  : strcmp(format, "xml") == 0 ? ADMIN_VIEW_XML
                                               : 0;
        if (!j->view)
            bad = "format: json, xml or csv";
    }
    free(format);
    if (bad) {
        job_free(j);
        admin_send_error(a, 400, bad);
        return;
    }
    j->a = a;
    conn_t *c = a->conn;
    admin_park(a);
    if (audience_store_run(compute, j) < 0) {
        a->conn = c;
        job_free(j);
        admin_send_error(a, 503, "The audience store is not running");
    }
}
