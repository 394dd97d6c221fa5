/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xslt: stylesheet cache and transforms, and the JSON rendering of documents (see xslt.h).
 */
#include "admin/xslt.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <libxslt/imports.h>
#include <libxslt/security.h>
#include <libxslt/transform.h>
#include <libxslt/xsltInternals.h>
#include <libxslt/xsltutils.h>

#include "core/log.h"
#include "core/escape.h"

/* ---- stylesheet cache ---- */

typedef struct sheet {
    char *path;
    struct timespec mtime;
    off_t size;
    xsltStylesheetPtr style;
    int refs;  /* users + 1 while cached */
    struct sheet *next;
} sheet_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static sheet_t *cache;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void xslt_quiet(void *ctx, const char *fmt, ...)
{
    (void)ctx;
    char msg[512], esc[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    if (n)
        log_debug("xslt: %s", escape_log(esc, sizeof(esc), msg, n));
}

static void init_once_fn(void)
{
    xsltSetGenericErrorFunc(NULL, xslt_quiet);
}

/* libxml2's error handler is per thread: each worker sets its own once. */
static void init_thread(void)
{
    static __thread int done;
    pthread_once(&init_once, init_once_fn);
    if (!done) {
        xmlSetGenericErrorFunc(NULL, xslt_quiet);
        done = 1;
    }
}

static void sheet_release_locked(sheet_t *s)
{
    if (--s->refs > 0)
        return;
    xsltFreeStylesheet(s->style);
    free(s->path);
    free(s);
}

/* Returns a referenced sheet for path, compiling it when new or changed. */
static sheet_t *sheet_get(const char *path, int *err)
{
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
        *err = -ENOENT;
        return NULL;
    }
    pthread_mutex_lock(&cache_lock);
    sheet_t **pp = &cache;
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->path, path) == 0)
            break;
    sheet_t *s = *pp;
    if (s && s->size == st.st_size && s->mtime.tv_sec == st.st_mtim.tv_sec &&
        s->mtime.tv_nsec == st.st_mtim.tv_nsec) {
        s->refs++;
        pthread_mutex_unlock(&cache_lock);
        return s;
    }
    if (s) { /* changed on disk: uncache, free when its last user is done */
        *pp = s->next;
        sheet_release_locked(s);
    }
    sheet_t *n = calloc(1, sizeof(*n));
    xsltStylesheetPtr style = n ? xsltParseStylesheetFile(BAD_CAST path) : NULL;
    if (!style || !(n->path = strdup(path))) {
        if (style)
            xsltFreeStylesheet(style);
        free(n);
        pthread_mutex_unlock(&cache_lock);
        log_warn("stylesheet %s does not compile", path);
        *err = -EINVAL;
        return NULL;
    }
    n->style = style;
    n->mtime = st.st_mtim;
    n->size = st.st_size;
    n->refs = 2;
    n->next = cache;
    cache = n;
    pthread_mutex_unlock(&cache_lock);
    return n;
}

static void sheet_put(sheet_t *s)
{
    pthread_mutex_lock(&cache_lock);
    sheet_release_locked(s);
    pthread_mutex_unlock(&cache_lock);
}

void xslt_cleanup(void)
{
    pthread_mutex_lock(&cache_lock);
    while (cache) {
        sheet_t *s = cache;
        cache = s->next;
        sheet_release_locked(s);
    }
    pthread_mutex_unlock(&cache_lock);
}

static void content_type(xsltStylesheetPtr style, xmlDocPtr res, char *ctype, size_t cap)
{
    const xmlChar *media = NULL, *method = NULL, *enc = NULL;
    XSLT_GET_IMPORT_PTR(media, style, mediaType);
    XSLT_GET_IMPORT_PTR(method, style, method);
    XSLT_GET_IMPORT_PTR(enc, style, encoding);
    const char *type = (const char *)media;
    if (!type && method && xmlStrcmp(method, BAD_CAST "html") == 0)
        type = "text/html";
    else if (!type && method && xmlStrcmp(method, BAD_CAST "text") == 0)
        type = "text/plain";
    else if (!type) {
        xmlNodePtr root = res ? xmlDocGetRootElement(res) : NULL;
        int html = root && xmlStrcasecmp(root->name, BAD_CAST "html") == 0;
        type = html ? "text/html" : "text/xml";
    }
    snprintf(ctype, cap, "%s; charset=%s", type, enc ? (const char *)enc : "UTF-8");
}

static xmlDocPtr transform(xsltStylesheetPtr style, xmlDocPtr doc)
{
    xsltTransformContextPtr ctx = xsltNewTransformContext(style, doc);
    xsltSecurityPrefsPtr sec = xsltNewSecurityPrefs();
    xmlDocPtr res = NULL;
    if (ctx && sec) {
        xsltSetSecurityPrefs(sec, XSLT_SECPREF_WRITE_FILE, xsltSecurityForbid);
        xsltSetSecurityPrefs(sec, XSLT_SECPREF_CREATE_DIRECTORY, xsltSecurityForbid);
        xsltSetSecurityPrefs(sec, XSLT_SECPREF_READ_NETWORK, xsltSecurityForbid);
        xsltSetSecurityPrefs(sec, XSLT_SECPREF_WRITE_NETWORK, xsltSecurityForbid);
        xsltSetCtxtSecurityPrefs(sec, ctx);
        res = xsltApplyStylesheetUser(style, doc, NULL, NULL, NULL, ctx);
        if (res && ctx->state != XSLT_STATE_OK) {
            xmlFreeDoc(res);
            res = NULL;
        }
    }
    if (ctx)
        xsltFreeTransformContext(ctx);
    if (sec)
        xsltFreeSecurityPrefs(sec);
    return res;
}

int xslt_apply(const char *path, xmlDocPtr doc, char **out, size_t *len, char *ctype,
               size_t ctype_cap)
{
    init_thread();
    int err = 0;
    sheet_t *s = sheet_get(path, &err);
    if (!s)
        return err;
    xmlDocPtr res = transform(s->style, doc);
    xmlChar *buf = NULL;
    int blen = 0;
    err = -EINVAL;
    if (res && xsltSaveResultToString(&buf, &blen, res, s->style) == 0) {
        content_type(s->style, res, ctype, ctype_cap);
        *out = malloc((size_t)blen + 1);
        err = *out ? 0 : -ENOMEM;
        if (*out) {
            if (blen)
                memcpy(*out, buf, (size_t)blen);
            (*out)[blen] = '\0';
            *len = (size_t)blen;
        }
    }
    if (err == -EINVAL)
        log_warn("stylesheet %s failed to transform", path);
    xmlFree(buf);
    if (res)
        xmlFreeDoc(res);
    sheet_put(s);
    return err;
}

/* ---- JSON ---- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
    int failed;
} sbuf_t;

static void sb_add(sbuf_t *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap : 1024;
        while (ncap < b->len + n + 1)
            ncap *= 2;
        char *np = realloc(b->p, ncap);
        if (!np) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_str(sbuf_t *b, const char *s)
{
    sb_add(b, s, strlen(s));
}

static void sb_json_string(sbuf_t *b, const char *s)
{
    char *esc = escape_json(s, strlen(s));
    if (!esc) {
        b->failed = 1;
        return;
    }
    sb_add(b, "\"", 1);
    sb_str(b, esc);
    sb_add(b, "\"", 1);
    free(esc);
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

static int always_array(const xmlChar *name)
{
    return xmlStrcmp(name, BAD_CAST "source") == 0 || xmlStrcmp(name, BAD_CAST "listener") == 0 ||
           xmlStrcmp(name, BAD_CAST "User") == 0;
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

static void json_value(sbuf_t *b, const xmlNode *n, const json_opts_t *o);

static void json_key(sbuf_t *b, const xmlChar *name, int *first)
{
    if (!*first)
        sb_add(b, ",", 1);
    *first = 0;
    sb_json_string(b, (const char *)name);
    sb_add(b, ":", 1);
}

/* Keys an object must carry even when the document has none of them (as empty arrays). */
static void json_required_arrays(sbuf_t *b, const xmlNode *n, int *first)
{
    if (xmlStrcmp(n->name, BAD_CAST "icestats") == 0 && !child_named(n, "source")) {
        json_key(b, BAD_CAST "source", first);
        sb_str(b, "[]");
    }
    if (xmlStrcmp(n->name, BAD_CAST "source") == 0 && child_named(n, "Listeners") &&
        !child_named(n, "listener")) {
        json_key(b, BAD_CAST "listener", first);
        sb_str(b, "[]");
    }
}

static void json_object(sbuf_t *b, const xmlNode *n, const json_opts_t *o)
{
    int first = 1;
    sb_add(b, "{", 1);
    for (const xmlAttr *a = o->attributes ? n->properties : NULL; a; a = a->next) {
        xmlChar *v = xmlNodeGetContent((const xmlNode *)a);
        json_key(b, a->name, &first);
        sb_json_string(b, v ? (const char *)v : "");
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
        if (count == 1 && !always_array(c->name)) {
            json_value(b, c, o);
            continue;
        }
        sb_add(b, "[", 1);
        int ifirst = 1;
        for (const xmlNode *d = c; d; d = d->next) {
            if (d->type != XML_ELEMENT_NODE)
                continue;
            if (xmlStrcmp(d->name, c->name) != 0)
                break;
            if (!ifirst)
                sb_add(b, ",", 1);
            ifirst = 0;
            json_value(b, d, o);
        }
        sb_add(b, "]", 1);
    }
    json_required_arrays(b, n, &first);
    sb_add(b, "}", 1);
}

static void json_value(sbuf_t *b, const xmlNode *n, const json_opts_t *o)
{
    if (has_structure(n, o) || xmlStrcmp(n->name, BAD_CAST "icestats") == 0 ||
        always_array(n->name)) {
        json_object(b, n, o);
        return;
    }
    xmlChar *text = xmlNodeGetContent(n);
    const char *t = text ? (const char *)text : "";
    if (is_plain_number(t))
        sb_str(b, t);
    else
        sb_json_string(b, t);
    xmlFree(text);
}

static char *json_doc(xmlDocPtr doc, size_t *len, const json_opts_t *o)
{
    xmlNodePtr root = xmlDocGetRootElement(doc);
    sbuf_t b = {0};
    sb_add(&b, "{", 1);
    if (root) {
        sb_json_string(&b, (const char *)root->name);
        sb_add(&b, ":", 1);
        json_value(&b, root, o);
    }
    sb_add(&b, "}\n", 2);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

char *xslt_json(xmlDocPtr doc, size_t *len)
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

char *xslt_status_json(xmlDocPtr doc, size_t *len)
{
    json_opts_t o = {.attributes = 0, .skip = status_json_skip};
    return json_doc(doc, len, &o);
}
