/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience: /admin/audience[.xsl|.json|.csv]?from=&to=&mount=&by=, the audience figures of a
 * period (stats/audience.h) as XML (its XSLT and JSON views come from admin.c) or CSV.
 * The figures are made by SQL on the store's thread: the request is parked meanwhile and
 * answered on its worker when they come back. A worker never runs SQL.
 *
 * from and to: UTC, as unix seconds, "YYYY-MM-DD" or "YYYY-MM-DDTHH:MM[:SS][Z]"; default the
 * last 24 hours. by: "hour", "day" or "period" (one bucket, the default). countries=1: the
 * figures of each mount (and of the server) per country.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/commands.h"
#include "conf/config.h"
#include "core/buf.h"
#include "http/reply.h"
#include "net/server.h"
#include "net/worker.h"
#include "stats/audience.h"
#include "stats/audience_store.h"
#include "stats/audience_top.h"
#include "stats/stats.h"

typedef struct audience_job {
    admin_req_t *a;
    audience_query_t q;
} audience_job_t;

/* A time parameter in ms since the epoch; 0 when absent (def), -1 when malformed. */
static int parse_time(const char *s, int64_t def, int64_t *out)
{
    if (!s || !*s) {
        *out = def;
        return 0;
    }
    char *end = NULL;
    if (strspn(s, "0123456789") == strlen(s)) {
        long long v = strtoll(s, &end, 10);
        *out = (int64_t)v * 1000;
        return v >= 0 && v < 100000000000LL ? 0 : -1;
    }
    static const char *const formats[] = {"%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M:%S",
                                          "%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M", "%Y-%m-%d"};
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        struct tm tm = {0};
        end = strptime(s, formats[i], &tm);
        if (end && *end == '\0') {
            *out = (int64_t)timegm(&tm) * 1000;
            return 0;
        }
    }
    return -1;
}

static void iso(char *out, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* "12.345" for milliseconds as seconds; "0.123456" for hours. */
static void seconds_text(char *out, size_t cap, uint64_t ms)
{
    snprintf(out, cap, "%llu.%03u", (unsigned long long)(ms / 1000), (unsigned)(ms % 1000));
}

static void hours_text(char *out, size_t cap, uint64_t ms)
{
    snprintf(out, cap, "%.6f", ms / 3600000.0);
}

/* ATSL in seconds: listened / qualified sessions (0 without any). */
static uint64_t atsl_ms(const audience_row_t *r)
{
    return r->qualified ? r->listened_ms / r->qualified : 0;
}

static xmlDocPtr figures_doc(const audience_query_t *q, const char *by)
{
    xmlDocPtr doc = stats_new_doc("audience");
    if (!doc)
        return NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    char t[64];
    iso(t, sizeof(t), q->from_ms);
    stats_add_text(root, "from", t);
    iso(t, sizeof(t), q->to_ms);
    stats_add_text(root, "to", t);
    stats_add_text(root, "by", by);
    stats_add_number(root, "qualified_seconds", q->qualify_s);
    for (size_t i = 0; i < q->nrows; i++) {
        const audience_row_t *r = &q->rows[i];
        xmlNodePtr f = xmlNewChild(root, NULL, BAD_CAST "figures", NULL);
        stats_add_text(f, "mount", r->mount);
        if (r->country)
            stats_add_text(f, "country", r->country[0] ? r->country : "unknown");
        iso(t, sizeof(t), r->from_ms);
        stats_add_text(f, "from", t);
        iso(t, sizeof(t), r->to_ms);
        stats_add_text(f, "to", t);
        stats_add_number(f, "sessions", (long long)r->sessions);
        stats_add_number(f, "qualified_sessions", (long long)r->qualified);
        hours_text(t, sizeof(t), r->listened_ms);
        stats_add_text(f, "tlh", t);
        seconds_text(t, sizeof(t), r->listened_ms);
        stats_add_text(f, "listened_seconds", t);
        seconds_text(t, sizeof(t), atsl_ms(r));
        stats_add_text(f, "atsl_seconds", t);
        stats_add_number(f, "cume", (long long)r->cume);
        stats_add_number(f, "peak", (long long)r->peak);
    }
    return doc;
}

/* CSV (RFC 4180): a header line, then one line per bucket and mount; the mount is quoted. */
static char *figures_csv(const audience_query_t *q, size_t *len)
{
    buf_t b = BUF_INIT;
    buf_append_str(&b, "from,to,mount,country,sessions,qualified_sessions,tlh,listened_seconds,"
                       "atsl_seconds,cume,peak\r\n");
    for (size_t i = 0; i < q->nrows; i++) {
        const audience_row_t *r = &q->rows[i];
        char from[32], to[32], tlh[32], listened[32], atsl[32];
        iso(from, sizeof(from), r->from_ms);
        iso(to, sizeof(to), r->to_ms);
        hours_text(tlh, sizeof(tlh), r->listened_ms);
        seconds_text(listened, sizeof(listened), r->listened_ms);
        seconds_text(atsl, sizeof(atsl), atsl_ms(r));
        buf_appendf(&b, "%s,%s,\"", from, to);
        char *clean = stats_clean_text(r->mount);
        for (const char *p = clean ? clean : ""; *p; p++)
            buf_append_str(&b, *p == '"' ? "\"\"" : (char[]){*p, '\0'});
        free(clean);
        buf_appendf(&b, "\",%s", !r->country ? "" : r->country[0] ? r->country : "unknown");
        buf_appendf(&b, ",%llu,%llu,%s,%s,%s,%llu,%llu\r\n", (unsigned long long)r->sessions,
                    (unsigned long long)r->qualified, tlh, listened, atsl,
                    (unsigned long long)r->cume, (unsigned long long)r->peak);
    }
    return buf_take(&b, len);
}

static void job_free(audience_job_t *j)
{
    audience_query_clear(&j->q);
    free(j);
}

static const char *by_name(int64_t step)
{
    return step == 3600000 ? "hour" : step == 86400000 ? "day" : "period";
}

/* On the request's worker: the figures came back. */
static void deliver(worker_t *w, void *arg)
{
    (void)w;
    audience_job_t *j = arg;
    admin_req_t *a = j->a;
    if (j->q.err == -ENODEV) {
        admin_send_error(a, 503, "No audience database (<audience-db>)");
    } else if (j->q.err < 0) {
        admin_send_error(a, 500, "Internal Server Error: the audience figures failed");
    } else if (a->view == ADMIN_VIEW_CSV) {
        size_t len = 0;
        char *csv = figures_csv(&j->q, &len);
        if (csv)
            admin_send_raw(a, "text/csv; charset=utf-8", csv, len,
                           "Content-Disposition: attachment; filename=\"audience.csv\"\r\n"
                           REPLY_NO_CACHE);
        else
            admin_send_error(a, 500, "Internal Server Error");
        free(csv);
    } else {
        admin_send_doc(a, figures_doc(&j->q, by_name(j->q.step_ms)));
    }
    job_free(j);
}

/* On the store's thread. */
static void compute(sqlite3 *db, void *arg)
{
    audience_job_t *j = arg;
    audience_figures(db, &j->q);
    if (worker_post(j->a->worker, deliver, j) < 0) { /* its worker is gone, and the client */
        admin_req_free(j->a);
        job_free(j);
    }
}

/* The query a request asks for, or a message saying what is wrong with it. */
static const char *read_query(admin_req_t *a, audience_query_t *q)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to"), *by = admin_param(a, "by");
    char *countries = admin_param(a, "countries");
    q->by_country = countries && strcmp(countries, "1") == 0;
    free(countries);
    const char *bad = NULL;
    int64_t now = (int64_t)time(NULL) * 1000;
    if (parse_time(to, now, &q->to_ms) < 0 ||
        parse_time(from, q->to_ms - 86400000, &q->from_ms) < 0)
        bad = "from and to: unix seconds or YYYY-MM-DD[THH:MM[:SS]Z] (UTC)";
    else if (q->from_ms >= q->to_ms)
        bad = "from must come before to";
    else if (by && strcmp(by, "hour") != 0 && strcmp(by, "day") != 0 && strcmp(by, "period") != 0)
        bad = "by: hour, day or period";
    q->step_ms = !by                      ? 0
                 : strcmp(by, "hour") == 0 ? 3600000
                 : strcmp(by, "day") == 0  ? 86400000
                                           : 0;
    if (!bad && q->step_ms && (q->to_ms - q->from_ms) / q->step_ms >= AUDIENCE_MAX_BUCKETS)
        bad = "too many hours or days in the period";
    free(from);
    free(to);
    free(by);
    return bad;
}

void admin_cmd_audience(admin_req_t *a)
{
    audience_job_t *j = calloc(1, sizeof(*j));
    if (!j) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    const char *bad = read_query(a, &j->q);
    if (bad) {
        job_free(j);
        admin_send_error(a, 400, bad);
        return;
    }
    j->a = a;
    j->q.qualify_s = server_config()->qualified_seconds;
    j->q.mount = a->mount_name ? strdup(a->mount_name) : NULL;
    conn_t *c = a->conn;
    admin_park(a);
    if (audience_store_run(compute, j) < 0) {
        a->conn = c;
        job_free(j);
        admin_send_error(a, 503, "The audience store is not running");
    }
}

/* ---- audience/top and the charts page ----
 * /admin/audience/top[.json]?from=&to=&mount=&by=agent|referer&limit=: the user agents or
 * referrers with the most sessions in the period (stats/audience_top.h), computed on the
 * store's thread like the figures; /admin/audience_charts.xsl: the charts page
 * (admin/audience_charts.xsl, web/audience.js). */

typedef struct top_job {
    admin_req_t *a;
    audience_top_t t;
} top_job_t;

xmlDocPtr admin_audience_top_doc(const audience_top_t *t)
{
    xmlDocPtr doc = stats_new_doc("audience_top");
    if (!doc)
        return NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    char text[64];
    iso(text, sizeof(text), t->from_ms);
    stats_add_text(root, "from", text);
    iso(text, sizeof(text), t->to_ms);
    stats_add_text(root, "to", text);
    stats_add_text(root, "by", t->by_referer ? "referer" : "agent");
    if (t->mount)
        stats_add_text(root, "mount", t->mount);
    stats_add_number(root, "sessions", (long long)t->sessions);
    for (size_t i = 0; i < t->n; i++) {
        const audience_top_entry_t *e = &t->entries[i];
        xmlNodePtr n = xmlNewChild(root, NULL, BAD_CAST "entry", NULL);
        stats_add_text(n, "name", e->name ? e->name : ""); /* "": the client sent none */
        stats_add_number(n, "sessions", (long long)e->sessions);
        stats_add_number(n, "qualified_sessions", (long long)e->qualified);
        snprintf(text, sizeof(text), "%.6f", e->listened_ms / 3600000.0);
        stats_add_text(n, "tlh_hours", text);
    }
    return doc;
}

static void top_job_free(top_job_t *j)
{
    audience_top_clear(&j->t);
    free(j);
}

/* On the request's worker: the list came back. */
static void top_deliver(worker_t *w, void *arg)
{
    (void)w;
    top_job_t *j = arg;
    if (j->t.err == -ENODEV)
        admin_send_error(j->a, 503, "No audience database");
    else if (j->t.err < 0)
        admin_send_error(j->a, 500, "Internal Server Error: the audience figures failed");
    else
        admin_send_doc(j->a, admin_audience_top_doc(&j->t));
    top_job_free(j);
}

/* On the store's thread. */
static void top_compute(sqlite3 *db, void *arg)
{
    top_job_t *j = arg;
    audience_top(db, &j->t);
    if (worker_post(j->a->worker, top_deliver, j) < 0) { /* its worker is gone, and the client */
        admin_req_free(j->a);
        top_job_free(j);
    }
}

/* The list a request asks for, or a message saying what is wrong with it. */
static const char *read_top(admin_req_t *a, audience_top_t *t)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to"), *by = admin_param(a, "by");
    char *limit = admin_param(a, "limit");
    const char *bad = NULL;
    t->by_referer = by && strcmp(by, "referer") == 0;
    t->limit = AUDIENCE_TOP_DEFAULT;
    if (parse_time(to, ((int64_t)time(NULL) + 1) * 1000, &t->to_ms) < 0 ||
        parse_time(from, t->to_ms - 86400000, &t->from_ms) < 0)
        bad = "from and to: unix seconds or a date and time (UTC)";
    else if (t->from_ms >= t->to_ms)
        bad = "from must come before to";
    else if (by && !t->by_referer && strcmp(by, "agent") != 0)
        bad = "by: agent or referer";
    else if (limit) {
        size_t digits = strspn(limit, "0123456789");
        t->limit = digits && digits <= 3 && !limit[digits] ? atoi(limit) : 0;
        if (t->limit < 1 || t->limit > AUDIENCE_TOP_MAX)
            bad = "limit: 1 to 100";
    }
    free(from);
    free(to);
    free(by);
    free(limit);
    return bad;
}

void admin_cmd_audience_top(admin_req_t *a)
{
    top_job_t *j = calloc(1, sizeof(*j));
    const char *bad = j ? read_top(a, &j->t) : NULL;
    if (!j || bad) {
        if (j)
            top_job_free(j);
        admin_send_error(a, bad ? 400 : 500, bad ? bad : "Internal Server Error");
        return;
    }
    j->a = a;
    j->t.qualify_s = server_config()->qualified_seconds;
    j->t.mount = a->mount_name ? strdup(a->mount_name) : NULL;
    conn_t *c = a->conn;
    admin_park(a);
    if (audience_store_run(top_compute, j) < 0) {
        a->conn = c;
        top_job_free(j);
        admin_send_error(a, 503, "The audience store is not running");
    }
}

void admin_cmd_audience_charts(admin_req_t *a)
{
    xmlDocPtr doc = stats_new_doc("audience_charts");
    if (doc)
        stats_add_number(xmlDocGetRootElement(doc), "min_session",
                         server_config()->qualified_seconds);
    admin_send_doc(a, doc);
}
