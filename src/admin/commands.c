/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * commands: the admin route table and the commands that need no other worker: stats,
 * listmounts, streamlist, killsource, metadata (and Shoutcast's /admin.cgi), fallbacks, adbreak,
 * updatemetadata, buildm3u, history, the recent error-log lines and the event stream. Listener commands (listclients,
 * moveclients, killclient) are in clients.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin/admin.h"
#include "admin/audit.h"
#include "admin/commands.h"
#include "admin/events_feed.h"
#include "auth/auth.h"
#include "auth/guard.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/str.h"
#include "core/url.h"
#include "core/utf8.h"
#include "format/format.h"
#include "http/client.h"
#include "http/parser.h"
#include "net/conn.h"
#include "net/server.h"
#include "stats/stats.h"
#include "stream/events.h"
#include "stream/listener.h"
#include "stats/history.h"
#include "stream/mount.h"

#define META_MAX 1024 /* bytes of a title or artist from an admin request */
/* Metadata updates per second and mount; more are answered 429. A title change rebuilds the
 * ICY block every listener gets and writes the stats, playlist log and events feed: a client
 * flooding /admin/metadata must not turn that into work for the whole server. */
#define META_UPDATES_PER_SECOND 10

/* ---- documents ---- */

static void cmd_stats(admin_req_t *a)
{
    int found = 1;
    xmlDocPtr doc = stats_document(1, a->mount_name, &found, a->conn);
    if (doc && !found) {
        xmlFreeDoc(doc);
        admin_send_error(a, 400, "Source does not exist");
        return;
    }
    admin_send_doc(a, doc);
}

static void add_range(xmlNodePtr root, history_t *h, const char *series, int coarse,
                      history_point_t *buf)
{
    xmlNodePtr r = xmlNewChild(root, NULL, BAD_CAST "range", NULL);
    if (!r)
        return;
    xmlNewProp(r, BAD_CAST "name", BAD_CAST(coarse ? "day" : "hour"));
    char num[32];
    snprintf(num, sizeof(num), "%d", coarse ? HISTORY_COARSE_STEP : HISTORY_FINE_STEP);
    xmlNewProp(r, BAD_CAST "step", BAD_CAST num);
    int n = h ? history_get(h, series, coarse, buf, HISTORY_FINE_LEN) : 0;
    for (int i = 0; i < n; i++) {
        xmlNodePtr p = xmlNewChild(r, NULL, BAD_CAST "sample", NULL);
        if (!p)
            return;
        stats_add_number(p, "time", (long long)buf[i].t);
        stats_add_number(p, "listeners", (long long)buf[i].listeners);
        stats_add_number(p, "bytes_per_s", (long long)buf[i].bytes_per_s);
    }
}

/* /admin/history[?mount=]: the samples of a mount (or of the server), hour and day rings.
 * A mount without samples (new, or unknown) has empty ranges. */
static void cmd_history(admin_req_t *a)
{
    xmlDocPtr doc = stats_new_doc("history");
    history_point_t *buf = malloc(HISTORY_FINE_LEN * sizeof(*buf));
    if (!doc || !buf) {
        free(buf);
        if (doc)
            xmlFreeDoc(doc);
        admin_send_doc(a, NULL);
        return;
    }
    const char *series = a->mount_name ? a->mount_name : "";
    xmlNodePtr root = xmlDocGetRootElement(doc);
    char *clean = stats_clean_text(series);
    xmlNewProp(root, BAD_CAST "mount", BAD_CAST(clean ? clean : ""));
    free(clean);
    add_range(root, history_global(), series, 0, buf);
    add_range(root, history_global(), series, 1, buf);
    free(buf);
    admin_send_doc(a, doc);
}

/* /admin/log: the last error-log lines kept in memory, oldest first, one <line> each with
 * <time> (as in the file), <unixtime>, <level> (EROR, WARN, INFO, DBUG) and <text>. The text
 * may quote anything a client sent: it is made valid UTF-8 here and escaped by every view. */
static void cmd_log(admin_req_t *a)
{
    xmlDocPtr doc = stats_new_doc("log");
    log_line_t *lines = malloc(LOG_RECENT_LEN * sizeof(*lines));
    if (!doc || !lines) {
        free(lines);
        if (doc)
            xmlFreeDoc(doc);
        admin_send_doc(a, NULL);
        return;
    }
    xmlNodePtr root = xmlDocGetRootElement(doc);
    int n = log_recent(lines, LOG_RECENT_LEN);
    for (int i = 0; i < n; i++) {
        xmlNodePtr l = xmlNewChild(root, NULL, BAD_CAST "line", NULL);
        if (!l)
            break;
        char when[32];
        struct tm tm;
        localtime_r(&lines[i].time, &tm);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
        stats_add_text(l, "time", when);
        stats_add_number(l, "unixtime", (long long)lines[i].time);
        stats_add_text(l, "level", log_level_name(lines[i].level));
        stats_add_text(l, "text", lines[i].text);
    }
    free(lines);
    admin_send_doc(a, doc);
}

static void cmd_listmounts(admin_req_t *a)
{
    admin_send_doc(a, stats_listmounts_document(NULL));
}

static void cmd_streamlist(admin_req_t *a)
{
    if (a->view != ADMIN_VIEW_TXT) {
        cmd_listmounts(a);
        return;
    }
    size_t len = 0;
    char *list = stats_streamlist(&len);
    if (!list) {
        admin_send_error(a, 500, "Internal Server Error");
        return;
    }
    admin_send_raw(a, "text/plain; charset=utf-8", list, len, NULL);
    free(list);
}

static void cmd_updatemetadata(admin_req_t *a)
{
    xmlDocPtr doc = stats_new_doc("icestats");
    if (doc) {
        xmlNodePtr src = xmlNewChild(xmlDocGetRootElement(doc), NULL, BAD_CAST "source", NULL);
        char *name = stats_clean_text(a->mount->name);
        xmlNewProp(src, BAD_CAST "mount", BAD_CAST(name ? name : ""));
        free(name);
    }
    admin_send_doc(a, doc);
}

static void cmd_killsource(admin_req_t *a)
{
    char who[AUDIT_WHO_LEN];
    audit_who(a, a->admin, who);
    audit_log(who, "killing the source of %s", a->mount->name);
    mount_kill_source(a->mount);
    admin_send_response(a, "Source Removed", 1);
}

/* /admin/adbreak?mount=M&duration=SECONDS: an ad break on M from now (docs/ADS.md): each
 * listener hears the ads the mount's ad server chooses for it. */
static void cmd_adbreak(admin_req_t *a)
{
    char *d = admin_param(a, "duration"), *end = NULL;
    unsigned long secs = d && *d >= '0' && *d <= '9' ? strtoul(d, &end, 10) : 0;
    int ok = end && *end == '\0' && secs >= 1 && secs <= ADBREAK_MAX_MS / 1000;
    free(d);
    if (!ok) {
        admin_send_error(a, 400, "Invalid duration (1 to 600 seconds)");
        return;
    }
    int rc = adbreak_signal(a->mount, (unsigned)secs * 1000u, "admin");
    if (rc == -ENOENT) {
        admin_send_error(a, 400, "Mountpoint has no ad server");
    } else if (rc < 0) {
        admin_send_error(a, 400, "Mountpoint stream is not MP3, AAC, Ogg Vorbis or Ogg Opus audio");
    } else {
        char who[AUDIT_WHO_LEN], esc[256];
        audit_who(a, a->admin, who);
        audit_log(who, "ad break of %lu s on %s", secs,
                  escape_log(esc, sizeof(esc), a->mount->name, strlen(a->mount->name)));
        admin_send_response(a, "Ad break started", 1);
    }
}

static void send_html_success(admin_req_t *a, const char *message)
{
    char body[512];
    int n = snprintf(body, sizeof(body),
                     "<html><head><title>Admin request successful</title></head>"
                     "<body><p>%s</p></body></html>", message);
    admin_send_raw(a, "text/html; charset=utf-8", body, (size_t)n, ADMIN_CSP);
}

/* The fallback of a's mount is now fb: logged and answered. */
static void fallback_set(admin_req_t *a, const mount_t *fb)
{
    char who[AUDIT_WHO_LEN];
    audit_who(a, a->admin, who);
    audit_log(who, "fallback of %s set to %s", a->mount->name, fb->name);
    if (a->view == ADMIN_VIEW_XML)
        send_html_success(a, "Fallback configured"); /* Icecast's answer */
    else
        admin_send_response(a, "Fallback configured", 1);
}

/* Sets the mount's fallback by name, for the life of its source (as Icecast: a reconnecting
 * source starts again from <fallback-mount>). The name is resolved when listeners move, so
 * the fallback's own source may come and go meanwhile. */
static void cmd_fallbacks(admin_req_t *a)
{
    char *name = admin_param(a, "fallback");
    mount_t *fb = name ? mount_find(name) : NULL;
    if (!name)
        admin_send_error(a, 400, "Missing parameter");
    else if (!fb)
        admin_send_error(a, 400, "Source does not exist");
    else if (mount_set_fallback(a->mount, fb->name) < 0)
        admin_send_error(a, 500, "Internal Server Error");
    else
        fallback_set(a, fb);
    if (fb)
        mount_unref(fb);
    free(name);
}

/* ---- metadata ---- */

/* A title from a request as clean UTF-8: from `charset` when given, else as is when it is
 * UTF-8, else from the mount's <charset> (ISO-8859-1 by default). NULL if it cannot be. */
static char *meta_text(const char *v, const char *charset, const char *mount)
{
    size_t len = strlen(v);
    char *utf8;
    if (charset)
        utf8 = utf8_from_charset(v, len, charset);
    else if (utf8_valid(v, len))
        utf8 = str_ndup(v, len);
    else {
        const mount_conf_t *mc = config_find_mount(server_config(), mount);
        utf8 = utf8_from_charset(v, len, mc && mc->charset ? mc->charset : "ISO-8859-1");
    }
    char *clean = utf8 ? stats_clean_text(utf8) : NULL;
    free(utf8);
    return clean;
}

/* The title shown for artist and title (either may be NULL or empty): "Artist - Title" as
 * Icecast shows it, or the one that is given. */
static void shown_title(char *buf, size_t cap, const char *artist, const char *title)
{
    if (artist && *artist && title && *title)
        snprintf(buf, cap, "%s - %s", artist, title);
    else
        snprintf(buf, cap, "%s", title && *title ? title : (artist ? artist : ""));
}

/* Sets the metadata of m from song, or artist and title (what libshout clients send); NULL
 * means not given. A stream without tags of its own (MP3, AAC: ICY) gets one title, "Artist -
 * Title", in stats and StreamTitle as in Icecast; an Ogg stream keeps artist and title apart,
 * as its comments do. who (audit.h) set it. 0, or -1 if a value is not valid in its charset. */
static int apply_metadata(mount_t *m, const char *song, const char *artist, const char *title,
                          const char *charset, const char *who)
{
    const char *in[3] = {song, artist, title};
    char *out[3] = {NULL, NULL, NULL};
    int rc = 0;
    for (int i = 0; i < 3; i++)
        if (in[i] && !(out[i] = meta_text(in[i], charset, m->name)))
            rc = -1;
    if (rc == 0 && (song || artist || title)) {
        char shown[2 * META_MAX + 8], esc[512];
        if (song)
            snprintf(shown, sizeof(shown), "%s", out[0]);
        else
            shown_title(shown, sizeof(shown), out[1], out[2]);
        if (song || !atomic_load(&m->is_ogg)) {
            mount_set_tag(m, "title", shown);
            mount_set_tag(m, "artist", NULL);
        } else {
            mount_set_tag(m, "title", out[2]);
            mount_set_tag(m, "artist", out[1]);
        }
        if (atomic_load(&m->is_ogg)) /* listeners get it in the stream's comments */
            mount_post_stream_meta(m, song ? shown : out[2], song ? NULL : out[1]);
        mount_update_meta(m);
        audit_log(who, "metadata of %s set to \"%s\"", m->name,
                  escape_log_utf8(esc, sizeof(esc), shown, strlen(shown)));
        events_emit(EVENT_METADATA, m->name, 0, shown);
    }
    for (int i = 0; i < 3; i++)
        free(out[i]);
    return rc;
}

/* 1 if m may take one more metadata update this second, else 0. The first refusal of a
 * second on a mount is logged through a 10 s rate limit, which counts the lines it holds back. */
static int meta_rate_ok(mount_t *m)
{
    unsigned long long sec = loop_now_ms() / 1000, cur = atomic_load(&m->meta_updates), next;
    do {
        unsigned long long count = (cur >> 16) == sec ? (cur & 0xffff) : 0;
        if (count >= 0xffff)
            return 0;
        next = (sec << 16) | (count + 1);
    } while (!atomic_compare_exchange_weak(&m->meta_updates, &cur, next));
    unsigned count = (unsigned)(next & 0xffff);
    if (count == META_UPDATES_PER_SECOND + 1) {
        static log_ratelimit_t rl; /* a flood on many mounts still makes one line per 10 s */
        char esc[512];
        log_warn_limited(&rl, 10000, "metadata updates of %s over %d a second: the excess is answered 429",
                 escape_log(esc, sizeof(esc), m->name, strlen(m->name)), META_UPDATES_PER_SECOND);
    }
    return count <= META_UPDATES_PER_SECOND;
}

typedef struct meta_params {
    char *mode, *song, *artist, *title, *charset;
} meta_params_t;

static void meta_params_free(meta_params_t *p)
{
    free(p->mode);
    free(p->song);
    free(p->artist);
    free(p->title);
    free(p->charset);
}

/* Validates the common metadata parameters; on error answers and returns -1. */
static int meta_params_get(admin_req_t *a, meta_params_t *p)
{
    p->mode = admin_param(a, "mode");
    p->song = admin_param(a, "song");
    p->artist = admin_param(a, "artist");
    p->title = admin_param(a, "title");
    p->charset = admin_param(a, "charset");
    const char *status = NULL;
    if (!p->mode)
        status = "Missing parameter";
    else if (strcmp(p->mode, "updinfo") != 0)
        status = "No such action";
    else if ((p->song && strlen(p->song) > META_MAX) ||
             (p->artist && strlen(p->artist) > META_MAX) ||
             (p->title && strlen(p->title) > META_MAX) || (p->charset && strlen(p->charset) > 64))
        status = "Metadata too long";
    if (!status)
        return 0;
    admin_send_error(a, 400, status);
    meta_params_free(p);
    return -1;
}

/* Source credentials update only from the source's own address (a copied password alone is
 * not enough), as Icecast; admin credentials from anywhere. 1 if refused (logged). */
static int meta_from_elsewhere(admin_req_t *a, mount_t *m, int admin)
{
    if (admin || admin_from_source_address(a, m))
        return 0;
    static log_ratelimit_t rl;
    conn_t *c = admin_conn(a);
    char esc[512];
    log_info_limited(&rl, 10000, "metadata of %s from %s refused: source credentials are "
                     "accepted from the source's address only",
                     escape_log(esc, sizeof(esc), m->name, strlen(m->name)),
                     CIDR_SHOWN(c ? c->ip : "-"));
    return 1;
}

/* Why m takes no title update (a sentence for the admin page), or NULL if it does. An Ogg
 * Opus mount takes none unless its <mount> has <opus-title-updates>: the new chain link that
 * would carry it is read badly by ffmpeg 5.1 and the players built on it (mpv shows the old
 * and new titles joined), and Icecast 2.4 refuses updates on Opus too. A mount whose header
 * pages have not all come yet (its source has just connected) is taken as not Opus; should
 * it be, its Ogg handler leaves the update out of the stream (format_t.opus_title_updates).
 * A refusal is logged (rate-limited). */
static const char *meta_codec_refusal(mount_t *m)
{
    if (!atomic_load(&m->is_ogg))
        return NULL;
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (mc && mc->opus_title_updates)
        return NULL;
    block_t *headers = NULL;
    if (mount_headers_at(m, mount_head_end(m), &headers) < 0 || !headers)
        return NULL;
    const char *codec = format_ogg_codec(headers);
    block_unref(headers);
    if (!codec || strcmp(codec, "Opus") != 0)
        return NULL;
    static log_ratelimit_t rl;
    char esc[512];
    log_info_limited(&rl, 10000, "metadata of %s refused: an Ogg Opus stream takes title "
                     "updates only with <opus-title-updates> in its <mount>",
                     escape_log(esc, sizeof(esc), m->name, strlen(m->name)));
    return "Not taken: this mount's stream is Ogg Opus, which takes title updates only when "
           "its <mount> has <opus-title-updates>1</opus-title-updates>.";
}

/* Icecast 2.4's answer to an update a mount does not take (200, return 1); the HTML page says
 * why, as not done. */
static void meta_not_taken(admin_req_t *a, const char *why)
{
    if (a->view == ADMIN_VIEW_XSL)
        admin_send_response(a, why, 0);
    else
        admin_send_response(a, "Mountpoint will not accept URL updates", 1);
}

static void cmd_metadata(admin_req_t *a)
{
    meta_params_t p = {0};
    char who[AUDIT_WHO_LEN];
    const char *why;
    if (meta_params_get(a, &p) < 0)
        return;
    audit_who(a, a->admin, who);
    /* Ogg mounts accept updates too: a new chain link carries them (apply_metadata). */
    if (meta_from_elsewhere(a, a->mount, a->admin))
        admin_send_response(a, "Mountpoint will not accept URL updates", 0); /* Icecast's */
    else if ((why = meta_codec_refusal(a->mount)))
        meta_not_taken(a, why);
    else if (!meta_rate_ok(a->mount))
        admin_send_error(a, 429, "Too many metadata updates");
    else if (apply_metadata(a->mount, p.song, p.artist, p.title, p.charset, who) < 0)
        admin_send_error(a, 400, "Invalid charset or text");
    else
        admin_send_response(a, "Metadata update successful", 1);
    meta_params_free(&p);
}

/* Shoutcast DSP: /admin.cgi?pass=<source password>&mode=updinfo&song=...[&mount=] */
static void cmd_admin_cgi(admin_req_t *a)
{
    const config_t *cfg = server_config();
    const char *mount = a->mount_name ? a->mount_name : cfg->shoutcast_mount;
    char *pass = admin_param(a, "pass");
    const mount_conf_t *mc = mount ? config_find_mount(cfg, mount) : NULL;
    const char *user = mc && mc->password && mc->username ? mc->username : "source";
    conn_t *c = admin_conn(a);
    unsigned blocked = pass && !a->admin && !a->source_checked && c ? guard_blocked(c->ip) : 0;
    if (blocked) { /* the password in the query is a login too: not even checked */
        free(pass);
        admin_req_free(a);
        auth_send_refusal(c, AUTH_BLOCKED, blocked);
        return;
    }
    int admin = a->admin || (pass && str_equal_ct(pass, cfg->admin_password));
    int ok = admin || a->source_checked;
    /* a stream_auth mount: the auth server decides (this runs again once it accepts) */
    if (!ok && pass && mount && admin_ask_auth_server(a, mount, user, pass)) {
        free(pass);
        return;
    }
    ok = ok || (pass && mount && admin_auth_source(mount, user, pass));
    int had_pass = pass != NULL;
    free(pass);
    if (!ok) {
        if (had_pass && c)
            guard_failed(c->ip, "/admin.cgi", NULL);
        admin_send_error(a, 401, "You need to authenticate");
        return;
    }
    meta_params_t p = {0};
    char who[AUDIT_WHO_LEN];
    if (meta_params_get(a, &p) < 0)
        return;
    audit_who(a, admin, who);
    mount_t *m = mount ? mount_find(mount) : NULL;
    if (!m)
        admin_send_error(a, 400, "Source does not exist");
    else if (meta_from_elsewhere(a, m, admin))
        admin_send_error(a, 403, "Forbidden: Mountpoint will not accept URL updates");
    else if (meta_codec_refusal(m))
        admin_send_error(a, 400, "illegal metadata call"); /* Icecast's, on any Ogg mount */
    else if (!meta_rate_ok(m))
        admin_send_error(a, 429, "Too many metadata updates");
    else if (apply_metadata(m, p.song ? p.song : "", NULL, NULL, p.charset, who) < 0)
        admin_send_error(a, 400, "Invalid charset or text");
    else
        send_html_success(a, "Metadata update successful");
    if (m)
        mount_unref(m);
    meta_params_free(&p);
}

/* ---- buildm3u and events ---- */

static void cmd_buildm3u(admin_req_t *a)
{
    char *user = admin_param(a, "username"), *pass = admin_param(a, "password");
    char *eu = user ? url_encode(user, strlen(user)) : NULL;
    char *ep = pass ? url_encode(pass, strlen(pass)) : NULL;
    char *em = a->mount_name ? url_encode(a->mount_name, strlen(a->mount_name)) : NULL;
    if (!a->mount_name) {
        admin_send_error(a, 400, "Missing parameter");
    } else if (!em || (user && !eu) || (pass && !ep)) {
        admin_send_error(a, 500, "Internal Server Error");
    } else {
        const config_t *cfg = server_config();
        char body[4096];
        int n = snprintf(body, sizeof(body), "http://%s%s%s%s%s:%d%s\n", eu ? eu : "",
                         ep ? ":" : "", ep ? ep : "", eu ? "@" : "",
                         cfg->hostname ? cfg->hostname : "localhost",
                         cfg->listen ? cfg->listen->port : 8000, em);
        if (n < 0 || (size_t)n >= sizeof(body))
            admin_send_error(a, 400, "Parameter too long");
        else
            admin_send_raw(a, "audio/x-mpegurl", body, (size_t)n,
                           "Content-Disposition: attachment; filename=\"listen.m3u\"\r\n");
    }
    free(user);
    free(pass);
    free(eu);
    free(ep);
    free(em);
}

static void cmd_events(admin_req_t *a)
{
    conn_t *c = a->conn;
    const http_request_t *req = client_of(c)->req;
    char *last = http_header_dup(req, "last-event-id");
    uint64_t last_id = last ? strtoull(last, NULL, 10) : 0;
    free(last);
    admin_req_free(a);
    events_feed_start(c, last_id, req->method == HTTP_METHOD_HEAD);
}

/* ---- the route table ---- */

#define XML_VIEWS (ADMIN_VIEW_XML | ADMIN_VIEW_XSL | ADMIN_VIEW_JSON)
#define CHANGES 1 /* state-changing: refused when a browser sends it from another origin */
#define READS 0

/* Every command that changes something is marked CHANGES, even where one of its forms only
 * shows a page (manageauth's list, moveclients without a destination): a page of another
 * site gains nothing by opening those, while the admin's own pages (same origin), a typed-in
 * address or a bookmark (Sec-Fetch-Site: none) and scripts (no Origin, no Sec-Fetch-Site)
 * reach them all. */
static const admin_cmd_t commands[] = {
    /* name            mount  credentials        handler             views      state */
    {"stats",          0, ADMIN_AUTH_GLOBAL, cmd_stats,          XML_VIEWS, READS},
    {"listmounts",     0, ADMIN_AUTH_GLOBAL, cmd_listmounts,     XML_VIEWS, READS},
    {"history",        0, ADMIN_AUTH_GLOBAL, cmd_history,        XML_VIEWS, READS},
    {"log",            0, ADMIN_AUTH_GLOBAL, cmd_log,            XML_VIEWS, READS},
    {"streamlist",     0, ADMIN_AUTH_RELAY,  cmd_streamlist,     XML_VIEWS | ADMIN_VIEW_TXT, READS},
    {"listclients",    1, ADMIN_AUTH_GLOBAL, admin_cmd_listclients, XML_VIEWS, READS},
    {"moveclients",    1, ADMIN_AUTH_GLOBAL, admin_cmd_moveclients, XML_VIEWS, CHANGES},
    {"killclient",     1, ADMIN_AUTH_GLOBAL, admin_cmd_killclient,  XML_VIEWS, CHANGES},
    {"killsource",     1, ADMIN_AUTH_GLOBAL, cmd_killsource,     XML_VIEWS, CHANGES},
    {"metadata",       1, ADMIN_AUTH_SOURCE, cmd_metadata,       XML_VIEWS, CHANGES},
    {"fallbacks",      1, ADMIN_AUTH_GLOBAL, cmd_fallbacks,      XML_VIEWS, CHANGES},
    {"adbreak",        1, ADMIN_AUTH_SOURCE, cmd_adbreak,        XML_VIEWS, CHANGES},
    {"updatemetadata", 1, ADMIN_AUTH_SOURCE, cmd_updatemetadata, XML_VIEWS, READS}, /* a form */
    {"buildm3u",       0, ADMIN_AUTH_NONE,   cmd_buildm3u,       ADMIN_VIEW_XML, READS},
    {"events",         0, ADMIN_AUTH_GLOBAL, cmd_events,         ADMIN_VIEW_XML, READS},
    {"admin.cgi",      0, ADMIN_AUTH_NONE,   cmd_admin_cgi,      ADMIN_VIEW_XML, CHANGES},
    {"manageauth",     0, ADMIN_AUTH_GLOBAL, admin_cmd_manageauth, XML_VIEWS, CHANGES},
    {"audience",       0, ADMIN_AUTH_GLOBAL, admin_cmd_audience, XML_VIEWS | ADMIN_VIEW_CSV, READS},
    {"audience/top",   0, ADMIN_AUTH_GLOBAL, admin_cmd_audience_top,
     ADMIN_VIEW_XML | ADMIN_VIEW_JSON, READS},
    {"audience/ads",   0, ADMIN_AUTH_GLOBAL, admin_cmd_audience_ads,
     ADMIN_VIEW_XML | ADMIN_VIEW_JSON | ADMIN_VIEW_CSV, READS},
    {"audience/sessions", 0, ADMIN_AUTH_GLOBAL, admin_cmd_audience_sessions, ADMIN_VIEW_XML,
     READS},
    {"audience_charts", 0, ADMIN_AUTH_GLOBAL, admin_cmd_audience_charts, ADMIN_VIEW_XSL, READS},
};

const admin_cmd_t *admin_find_command(const char *name)
{
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}
