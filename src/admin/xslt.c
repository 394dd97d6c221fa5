/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xslt: the stylesheet cache and transforms (see xslt.h). The cache is a list of compiled
 * sheets under one mutex; the JSON view of documents is admin/json.c.
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
#include <libxslt/variables.h>
#include <libxslt/xsltInternals.h>
#include <libxslt/xsltutils.h>

#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"

typedef struct sheet {
    char *path;
    struct timespec mtime;
    off_t size;
    xsltStylesheetPtr style;
    int refs;     /* users + 1 while cached */
    list_t link;  /* in cache while cached, else unlinked */
} sheet_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static list_t cache = LIST_INIT(cache);
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
    sheet_t *s = NULL, *it;
    list_foreach(it, &cache, sheet_t, link) {
        if (strcmp(it->path, path) == 0) {
            s = it;
            break;
        }
    }
    if (s && s->size == st.st_size && s->mtime.tv_sec == st.st_mtim.tv_sec &&
        s->mtime.tv_nsec == st.st_mtim.tv_nsec) {
        s->refs++;
        pthread_mutex_unlock(&cache_lock);
        return s;
    }
    if (s) { /* changed on disk: uncache, free when its last user is done */
        list_remove(&s->link);
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
    list_insert_head(&cache, &n->link);
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
    sheet_t *s, *tmp;
    list_foreach_safe(s, tmp, &cache, sheet_t, link) {
        list_remove(&s->link);
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

static xmlDocPtr transform(xsltStylesheetPtr style, xmlDocPtr doc, const char **params)
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
        /* quoted: values are string literals, whatever quotes they hold */
        if (params && xsltQuoteUserParams(ctx, params) != 0) {
            xsltFreeTransformContext(ctx);
            xsltFreeSecurityPrefs(sec);
            return NULL;
        }
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

int xslt_apply(const char *path, xmlDocPtr doc, const char **params, char **out, size_t *len,
               char *ctype, size_t ctype_cap)
{
    init_thread();
    int err = 0;
    sheet_t *s = sheet_get(path, &err);
    if (!s)
        return err;
    xmlDocPtr res = transform(s->style, doc, params);
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
