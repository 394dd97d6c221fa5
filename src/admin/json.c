/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * json: XML document -> JSON (see json.h). One recursive walk over the element tree appends
 * to a buf_t; an allocation failure is noticed once, at the end. The walk follows the shape
 * of our own documents (repeated elements are adjacent), not arbitrary XML.
 */
#include "admin/json.h"

#include <string.h>

#include "core/buf.h"
#include "core/escape.h"

static void json_string(buf_t *b, const char *s)
{
    escape_json_buf(b, s, strlen(s), 1);
}

static int is_plain_number(const char *s)
{
    const char *p = s;
    if (*p == '-')
        p++;
    if (!(*p >= '0' && *p <= '9'))
        return 0;
    if (*p == '0' && p[1] >= '0' && p[1] <= '9')
        return 0;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (digits > 15)
        return 0;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9'))
            return 0;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return *p == '\0';
}

typedef struct json_opts {
    int attributes;                       /* emit attributes as keys */
    int (*skip)(const xmlNode *parent, const xmlNode *child);
} json_opts_t;

/* Elements that are lists even when there is one (or none): by name, and "line" only as a line
 * of the log document (a config warning's <line> is its line number). */
static int always_array(const xmlNode *n)
{
    const xmlChar *name = n->name;
    if (xmlStrcmp(name, BAD_CAST "line") == 0)
        return n->parent && n->parent->type == XML_ELEMENT_NODE &&
               xmlStrcmp(n->parent->name, BAD_CAST "log") == 0;
    return xmlStrcmp(name, BAD_CAST "source") == 0 || xmlStrcmp(name, BAD_CAST "listener") == 0 ||
           xmlStrcmp(name, BAD_CAST "User") == 0 || xmlStrcmp(name, BAD_CAST "warning") == 0 ||
           xmlStrcmp(name, BAD_CAST "sample") == 0 || xmlStrcmp(name, BAD_CAST "figures") == 0 ||
           xmlStrcmp(name, BAD_CAST "entry") == 0;
}

static int has_structure(const xmlNode *n, const json_opts_t *o)
{
    if (o->attributes && n->properties)
        return 1;
    for (const xmlNode *c = n->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE)
            return 1;
    return 0;
}

static const xmlNode *child_named(const xmlNode *n, const char *name)
{
    for (const xmlNode *c = n->children; c; c = c->next)
        if (c->type == XML_ELEMENT_NODE && xmlStrcmp(c->name, BAD_CAST name) == 0)
            return c;
    return NULL;
}

static void json_value(buf_t *b, const xmlNode *n, const json_opts_t *o);

static void json_key(buf_t *b, const xmlChar *name, int *first)
{
    if (!*first)
        buf_append_char(b, ',');
    *first = 0;
    json_string(b, (const char *)name);
    buf_append_char(b, ':');
}

/* Keys an object must carry even when the document has none of them (as empty arrays). */
static void json_required_arrays(buf_t *b, const xmlNode *n, int *first)
{
    if (xmlStrcmp(n->name, BAD_CAST "icestats") == 0 && !child_named(n, "source")) {
        json_key(b, BAD_CAST "source", first);
        buf_append_str(b, "[]");
    }
    if (xmlStrcmp(n->name, BAD_CAST "source") == 0 && child_named(n, "Listeners") &&
        !child_named(n, "listener")) {
        json_key(b, BAD_CAST "listener", first);
        buf_append_str(b, "[]");
    }
}

static void json_object(buf_t *b, const xmlNode *n, const json_opts_t *o)
{
    int first = 1;
    buf_append_char(b, '{');
    for (const xmlAttr *a = o->attributes ? n->properties : NULL; a; a = a->next) {
        xmlChar *v = xmlNodeGetContent((const xmlNode *)a);
        json_key(b, a->name, &first);
        json_string(b, v ? (const char *)v : "");
        xmlFree(v);
    }
    for (const xmlNode *c = n->children; c; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || (o->skip && o->skip(n, c)))
            continue;
        /* our documents keep repeated elements together: a run of one name is one key */
        const xmlNode *prev = c->prev;
        while (prev && prev->type != XML_ELEMENT_NODE)
            prev = prev->prev;
        if (prev && xmlStrcmp(prev->name, c->name) == 0)
            continue;
        int count = 0;
        for (const xmlNode *d = c; d; d = d->next) {
            if (d->type != XML_ELEMENT_NODE)
                continue;
            if (xmlStrcmp(d->name, c->name) != 0)
                break;
            count++;
        }
        json_key(b, c->name, &first);
        if (count == 1 && !always_array(c)) {
            json_value(b, c, o);
            continue;
        }
        buf_append_char(b, '[');
        int ifirst = 1;
        for (const xmlNode *d = c; d; d = d->next) {
            if (d->type != XML_ELEMENT_NODE)
                continue;
            if (xmlStrcmp(d->name, c->name) != 0)
                break;
            if (!ifirst)
                buf_append_char(b, ',');
            ifirst = 0;
            json_value(b, d, o);
        }
        buf_append_char(b, ']');
    }
    json_required_arrays(b, n, &first);
    buf_append_char(b, '}');
}

static void json_value(buf_t *b, const xmlNode *n, const json_opts_t *o)
{
    if (has_structure(n, o) || xmlStrcmp(n->name, BAD_CAST "icestats") == 0 ||
        always_array(n)) {
        json_object(b, n, o);
        return;
    }
    xmlChar *text = xmlNodeGetContent(n);
    const char *t = text ? (const char *)text : "";
    if (is_plain_number(t))
        buf_append_str(b, t);
    else
        json_string(b, t);
    xmlFree(text);
}

static char *json_doc(xmlDocPtr doc, size_t *len, const json_opts_t *o)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    buf_t b = BUF_INIT;
    buf_append_char(&b, '{');
    if (root) {
        json_string(&b, (const char *)root->name);
        buf_append_char(&b, ':');
        json_value(&b, root, o);
    }
    buf_append_str(&b, "}\n");
    return buf_take(&b, len);
}

char *json_render(xmlDocPtr doc, size_t *len)
{
    json_opts_t o = {.attributes = 1};
    return json_doc(doc, len, &o);
}

/* What Icecast's status-json.xsl leaves out. */
static int status_json_skip(const xmlNode *parent, const xmlNode *c)
{
    static const char *const global[] = {"sources", "clients", "stats", "listeners", NULL};
    static const char *const source[] = {"max_listeners", "public", "source_ip", "slow_listeners",
                                         "user_agent", "content-type", NULL};
    const char *name = (const char *)c->name;
    if (strstr(name, "connections"))
        return 1;
    int is_root = xmlStrcmp(parent->name, BAD_CAST "icestats") == 0;
    const char *const *list = is_root ? global : source;
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], name) == 0)
            return 1;
    return !is_root && strstr(name, "total_bytes") != NULL;
}

char *json_render_status(xmlDocPtr doc, size_t *len)
{
    json_opts_t o = {.attributes = 0, .skip = status_json_skip};
    return json_doc(doc, len, &o);
}
