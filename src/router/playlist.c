/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * playlist: .m3u, .pls and .xspf playlists generated for live mounts (see playlist.h).
 * The kinds are rows of a table: suffix, Content-Type, renderer.
 */
#include "router/playlist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/tree.h>

#include "conf/config.h"
#include "core/str.h"
#include "core/url.h"
#include "http/parser.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "stats/stats.h"
#include "stream/mount.h"

typedef struct pl_buf {
    char *p;
    size_t len;
} pl_buf_t;

/* A Host header is used only when it is a plain host[:port] (no injection into playlists). */
static int plain_host(const char *h, size_t len)
{
    if (len == 0 || len > 255)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char ch = h[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '-' || ch == ':' || ch == '[' || ch == ']'))
            return 0;
    }
    return 1;
}

/* The stream's URL as this client reached the server: https when it came over TLS. */
static char *stream_url(const conn_t *c, const http_request_t *req, const char *mount)
{
    const http_header_t *h = http_find_header(req, "host");
    const config_t *cfg = server_config();
    char host[300];
    if (h && plain_host(h->value, h->value_len))
        snprintf(host, sizeof(host), "%.*s", (int)h->value_len, h->value);
    else
        snprintf(host, sizeof(host), "%s:%d", cfg->hostname ? cfg->hostname : "localhost",
                 c->tls ? c->local_port : cfg->listen ? cfg->listen->port : 8000);
    char *em = url_encode(mount, strlen(mount));
    if (!em)
        return NULL;
    size_t n = strlen(host) + strlen(em) + 16;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "%s://%s%s", c->tls ? "https" : "http", host, em);
    free(em);
    return url;
}

/* One line of text: clean UTF-8 with line breaks and tabs turned into spaces. */
static char *one_line(const char *s)
{
    char *t = stats_clean_text(s ? s : "");
    for (char *p = t; p && *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    return t;
}

static int render_m3u(mount_t *m, const char *url, pl_buf_t *out)
{
    (void)m;
    size_t n = strlen(url) + 2;
    if (!(out->p = malloc(n)))
        return -1;
    out->len = (size_t)snprintf(out->p, n, "%s\n", url);
    return 0;
}

static int render_pls(mount_t *m, const char *url, pl_buf_t *out)
{
    char *title = one_line(mount_info(m)->name ? mount_info(m)->name : m->name);
    size_t n = strlen(url) + (title ? strlen(title) : 0) + 128;
    if ((out->p = malloc(n)))
        out->len = (size_t)snprintf(out->p, n,
                                    "[playlist]\nNumberOfEntries=1\nFile1=%s\nTitle1=%s\n"
                                    "Length1=-1\nVersion=2\n",
                                    url, title ? title : "");
    free(title);
    return out->p ? 0 : -1;
}

static int render_xspf(mount_t *m, const char *url, pl_buf_t *out)
{
    xmlDocPtr doc = stats_new_doc("playlist");
    if (!doc)
        return -1;
    xmlNodePtr root = xmlDocGetRootElement(doc);
    xmlSetNs(root, xmlNewNs(root, BAD_CAST "http://xspf.org/ns/0/", NULL));
    xmlNewProp(root, BAD_CAST "version", BAD_CAST "1");
    stats_add_text(root, "title", mount_info(m)->name ? mount_info(m)->name : m->name);
    xmlNodePtr list = xmlNewChild(root, NULL, BAD_CAST "trackList", NULL);
    xmlNodePtr track = xmlNewChild(list, NULL, BAD_CAST "track", NULL);
    stats_add_text(track, "location", url);
    char *now = mount_get_tag(m, "title");
    char *artist = mount_get_tag(m, "artist");
    stats_add_text(track, "creator", artist);
    stats_add_text(track, "title", now);
    free(now);
    free(artist);
    stats_add_text(track, "annotation", mount_info(m)->description);
    stats_add_text(track, "info", mount_info(m)->url);
    xmlChar *buf = NULL;
    int blen = 0;
    xmlDocDumpFormatMemoryEnc(doc, &buf, &blen, "UTF-8", 1);
    xmlFreeDoc(doc);
    out->p = buf ? str_ndup((const char *)buf, (size_t)blen) : NULL;
    out->len = (size_t)blen;
    xmlFree(buf);
    return out->p ? 0 : -1;
}

static const struct {
    const char *suffix;
    const char *ctype;
    int (*render)(mount_t *m, const char *url, pl_buf_t *out);
} kinds[] = {
    {".m3u", "audio/x-mpegurl", render_m3u},
    {".pls", "audio/x-scpls", render_pls},
    {".xspf", "application/xspf+xml; charset=utf-8", render_xspf},
};

int playlist_try(conn_t *c, const http_request_t *req, const char *path)
{
    size_t plen = strlen(path);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        size_t sl = strlen(kinds[i].suffix);
        if (plen <= sl + 1 || strcasecmp(path + plen - sl, kinds[i].suffix) != 0)
            continue;
        char *name = str_ndup(path, plen - sl);
        mount_t *m = name ? mount_find(name) : NULL;
        free(name);
        if (!m)
            return 0;
        atomic_fetch_add(&server.stats.file_connections, 1);
        char *url = stream_url(c, req, m->name);
        pl_buf_t out = {0};
        int rc = url ? kinds[i].render(m, url, &out) : -1;
        mount_unref(m);
        free(url);
        if (rc < 0)
            client_send_error(c, 500, "Internal Server Error");
        else
            reply_send(c, req, 200, kinds[i].ctype, out.p, out.len, REPLY_NO_CACHE);
        free(out.p);
        return 1;
    }
    return 0;
}
