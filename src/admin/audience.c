/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience: /admin/audience[.xsl|.json|.csv]?from=&to=&mount=&period=, the audience figures of
 * a period (audience/audience.h) as XML (its XSLT view from admin.c), JSON or CSV, in the
 * published shape (docs/AUDIENCE.md) that other software reads.
 * The figures are made by SQL on the store's thread: the request is parked meanwhile and
 * answered on its worker when they come back. A worker never runs SQL.
 *
 * from and to: unix seconds or ISO 8601 (UTC unless an offset is given); default the last 24
 * hours. period: "hour", "day" (the default) or "all" (the whole of from to to in one).
 * server: the sessions of one server of those sharing the store (<server-name>); by default
 * those of all of them together. The XML and JSON name the servers with sessions in the
 * period (whatever mount and server were asked), for a picker; the CSV does not.
 * traffic: "net" (the default: valid sessions only) or "gross" (every session, invalid
 * traffic too); the XML and JSON say which.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/commands.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "http/reply.h"
#include "net/server.h"
#include "net/worker.h"
#include "audience/audience.h"
#include "audience/audience_ads.h"
#include "audience/audience_store.h"
#include "audience/audience_top.h"
#include "stats/stats.h"

typedef struct audience_job {
    admin_req_t *a;
    audience_query_t q;
    int with_ads;              /* the HTML page: its Ads tables too (admin/audience_ads.c) */
    audience_ads_query_t ads;
} audience_job_t;

/* An ISO 8601 date and time, UTC unless it says otherwise: YYYY-MM-DD[THH:MM[:SS[.fff]]]
 * followed by nothing, Z, or an offset (+HH:MM, +HHMM, +HH; or -). In ms, or -1. */
static int parse_iso(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int64_t ms = 0, offset = 0;
    const char *p = strptime(s, "%Y-%m-%d", &tm);
    if (p && *p == 'T') {
        p = strptime(p + 1, "%H:%M", &tm);
        if (p && *p == ':')
            p = strptime(p + 1, "%S", &tm);
        if (p && (*p == '.' || *p == ',')) {
            int scale = 100, digits = 0;
            for (p++; *p >= '0' && *p <= '9'; p++, digits++, scale /= 10)
                ms += (*p - '0') * scale;
            p = digits ? p : NULL;
        }
        if (p && *p == 'Z') {
            p++;
        } else if (p && (*p == '+' || *p == '-')) {
            int sign = *p == '-' ? -1 : 1, hh = 0, mm = 0, n = 0;
            if (sscanf(p + 1, "%2d%n", &hh, &n) != 1 || n != 2)
                return -1;
            p += 3;
            if (*p == ':')
                p++;
            if (*p && (sscanf(p, "%2d%n", &mm, &n) != 1 || n != 2))
                return -1;
            p += *p ? 2 : 0;
            if (hh > 23 || mm > 59)
                return -1;
            offset = sign * ((int64_t)hh * 60 + mm) * 60000;
        }
    }
    if (!p || *p)
        return -1;
    *out = (int64_t)timegm(&tm) * 1000 + ms - offset;
    return 0;
}

/* A time parameter (unix seconds or ISO 8601) in ms since the epoch; def when absent, -1 when
 * malformed. */
static int parse_time(const char *s, int64_t def, int64_t *out)
{
    if (!s || !*s) {
        *out = def;
        return 0;
    }
    if (strspn(s, "0123456789") == strlen(s)) {
        long long v = strtoll(s, NULL, 10);
        *out = (int64_t)v * 1000;
        return v >= 0 && v < 100000000000LL ? 0 : -1;
    }
    return parse_iso(s, out) < 0 || *out < 0 ? -1 : 0;
}

static void iso(char *out, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One set of figures as text: the same words in XML, JSON and CSV. */
typedef struct figures_text {
    char start[32], end[32];
    char tlh_hours[32];      /* "0.123456" */
    char atsl_seconds[32];   /* "12.345": TLH / qualified sessions (0 without any) */
    char tsl_hours[32];      /* "0.123456": TLH / CUME (0 without any) */
    char aas[32];            /* "1.234": TLH / hours in the bucket */
    char aqh[32];            /* "1.234": listeners per whole quarter-hour (0 without any) */
} figures_text_t;

static void figures_text(figures_text_t *t, const audience_row_t *r)
{
    uint64_t atsl = r->qualified ? r->listened_ms / r->qualified : 0;
    iso(t->start, sizeof(t->start), r->from_ms);
    iso(t->end, sizeof(t->end), r->to_ms);
    snprintf(t->tlh_hours, sizeof(t->tlh_hours), "%.6f", r->listened_ms / 3600000.0);
    snprintf(t->atsl_seconds, sizeof(t->atsl_seconds), "%llu.%03u",
             (unsigned long long)(atsl / 1000), (unsigned)(atsl % 1000));
    audience_derived_t d = audience_row_derived(r);
    snprintf(t->tsl_hours, sizeof(t->tsl_hours), "%.6f", d.tsl_hours);
    snprintf(t->aas, sizeof(t->aas), "%.3f", d.aas);
    snprintf(t->aqh, sizeof(t->aqh), "%.3f", d.aqh);
}

/* The counts of a row, by their published names. */
#define ROW_COUNTS(r)                                                                          \
    {"sessions", (r)->sessions}, {"qualified_sessions", (r)->qualified}, {"cume", (r)->cume}, \
        {"peak_listeners", (r)->peak}, {"prerolls", (r)->prerolls},                            \
        {"in_progress", (r)->in_progress}, {"active_sessions", (r)->active},                   \
        {"sessions_started", (r)->started}
typedef struct named_count {
    const char *name;
    uint64_t n;
} named_count_t;

static const char *country_name(const audience_country_t *c)
{
    return c->cc[0] ? c->cc : "unknown";
}

static xmlDocPtr figures_doc(const audience_query_t *q, const char *period)
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
    stats_add_text(root, "period", period);
    stats_add_text(root, "traffic", q->gross ? "gross" : "net");
    if (q->server)
        stats_add_text(root, "server", q->server);
    stats_add_number(root, "min_session", q->qualify_s);
    for (size_t i = 0; i < q->nrows; i++) {
        const audience_row_t *r = &q->rows[i];
        figures_text_t ft;
        figures_text(&ft, r);
        xmlNodePtr f = xmlNewChild(root, NULL, BAD_CAST "figures", NULL);
        stats_add_text(f, "start", ft.start);
        stats_add_text(f, "end", ft.end);
        stats_add_text(f, "mount", r->mount);
        stats_add_text(f, "tlh_hours", ft.tlh_hours);
        stats_add_text(f, "atsl_seconds", ft.atsl_seconds);
        stats_add_text(f, "tsl_hours", ft.tsl_hours);
        stats_add_text(f, "aas", ft.aas);
        stats_add_text(f, "aqh", ft.aqh);
        const named_count_t counts[] = {ROW_COUNTS(r)};
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            stats_add_number(f, counts[k].name, (long long)counts[k].n);
        xmlNodePtr cs = xmlNewChild(f, NULL, BAD_CAST "countries", NULL);
        for (size_t k = 0; k < r->ncountries; k++) {
            snprintf(t, sizeof(t), "%llu", (unsigned long long)r->countries[k].sessions);
            xmlNodePtr c = xmlNewChild(cs, NULL, BAD_CAST "country", BAD_CAST t);
            xmlNewProp(c, BAD_CAST "code", BAD_CAST country_name(&r->countries[k]));
        }
    }
    xmlNodePtr servers = xmlNewChild(root, NULL, BAD_CAST "servers", NULL);
    for (size_t i = 0; i < q->nservers; i++)
        stats_add_text(servers, "server", q->servers[i]);
    return doc;
}

/* {"periods": [{start, end, mount (null: the server), tlh_hours, atsl_seconds, the counts,
 * countries: {ISO: sessions}}], "servers": [the servers with sessions in the period]} */
static char *figures_json(const audience_query_t *q, size_t *len)
{
    buf_t b = BUF_INIT;
    buf_append_str(&b, "{\"periods\":[");
    for (size_t i = 0; i < q->nrows; i++) {
        const audience_row_t *r = &q->rows[i];
        figures_text_t ft;
        figures_text(&ft, r);
        buf_appendf(&b, "%s{\"start\":\"%s\",\"end\":\"%s\",\"mount\":", i ? "," : "", ft.start,
                    ft.end);
        if (r->mount[0])
            escape_json_buf(&b, r->mount, strlen(r->mount), 1);
        else
            buf_append_str(&b, "null");
        buf_appendf(&b, ",\"tlh_hours\":%s,\"atsl_seconds\":%s,\"tsl_hours\":%s,\"aas\":%s,"
                    "\"aqh\":%s", ft.tlh_hours, ft.atsl_seconds, ft.tsl_hours, ft.aas, ft.aqh);
        const named_count_t counts[] = {ROW_COUNTS(r)};
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            buf_appendf(&b, ",\"%s\":%llu", counts[k].name, (unsigned long long)counts[k].n);
        buf_append_str(&b, ",\"countries\":{");
        for (size_t k = 0; k < r->ncountries; k++) {
            const char *cc = country_name(&r->countries[k]);
            buf_append_str(&b, k ? "," : "");
            escape_json_buf(&b, cc, strlen(cc), 1);
            buf_appendf(&b, ":%llu", (unsigned long long)r->countries[k].sessions);
        }
        buf_append_str(&b, "}}");
    }
    buf_append_str(&b, "],\"servers\":[");
    for (size_t i = 0; i < q->nservers; i++) {
        buf_append_str(&b, i ? "," : "");
        escape_json_buf(&b, q->servers[i], strlen(q->servers[i]), 1);
    }
    buf_appendf(&b, "],\"traffic\":\"%s\"}\n", q->gross ? "gross" : "net");
    return buf_take(&b, len);
}

void admin_audience_csv_text(buf_t *b, const char *s)
{
    char *clean = stats_clean_text(s);
    for (const char *p = clean ? clean : ""; *p; p++)
        buf_append_str(b, *p == '"' ? "\"\"" : (char[]){*p, '\0'});
    free(clean);
}

/* CSV (RFC 4180): a header line, then one line per period and mount (the server's with an
 * empty mount); the mount is quoted, countries are "DE=3;unknown=1". */
static char *figures_csv(const audience_query_t *q, size_t *len)
{
    buf_t b = BUF_INIT;
    buf_append_str(&b, "start,end,mount,sessions,qualified_sessions,tlh_hours,atsl_seconds,cume,"
                       "peak_listeners,prerolls,in_progress,countries,active_sessions,"
                       "sessions_started,tsl_hours,aas,aqh\r\n");
    for (size_t i = 0; i < q->nrows; i++) {
        const audience_row_t *r = &q->rows[i];
        figures_text_t ft;
        figures_text(&ft, r);
        buf_appendf(&b, "%s,%s,\"", ft.start, ft.end);
        admin_audience_csv_text(&b, r->mount);
        buf_appendf(&b, "\",%llu,%llu,%s,%s,%llu,%llu,%llu,%llu,\"",
                    (unsigned long long)r->sessions, (unsigned long long)r->qualified,
                    ft.tlh_hours, ft.atsl_seconds, (unsigned long long)r->cume,
                    (unsigned long long)r->peak, (unsigned long long)r->prerolls,
                    (unsigned long long)r->in_progress);
        for (size_t k = 0; k < r->ncountries; k++) {
            buf_append_str(&b, k ? ";" : "");
            admin_audience_csv_text(&b, country_name(&r->countries[k]));
            buf_appendf(&b, "=%llu", (unsigned long long)r->countries[k].sessions);
        }
        buf_appendf(&b, "\",%llu,%llu,%s,%s,%s\r\n", (unsigned long long)r->active,
                    (unsigned long long)r->started, ft.tsl_hours, ft.aas, ft.aqh);
    }
    return buf_take(&b, len);
}

static void job_free(audience_job_t *j)
{
    audience_query_clear(&j->q);
    audience_ads_query_clear(&j->ads);
    free(j);
}

static const char *period_name(int64_t step)
{
    return step == 3600000 ? "hour" : step == 86400000 ? "day" : "all";
}

int admin_audience_failed(admin_req_t *a, int err, const char *what)
{
    char msg[96];
    if (err == -ENODEV) {
        admin_send_error(a, 503, "No audience database (<audience><database>)");
    } else if (err == -EAGAIN) {
        admin_send_error(a, 503, "The audience database cannot be reached now");
    } else if (err < 0) {
        snprintf(msg, sizeof(msg), "Internal Server Error: the %s failed", what);
        admin_send_error(a, 500, msg);
    }
    return err < 0;
}

void admin_audience_send(admin_req_t *a, int csv, char *body, size_t len, const char *file)
{
    char head[160];
    if (!body) {
        admin_send_error(a, 500, "Internal Server Error");
    } else if (csv) {
        snprintf(head, sizeof(head), "Content-Disposition: attachment; filename=\"%s\"\r\n%s",
                 file, REPLY_NO_CACHE);
        admin_send_raw(a, "text/csv; charset=utf-8", body, len, head);
    } else {
        admin_send_raw(a, "application/json; charset=utf-8", body, len,
                       REPLY_NO_CACHE ADMIN_CSP);
    }
    free(body);
}

/* On the request's worker: the figures came back. */
static void deliver(worker_t *w, void *arg)
{
    (void)w;
    audience_job_t *j = arg;
    admin_req_t *a = j->a;
    if (admin_audience_failed(a, j->q.err, "audience figures")) {
        /* answered */
    } else if (a->view == ADMIN_VIEW_CSV || a->view == ADMIN_VIEW_JSON) {
        int csv = a->view == ADMIN_VIEW_CSV;
        size_t len = 0;
        char *body = csv ? figures_csv(&j->q, &len) : figures_json(&j->q, &len);
        admin_audience_send(a, csv, body, len, "audience.csv");
    } else {
        xmlDocPtr doc = figures_doc(&j->q, period_name(j->q.step_ms));
        if (doc && j->with_ads && j->ads.err == 0)
            admin_audience_ads_xml(xmlNewChild(xmlDocGetRootElement(doc), NULL, BAD_CAST "ads",
                                               NULL), &j->ads);
        admin_send_doc(a, doc);
    }
    job_free(j);
}

/* On the store's thread. */
static void compute(audience_db_t *db, void *arg)
{
    audience_job_t *j = arg;
    audience_store_figures(db, &j->q);
    if (j->with_ads && j->q.err == 0)
        audience_store_ads(db, &j->ads);
    if (worker_post(j->a->worker, deliver, j) < 0) { /* its worker is gone, and the client */
        admin_req_free(j->a);
        job_free(j);
    }
}

/* The server a request asks for (malloc'd), or NULL for all of them (none, or empty). */
static char *server_param(admin_req_t *a)
{
    char *name = admin_param(a, "server");
    if (name && !*name) {
        free(name);
        name = NULL;
    }
    return name;
}

/* period= of the session log: the last 24h, 7d or 30d, a UTC day (YYYY-MM-DD) or month
 * (YYYY-MM); 0, or -1 for anything else. */
static int parse_span(const char *p, int64_t now, int64_t *from_ms, int64_t *to_ms)
{
    static const struct { const char *name; int64_t ms; } last[] = {
        {"24h", 86400000}, {"7d", 7 * 86400000LL}, {"30d", 30 * 86400000LL}};
    for (size_t i = 0; i < sizeof(last) / sizeof(last[0]); i++)
        if (strcmp(p, last[i].name) == 0) {
            *to_ms = now;
            *from_ms = now - last[i].ms;
            return 0;
        }
    char day[16];
    if (strlen(p) == 10)
        return parse_iso(p, from_ms) < 0 ? -1 : (*to_ms = *from_ms + 86400000, 0);
    if (strlen(p) != 7 || snprintf(day, sizeof(day), "%s-01", p) != 10 ||
        parse_iso(day, from_ms) < 0)
        return -1;
    time_t t = (time_t)(*from_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    tm.tm_mon++; /* timegm carries December into January */
    *to_ms = (int64_t)timegm(&tm) * 1000;
    return 0;
}

const char *admin_audience_span(admin_req_t *a, int span_period, int64_t *from_ms,
                                int64_t *to_ms)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to"), *day = admin_param(a, "day");
    char *period = span_period ? admin_param(a, "period") : NULL;
    const char *bad = NULL;
    int64_t now = ((int64_t)time(NULL) + 1) * 1000; /* the second going on included */
    if (period && strcmp(period, "all") == 0) /* as the figures say it: the whole of from-to */
        *period = '\0';
    int given = (day && *day) + (period && *period) + ((from && *from) || (to && *to));
    if (given > 1) {
        bad = span_period ? "one of day, period, or from and to" : "day, or from and to: not both";
    } else if (day && *day) {
        if (strlen(day) != 10 || parse_iso(day, from_ms) < 0)
            bad = "day: YYYY-MM-DD (a UTC day)";
        *to_ms = *from_ms + 86400000;
    } else if (period && *period) {
        if (parse_span(period, now, from_ms, to_ms) < 0)
            bad = "period: 24h, 7d or 30d (the last of them), YYYY-MM-DD (a UTC day), YYYY-MM"
                  " (a UTC month), or all (from to to, as given)";
    } else if (parse_time(to, now, to_ms) < 0 || parse_time(from, *to_ms - 86400000, from_ms) < 0) {
        bad = "from and to: unix seconds or ISO 8601 (YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM])";
    }
    if (!bad && *from_ms >= *to_ms)
        bad = "from must come before to";
    free(from);
    free(to);
    free(day);
    free(period);
    return bad;
}

const char *admin_audience_cut(admin_req_t *a, int64_t from_ms, int64_t to_ms, int64_t *step_ms,
                               int *gross)
{
    char *period = admin_param(a, "period"), *traffic = admin_param(a, "traffic");
    const char *bad = NULL;
    *gross = traffic && strcmp(traffic, "gross") == 0;
    if (period && *period && strcmp(period, "hour") != 0 && strcmp(period, "day") != 0 &&
        strcmp(period, "all") != 0)
        bad = "period: hour or day (or all: the whole of from to to)";
    else if (traffic && *traffic && !*gross && strcmp(traffic, "net") != 0)
        bad = "traffic: net (valid sessions only, the default) or gross (every session)";
    *step_ms = !period || !*period           ? 86400000 /* by day, by default */
               : strcmp(period, "hour") == 0 ? 3600000
               : strcmp(period, "day") == 0  ? 86400000
                                             : 0;
    if (!bad && *step_ms && (to_ms - from_ms) / *step_ms >= AUDIENCE_MAX_BUCKETS)
        bad = "too many hours or days in the period";
    free(period);
    free(traffic);
    return bad;
}

/* The query a request asks for, or a message saying what is wrong with it. */
static const char *read_query(admin_req_t *a, audience_query_t *q)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to");
    const char *bad = NULL;
    int64_t now = ((int64_t)time(NULL) + 1) * 1000; /* the second going on included */
    if (parse_time(to, now, &q->to_ms) < 0 ||
        parse_time(from, q->to_ms - 86400000, &q->from_ms) < 0)
        bad = "from and to: unix seconds or ISO 8601 (YYYY-MM-DD[THH:MM[:SS[.fff]]][Z|+HH:MM])";
    else if (q->from_ms >= q->to_ms)
        bad = "from must come before to";
    const char *cut = admin_audience_cut(a, q->from_ms, q->to_ms, &q->step_ms, &q->gross);
    free(from);
    free(to);
    return bad ? bad : cut;
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
    j->q.resume_s = server_config()->resume_seconds;
    j->q.anonymize = server_config()->address_truncation;
    j->q.mount = a->mount_name && *a->mount_name ? strdup(a->mount_name) : NULL; /* mount=: all */
    j->q.server = server_param(a); /* server=: all */
    if (a->view == ADMIN_VIEW_XSL) { /* the page shows the ads figures of the same period */
        j->with_ads = 1;
        j->ads = (audience_ads_query_t){.from_ms = j->q.from_ms, .to_ms = j->q.to_ms,
                                        .step_ms = j->q.step_ms, .gross = j->q.gross,
                                        .mount = j->q.mount ? strdup(j->q.mount) : NULL,
                                        .server = j->q.server ? strdup(j->q.server) : NULL};
    }
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
 * referrers with the most sessions in the period (audience/audience_top.h), computed on the
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
    if (t->server)
        stats_add_text(root, "server", t->server);
    stats_add_text(root, "traffic", t->gross ? "gross" : "net");
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
    if (!admin_audience_failed(j->a, j->t.err, "audience figures"))
        admin_send_doc(j->a, admin_audience_top_doc(&j->t));
    top_job_free(j);
}

/* On the store's thread. */
static void top_compute(audience_db_t *db, void *arg)
{
    top_job_t *j = arg;
    audience_store_top(db, &j->t);
    if (worker_post(j->a->worker, top_deliver, j) < 0) { /* its worker is gone, and the client */
        admin_req_free(j->a);
        top_job_free(j);
    }
}

/* The list a request asks for, or a message saying what is wrong with it. */
static const char *read_top(admin_req_t *a, audience_top_t *t)
{
    char *from = admin_param(a, "from"), *to = admin_param(a, "to"), *by = admin_param(a, "by");
    char *limit = admin_param(a, "limit"), *traffic = admin_param(a, "traffic");
    const char *bad = NULL;
    t->by_referer = by && strcmp(by, "referer") == 0;
    t->gross = traffic && strcmp(traffic, "gross") == 0;
    t->limit = AUDIENCE_TOP_DEFAULT;
    if (parse_time(to, ((int64_t)time(NULL) + 1) * 1000, &t->to_ms) < 0 ||
        parse_time(from, t->to_ms - 86400000, &t->from_ms) < 0)
        bad = "from and to: unix seconds or a date and time (UTC)";
    else if (t->from_ms >= t->to_ms)
        bad = "from must come before to";
    else if (by && !t->by_referer && strcmp(by, "agent") != 0)
        bad = "by: agent or referer";
    else if (traffic && *traffic && !t->gross && strcmp(traffic, "net") != 0)
        bad = "traffic: net (valid sessions only, the default) or gross (every session)";
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
    free(traffic);
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
    j->t.mount = a->mount_name && *a->mount_name ? strdup(a->mount_name) : NULL;
    j->t.server = server_param(a);
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
    if (doc) {
        xmlNodePtr root = xmlDocGetRootElement(doc);
        stats_add_number(root, "min_session", server_config()->qualified_seconds);
        /* the name this server's records carry: its listener history is its own */
        stats_add_text(root, "server_name", audience_store_server_name());
    }
    admin_send_doc(a, doc);
}
