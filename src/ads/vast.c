/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vast: reading an ad server's VAST answer (see vast.h). The bytes are screened first (size,
 * NUL, DOCTYPE), then parsed into a libxml2 tree that is walked by element names (namespaces
 * ignored) and freed before returning; only text and CDATA children are read, so nothing an
 * entity would stand for is ever looked at.
 */
#include "ads/vast.h"

#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/utf8.h"

#define TEXT_MAX (VAST_URL_MAX + 64) /* an element's text read at most; longer is dropped */

static int is_el(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static xmlNode *child(const xmlNode *n, const char *name)
{
    for (xmlNode *c = n->children; c; c = c->next)
        if (is_el(c, name))
            return c;
    return NULL;
}

/* The text and CDATA of n, blanks around it trimmed, into buf; -1 when it does not fit. */
static int text_of(const xmlNode *n, char *buf, size_t cap)
{
    size_t len = 0;
    for (const xmlNode *c = n->children; c; c = c->next) {
        if ((c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE) || !c->content)
            continue;
        size_t l = strlen((const char *)c->content);
        if (len + l >= cap)
            return -1;
        memcpy(buf + len, c->content, l);
        len += l;
    }
    buf[len] = '\0';
    size_t a = 0;
    while (a < len && strchr(" \t\r\n", buf[a]))
        a++;
    while (len > a && strchr(" \t\r\n", buf[len - 1]))
        len--;
    memmove(buf, buf + a, len - a);
    buf[len - a] = '\0';
    return 0;
}

/* An attribute's value copied into buf (cut to fit), lower-cased if asked; "" when absent. */
static void attr_of(const xmlNode *n, const char *name, char *buf, size_t cap, int lower)
{
    buf[0] = '\0';
    xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
    if (!v)
        return;
    size_t j = 0;
    for (const xmlChar *p = v; *p && j + 1 < cap; p++)
        if (*p > 0x20 && *p < 0x7f) /* printable ASCII: ids, types, numbers */
            buf[j++] = lower && *p >= 'A' && *p <= 'Z' ? (char)(*p + 32) : (char)*p;
    buf[j] = '\0';
    xmlFree(v);
}

static int url_ok(const char *u)
{
    size_t len = strlen(u);
    if (len == 0 || len > VAST_URL_MAX)
        return 0;
    if (strncasecmp(u, "http://", 7) != 0 && strncasecmp(u, "https://", 8) != 0)
        return 0;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
            return 0;
    return 1;
}

int vast_urls_add(vast_urls_t *list, const char *url)
{
    if (list->n >= VAST_MAX_URLS)
        return 0;
    char *copy = strdup(url);
    if (!copy)
        return -ENOMEM;
    list->v[list->n++] = copy;
    return 0;
}

int vast_urls_extend(vast_urls_t *list, const vast_urls_t *from)
{
    for (int i = 0; i < from->n; i++)
        if (vast_urls_add(list, from->v[i]) < 0)
            return -ENOMEM;
    return 0;
}

void vast_urls_free(vast_urls_t *list)
{
    for (int i = 0; i < list->n; i++)
        free(list->v[i]);
    list->n = 0;
}

/* The URL in n's text, or NULL when there is none that may be kept. */
static char *url_dup(const xmlNode *n)
{
    char buf[TEXT_MAX];
    if (text_of(n, buf, sizeof(buf)) < 0 || !url_ok(buf))
        return NULL;
    return strdup(buf);
}

static int add_url(vast_urls_t *list, const xmlNode *n)
{
    char buf[TEXT_MAX];
    if (text_of(n, buf, sizeof(buf)) < 0 || !url_ok(buf))
        return 0;
    return vast_urls_add(list, buf);
}

unsigned vast_duration_ms(const char *s)
{
    unsigned h, m, sec, ms = 0;
    int used = 0;
    if (sscanf(s, "%2u:%2u:%2u%n", &h, &m, &sec, &used) != 3 || used != 8 || m > 59 || sec > 59)
        return 0;
    s += used;
    if (*s == '.') {
        unsigned scale = 100;
        for (s++; *s >= '0' && *s <= '9'; s++, scale /= 10)
            ms += scale * (unsigned)(*s - '0');
    }
    return *s ? 0 : ((h * 60 + m) * 60 + sec) * 1000 + ms;
}

/* The title (libxml2 hands out valid UTF-8): control characters made blanks, cut after the
 * last whole character within VAST_TITLE_MAX bytes. */
static char *title_dup(const xmlNode *n)
{
    char buf[TEXT_MAX];
    if (text_of(n, buf, sizeof(buf)) < 0)
        return NULL;
    size_t len = strlen(buf), keep = 0;
    while (keep < len) {
        size_t l = utf8_char_len(buf + keep, len - keep);
        if (l == 0 || keep + l > VAST_TITLE_MAX)
            break;
        keep += l;
    }
    buf[keep] = '\0';
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    return strdup(buf);
}

static const char *const event_names[VAST_EV_COUNT] = {
    "start", "firstQuartile", "midpoint", "thirdQuartile", "complete"};

static int read_tracking(vast_ad_t *ad, const xmlNode *events)
{
    for (xmlNode *t = events->children; t; t = t->next) {
        if (!is_el(t, "Tracking"))
            continue;
        char ev[32];
        attr_of(t, "event", ev, sizeof(ev), 0);
        for (int i = 0; i < VAST_EV_COUNT; i++)
            if (strcmp(ev, event_names[i]) == 0 && add_url(&ad->track[i], t) < 0)
                return -ENOMEM;
    }
    return 0;
}

static int read_media(vast_ad_t *ad, const xmlNode *files)
{
    for (xmlNode *f = files->children; f && ad->nmedia < VAST_MAX_MEDIA; f = f->next) {
        if (!is_el(f, "MediaFile"))
            continue;
        vast_media_t *m = &ad->media[ad->nmedia];
        char num[16];
        attr_of(f, "delivery", num, sizeof(num), 1);
        if (strcmp(num, "streaming") == 0)
            continue; /* a stream, not a file to fetch once */
        if (!(m->url = url_dup(f)))
            continue;
        attr_of(f, "type", m->type, sizeof(m->type), 1);
        attr_of(f, "codec", m->codec, sizeof(m->codec), 1);
        attr_of(f, "bitrate", num, sizeof(num), 0);
        m->bitrate = (unsigned)strtoul(num, NULL, 10);
        ad->nmedia++;
    }
    return 0;
}

/* The first <Creative> with a <Linear>: its duration, tracking and media files. */
static int read_linear(vast_ad_t *ad, const xmlNode *body)
{
    const xmlNode *creatives = child(body, "Creatives");
    for (xmlNode *c = creatives ? creatives->children : NULL; c; c = c->next) {
        const xmlNode *lin = is_el(c, "Creative") ? child(c, "Linear") : NULL;
        if (!lin)
            continue;
        attr_of(c, "id", ad->creative_id, sizeof(ad->creative_id), 0);
        if (!ad->creative_id[0])
            attr_of(c, "adId", ad->creative_id, sizeof(ad->creative_id), 0);
        const xmlNode *d = child(lin, "Duration"), *ev = child(lin, "TrackingEvents");
        const xmlNode *files = child(lin, "MediaFiles");
        char buf[64];
        if (d && text_of(d, buf, sizeof(buf)) == 0)
            ad->duration_ms = vast_duration_ms(buf);
        if ((ev && read_tracking(ad, ev) < 0) || (files && read_media(ad, files) < 0))
            return -ENOMEM;
        return 0;
    }
    return 0;
}

/* One <Ad>: 1 kept, 0 left out, -ENOMEM. */
static int read_ad(vast_ad_t *ad, const xmlNode *n)
{
    char num[16];
    attr_of(n, "id", ad->id, sizeof(ad->id), 0);
    attr_of(n, "sequence", num, sizeof(num), 0);
    long seq = strtol(num, NULL, 10);
    ad->sequence = seq > 0 && seq < 1000 ? (int)seq : 0;
    const xmlNode *body = child(n, "InLine");
    if (!body && (body = child(n, "Wrapper"))) {
        const xmlNode *tag = child(body, "VASTAdTagURI");
        ad->wrapper = 1;
        if (!tag || !(ad->tag_uri = url_dup(tag)))
            return 0;
    }
    if (!body)
        return 0;
    for (xmlNode *c = body->children; c; c = c->next) {
        int rc = 0;
        if (is_el(c, "Impression"))
            rc = add_url(&ad->impression, c);
        else if (is_el(c, "Error"))
            rc = add_url(&ad->error, c);
        else if (is_el(c, "AdTitle") && !ad->title)
            ad->title = title_dup(c);
        if (rc < 0)
            return rc;
    }
    return read_linear(ad, body) < 0 ? -ENOMEM : 1;
}

static void ad_free(vast_ad_t *ad)
{
    free(ad->tag_uri);
    free(ad->title);
    vast_urls_free(&ad->impression);
    vast_urls_free(&ad->error);
    for (int i = 0; i < VAST_EV_COUNT; i++)
        vast_urls_free(&ad->track[i]);
    for (int i = 0; i < ad->nmedia; i++)
        free(ad->media[i].url);
    memset(ad, 0, sizeof(*ad));
}

/* Bytes that are never parsed: a NUL (another encoding), a document type declaration. */
static int screened_out(const char *data, size_t len)
{
    if (len == 0 || len > VAST_MAX_BYTES || memchr(data, '\0', len))
        return 1;
    return memmem(data, len, "<!DOCTYPE", 9) != NULL || memmem(data, len, "<!ENTITY", 8) != NULL;
}

static int version_ok(const xmlNode *root)
{
    char v[16];
    attr_of(root, "version", v, sizeof(v), 0);
    return v[0] >= '2' && v[0] <= '4' && (v[1] == '\0' || v[1] == '.');
}

static int read_doc(vast_doc_t *doc, const xmlNode *root)
{
    for (xmlNode *c = root->children; c; c = c->next) {
        if (is_el(c, "Error")) {
            if (add_url(&doc->error, c) < 0)
                return -ENOMEM;
            continue;
        }
        if (!is_el(c, "Ad") || doc->nads >= VAST_MAX_ADS)
            continue;
        vast_ad_t *ad = &doc->ads[doc->nads];
        int rc = read_ad(ad, c);
        if (rc < 0)
            return rc;
        if (rc == 0)
            ad_free(ad);
        else
            doc->nads++;
    }
    return 0;
}

int vast_parse(const char *data, size_t len, vast_doc_t *doc)
{
    memset(doc, 0, sizeof(*doc));
    if (screened_out(data, len))
        return VAST_ERR_XML;
    int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_IGNORE_ENC;
    xmlDocPtr x = xmlReadMemory(data, (int)len, "vast.xml", "UTF-8", opts);
    if (!x)
        return VAST_ERR_XML;
    int rc = 0;
    const xmlNode *root = xmlDocGetRootElement(x);
    if (x->intSubset || x->extSubset)
        rc = VAST_ERR_XML;
    else if (!root || !is_el(root, "VAST"))
        rc = VAST_ERR_SCHEMA;
    else if (!version_ok(root))
        rc = VAST_ERR_VERSION;
    else if (read_doc(doc, root) < 0)
        rc = VAST_ERR_UNDEFINED; /* out of memory */
    xmlFreeDoc(x);
    if (rc)
        vast_free(doc);
    return rc;
}

void vast_free(vast_doc_t *doc)
{
    for (int i = 0; i < doc->nads; i++)
        ad_free(&doc->ads[i]);
    doc->nads = 0;
    vast_urls_free(&doc->error);
}
