/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config: loads icecast.xml into an immutable config_t. Owns reading the file, the libxml2
 * parse (no network, no entity expansion, libxml2's own message on malformed XML), the
 * defaults, the engine that applies directive tables (typed setters, walker, "file:line:"
 * messages), the implied Shoutcast sockets, freeing, and mount lookup. The vocabulary (which
 * element sets which field) is in directives.c. Resolving log paths against logdir is the
 * caller's job.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/xmlerror.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "conf/directives.h"

#ifndef PKGDATADIR
#define PKGDATADIR "/usr/local/share/rimecast"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/usr/local/var"
#endif

#define CONFIG_MAX_FILE (16 * 1024 * 1024)

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
    if (end == v || *end)
        return config_err(p, n, "<%s> value \"%s\" is not %s", d->name,
                          config_shown(v, buf, sizeof(buf)),
                          d->type == D_BOOL ? "a boolean (0/1, true/false, yes/no, on/off)"
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

/* Whether the value just stored asks for the feature: a non-zero number, any text. */
static int value_enabled(const directive_t *d, const void *obj)
{
    const char *field = (const char *)obj + d->off;

    switch (d->type) {
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
        if (rc || config_policy_apply(p, n, sec->name, NULL, value_enabled(d, obj)))
            return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- defaults and freeing */

static const struct {
    size_t off;
    const char *value;
} default_strings[] = {
    {offsetof(config_t, location), "Earth"},
    {offsetof(config_t, admin), "icemaster@localhost"},
    {offsetof(config_t, hostname), "localhost"},
    {offsetof(config_t, mime_types), "/etc/mime.types"},
    {offsetof(config_t, shoutcast_mount), "/stream"},
    {offsetof(config_t, master_username), "relay"},
    {offsetof(config_t, relay_user), "relay"},
    {offsetof(config_t, admin_user), "admin"},
    {offsetof(config_t, basedir), PKGDATADIR},
    {offsetof(config_t, logdir), LOCALSTATEDIR "/log/rimecast"},
    {offsetof(config_t, webroot), PKGDATADIR "/web"},
    {offsetof(config_t, adminroot), PKGDATADIR "/admin"},
    {offsetof(config_t, accesslog), "access.log"},
    {offsetof(config_t, errorlog), "error.log"},
};

static config_t *config_new(const char *name)
{
    config_t *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->fileserve = 1;
    c->master_update_interval = 120;
    c->sibling_poll_interval = 5;
    c->clients = 256;
    c->sources = 16;
    c->queue_size = 524288;
    c->client_timeout = 30;
    c->header_timeout = 15;
    c->source_timeout = 10;
    c->burst_size = 65536;
    c->write_window_ms = 500;
    c->script_timeout = 60;
    c->loglevel = 3;
    c->backoff = (login_backoff_conf_t){.failures = 5, .window = 60, .block = 2,
                                        .block_max = 300, .forget = 600, .ipv4_prefix = 32,
                                        .ipv6_prefix = 64, .exempt_local = 1};
    c->hls = (hls_conf_t){.enabled = 1, .target_duration = 6, .segments = 6,
                          .part_target_ms = 1000, .sessions = 1};
    if (!(c->filename = strdup(name)))
        goto fail;
    for (size_t i = 0; i < sizeof(default_strings) / sizeof(default_strings[0]); i++)
        if (!(*(char **)((char *)c + default_strings[i].off) = strdup(default_strings[i].value)))
            goto fail;
    return c;
fail:
    config_free(c);
    return NULL;
}

static void free_headers(http_header_conf_t *h)
{
    while (h) {
        http_header_conf_t *next = h->next;
        free(h->name);
        free(h->value);
        free(h);
        h = next;
    }
}

static void free_mount(mount_conf_t *m)
{
    char *strings[] = {m->mount_name, m->username, m->password, m->dump_file, m->intro,
                       m->fallback_mount, m->charset, m->stream_name, m->stream_description,
                       m->stream_url, m->genre, m->bitrate, m->type, m->subtype,
                       m->cluster_password, m->on_connect, m->on_disconnect};

    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        free(strings[i]);
    if (m->auth) {
        for (kv_conf_t *kv = m->auth->options, *next; kv; kv = next) {
            next = kv->next;
            free(kv->name);
            free(kv->value);
            free(kv);
        }
        free(m->auth->type);
        free(m->auth);
    }
    free_headers(m->http_headers);
    free(m);
}

static void free_lists(config_t *c)
{
    for (listen_conf_t *l = c->listen, *next; l; l = next) {
        next = l->next;
        free(l->bind_address);
        free(l->shoutcast_mount);
        free(l);
    }
    for (relay_conf_t *r = c->relays, *next; r; r = next) {
        next = r->next;
        free(r->server);
        free(r->mount);
        free(r->local_mount);
        free(r->username);
        free(r->password);
        free(r->bind);
        for (relay_host_conf_t *h = r->hosts, *hn; h; h = hn) {
            hn = h->next;
            free(h->server);
            free(h->mount);
            free(h->username);
            free(h->password);
            free(h->bind);
            free(h);
        }
        free(r);
    }
    for (mount_conf_t *m = c->mounts, *next; m; m = next) {
        next = m->next;
        free_mount(m);
    }
    for (directory_conf_t *d = c->directories, *next; d; d = next) {
        next = d->next;
        free(d->yp_url);
        free(d);
    }
    for (sibling_conf_t *s = c->siblings, *next; s; s = next) {
        next = s->next;
        free(s->url);
        free(s);
    }
    for (alias_conf_t *a = c->aliases, *next; a; a = next) {
        next = a->next;
        free(a->source);
        free(a->destination);
        free(a->bind_address);
        free(a);
    }
    free_headers(c->http_headers);
    cidr_list_free(&c->backoff.exempt);
    for (config_warning_t *w = c->warnings, *next; w; w = next) {
        next = w->next;
        free(w->setting);
        free(w->text);
        free(w);
    }
}

void config_free(config_t *c)
{
    if (!c)
        return;
    char *strings[] = {c->filename, c->location, c->admin, c->hostname, c->server_id,
                       c->mime_types, c->shoutcast_mount, c->master_server,
                       c->master_username, c->master_password, c->source_password,
                       c->relay_user, c->relay_password, c->admin_user, c->admin_password,
                       c->basedir, c->logdir, c->webroot, c->adminroot, c->pidfile,
                       c->allow_ip, c->deny_ip, c->deny_agents, c->trusted_proxies,
                       c->ssl_certificate, c->ssl_private_key, c->ssl_allowed_ciphers,
                       c->ssl_cafile, c->accesslog, c->errorlog, c->playlistlog, c->user,
                       c->group};

    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++)
        free(strings[i]);
    free_lists(c);
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
    while (p.warned) {
        warned_t *w = p.warned;
        p.warned = w->next;
        free(w);
    }
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

const mount_conf_t *config_find_mount_exact(const config_t *c, const char *mount)
{
    for (const mount_conf_t *m = c->mounts; m && mount; m = m->next)
        if (!m->is_default && strcmp(m->mount_name, mount) == 0)
            return m;
    return NULL;
}

const mount_conf_t *config_find_default_mount(const config_t *c, const char *mount)
{
    for (const mount_conf_t *m = c->mounts; m; m = m->next) {
        if (!m->is_default)
            continue;
        if (!m->mount_name || (mount && fnmatch(m->mount_name, mount, FNM_PATHNAME) == 0))
            return m;
    }
    return NULL;
}

const mount_conf_t *config_find_mount(const config_t *c, const char *mount)
{
    const mount_conf_t *m = config_find_mount_exact(c, mount);

    if (m || !mount)
        return m ? m : config_find_default_mount(c, mount);
    /* Icecast 2.4: a normal mount-name may be a pattern ("/live*") */
    for (m = c->mounts; m; m = m->next)
        if (!m->is_default && strpbrk(m->mount_name, "*?[") &&
            fnmatch(m->mount_name, mount, FNM_PATHNAME) == 0)
            return m;
    return config_find_default_mount(c, mount);
}

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
