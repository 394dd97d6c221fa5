/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * directives: the icecast.xml vocabulary of the sections that are not repeated, as tables:
 * the root <icecast>, limits, authentication, paths, logging, audience, security and their
 * sub-sections. Each table is {element, type, offsetof field, bounds}, applied by the engine
 * in walk.c; the repeatable blocks (listen-socket, relay, mount, directory) are blocks.c's,
 * the row macros and shared lists lists.h's. Completion (legacy root port, default-mount
 * merging, burst/queue checks) is here because it needs the tables and the line numbers.
 * Does not read files, parse XML, set global defaults or free anything: config.c does.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/directives.h"
#include "conf/blocks.h"
#include "conf/lists.h"
#include "conf/snapshot.h"
#include "conf/walk.h"

static const word_t loglevel_words[] = {
    {"error", 1}, {"warn", 2}, {"warning", 2}, {"info", 3}, {"information", 3}, {"debug", 4},
    {NULL, 0},
};

/* ---------------------------------------------------------------- lists */

static int fn_root_headers(parse_t *p, xmlNodePtr n, void *obj)
{
    return conf_walk_headers(p, n, &((config_t *)obj)->http_headers);
}

/* <paths><alias source= destination=|dest= [port=] [bind-address=]/> */
static int fn_alias(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t port = {.name = "port", .type = D_INT, .min = 1, .max = PORT_MAX};
    alias_conf_t *a = conf_new_item(p, n, sizeof(*a));
    char *port_text = NULL;
    long x;

    if (!a)
        return -1;
    a->port = -1;
    APPEND(((config_t *)obj)->aliases, a);
    if (config_attr_required(p, n, "source", &a->source))
        return -1;
    if (config_attr(p, n, "destination", &a->destination))
        return -1;
    if (!a->destination && config_attr(p, n, "dest", &a->destination))
        return -1;
    if (!a->destination || !*a->destination)
        return config_err(p, n, "<alias> needs a destination=\"...\" attribute");
    if (config_attr(p, n, "bind-address", &a->bind_address) ||
        (a->bind_address && config_policy_apply(p, n, "paths", "bind-address", 1)) ||
        config_attr(p, n, "port", &port_text))
        return -1;
    if (port_text) {
        int bad = config_number(p, n, &port, port_text, &x);
        free(port_text);
        if (bad)
            return -1;
        a->port = (int)x;
    }
    return 0;
}

/* ---------------------------------------------------------------- sections on config_t */

static int fn_source_password(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t d = STR("source-password", config_t, source_password);

    if (xmlHasProp(n, (const xmlChar *)"mount"))
        return config_err(p, n, "<source-password mount=...> is not supported: use <password> in a "
                          "<mount> block");
    return config_set_value(p, n, &d, obj);
}

static int fn_burst_on_connect(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t d = {.name = "burst-on-connect", .type = D_BOOL, .max = 1,
                                  .words = config_bool_words};
    int on = 1;

    if (config_set_value(p, n, &d, &on) != 0)
        return -1;
    if (!on)
        ((config_t *)obj)->burst_size = 0;
    return 0;
}

static const directive_t limits_dirs[] = {
    INT_D("clients", config_t, clients, 1, 10000000, 256),
    INT_D("sources", config_t, sources, 0, 1000000, 16),
    SIZE_D("queue-size", config_t, queue_size, 1, SIZE_MAX_BYTES, 524288),
    INT_D("client-timeout", config_t, client_timeout, 0, 86400, 30),
    INT_D("header-timeout", config_t, header_timeout, 1, 3600, 15),
    INT_D("source-timeout", config_t, source_timeout, 1, 86400, 10),
    SIZE_D("burst-size", config_t, burst_size, 0, SIZE_MAX_BYTES, 65536),
    OLD_FN("burst-on-connect", fn_burst_on_connect, "use <burst-size>"),
    OLD_IGNORE("threadpool", "ignored"),
    INT("workers", config_t, workers, 0, 64),
    INT_D("write-window", config_t, write_window_ms, 0, 1000, 500),
    INT_D("script-timeout", config_t, script_timeout, 1, 86400, 60),
    INT_D("upgrade-drain", config_t, upgrade_drain, 0, 604800, 3600),
    INT_D("shutdown-grace", config_t, shutdown_grace, 0, 3600, 0),
    INT_D("max-listeners", config_t, max_listeners, -1, INT_MAX, -1), /* Icecast-KH */
    KH("max-bandwidth"),
    KH("min-queue-size"),
    KH("inactivity-timeout"),
    END,
};
static const section_t limits_sec = {"limits", limits_dirs};

static const directive_t auth_dirs[] = {
    FN("source-password", fn_source_password),
    STR_D("relay-user", config_t, relay_user, "relay"),
    STR("relay-password", config_t, relay_password),
    STR_D("admin-user", config_t, admin_user, "admin"),
    STR("admin-password", config_t, admin_password),
    END,
};
static const section_t auth_sec = {"authentication", auth_dirs};

/* Icecast-KH matches <x-forwarded-for> as a pattern on the address text: the patterns it
 * documents end in whole-octet wildcards ("192.168.1.*", "10.*"), which are IPv4 ranges. The
 * range of such a pattern into out, 0; -1 for any other text. */
static int octet_wildcard(const char *v, cidr_t *out)
{
    unsigned octets[4] = {0, 0, 0, 0};
    int known = 0;
    const char *s = v;

    while (known < 4 && *s >= '0' && *s <= '9') {
        char *end;
        unsigned long x = strtoul(s, &end, 10);
        if (x > 255 || end - s > 3 || *end != '.')
            return -1;
        octets[known++] = (unsigned)x;
        s = end + 1;
    }
    if (known == 0 || known == 4)
        return -1;
    if (strcmp(s, "*") != 0) /* one "*" for the rest, or one for each octet left */
        for (int i = known; i < 4; i++, s += 2)
            if (s[0] != '*' || s[1] != (i == 3 ? '\0' : '.'))
                return -1;
    char text[32];
    snprintf(text, sizeof(text), "%u.%u.%u.%u/%d", octets[0], octets[1], octets[2], octets[3],
             known * 8);
    return cidr_parse(text, strlen(text), out);
}

/* The address or range n holds (with kh_patterns, or an Icecast-KH octet wildcard), appended
 * to l. */
static int add_range(parse_t *p, xmlNodePtr n, cidr_list_t *l, int kh_patterns)
{
    const directive_t d = {.name = (const char *)n->name, .type = D_PATH, .off = 0};
    char *text = NULL, buf[48];
    cidr_t r, *grown;
    int rc = -1;

    if (config_set_value(p, n, &d, &text))
        return -1;
    if (cidr_parse(text, strlen(text), &r) < 0 && (!kh_patterns || octet_wildcard(text, &r) < 0)) {
        config_err(p, n, "<%s> \"%s\" is not an address or a range (192.0.2.7, "
                   "192.0.2.0/24, %s2001:db8::/48)", (const char *)n->name,
                   config_shown(text, buf, sizeof(buf)), kh_patterns ? "192.0.2.*, " : "");
        goto done;
    }
    if (!(grown = realloc(l->v, (l->n + 1) * sizeof(*l->v)))) {
        config_err(p, n, "out of memory");
        goto done;
    }
    l->v = grown;
    l->v[l->n++] = r;
    rc = 0;
done:
    free(text);
    return rc;
}

/* <login-backoff><exempt>: an address or range never blocked (repeatable) */
static int fn_backoff_exempt(parse_t *p, xmlNodePtr n, void *obj)
{
    return add_range(p, n, &((config_t *)obj)->backoff.exempt, 0);
}

/* <paths><x-forwarded-for> (Icecast-KH, repeatable): a proxy trusted as <trusted-proxies> */
static int fn_forwarded_for(parse_t *p, xmlNodePtr n, void *obj)
{
    return add_range(p, n, &((config_t *)obj)->forwarded_for, 1);
}

static const directive_t paths_dirs[] = {
    PATH_D("basedir", config_t, basedir, PKGDATADIR),
    PATH_D("logdir", config_t, logdir, LOCALSTATEDIR "/log/rimecast"),
    PATH("pidfile", config_t, pidfile),
    PATH_D("webroot", config_t, webroot, PKGDATADIR "/web"),
    PATH_D("adminroot", config_t, adminroot, PKGDATADIR "/admin"),
    PATH("allow-ip", config_t, allow_ip),
    PATH("deny-ip", config_t, deny_ip),
    PATH("deny-agents", config_t, deny_agents),
    PATH("trusted-proxies", config_t, trusted_proxies),
    FN("x-forwarded-for", fn_forwarded_for),                 /* Icecast-KH */
    PATH("banfile", config_t, deny_ip),                      /* Icecast-KH: deny-ip */
    PATH("ban-file", config_t, deny_ip),                     /* Icecast-KH: deny-ip */
    PATH("mime-types", config_t, mime_types),                /* Icecast-KH: the root's */
    PATH("ssl-certificate", config_t, ssl_certificate),
    PATH("ssl-private-key", config_t, ssl_private_key), /* Icecast-KH */
    STR("ssl-allowed-ciphers", config_t, ssl_allowed_ciphers),
    PATH("ssl-cafile", config_t, ssl_cafile), /* Icecast-KH: CAs for upstreams (relays) */
    PATH("ssl_certificate", config_t, ssl_certificate), /* Icecast-KH: ssl-certificate */
    FN("alias", fn_alias),
    END,
};
static const section_t paths_sec = {"paths", paths_dirs};

static const directive_t logging_dirs[] = {
    PATH_D("accesslog", config_t, accesslog, "access.log"),
    PATH_D("errorlog", config_t, errorlog, "error.log"),
    PATH("playlistlog", config_t, playlistlog),
    ROW("loglevel", D_INT, config_t, loglevel, .min = 1, .max = 4, .words = loglevel_words,
        DEF(3)),
    INT("logsize", config_t, logsize, 0, INT_MAX),
    BOOL("logarchive", config_t, logarchive),
    KH("preroll-log"),
    KH("accesslog_ip"),
    KH("accesslog_exclude_ext"),
    KH("accesslog_lines"),
    KH("errorlog_lines"),
    KH("playlistlog_lines"),
    END,
};
static const section_t logging_sec = {"logging", logging_dirs};

/* <audience>: listener sessions (stream/session.h), their store (audience/audience_store.h:
 * an SQLite file or a PostgreSQL URI, the server's name its records carry, the spool),
 * the figures' qualifying length (audience/audience.h) and countries (audience/geoip.h) */
static const directive_t audience_dirs[] = {
    PATH_D("database", config_t, audience_db, "audience.db"),
    PATH_D("session-log", config_t, sessionlog, "sessions.log"),
    BOOL("anonymize-ip", config_t, address_truncation),
    PATH("geoip-db", config_t, geoip_db),
    INT_D("min-session", config_t, qualified_seconds, 1, 86400, 60),
    INT_D("retention-days", config_t, retention_days, 0, 36500, 0),
    STR("server-name", config_t, audience_server),
    SIZE_D("spool-size", config_t, spool_size, 0, 1L << 40, 64L << 20),
    STR("listener-id-param", config_t, listener_id_param),
    INT_D("resume-seconds", config_t, resume_seconds, 0, 1800, 180),
    PATH("bots", config_t, audience_bots),
    INT_D("max-concurrent-per-listener", config_t, max_concurrent, 0, 100000, 10),
    PATH("export-dir", config_t, audience_export),
    END,
};
static const section_t audience_sec = {"audience", audience_dirs};

static const directive_t owner_dirs[] = {
    STR("user", config_t, user),
    STR("group", config_t, group),
    END,
};
static const section_t owner_sec = {"changeowner", owner_dirs};

/* Icecast 2.5: <security><tls-context>, the same settings as the <paths> ones */
static const directive_t tls_context_dirs[] = {
    PATH("tls-certificate", config_t, ssl_certificate),
    PATH("tls-key", config_t, ssl_private_key),
    STR("tls-allowed-ciphers", config_t, ssl_allowed_ciphers),
    END,
};
static const section_t tls_context_sec = {"tls-context", tls_context_dirs};

#define BACKOFF(n, f, lo, hi, d) INT_D(n, config_t, backoff.f, lo, hi, d)
static const directive_t backoff_dirs[] = {
    BACKOFF("failures", failures, 0, 1000, 5),
    BACKOFF("window", window, 1, 86400, 60),
    BACKOFF("block", block, 1, 86400, 2),
    BACKOFF("block-max", block_max, 1, 86400, 300),
    BACKOFF("forget", forget, 1, 30 * 86400, 600),
    BACKOFF("ipv4-prefix", ipv4_prefix, 8, 32, 32),
    BACKOFF("ipv6-prefix", ipv6_prefix, 16, 128, 64),
    BOOL_D("exempt-local", config_t, backoff.exempt_local, 1),
    FN("exempt", fn_backoff_exempt),
    END,
};
static const section_t backoff_sec = {"login-backoff", backoff_dirs};

static const directive_t security_dirs[] = {
    BOOL("chroot", config_t, chroot),
    SECTION("login-backoff", backoff_sec),
    SECTION("changeowner", owner_sec),
    SECTION("tls-context", tls_context_sec),
    END,
};
static const section_t security_sec = {"security", security_dirs};

/* ---------------------------------------------------------------- root */

static int fn_root_port(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t d = INT("port", parse_t, root_port, 1, PORT_MAX);

    (void)obj;
    p->root_port_line = config_line(n);
    return config_set_value(p, n, &d, p);
}

/* <redirect-siblings><sibling>http[s]://host[:port]</sibling>: the base URL of a server that
 * takes this one's listeners when it is full. No path, query or credentials. */
static int fn_sibling(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t d = PATH("sibling", sibling_conf_t, url);
    sibling_conf_t *s = conf_new_item(p, n, sizeof(*s));

    if (!s)
        return -1;
    APPEND(((config_t *)obj)->siblings, s);
    if (config_set_value(p, n, &d, s))
        return -1;
    size_t len = strlen(s->url);
    while (len > 0 && s->url[len - 1] == '/')
        s->url[--len] = '\0';
    const char *host = strncmp(s->url, "http://", 7) == 0    ? s->url + 7
                       : strncmp(s->url, "https://", 8) == 0 ? s->url + 8
                                                              : NULL;
    if (!host || !*host || strpbrk(host, "/?#@ \t\r\n\\\"<>"))
        return config_err(p, n, "<sibling> must be http://host:port or https://host:port");
    return 0;
}

static const directive_t siblings_dirs[] = {
    INT_D("poll-interval", config_t, sibling_poll_interval, 1, 3600, 5),
    INT_D("redirect-share", config_t, sibling_share, 0, 100, 100),
    FN("sibling", fn_sibling),
    END,
};
static const section_t siblings_sec = {"redirect-siblings", siblings_dirs};

static int fn_root_bind(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t d = PATH("bind-address", parse_t, root_bind);

    (void)obj;
    return config_set_value(p, n, &d, p);
}

static const directive_t root_dirs[] = {
    TEXT_D("location", config_t, location, "Earth"),
    TEXT_D("admin", config_t, admin, "icemaster@localhost"),
    PATH_D("hostname", config_t, hostname, "localhost"),
    TEXT("server-id", config_t, server_id),
    TEXT("server_id", config_t, server_id), /* Icecast-KH: server-id */
    BOOL_D("fileserve", config_t, fileserve, 1),
    PATH_D("mime-types", config_t, mime_types, "/etc/mime.types"),
    BOOL("icelogin", config_t, icelogin),
    MOUNT_D("shoutcast-mount", config_t, shoutcast_mount, "/stream"),
    BOOL("relays-on-demand", config_t, relays_on_demand),
    PATH("master-server", config_t, master_server),
    INT("master-server-port", config_t, master_server_port, 1, PORT_MAX),
    INT("master-ssl-port", config_t, master_ssl_port, 1, PORT_MAX), /* Icecast-KH */
    INT_D("master-update-interval", config_t, master_update_interval, 1, 86400, 120),
    STR_D("master-username", config_t, master_username, "relay"),
    STR("master-password", config_t, master_password),
    FN("port", fn_root_port),
    FN("bind-address", fn_root_bind),
    SECTION("redirect-siblings", siblings_sec),
    OLD_FN("source-password", fn_source_password, "use <authentication><source-password>"),
    SECTION("limits", limits_sec),
    SECTION("authentication", auth_sec),
    SECTION("paths", paths_sec),
    SECTION("logging", logging_sec),
    SECTION("audience", audience_sec),
    SECTION("security", security_sec),
    FN("listen-socket", blocks_listen),
    FN("relay", blocks_relay),
    FN("mount", blocks_mount),
    FN("directory", blocks_directory),
    FN("http-headers", fn_root_headers),
    SECTION("hls", blocks_hls_sec),
    KH("master-bind"),
    KH("master-relay-auth"),
    KH("master-redirect"),
    KH("max-redirect-slaves"),
    KH("redirect"),
    KH("master"),
    KH("include"),
    END,
};
static const section_t root_sec = {"icecast", root_dirs};

/* ---------------------------------------------------------------- defaults and freeing */

int directives_defaults(config_t *c)
{
    return config_set_defaults(&root_sec, c);
}

/* What the tables list is freed through them; the handlers' own allocations by hand. */
void directives_free(config_t *c)
{
    config_free_fields(&root_sec, c);
    free(c->source_password); /* set by its handler (fn_source_password), in no row */
    blocks_free(c);
    for (sibling_conf_t *s = c->siblings, *next; s; s = next) {
        next = s->next;
        free(s->url); /* set by fn_sibling */
        free(s);
    }
    for (alias_conf_t *a = c->aliases, *next; a; a = next) { /* attributes, in no row */
        next = a->next;
        free(a->source);
        free(a->destination);
        free(a->bind_address);
        free(a);
    }
    conf_free_headers(c->http_headers);
    cidr_list_free(&c->backoff.exempt);
    cidr_list_free(&c->forwarded_for);
}

/* ---------------------------------------------------------------- completion */

static int legacy_listen(parse_t *p, xmlNodePtr root)
{
    config_t *c = p->c;
    listen_conf_t *l;

    if (c->listen) {
        if (p->root_port || p->root_bind)
            config_warn_at(p, "port", NULL,
                           p->root_port_line ? p->root_port_line : config_line(root),
                           "root-level <port>/<bind-address> ignored: <listen-socket> is defined");
        return 0;
    }
    if (p->root_port)
        config_warn_at(p, "port", NULL, p->root_port_line,
                       "root-level <port> is deprecated: use <listen-socket>");
    if (!(l = conf_new_item(p, root, sizeof(*l))))
        return -1;
    l->port = p->root_port ? p->root_port : 8000;
    l->bind_address = p->root_bind;
    p->root_bind = NULL;
    c->listen = l;
    return 0;
}

/* The line of the last <a> child of n, else of its last <b> child, else of n. */
static long child_line(xmlNodePtr n, const char *a, const char *b)
{
    long la = 0, lb = 0;

    for (xmlNodePtr ch = n->children; ch; ch = ch->next) {
        if (ch->type != XML_ELEMENT_NODE)
            continue;
        if (strcmp((const char *)ch->name, a) == 0)
            la = config_line(ch);
        else if (strcmp((const char *)ch->name, b) == 0)
            lb = config_line(ch);
    }
    return la ? la : lb ? lb : config_line(n);
}

static xmlNodePtr next_element(xmlNodePtr n, const char *name)
{
    while (n && !(n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0))
        n = n->next;
    return n;
}

static int size_error(parse_t *p, xmlNodePtr n, long burst, long queue, const char *where)
{
    snprintf(p->err, p->errlen, "%s:%ld: <burst-size> %ld is larger than <queue-size> %ld%s",
             p->name, child_line(n, "burst-size", "queue-size"), burst, queue, where);
    return -1;
}

/* Burst must fit in the queue, globally and per mount (with inherited values). */
static int check_sizes(parse_t *p, xmlNodePtr root)
{
    config_t *c = p->c;
    xmlNodePtr mn = next_element(root->children, "mount"), lim = NULL;
    char where[300];

    if (c->burst_size > c->queue_size) {
        for (xmlNodePtr l = next_element(root->children, "limits"); l;
             l = next_element(l->next, "limits"))
            lim = l;
        return size_error(p, lim ? lim : root, c->burst_size, c->queue_size, "");
    }
    for (mount_conf_t *m = c->mounts; m && mn; m = m->next, mn = next_element(mn->next, "mount")) {
        long burst = config_mount_burst_size(c, m), queue = config_mount_queue_size(c, m);
        if (burst > queue) {
            snprintf(where, sizeof(where), " in <mount> %.200s",
                     m->mount_name ? m->mount_name : "type=\"default\"");
            return size_error(p, mn, burst, queue, where);
        }
    }
    return 0;
}

static int complete(parse_t *p, xmlNodePtr root)
{
    config_t *c = p->c;
    xmlNodePtr mn = next_element(root->children, "mount");

    if (legacy_listen(p, root))
        return -1;
    for (relay_conf_t *r = c->relays; r; r = r->next)
        if (r->on_demand < 0)
            r->on_demand = c->relays_on_demand;
    for (mount_conf_t *m = c->mounts; m && mn; m = m->next, mn = next_element(mn->next, "mount")) {
        const mount_conf_t *def =
            m->is_default ? NULL : config_find_default_mount(c, m->mount_name);
        if (def && blocks_merge_mount(p, mn, m, def))
            return -1;
    }
    for (mount_conf_t *m = c->mounts; m; m = m->next)
        if (!m->username && !(m->username = strdup("source")))
            return config_err(p, root, "out of memory");
    /* as Icecast: directories without a trailing slash */
    char *dirs[] = {c->basedir, c->logdir, c->webroot, c->adminroot};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        size_t len = dirs[i] ? strlen(dirs[i]) : 0;
        while (len > 1 && dirs[i][len - 1] == '/')
            dirs[i][--len] = '\0';
    }
    for (const listen_conf_t *l = c->listen; l; l = l->next)
        if (l->tls && !c->ssl_certificate)
            return config_err(p, next_element(root->children, "listen-socket"),
                              "the <listen-socket> on port %d serves TLS but no certificate is "
                              "set: add <ssl-certificate> (a PEM file with the certificate chain "
                              "and the key) to <paths>", l->port);
    if (c->backoff.block > c->backoff.block_max)
        return config_err(p, next_element(root->children, "security"),
                          "<login-backoff>: <block> (%d s) is longer than <block-max> (%d s)",
                          c->backoff.block, c->backoff.block_max);
    return check_sizes(p, root);
}

int directives_apply(parse_t *p, xmlNodePtr root)
{
    if (config_walk(p, root, &root_sec, p->c))
        return -1;
    return complete(p, root);
}
