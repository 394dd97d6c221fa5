/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config: loads icecast.xml into an immutable config_t. Owns reading the file, the libxml2
 * parse (no network, no entity expansion, libxml2's own message on malformed XML), the
 * defaults, the implied Shoutcast sockets and freeing. The engine that applies
 * directive tables (typed setters, walker, "file:line:" messages) is in walk.c, the vocabulary
 * (which element sets which field) in directives.c. Resolving log paths against logdir is the
 * caller's job.
 */
#include <errno.h>
#include <fcntl.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/directives.h"
#include "conf/walk.h"

#define CONFIG_MAX_FILE (16 * 1024 * 1024)

static config_t *config_new(const char *name)
{
    config_t *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    if (!(c->filename = strdup(name)) || directives_defaults(c)) {
        config_free(c);
        return NULL;
    }
    return c;
}

void config_free(config_t *c)
{
    if (!c)
        return;
    directives_free(c);
    free(c->filename);
    for (config_warning_t *w = c->warnings, *next; w; w = next) {
        next = w->next;
        free(w->setting);
        free(w->text);
        free(w);
    }
    free(c);
}

/* ---------------------------------------------------------------- completion */

static int same_address(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* A <listen-socket> with <shoutcast-mount> also listens on port + 1 for Shoutcast sources of
 * that mount (as Icecast does), unless that socket is already defined. */
static int add_shoutcast_sockets(config_t *c)
{
    for (listen_conf_t *l = c->listen; l; l = l->next) {
        listen_conf_t *sc, *o;

        if (!l->shoutcast_mount || l->shoutcast_compat)
            continue;
        for (o = c->listen; o; o = o->next)
            if (o->port == l->port + 1 && same_address(o->bind_address, l->bind_address))
                break;
        if (o)
            continue;
        if (!(sc = calloc(1, sizeof(*sc))))
            return -1;
        sc->next = l->next;
        l->next = sc;
        sc->port = l->port + 1;
        sc->shoutcast_compat = 1;
        sc->so_sndbuf = l->so_sndbuf;
        if (!(sc->shoutcast_mount = strdup(l->shoutcast_mount)) ||
            (l->bind_address && !(sc->bind_address = strdup(l->bind_address))))
            return -1;
        l = sc;
    }
    return 0;
}

/* ---------------------------------------------------------------- loading */

/* The first error libxml2 reports, kept with its line. */
typedef struct xml_errors {
    char message[256];
    int line;
} xml_errors_t;

#if LIBXML_VERSION >= 21200
static void on_xml_error(void *ctx, const xmlError *e)
#else
static void on_xml_error(void *ctx, xmlErrorPtr e)
#endif
{
    xml_errors_t *x = ((xmlParserCtxtPtr)ctx)->_private;

    if (!x || x->message[0] || !e || e->level < XML_ERR_ERROR)
        return;
    snprintf(x->message, sizeof(x->message), "%s", e->message ? e->message : "malformed XML");
    x->message[strcspn(x->message, "\r\n")] = '\0';
    x->line = e->line;
}

static void quiet(void *ctx, const char *fmt, ...)
{
    (void)ctx;
    (void)fmt;
}

/* Parses buf without network access and without substituting entities (no XML_PARSE_NOENT,
 * no DTD loading). */
static xmlDocPtr parse_xml(const char *buf, size_t len, const char *name, char *err,
                           size_t errlen)
{
    xml_errors_t x = {{0}, 0};
    xmlGenericErrorFunc old_fn;
    void *old_ctx;
    xmlParserCtxtPtr ctxt;
    xmlDocPtr doc = NULL;

    if (len > CONFIG_MAX_FILE) {
        snprintf(err, errlen, "%s:0: file too large", name);
        return NULL;
    }
    if (len == 0) {
        snprintf(err, errlen, "%s:1: empty file, expected <icecast>", name);
        return NULL;
    }
    if (!(ctxt = xmlCreateMemoryParserCtxt(buf, (int)len))) {
        snprintf(err, errlen, "%s:0: out of memory", name);
        return NULL;
    }
    ctxt->_private = &x;
    ctxt->sax->serror = on_xml_error;
    xmlCtxtUseOptions(ctxt, XML_PARSE_NONET | XML_PARSE_BIG_LINES | XML_PARSE_NOWARNING);
    /* errors raised without the context (encoding conversion) would go to stderr */
    old_fn = xmlGenericError;
    old_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, quiet);
    xmlParseDocument(ctxt);
    xmlSetGenericErrorFunc(old_ctx, old_fn);
    doc = ctxt->myDoc;
    ctxt->myDoc = NULL;
    if (!ctxt->wellFormed || !doc) {
        snprintf(err, errlen, "%s:%d: %s", name, x.message[0] ? x.line : 0,
                 x.message[0] ? x.message : "malformed XML");
        xmlFreeDoc(doc);
        doc = NULL;
    }
    xmlFreeParserCtxt(ctxt);
    return doc;
}

int config_load_buffer(const char *buf, size_t len, const char *name, config_t **out, char *err,
                       size_t errlen, config_warn_fn warn)
{
    parse_t p = {.name = name, .err = err, .errlen = errlen, .warn = warn};
    char spare[8];
    xmlDocPtr doc = NULL;
    xmlNodePtr root;
    int rc = -1;

    *out = NULL;
    if (!err || !errlen) {
        p.err = err = spare;
        p.errlen = errlen = sizeof(spare);
    }
    err[0] = '\0';
    if (!(doc = parse_xml(buf, len, name, err, errlen)))
        return -1;
    if (!(p.c = config_new(name))) {
        snprintf(err, errlen, "%s:0: out of memory", name);
        goto done;
    }
    root = xmlDocGetRootElement(doc);
    if (!root || strcmp((const char *)root->name, "icecast") != 0) {
        config_err(&p, root, "root element is <%s>, expected <icecast>",
                   root ? (const char *)root->name : "");
        goto done;
    }
    if (directives_apply(&p, root))
        goto done;
    if (add_shoutcast_sockets(p.c)) {
        config_err(&p, root, "out of memory");
        goto done;
    }
    *out = p.c;
    p.c = NULL;
    rc = 0;
done:
    config_forget_warned(&p);
    free(p.root_bind);
    config_free(p.c);
    xmlFreeDoc(doc);
    return rc;
}

static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) != 0)
        goto fail;
    if (!S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX_FILE) {
        errno = S_ISREG(st.st_mode) ? EFBIG : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        goto fail;
    }
    if (!(buf = malloc((size_t)st.st_size + 1)))
        goto fail;
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            goto fail;
        got += (size_t)n;
    }
    buf[got] = '\0';
    close(fd);
    *len = got;
    return buf;
fail:
    snprintf(err, errlen, "%s:0: cannot read: %s", path, strerror(errno ? errno : EIO));
    if (fd >= 0)
        close(fd);
    free(buf);
    return NULL;
}

int config_load(const char *path, config_t **out, char *err, size_t errlen, config_warn_fn warn)
{
    size_t len = 0;
    char *buf = read_file(path, &len, err, errlen);
    int rc;

    *out = NULL;
    if (!buf)
        return -1;
    rc = config_load_buffer(buf, len, path, out, err, errlen, warn);
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- lookups */

char *config_path(const char *base, const char *path)
{
    size_t blen;
    char *s;

    if (!path)
        return NULL;
    if (path[0] == '/' || strcmp(path, "-") == 0 || !base || !*base)
        return strdup(path);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    blen = strlen(base);
    while (blen > 1 && base[blen - 1] == '/')
        blen--;
    if (!(s = malloc(blen + strlen(path) + 2)))
        return NULL;
    sprintf(s, "%.*s%s%s", (int)blen, base, base[blen - 1] == '/' ? "" : "/", path);
    return s;
}
