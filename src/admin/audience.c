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
 * /admin/audience/top[.json]?from=&to=&mount=&by=agent|referer&limit=: the user agents or
 * referrers with the most sessions in the period (stats/audience_top.h), the same way.
 * /admin/audience_charts.xsl: the charts page (admin/audience_charts.xsl, web/audience.js).
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

/* A request waiting for the store's thread: the figures (q) or a top list (t). */
typedef struct audience_job {
    admin_req_t *a;
    int top;
    audience_query_t q;
    audience_top_t t;
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

/* <from> and <to> of a period, under n. */
static void add_times(xmlNodePtr n, int64_t from_ms, int64_t to_ms)
{
    char t[64];
    iso(t, sizeof(t), from_ms);
    stats_add_text(n, "from", t);
    iso(t, sizeof(t), to_ms);
    stats_add_text(n, "to", t);
}

/* <tlh> and <listened_seconds> of a time listened, under n. */
static void add_listened(xmlNodePtr n, uint64_t ms)
{
    char t[64];
    hours_text(t, sizeof(t), ms);
    stats_add_text(n, "tlh", t);
    seconds_text(t, sizeof(t), ms);
    stats_add_text(n, "listened_seconds", t);
}

static xmlDocPtr figures_doc(const audience_query_t *q, const char *by)
{
    xmlDocPtr doc = stats_new_doc("audience");
    if (!doc)
        return NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    char t[64];
    add_times(root, q->from_ms, q->to_ms);
    stats_add_text(root, "by", by);
    stats_add_number(root, "qualified_seconds", q->qualify_s);
    for (size_t i = 0; i < q->nrows; i++) {
        const audience_row_t *r = &q->rows[i];
        xmlNodePtr f = xmlNewChild(root, NULL, BAD_CAST "figures", NULL);
        stats_add_text(f, "mount", r->mount);
        if (r->country)
            stats_add_text(f, "country", r->country[0] ? r->country : "unknown");
        add_times(f, r->from_ms, r->to_ms);
        stats_add_number(f, "sessions", (long long)r->sessions);
        stats_add_number(f, "qualified_sessions", (long long)r->qualified);
        add_listened(f, r->listened_ms);
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
    audience_top_clear(&j->t);
    free(j);
}

static const char *by_name(int64_t step)
{
    return step == 3600000 ? "hour" : step == 86400000 ? "day" : "period";
}

/* Answers a's request with the error of a store query (err < 0): 1, else 0 (nothing sent). */
static int sent_store_error(admin_req_t *a, int err)
{
    if (err == -ENODEV)
        admin_send_error(a, 503, "No audience database (<audience-db>)");
    else if (err < 0)
        admin_send_error(a, 500, "Internal Server Error: the audience figures failed");
    return err < 0;
}

/* The figures as CSV, or as the XML document its other views come from. */
static void send_figures(admin_req_t *a, const audience_query_t *q)
{
    if (a->view == ADMIN_VIEW_CSV) {
        size_t len = 0;
        char *csv = figures_csv(q, &len);
        if (csv)
            admin_send_raw(a, "text/csv; charset=utf-8", csv, len,
                           "Content-Disposition: attachment; filename=\"audience.csv\"\r\n"
                           REPLY_NO_CACHE);
        else
            admin_send_error(a, 500, "Internal Server Error");
        free(csv);
    } else {
        admin_send_doc(a, figures_doc(q, by_name(q->step_ms)));
    }
}

/* On the request's worker: the figures or the list came back. */
static void deliver(worker_t *w, void *arg)
{
    (void)w;
    audience_job_t *j = arg;
    if (!sent_store_error(j->a, j->top ? j->t.err : j->q.err)) {
        if (j->top)
            admin_send_doc(j->a, admin_audience_top_doc(&j->t));
        else
            send_figures(j->a, &j->q);
    }
    job_free(j);
}

/* On the store's thread. */
static void compute(sqlite3 *db, void *arg)
{
    audience_job_t *j = arg;
    if (j->top)
        audience_top(db, &j->t);
    else
        audience_figures(db, &j->q);
    if (worker_post(j->a->worker, deliver, j) < 0) { /* its worker is gone, and the client */
        admin_req_free(j->a);
        job_free(j);
    }
}

/* from= and to= as a period (default: the last 24 hours), or a message saying what is wrong. */
static const char *read_period(const char *from, const char *to, int64_t *from_ms,
                               int64_t *to_ms)
{
    int64_t now = (int64_t)time(NULL) * 1000;
    if (parse_time(to, now, to_ms) < 0 || parse_time(from, *to_ms - 86400000, from_ms) < 0)
        return "from and to: unix seconds or YYYY-MM-DD[THH:MM[:SS]Z] (UTC)";
    return *from_ms >= *to_ms ? "from must come before to" : NULL;
}

/* The query a request asks for, or a message saying what is wrong with it. */
static const char *read_query(admin_req_t *a, audience_query_t *q)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to"), *by = admin_param(a, "by");
    char *countries = admin_param(a, "countries");
    q->by_country = countries && strcmp(countries, "1") == 0;
    free(countries);
    const char *bad = read_period(from, to, &q->from_ms, &q->to_ms);
    if (!bad && by && strcmp(by, "hour") != 0 && strcmp(by, "day") != 0 &&
        strcmp(by, "period") != 0)
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

/* The top list a request asks for, or a message saying what is wrong with it. */
static const char *read_top(admin_req_t *a, audience_top_t *t)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to"), *by = admin_param(a, "by");
    char *limit = admin_param(a, "limit");
    const char *bad = read_period(from, to, &t->from_ms, &t->to_ms);
    t->by_referer = by && strcmp(by, "referer") == 0;
    if (!bad && by && !t->by_referer && strcmp(by, "agent") != 0)
        bad = "by: agent or referer";
    t->limit = AUDIENCE_TOP_DEFAULT;
    if (!bad && limit) {
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

/* The figures (top = 0) or a top list: the query read, then computed on the store's thread. */
static void start_job(admin_req_t *a, int top)
{
    audience_job_t *j = calloc(1, sizeof(*j));
    if (!j) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    j->top = top;
    const char *bad = top ? read_top(a, &j->t) : read_query(a, &j->q);
    if (bad) {
        job_free(j);
        admin_send_error(a, 400, bad);
        return;
    }
    j->a = a;
    j->q.qualify_s = j->t.qualify_s = server_config()->qualified_seconds;
    char **mount = top ? &j->t.mount : &j->q.mount;
    *mount = a->mount_name ? strdup(a->mount_name) : NULL;
    conn_t *c = a->conn;
    admin_park(a);
    if (audience_store_run(compute, j) < 0) {
        a->conn = c;
        job_free(j);
        admin_send_error(a, 503, "The audience store is not running");
    }
}

void admin_cmd_audience(admin_req_t *a)
{
    start_job(a, 0);
}

/* ---- audience/top: the players and referrers that brought the most sessions ---- */

xmlDocPtr admin_audience_top_doc(const audience_top_t *t)
{
    xmlDocPtr doc = stats_new_doc("audience_top");
    if (!doc)
        return NULL;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    add_times(root, t->from_ms, t->to_ms);
    stats_add_text(root, "by", t->by_referer ? "referer" : "agent");
    if (t->mount)
        stats_add_text(root, "mount", t->mount);
    stats_add_number(root, "qualified_seconds", t->qualify_s);
    stats_add_number(root, "sessions", (long long)t->sessions);
    for (size_t i = 0; i < t->n; i++) {
        const audience_top_entry_t *e = &t->entries[i];
        xmlNodePtr n = xmlNewChild(root, NULL, BAD_CAST "entry", NULL);
        stats_add_text(n, "name", e->name ? e->name : ""); /* "": the client sent none */
        stats_add_number(n, "sessions", (long long)e->sessions);
        stats_add_number(n, "qualified_sessions", (long long)e->qualified);
        add_listened(n, e->listened_ms);
    }
    return doc;
}

void admin_cmd_audience_top(admin_req_t *a)
{
    start_job(a, 1);
}

/* ---- audience_charts: the page; web/audience.js fetches its figures ---- */

void admin_cmd_audience_charts(admin_req_t *a)
{
    xmlDocPtr doc = stats_new_doc("audience_charts");
    if (doc)
        stats_add_number(xmlDocGetRootElement(doc), "qualified_seconds",
                         server_config()->qualified_seconds);
    admin_send_doc(a, doc);
}
