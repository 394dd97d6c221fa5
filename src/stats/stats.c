/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stats: Icecast-shaped XML documents from live state (see stats.h).
 *
 * A document is built from a snapshot: the live mounts are referenced under the registry lock,
 * then read one by one (counters are atomics, tags are copied under the mount lock). Each
 * <source> is collected as key/value pairs, sorted and emitted, which gives Icecast's
 * alphabetical order whatever the origin of a key (fixed element, codec tag, audio-info key).
 */
#include "stats/stats.h"

#include "core/cidr.h"
#include "audience/geoip.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/config.h"
#include "core/str.h"
#include "core/url.h"
#include "core/utf8.h"
#include "net/conn.h"
#include "net/server.h"
#include "stream/fallback.h"
#include "hls/hls.h"
#include "stream/mount.h"
#include "upstream/relay_park.h"

#define STATS_KEY_MAX 64
#define STATS_MAX_KEYS 128

/* ---- text ---- */

char *stats_clean_text(const char *value)
{
    size_t len = strlen(value);
    char *utf8 = utf8_valid(value, len) ? str_ndup(value, len)
                                        : utf8_from_charset(value, len, "ISO-8859-1");
    if (!utf8)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; utf8[i]; i++) {
        unsigned char ch = (unsigned char)utf8[i];
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
            continue;
        utf8[o++] = utf8[i];
    }
    utf8[o] = '\0';
    return utf8;
}

xmlNodePtr stats_add_text(xmlNodePtr parent, const char *name, const char *value)
{
    if (!value)
        return NULL;
    char *clean = stats_clean_text(value);
    if (!clean)
        return NULL;
    /* xmlNewTextChild escapes the content (xmlNewChild would not) */
    xmlNodePtr n = xmlNewTextChild(parent, NULL, BAD_CAST name, BAD_CAST clean);
    free(clean);
    return n;
}

xmlNodePtr stats_add_number(xmlNodePtr parent, const char *name, long long value)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", value);
    return xmlNewTextChild(parent, NULL, BAD_CAST name, BAD_CAST buf);
}

xmlDocPtr stats_new_doc(const char *root)
{
    xmlDocPtr doc = xmlNewDoc(BAD_CAST "1.0");
    if (!doc)
        return NULL;
    xmlNodePtr r = xmlNewDocNode(doc, NULL, BAD_CAST root, NULL);
    if (!r) {
        xmlFreeDoc(doc);
        return NULL;
    }
    xmlDocSetRootElement(doc, r);
    return doc;
}

void stats_listenurl(char *buf, size_t cap, const char *mount, const conn_t *via)
{
    const config_t *cfg = server_config();
    const mount_conf_t *mc = config_find_mount(cfg, mount);
    if (mc && mc->listenurl) { /* <listenurl> (Icecast-KH): as the config writes it */
        snprintf(buf, cap, "%s", mc->listenurl);
        return;
    }
    int tls = via && via->tls;
    int port = tls ? via->local_port : cfg->listen ? cfg->listen->port : 8000;
    snprintf(buf, cap, "%s://%s:%d%s", tls ? "https" : "http",
             cfg->hostname ? cfg->hostname : "localhost", port, mount);
}

static void format_time(char *buf, size_t cap, time_t t, int iso)
{
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, cap, iso ? "%Y-%m-%dT%H:%M:%S%z" : "%a, %d %b %Y %H:%M:%S %z", &tm);
}

/* ---- mount snapshot ---- */

typedef struct collect {
    mount_t **v;
    int n, cap, include_hidden, failed;
} collect_t;

static void collect_one(mount_t *m, void *arg)
{
    collect_t *c = arg;
    if (c->failed || (!c->include_hidden && atomic_load(&m->hidden)))
        return;
    if (c->n == c->cap) {
        int ncap = c->cap ? c->cap * 2 : 16;
        mount_t **nv = realloc(c->v, (size_t)ncap * sizeof(*nv));
        if (!nv) {
            c->failed = 1;
            return;
        }
        c->v = nv;
        c->cap = ncap;
    }
    c->v[c->n++] = mount_ref(m);
}

static int by_name(const void *a, const void *b)
{
    const mount_t *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

int stats_mounts(mount_t ***out, int include_hidden)
{
    collect_t c = {.include_hidden = include_hidden};
    mount_foreach(collect_one, &c);
    if (c.failed) {
        stats_mounts_free(c.v, c.n);
        *out = NULL;
        return -ENOMEM;
    }
    if (c.n > 1)
        qsort(c.v, (size_t)c.n, sizeof(*c.v), by_name);
    *out = c.v;
    return c.n;
}

void stats_mounts_free(mount_t **v, int n)
{
    for (int i = 0; i < n; i++)
        mount_unref(v[i]);
    free(v);
}

/* ---- key/value collection for one element ---- */

typedef struct kv {
    char key[STATS_KEY_MAX];
    char *val;
} kv_t;

typedef struct kvset {
    kv_t items[STATS_MAX_KEYS];
    int n;
} kvset_t;

static int kv_has(const kvset_t *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->items[i].key, key) == 0)
            return 1;
    return 0;
}

/* Adds key=value (copied) unless the key is already there or value is NULL. */
static void kv_add(kvset_t *s, const char *key, const char *value)
{
    if (!value || s->n == STATS_MAX_KEYS || strlen(key) >= STATS_KEY_MAX || kv_has(s, key))
        return;
    char *v = strdup(value);
    if (!v)
        return;
    snprintf(s->items[s->n].key, STATS_KEY_MAX, "%s", key);
    s->items[s->n++].val = v;
}

static void kv_addf(kvset_t *s, const char *key, const char *fmt, long long v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), fmt, v);
    kv_add(s, key, buf);
}

static int kv_cmp(const void *a, const void *b)
{
    return strcmp(((const kv_t *)a)->key, ((const kv_t *)b)->key);
}

static void kv_emit(kvset_t *s, xmlNodePtr parent)
{
    if (s->n > 1)
        qsort(s->items, (size_t)s->n, sizeof(kv_t), kv_cmp);
    for (int i = 0; i < s->n; i++) {
        stats_add_text(parent, s->items[i].key, s->items[i].val);
        free(s->items[i].val);
    }
    s->n = 0;
}

/* A key from a client (tag or audio-info) may become an element name only if it is a plain
 * XML name, and not one of the keys the server sets only when they apply (a source must not
 * make its mount look protected or relayed). */
static int valid_element_name(const char *k, size_t len)
{
    static const char *const server_only[] = {"authenticator", "relay_upstream",
                                              "yp_currently_playing", "ad_breaks"};
    if (len == 0 || len >= STATS_KEY_MAX || strncasecmp(k, "xml", 3) == 0)
        return 0;
    for (size_t i = 0; i < sizeof(server_only) / sizeof(server_only[0]); i++)
        if (strlen(server_only[i]) == len && strncmp(k, server_only[i], len) == 0)
            return 0;
    if (!((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= 'A' && k[0] <= 'Z') || k[0] == '_'))
        return 0;
    for (size_t i = 1; i < len; i++) {
        char ch = k[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return 0;
    }
    return 1;
}

/* ice-audio-info "bitrate=128;channels=2;samplerate=44100": each key becomes an element. */
static void add_audio_info_keys(kvset_t *s, const char *info)
{
    const char *p = info;
    while (*p) {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (eq && valid_element_name(p, (size_t)(eq - p))) {
            char key[STATS_KEY_MAX];
            snprintf(key, sizeof(key), "%.*s", (int)(eq - p), p);
            char *raw = str_ndup(eq + 1, n - (size_t)(eq - p) - 1);
            size_t dlen;
            char *val = raw ? url_decode(raw, strlen(raw), 1, &dlen) : NULL;
            kv_add(s, key, val ? val : raw);
            free(val);
            free(raw);
        }
        p += n;
        if (*p == ';')
            p++;
    }
}

/* "artist - title" (or whichever of the two there is) as Icecast-KH's yp_currently_playing,
 * which it sets on every title change (Icecast 2.4 only for a mount listed in a directory). */
static void add_currently_playing(kvset_t *s, mount_t *m)
{
    char *artist = mount_get_tag(m, "artist"), *title = mount_get_tag(m, "title");
    int a = artist && *artist, t = title && *title;
    char *both = a && t ? malloc(strlen(artist) + strlen(title) + 4) : NULL;
    if (both)
        sprintf(both, "%s - %s", artist, title);
    kv_add(s, "yp_currently_playing", both ? both : t ? title : a ? artist : NULL);
    free(both);
    free(artist);
    free(title);
}

static void add_tags(kvset_t *s, mount_t *m)
{
    pthread_mutex_lock(&m->lock);
    for (mount_tag_t *t = m->tags; t; t = t->next)
        if (strcmp(t->key, "url") != 0 && valid_element_name(t->key, strlen(t->key)))
            kv_add(s, t->key, t->value);
    pthread_mutex_unlock(&m->lock);
}

/* The <authentication type> of the mount (as Icecast's "authenticator"), or NULL. */
static const char *authenticator(const char *mount)
{
    const mount_conf_t *mc = config_find_mount(server_config(), mount);
    return mc && mc->auth ? mc->auth->type : NULL;
}

const char *stats_bitrate(mount_t *m, char *buf, size_t cap)
{
    const mount_info_t *i = mount_info(m);
    if (i->bitrate)
        return i->bitrate;
    char *v = mount_get_tag(m, "audio_bitrate");
    long bps = v ? strtol(v, NULL, 10) : 0;
    free(v);
    if (bps < 1000)
        return NULL;
    snprintf(buf, cap, "%ld", (bps + 500) / 1000);
    return buf;
}

static void add_source_fields(kvset_t *s, mount_t *m, const conn_t *via, int admin)
{
    const mount_info_t *i = mount_info(m);
    char buf[512];
    kv_addf(s, "listeners", "%lld", atomic_load(&m->listeners));
    kv_addf(s, "listener_peak", "%lld", atomic_load(&m->listener_peak));
    kv_addf(s, "slow_listeners", "%lld", (long long)atomic_load(&m->slow_listeners));
    int maxl = atomic_load(&m->max_listeners);
    if (maxl < 0)
        kv_add(s, "max_listeners", "unlimited");
    else
        kv_addf(s, "max_listeners", "%lld", maxl);
    stats_listenurl(buf, sizeof(buf), m->name, via);
    kv_add(s, "listenurl", buf);
    if (hls_offered(m) == HLS_OFFERED) {
        char hls[600];
        snprintf(hls, sizeof(hls), "%s/hls.m3u8", buf);
        kv_add(s, "hls_url", hls);
    }
    kv_add(s, "server_name", i->name ? i->name : "Unspecified name");
    kv_add(s, "server_description", i->description ? i->description : "Unspecified description");
    kv_add(s, "server_type", i->content_type);
    kv_add(s, "content-type", i->content_type);
    kv_add(s, "server_url", i->url);
    kv_add(s, "genre", i->genre ? i->genre : "various");
    kv_add(s, "bitrate", stats_bitrate(m, buf, sizeof(buf)));
    kv_addf(s, "public", "%lld", i->public > 0);
    kv_add(s, "subtype", i->subtype);
    kv_add(s, "audio_info", i->audio_info);
    format_time(buf, sizeof(buf), m->start, 0);
    kv_add(s, "stream_start", buf);
    format_time(buf, sizeof(buf), m->start, 1);
    kv_add(s, "stream_start_iso8601", buf);
    kv_addf(s, "total_bytes_read", "%lld", (long long)atomic_load(&m->bytes_read));
    kv_addf(s, "total_bytes_sent", "%lld", (long long)atomic_load(&m->bytes_sent));
    kv_add(s, "source_ip", i->source_ip ? CIDR_SHOWN(i->source_ip) : NULL);
    kv_add(s, "user_agent", i->user_agent);
    if (admin) { /* where a relay pulls from: for the admin only, as source_ip */
        char *url = mount_get_relay_url(m);
        kv_add(s, "relay_upstream", url);
        free(url);
        kv_add(s, "authenticator", authenticator(m->name));
        const mount_conf_t *mc = config_find_mount(server_config(), m->name);
        if (mc && mc->ads.vast_url) /* the admin page offers an ad break (docs/ADS.md) */
            kv_add(s, "ad_breaks", "1");
    }
    add_currently_playing(s, m);
    add_tags(s, m); /* title, artist, codec values */
    if (i->audio_info)
        add_audio_info_keys(s, i->audio_info);
}

static void add_globals(kvset_t *s)
{
    const config_t *cfg = server_config();
    const server_stats_t *st = &server.stats;
    char buf[128];
    kv_add(s, "admin", cfg->admin);
    kv_add(s, "host", cfg->hostname);
    kv_add(s, "location", cfg->location);
    kv_add(s, "server_id", server_ident());
    format_time(buf, sizeof(buf), server.start_time, 0);
    kv_add(s, "server_start", buf);
    format_time(buf, sizeof(buf), server.start_time, 1);
    kv_add(s, "server_start_iso8601", buf);
    kv_addf(s, "clients", "%lld", atomic_load(&st->clients));
    kv_addf(s, "listeners", "%lld", atomic_load(&st->listeners));
    kv_addf(s, "sources", "%lld", atomic_load(&st->sources));
    kv_add(s, "stats", "0");
    kv_addf(s, "connections", "%lld", (long long)atomic_load(&st->connections));
    kv_addf(s, "connections_refused", "%lld", (long long)atomic_load(&st->connections_refused));
    kv_addf(s, "client_connections", "%lld", (long long)atomic_load(&st->client_connections));
    kv_addf(s, "listener_connections", "%lld",
            (long long)atomic_load(&st->listener_connections));
    kv_addf(s, "file_connections", "%lld", (long long)atomic_load(&st->file_connections));
    kv_addf(s, "source_client_connections", "%lld",
            (long long)atomic_load(&st->source_client_connections));
    kv_addf(s, "source_relay_connections", "%lld",
            (long long)atomic_load(&st->source_relay_connections));
    kv_addf(s, "source_total_connections", "%lld",
            (long long)atomic_load(&st->source_total_connections));
    kv_addf(s, "stats_connections", "%lld", (long long)atomic_load(&st->stats_connections));
}

/* ---- documents ---- */

/* <config-warnings><warning><setting/><file/><line/><message/></warning>...</config-warnings>:
 * what the running config asked for and the server does not do (admin documents only; absent
 * when there is nothing to say). Child elements rather than attributes so that the JSON view
 * keeps every field. */
static int add_config_warnings(xmlNodePtr root)
{
    const config_t *cfg = server_config();

    if (!cfg->warnings)
        return 0;
    xmlNodePtr list = xmlNewChild(root, NULL, BAD_CAST "config-warnings", NULL);
    if (!list)
        return -1;
    for (const config_warning_t *w = cfg->warnings; w; w = w->next) {
        xmlNodePtr e = xmlNewChild(list, NULL, BAD_CAST "warning", NULL);
        if (!e)
            return -1;
        stats_add_text(e, "setting", w->setting);
        stats_add_text(e, "file", cfg->filename);
        stats_add_number(e, "line", w->line);
        stats_add_text(e, "message", w->text);
    }
    return 0;
}

/* <htpasswd-mounts><mount>name</mount>...</htpasswd-mounts>: the mounts configured (by exact
 * name) with htpasswd authentication, live or not, whose users the admin may manage even when
 * no source is connected (admin documents only; absent when there is none). */
static int add_htpasswd_mounts(xmlNodePtr root)
{
    xmlNodePtr list = NULL;
    for (const mount_conf_t *mc = server_config()->mounts; mc; mc = mc->next) {
        if (mc->is_default || !mc->mount_name || strpbrk(mc->mount_name, "*?[") || !mc->auth ||
            !mc->auth->type || strcmp(mc->auth->type, "htpasswd") != 0)
            continue;
        if (!list && !(list = xmlNewChild(root, NULL, BAD_CAST "htpasswd-mounts", NULL)))
            return -1;
        if (!stats_add_text(list, "mount", mc->mount_name))
            return -1;
    }
    return 0;
}

/* An on-demand relay's mount before it connects: listed with 0 listeners, as Icecast does. */
typedef struct idle_ctx {
    xmlNodePtr root;
    const char *only;
    mount_t **live;
    int nlive;
    int hit;
    const conn_t *via;
    int admin;
} idle_ctx_t;

static void add_idle_relay(const char *name, void *arg)
{
    idle_ctx_t *x = arg;
    if (x->only && strcmp(x->only, name) != 0)
        return;
    for (int k = 0; k < x->nlive; k++)
        if (strcmp(x->live[k]->name, name) == 0)
            return;
    xmlNodePtr src = xmlNewChild(x->root, NULL, BAD_CAST "source", NULL);
    char *clean = stats_clean_text(name);
    if (!src || !clean) {
        free(clean);
        return;
    }
    x->hit = 1;
    xmlNewProp(src, BAD_CAST "mount", BAD_CAST clean);
    free(clean);
    char url[1024];
    stats_listenurl(url, sizeof(url), name, x->via);
    xmlNewTextChild(src, NULL, BAD_CAST "listeners", BAD_CAST "0");
    xmlNewTextChild(src, NULL, BAD_CAST "listenurl", BAD_CAST url);
    xmlNewTextChild(src, NULL, BAD_CAST "on_demand", BAD_CAST "1");
    if (x->admin)
        stats_add_text(src, "authenticator", authenticator(name));
}

xmlDocPtr stats_document(int admin, const char *mount, int *found, const conn_t *via)
{
    xmlDocPtr doc = stats_new_doc("icestats");
    kvset_t *s = calloc(1, sizeof(*s));
    mount_t **v = NULL;
    int n = stats_mounts(&v, admin);
    if (!doc || !s || n < 0)
        goto fail;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    add_globals(s);
    kv_emit(s, root);
    if (admin && !mount && (add_config_warnings(root) < 0 || add_htpasswd_mounts(root) < 0))
        goto fail;
    int hit = 0;
    for (int k = 0; k < n; k++) {
        if (mount && strcmp(mount, v[k]->name) != 0)
            continue;
        hit = 1;
        xmlNodePtr src = xmlNewChild(root, NULL, BAD_CAST "source", NULL);
        if (!src)
            goto fail;
        char *name = stats_clean_text(v[k]->name);
        xmlNewProp(src, BAD_CAST "mount", BAD_CAST(name ? name : ""));
        free(name);
        add_source_fields(s, v[k], via, admin);
        kv_emit(s, src);
        if (geoip_enabled())
            geoip_add_countries(src, v[k]->name);
    }
    idle_ctx_t idle = {root, mount, v, n, 0, via, admin};
    relay_foreach_idle(add_idle_relay, &idle);
    hit |= idle.hit;
    if (found)
        *found = mount ? hit : 1;
    stats_mounts_free(v, n);
    free(s);
    return doc;
fail:
    if (n > 0)
        stats_mounts_free(v, n);
    free(s);
    if (doc)
        xmlFreeDoc(doc);
    return NULL;
}

xmlDocPtr stats_listmounts_document(const char *exclude)
{
    xmlDocPtr doc = stats_new_doc("icestats");
    mount_t **v = NULL;
    int n = stats_mounts(&v, 1);
    if (!doc || n < 0) {
        if (doc)
            xmlFreeDoc(doc);
        return NULL;
    }
    xmlNodePtr root = xmlDocGetRootElement(doc);
    if (exclude)
        stats_add_text(root, "current_source", exclude);
    time_t now = time(NULL);
    for (int k = 0; k < n; k++) {
        mount_t *m = v[k];
        if (exclude && strcmp(exclude, m->name) == 0)
            continue;
        xmlNodePtr src = xmlNewChild(root, NULL, BAD_CAST "source", NULL);
        char *name = stats_clean_text(m->name);
        xmlNewProp(src, BAD_CAST "mount", BAD_CAST(name ? name : ""));
        free(name);
        char *fb = fallback_name(m);
        stats_add_text(src, "fallback", fb ? fb : "");
        free(fb);
        stats_add_number(src, "listeners", atomic_load(&m->listeners));
        stats_add_number(src, "Connected", (long long)(now - m->start));
        stats_add_text(src, "content-type", mount_info(m)->content_type);
    }
    stats_mounts_free(v, n);
    return doc;
}

char *stats_streamlist(size_t *len)
{
    mount_t **v = NULL;
    int n = stats_mounts(&v, 0);
    if (n < 0)
        return NULL;
    size_t total = 1;
    for (int k = 0; k < n; k++)
        total += strlen(v[k]->name) + 1;
    char *out = malloc(total);
    if (out) {
        size_t o = 0;
        for (int k = 0; k < n; k++) {
            size_t l = strlen(v[k]->name);
            memcpy(out + o, v[k]->name, l);
            o += l;
            out[o++] = '\n';
        }
        out[o] = '\0';
        *len = o;
    }
    stats_mounts_free(v, n);
    return out;
}
