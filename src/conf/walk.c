/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * walk: the engine that applies directive tables to a parsed icecast.xml: reading element text
 * and attributes, the typed setters (text, paths, mounts, bounded numbers and their words), the
 * walker over a section's children (unknown and deprecated elements warned about once, the
 * policy for settings not implemented yet consulted), the defaults and freeing of a table's
 * fields, and the "file:line:" errors and warnings. Knows no element names: the vocabulary is
 * in directives.c, reading the file and the libxml2 parse in config.c.
 */
#include <errno.h>
#include <libxml/tree.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/walk.h"

struct warned {
    struct warned *next;
    char key[];
};

const word_t config_bool_words[] = {
    {"true", 1}, {"false", 0}, {"yes", 1}, {"no", 0}, {"on", 1}, {"off", 0}, {NULL, 0},
};

/* ---------------------------------------------------------------- messages */

long config_line(xmlNodePtr n)
{
    return n ? xmlGetLineNo(n) : 0;
}

int config_err(parse_t *p, xmlNodePtr n, const char *fmt, ...)
{
    va_list ap;
    int k = snprintf(p->err, p->errlen, "%s:%ld: ", p->name, config_line(n));

    if (k >= 0 && (size_t)k < p->errlen) {
        va_start(ap, fmt);
        vsnprintf(p->err + k, p->errlen - k, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Keeps a warning in the config being built; a failed allocation only loses the copy. */
static void keep_warning(parse_t *p, const char *setting, long line, const char *text)
{
    config_warning_t *w = calloc(1, sizeof(*w)), **tail;

    if (!w || !p->c)
        goto fail;
    w->line = line;
    if (!(w->setting = strdup(setting ? setting : "")) || !(w->text = strdup(text)))
        goto fail;
    for (tail = &p->c->warnings; *tail; tail = &(*tail)->next)
        ;
    *tail = w;
    return;
fail:
    if (w) {
        free(w->setting);
        free(w->text);
    }
    free(w);
}

/* Warns through the callback and keeps the warning, at most once per key (NULL key: always). */
void config_warn_at(parse_t *p, const char *setting, const char *key, long line,
                    const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    int k;

    if (key) {
        for (warned_t *w = p->warned; w; w = w->next)
            if (strcmp(w->key, key) == 0)
                return;
        warned_t *w = malloc(sizeof(*w) + strlen(key) + 1);
        if (w) {
            strcpy(w->key, key);
            w->next = p->warned;
            p->warned = w;
        }
    }
    k = snprintf(msg, sizeof(msg), "%s:%ld: ", p->name, line);
    if (k < 0 || (size_t)k >= sizeof(msg))
        return;
    va_start(ap, fmt);
    vsnprintf(msg + k, sizeof(msg) - k, fmt, ap);
    va_end(ap);
    keep_warning(p, setting, line, msg + k);
    if (p->warn)
        p->warn(msg);
}

/* "unknown element" and "deprecated" warnings: once per (kind, section, element). */
static void warn_once(parse_t *p, xmlNodePtr n, const char *section, const char *kind,
                      const char *tail)
{
    char key[256];

    snprintf(key, sizeof(key), "%s/%s/%s", kind, section, (const char *)n->name);
    config_warn_at(p, (const char *)n->name, key, config_line(n), "%s<%s> in <%s>%s",
                   kind[0] == 'u' ? "unknown element " : "", (const char *)n->name, section, tail);
}

/* A value quoted for a message: at most 40 bytes, control bytes as '?'. */
const char *config_shown(const char *v, char *buf, size_t len)
{
    size_t i;

    for (i = 0; v[i] && i + 1 < len && i < 40; i++)
        buf[i] = ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) ? '?' : v[i];
    buf[i] = '\0';
    return buf;
}

/* ---------------------------------------------------------------- text and attributes */

/* Concatenates the text of a node list (element content or attribute value). Entity
 * references other than the predefined ones and nested elements are errors. */
static int collect_text(parse_t *p, xmlNodePtr owner, xmlNodePtr first, char **out)
{
    size_t len = 0;
    char *s = malloc(1);

    if (!s)
        return config_err(p, owner, "out of memory");
    s[0] = '\0';
    for (xmlNodePtr ch = first; ch; ch = ch->next) {
        if (ch->type == XML_TEXT_NODE || ch->type == XML_CDATA_SECTION_NODE) {
            size_t add = ch->content ? strlen((const char *)ch->content) : 0;
            char *t = realloc(s, len + add + 1);
            if (!t) {
                free(s);
                return config_err(p, owner, "out of memory");
            }
            s = t;
            memcpy(s + len, ch->content, add);
            len += add;
            s[len] = '\0';
        } else if (ch->type == XML_ENTITY_REF_NODE) {
            free(s);
            return config_err(p, owner, "entity reference &%s; in <%s> is not supported",
                              (const char *)ch->name, (const char *)owner->name);
        } else if (ch->type == XML_ELEMENT_NODE) {
            free(s);
            return config_err(p, ch, "unexpected element <%s> inside <%s>", (const char *)ch->name,
                              (const char *)owner->name);
        }
    }
    *out = s;
    return 0;
}

static void trim(char *s)
{
    size_t a = strspn(s, " \t\r\n"), n = strlen(s);

    while (n > a && strchr(" \t\r\n", s[n - 1]))
        n--;
    memmove(s, s + a, n - a);
    s[n - a] = '\0';
}

/* Attribute value (malloc'd, trimmed) or NULL with *out NULL when absent; -1 on error. */
int config_attr(parse_t *p, xmlNodePtr n, const char *name, char **out)
{
    xmlAttrPtr a = xmlHasProp(n, (const xmlChar *)name);

    *out = NULL;
    if (!a)
        return 0;
    if (collect_text(p, n, a->children, out))
        return -1;
    trim(*out);
    return 0;
}

int config_attr_required(parse_t *p, xmlNodePtr n, const char *name, char **out)
{
    if (config_attr(p, n, name, out))
        return -1;
    if (!*out || !**out) {
        free(*out);
        *out = NULL;
        return config_err(p, n, "<%s> needs a non-empty %s=\"...\" attribute",
                          (const char *)n->name, name);
    }
    return 0;
}

/* ---------------------------------------------------------------- generic setters */

int config_number(parse_t *p, xmlNodePtr n, const directive_t *d, const char *v,
                  long *out)
{
    char buf[48], *end;
    long x;

    for (const word_t *w = d->words; w && w->text; w++)
        if (strcasecmp(v, w->text) == 0) {
            *out = w->value;
            return 0;
        }
    errno = 0;
    x = strtol(v, &end, 10);
    if ((d->flags & F_BITRATE) && end != v && end[0] && !end[1] && strchr("kKmM", end[0])) {
        long unit = end[0] == 'k' || end[0] == 'K' ? 1000 : 1000000;
        errno = x > LONG_MAX / unit || x < LONG_MIN / unit ? ERANGE : errno;
        x *= errno ? 1 : unit;
        end++;
    }
    if (end == v || *end)
        return config_err(p, n, "<%s> value \"%s\" is not %s", d->name,
                          config_shown(v, buf, sizeof(buf)),
                          d->type == D_BOOL ? "a boolean (0/1, true/false, yes/no, on/off)"
                          : d->flags & F_BITRATE ? "a bit rate (133572, 128k, 1m)"
                          : "a number");
    if (errno == ERANGE || x < d->min || x > d->max)
        return config_err(p, n, "<%s> value %s is out of range (%ld..%ld)", d->name,
                          config_shown(v, buf, sizeof(buf)), d->min, d->max);
    *out = x;
    return 0;
}

int config_set_value(parse_t *p, xmlNodePtr n, const directive_t *d, void *obj)
{
    char *v = NULL, *field = (char *)obj + d->off;
    long x;

    if (collect_text(p, n, n->children, &v))
        return -1;
    if (d->type != D_STR)
        trim(v);
    if (v[strspn(v, " \t\r\n")] == '\0' && !(d->flags & F_EMPTY_OK)) {
        free(v);
        return config_err(p, n, "<%s> is empty", d->name);
    }
    if (d->type == D_MOUNT && v[0] != '/') {
        char buf[48];
        config_err(p, n, "<%s> \"%s\" must start with '/'", d->name,
                   config_shown(v, buf, sizeof(buf)));
        free(v);
        return -1;
    }
    if (d->type == D_STR || d->type == D_PATH || d->type == D_MOUNT) {
        free(*(char **)field);
        *(char **)field = v;
        return 0;
    }
    if (config_number(p, n, d, v, &x)) {
        free(v);
        return -1;
    }
    free(v);
    if (d->type == D_LONG)
        *(long *)field = x;
    else
        *(int *)field = (int)x;
    return 0;
}

/* Whether the value of an element that is not stored asks for anything: not empty, 0 or a
 * boolean word for "no". */
static int text_enabled(xmlNodePtr n)
{
    static const char *const off[] = {"", "0", "no", "false", "off", NULL};
    char *v = (char *)xmlNodeGetContent(n);
    int on = 1;

    if (v) {
        trim(v);
        for (int i = 0; off[i] && on; i++)
            on = strcasecmp(v, off[i]) != 0;
        xmlFree(v);
    }
    return on;
}

/* Whether the value just stored asks for the feature: a non-zero number, any text. */
static int value_enabled(const directive_t *d, const void *obj, xmlNodePtr n)
{
    const char *field = (const char *)obj + d->off;

    switch (d->type) {
    case D_IGNORE: return text_enabled(n);
    case D_INT:
    case D_BOOL: return *(const int *)field != 0;
    case D_LONG: return *(const long *)field != 0;
    case D_STR:
    case D_PATH:
    case D_MOUNT: return *(char *const *)field != NULL;
    default: return 1;
    }
}

int config_walk(parse_t *p, xmlNodePtr parent, const section_t *sec, void *obj)
{
    for (xmlNodePtr n = parent->children; n; n = n->next) {
        const directive_t *d = sec->dirs;
        int rc = 0;

        if (n->type != XML_ELEMENT_NODE)
            continue;
        while (d->name && strcmp(d->name, (const char *)n->name) != 0)
            d++;
        if (!d->name) {
            warn_once(p, n, sec->name, "unknown element", ", ignored");
            continue;
        }
        if (d->flags & F_DEPRECATED) {
            char tail[160];
            snprintf(tail, sizeof(tail), " is deprecated: %s", d->note);
            warn_once(p, n, sec->name, "deprecated", tail);
        }
        switch (d->type) {
        case D_SECTION: rc = config_walk(p, n, d->sub, obj); break;
        case D_FN: rc = d->fn(p, n, obj); break;
        case D_IGNORE: break;
        default: rc = config_set_value(p, n, d, obj); break;
        }
        if (rc || config_policy_apply(p, n, sec->name, NULL, value_enabled(d, obj, n)))
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- defaults and freeing */

static int is_text(dtype_t t)
{
    return t == D_STR || t == D_PATH || t == D_MOUNT;
}

int config_set_defaults(const section_t *sec, void *obj)
{
    for (const directive_t *d = sec->dirs; d->name; d++) {
        char *field = (char *)obj + d->off;
        if (d->type == D_SECTION) {
            if (config_set_defaults(d->sub, obj))
                return -1;
        } else if (!(d->flags & F_DEFAULT)) {
            continue;
        } else if (is_text(d->type)) {
            if (!*(char **)field && !(*(char **)field = strdup(d->sdef)))
                return -1;
        } else if (d->type == D_LONG) {
            *(long *)field = d->def;
        } else if (d->type == D_INT || d->type == D_BOOL) {
            *(int *)field = (int)d->def;
        }
    }
    return 0;
}

void config_free_fields(const section_t *sec, void *obj)
{
    for (const directive_t *d = sec->dirs; d->name; d++) {
        char **field = (char **)((char *)obj + d->off);
        if (d->type == D_SECTION)
            config_free_fields(d->sub, obj);
        else if (is_text(d->type)) {
            free(*field);
            *field = NULL;
        }
    }
}

void config_forget_warned(parse_t *p)
{
    while (p->warned) {
        warned_t *w = p->warned;
        p->warned = w->next;
        free(w);
    }
}
