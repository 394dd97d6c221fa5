/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * directives: the icecast.xml vocabulary as tables. Each section (root, limits, authentication,
 * listen-socket, mount, relay, directory, paths, logging, security, http-headers) is a table of
 * {element, type, offsetof field, bounds} applied by the engine in walk.c; repeatable blocks
 * (mount, relay, listen-socket, ...) have a handler that allocates the object, links it into the
 * config and walks the block's own table. Completion (legacy root port, default-mount merging,
 * burst/queue checks) is here because it needs the tables and the line numbers.
 * Does not read files, parse XML, set global defaults or free anything: config.c does.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/directives.h"
#include "conf/snapshot.h"
#include "conf/walk.h"

static const word_t loglevel_words[] = {
    {"error", 1}, {"warn", 2}, {"warning", 2}, {"info", 3}, {"information", 3}, {"debug", 4},
    {NULL, 0},
};

/* ---------------------------------------------------------------- table rows */

#define ROW(n, t, st, f, ...) {.name = n, .type = t, .off = offsetof(st, f), __VA_ARGS__}
#define STR(n, st, f) ROW(n, D_STR, st, f)
#define TEXT(n, st, f) ROW(n, D_STR, st, f, .flags = F_EMPTY_OK)
#define PATH(n, st, f) ROW(n, D_PATH, st, f)
#define MOUNT(n, st, f) ROW(n, D_MOUNT, st, f)
#define INT(n, st, f, lo, hi) ROW(n, D_INT, st, f, .min = lo, .max = hi)
#define SIZE(n, st, f, lo, hi) ROW(n, D_LONG, st, f, .min = lo, .max = hi)
#define BOOL(n, st, f) ROW(n, D_BOOL, st, f, .min = 0, .max = 1, .words = config_bool_words)
#define TRI(n, st, f) ROW(n, D_BOOL, st, f, .min = -1, .max = 1, .words = config_bool_words)
#define SECTION(n, s) {.name = n, .type = D_SECTION, .sub = &s}
#define FN(n, f) {.name = n, .type = D_FN, .fn = f}
#define OLD_FN(n, f, why) {.name = n, .type = D_FN, .fn = f, .flags = F_DEPRECATED, .note = why}
#define OLD_IGNORE(n, why) {.name = n, .type = D_IGNORE, .flags = F_DEPRECATED, .note = why}
#define END {.name = NULL}
/* an Icecast-KH setting not implemented: accepted, then warned about (or refused) by its row in
 * policy.c */
#define KH(n) {.name = n, .type = D_IGNORE}
/* rows with the value a field has until the file sets it */
#define DEF(d) .def = (d), .flags = F_DEFAULT
#define INT_D(n, st, f, lo, hi, d) ROW(n, D_INT, st, f, .min = lo, .max = hi, DEF(d))
#define SIZE_D(n, st, f, lo, hi, d) ROW(n, D_LONG, st, f, .min = lo, .max = hi, DEF(d))
#define BOOL_D(n, st, f, d) ROW(n, D_BOOL, st, f, .min = 0, .max = 1, \
                                .words = config_bool_words, DEF(d))
#define TRI_D(n, st, f, d) ROW(n, D_BOOL, st, f, .min = -1, .max = 1, \
                               .words = config_bool_words, DEF(d))
#define PATH_D(n, st, f, d) ROW(n, D_PATH, st, f, .sdef = (d), .flags = F_DEFAULT)
#define MOUNT_D(n, st, f, d) ROW(n, D_MOUNT, st, f, .sdef = (d), .flags = F_DEFAULT)
#define STR_D(n, st, f, d) ROW(n, D_STR, st, f, .sdef = (d), .flags = F_DEFAULT)
#define TEXT_D(n, st, f, d) ROW(n, D_STR, st, f, .sdef = (d), .flags = F_EMPTY_OK | F_DEFAULT)

#ifndef PKGDATADIR
#define PKGDATADIR "/usr/local/share/rimecast"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/usr/local/var"
#endif
#define PORT_MAX 65535
#define SIZE_MAX_BYTES (1L << 30)
#define RATE_MAX 100000000000L /* bits/s: 100 Gbit/s */

/* ---------------------------------------------------------------- lists */

#define APPEND(head, item)                                                                     \
    do {                                                                                       \
        __typeof__(item) *tail_ = &(head);                                                     \
        while (*tail_)                                                                         \
            tail_ = &(*tail_)->next;                                                           \
        *tail_ = (item);                                                                       \
    } while (0)

static void *new_item(parse_t *p, xmlNodePtr n, size_t size)
{
    void *x = calloc(1, size);

    if (!x)
        config_err(p, n, "out of memory");
    return x;
}

/* An HTTP header name is a token (RFC 9110): no controls, blanks or separators. */
static int header_name_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f ||
            strchr("()<>@,;:\\\"/[]?={}", *s))
            return 0;
    return 1;
}

/* <http-headers><header name= value= [status=] [type=]/> ; obj is the list head */
static int fn_header(parse_t *p, xmlNodePtr n, void *obj)
{
    http_header_conf_t *h = NULL;
    char *type = NULL, *status = NULL;
    int rc = -1;

    if (config_attr(p, n, "type", &type) || config_attr(p, n, "status", &status))
        goto done;
    if (type && strcasecmp(type, "static") != 0) {
        char buf[48];
        config_warn_at(p, "header", NULL, config_line(n),
                       "<header> type \"%s\" is not supported, ignored",
                       config_shown(type, buf, sizeof(buf)));
        rc = 0;
        goto done;
    }
    if (!(h = new_item(p, n, sizeof(*h))))
        goto done;
    APPEND(*(http_header_conf_t **)obj, h);
    if (config_attr_required(p, n, "name", &h->name))
        goto done;
    if (config_attr(p, n, "value", &h->value))
        goto done;
    if (!h->value) {
        config_err(p, n, "<header> needs a value=\"...\" attribute");
        goto done;
    }
    if (!header_name_ok(h->name) || strpbrk(h->value, "\r\n")) {
        config_err(p, n, "<header> name or value contains characters not allowed in HTTP");
        goto done;
    }
    if (status && strpbrk(status, "*?[")) {
        char buf[48];
        config_err(p, n, "<header> status=\"%s\" is an Icecast-KH pattern, not supported: give "
                   "one status code (200), or none for every status",
                   config_shown(status, buf, sizeof(buf)));
        goto done;
    }
    if (status) {
        static const directive_t st = {.name = "status", .type = D_INT, .min = 100, .max = 599};
        long x;
        if (config_number(p, n, &st, status, &x))
            goto done;
        h->status = (int)x;
    }
    rc = 0;
done:
    free(type);
    free(status);
    return rc;
}

static const directive_t headers_dirs[] = {FN("header", fn_header), END};
static const section_t headers_sec = {"http-headers", headers_dirs};

static int fn_root_headers(parse_t *p, xmlNodePtr n, void *obj)
{
    return config_walk(p, n, &headers_sec, &((config_t *)obj)->http_headers);
}

static int fn_mount_headers(parse_t *p, xmlNodePtr n, void *obj)
{
    return config_walk(p, n, &headers_sec, &((mount_conf_t *)obj)->http_headers);
}

/* <authentication type=...><option name= value=/></authentication> inside <mount> */
static int fn_option(parse_t *p, xmlNodePtr n, void *obj)
{
    auth_conf_t *a = obj;
    kv_conf_t *kv = new_item(p, n, sizeof(*kv));

    if (!kv)
        return -1;
    APPEND(a->options, kv);
    if (config_attr_required(p, n, "name", &kv->name) || config_attr(p, n, "value", &kv->value))
        return -1;
    if (!kv->value)
        return config_err(p, n, "<option> needs a value=\"...\" attribute");
    return 0;
}

static const directive_t auth_opt_dirs[] = {FN("option", fn_option), END};
static const section_t auth_opt_sec = {"authentication", auth_opt_dirs};

/* <authentication type="url">: an option misspelt (or Icecast 2.5's names) would silently
 * let every listener in, so unknown options are refused, as are URLs that are not http(s). */
static int check_url_auth(parse_t *p, xmlNodePtr n, const auth_conf_t *a)
{
    static const char *const urls[] = {"listener_add", "listener_remove", "mount_add",
                                       "mount_remove", "stream_auth", NULL};
    static const char *const others[] = {"username", "password", "auth_header",
                                         "timelimit_header", "headers", "header_prefix",
                                         "timeout", "preroll_header", NULL};
    for (const kv_conf_t *kv = a->options; kv; kv = kv->next) {
        int known = 0;
        for (int i = 0; urls[i] && !known; i++)
            if (strcmp(kv->name, urls[i]) == 0) {
                if (strncmp(kv->value, "http://", 7) != 0 &&
                    strncmp(kv->value, "https://", 8) != 0)
                    return config_err(p, n, "<option name=\"%s\"> of <authentication "
                                      "type=\"url\"> needs an http:// or https:// URL",
                                      kv->name);
                known = 1;
            }
        for (int i = 0; others[i] && !known; i++)
            known = strcmp(kv->name, others[i]) == 0;
        if (!known)
            return config_err(p, n, "<authentication type=\"url\"> has an unknown option "
                              "\"%s\" (listener_add, listener_remove, mount_add, mount_remove, "
                              "stream_auth, username, password, auth_header, timelimit_header, "
                              "headers, header_prefix, timeout, preroll_header)", kv->name);
        if (strcmp(kv->name, "timeout") == 0) {
            char *end;
            long t = strtol(kv->value, &end, 10);
            if (!kv->value[0] || *end || t < 1 || t > 3600)
                return config_err(p, n, "<option name=\"timeout\"> of <authentication "
                                  "type=\"url\"> must be 1 to 3600 seconds");
        }
    }
    return 0;
}

/* <authentication type="htpasswd">: the user file is required; an option misspelt (an access
 * rule the admin believes in) is refused rather than dropped, as for type="url". */
static int check_htpasswd_auth(parse_t *p, xmlNodePtr n, const auth_conf_t *a)
{
    int has_file = 0;
    for (const kv_conf_t *kv = a->options; kv; kv = kv->next) {
        if (strcmp(kv->name, "filename") == 0)
            has_file |= kv->value[0] != '\0';
        else if (strcmp(kv->name, "allow_duplicate_users") != 0)
            return config_err(p, n, "<authentication type=\"htpasswd\"> has an unknown option "
                              "\"%s\" (filename, allow_duplicate_users)", kv->name);
    }
    if (!has_file)
        return config_err(p, n, "<authentication type=\"htpasswd\"> needs <option "
                          "name=\"filename\" value=\"...\"/>");
    return 0;
}

static int fn_mount_auth(parse_t *p, xmlNodePtr n, void *obj)
{
    mount_conf_t *m = obj;

    if (m->auth)
        return config_err(p, n, "more than one <authentication> in this <mount>");
    if (!(m->auth = new_item(p, n, sizeof(*m->auth))))
        return -1;
    if (config_attr_required(p, n, "type", &m->auth->type))
        return -1;
    if (config_walk(p, n, &auth_opt_sec, m->auth))
        return -1;
    if (strcmp(m->auth->type, "htpasswd") == 0)
        return check_htpasswd_auth(p, n, m->auth);
    if (strcmp(m->auth->type, "url") == 0)
        return check_url_auth(p, n, m->auth);
    return config_err(p, n, "<authentication> has an unknown type=\"%s\" (htpasswd or url)",
                      m->auth->type);
}

/* <paths><alias source= destination=|dest= [port=] [bind-address=]/> */
static int fn_alias(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t port = {.name = "port", .type = D_INT, .min = 1, .max = PORT_MAX};
    alias_conf_t *a = new_item(p, n, sizeof(*a));
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

/* <audience>: listener sessions (stream/session.h), their store (stats/audience_store.h),
 * the figures' qualifying length (stats/audience.h) and countries (stats/geoip.h) */
static const directive_t audience_dirs[] = {
    PATH_D("database", config_t, audience_db, "audience.db"),
    PATH_D("session-log", config_t, sessionlog, "sessions.log"),
    BOOL("anonymize-ip", config_t, address_truncation),
    PATH("geoip-db", config_t, geoip_db),
    INT_D("min-session", config_t, qualified_seconds, 1, 86400, 60),
    INT_D("retention-days", config_t, retention_days, 0, 36500, 0),
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

/* ---------------------------------------------------------------- repeatable blocks */

/* Icecast 2.5's <tls> values; 0/1 and the boolean words mean disabled/rfc2818 */
static const word_t tls_words[] = {
    {"disabled", LISTEN_TLS_OFF}, {"rfc2818", LISTEN_TLS_ON}, {"auto", LISTEN_TLS_AUTO},
    {"auto_no_plain", LISTEN_TLS_AUTO_NO_PLAIN}, {"rfc2817", LISTEN_TLS_RFC2817},
    {"true", 1}, {"false", 0}, {"yes", 1}, {"no", 0}, {"on", 1}, {"off", 0}, {NULL, 0},
};

static const directive_t listen_dirs[] = {
    INT_D("port", listen_conf_t, port, 1, PORT_MAX, 8000),
    PATH("bind-address", listen_conf_t, bind_address),
    MOUNT("shoutcast-mount", listen_conf_t, shoutcast_mount),
    BOOL("shoutcast-compat", listen_conf_t, shoutcast_compat),
    BOOL("ssl", listen_conf_t, tls),
    ROW("tls", D_BOOL, listen_conf_t, tls, .min = 0, .max = 1, .words = tls_words), /* 2.5 */
    INT("so-sndbuf", listen_conf_t, so_sndbuf, 0, INT_MAX),
    KH("queue-len"),
    KH("so-mss"),
    END,
};
static const section_t listen_sec = {"listen-socket", listen_dirs};

static int fn_listen(parse_t *p, xmlNodePtr n, void *obj)
{
    listen_conf_t *l = new_item(p, n, sizeof(*l));

    if (!l || config_set_defaults(&listen_sec, l))
        return l ? config_err(p, n, "out of memory") : -1;
    APPEND(((config_t *)obj)->listen, l);
    if (config_walk(p, n, &listen_sec, l))
        return -1;
    if (l->shoutcast_mount && !l->shoutcast_compat && l->port == PORT_MAX)
        return config_err(p, n, "<shoutcast-mount> needs port + 1 for Shoutcast sources, but port "
                          "is 65535");
    if (l->tls == LISTEN_TLS_AUTO_NO_PLAIN || l->tls == LISTEN_TLS_RFC2817)
        return config_err(p, n, "<tls>%s</tls> (upgrading plain HTTP to TLS, RFC 2817) is not "
                          "supported: use rfc2818 (TLS only) or auto (TLS or plain HTTP)",
                          l->tls == LISTEN_TLS_RFC2817 ? "rfc2817" : "auto_no_plain");
    if (l->tls && l->shoutcast_compat)
        return config_err(p, n, "<shoutcast-compat> sources speak no TLS: remove <ssl>/<tls> "
                          "from this <listen-socket>");
    return 0;
}

/* Icecast-KH's <host> and Icecast 2.5's <upstream> inside <relay>: one upstream each. */
static const directive_t relay_host_dirs[] = {
    PATH("server", relay_host_conf_t, server),
    PATH("ip", relay_host_conf_t, server), /* Icecast-KH: server */
    INT("port", relay_host_conf_t, port, 1, PORT_MAX),
    PATH("mount", relay_host_conf_t, mount),
    STR("username", relay_host_conf_t, username),
    STR("password", relay_host_conf_t, password),
    TRI_D("relay-shoutcast-metadata", relay_host_conf_t, relay_shoutcast_metadata, -1),
    PATH("bind", relay_host_conf_t, bind),
    TRI_D("tls", relay_host_conf_t, tls, -1), /* -1: the <relay>'s */
    TRI_D("ssl", relay_host_conf_t, tls, -1),
    INT("timeout", relay_host_conf_t, timeout, 1, 3600),
    KH("priority"),
    KH("http-headers"),
    END,
};
static const section_t relay_host_sec = {"host", relay_host_dirs};
static const section_t relay_upstream_sec = {"upstream", relay_host_dirs};

static int fn_relay_host(parse_t *p, xmlNodePtr n, void *obj)
{
    relay_conf_t *r = obj;
    relay_host_conf_t *h;

    if (++r->nhosts > RELAY_MAX_HOSTS)
        return config_err(p, n, "<relay> has more than %d upstreams (its <host> and <upstream> "
                          "blocks, and its own <server>/<port>/<mount> if any): split it or "
                          "remove some", RELAY_MAX_HOSTS);
    if (!(h = new_item(p, n, sizeof(*h))))
        return -1;
    APPEND(r->hosts, h);
    if (config_set_defaults(&relay_host_sec, h))
        return config_err(p, n, "out of memory");
    return config_walk(p, n, strcmp((const char *)n->name, "host") == 0 ? &relay_host_sec
                                                                       : &relay_upstream_sec,
                       h);
}

static const directive_t relay_dirs[] = {
    PATH("server", relay_conf_t, server),
    PATH("ip", relay_conf_t, server), /* Icecast-KH: server */
    INT_D("port", relay_conf_t, port, 1, PORT_MAX, 8000),
    PATH("mount", relay_conf_t, mount),
    MOUNT("local-mount", relay_conf_t, local_mount),
    STR("username", relay_conf_t, username),
    STR("password", relay_conf_t, password),
    BOOL_D("relay-shoutcast-metadata", relay_conf_t, relay_shoutcast_metadata, 1),
    BOOL_D("relay-icy-metadata", relay_conf_t, relay_shoutcast_metadata, 1), /* Icecast-KH */
    TRI_D("on-demand", relay_conf_t, on_demand, -1), /* -1: <relays-on-demand>, maybe later */
    PATH("bind", relay_conf_t, bind),
    BOOL("tls", relay_conf_t, tls), /* Icecast-KH (in <host>): the upstream speaks HTTPS */
    BOOL("ssl", relay_conf_t, tls),
    FN("host", fn_relay_host),     /* Icecast-KH */
    FN("upstream", fn_relay_host), /* Icecast 2.5 */
    KH("enable"),
    KH("retry-delay"),
    KH("run-on"),
    KH("http-headers"),
    END,
};
static const section_t relay_sec = {"relay", relay_dirs};

static int dup_default(char **to, const char *from)
{
    return !*to && from && !(*to = strdup(from)) ? -1 : 0;
}

/* The relay's own fields as its first upstream, when it has any of them (or no block). */
static int relay_flat_host(parse_t *p, xmlNodePtr n, relay_conf_t *r)
{
    int flat = r->hosts == NULL;

    for (xmlNodePtr ch = n->children; ch && !flat; ch = ch->next)
        flat = ch->type == XML_ELEMENT_NODE && (strcmp((const char *)ch->name, "server") == 0 ||
                                                strcmp((const char *)ch->name, "ip") == 0 ||
                                                strcmp((const char *)ch->name, "port") == 0 ||
                                                strcmp((const char *)ch->name, "mount") == 0);
    if (!flat)
        return 0;
    if (r->nhosts >= RELAY_MAX_HOSTS)
        return config_err(p, n, "<relay> has more than %d upstreams (its <host> and <upstream> "
                          "blocks, and its own <server>/<port>/<mount>): split it or remove "
                          "some", RELAY_MAX_HOSTS);
    relay_host_conf_t *h = new_item(p, n, sizeof(*h));
    if (!h)
        return -1;
    h->next = r->hosts;
    r->hosts = h;
    r->nhosts++;
    if (config_set_defaults(&relay_host_sec, h))
        return config_err(p, n, "out of memory");
    h->port = r->port;
    if (dup_default(&h->server, r->server) || dup_default(&h->mount, r->mount))
        return config_err(p, n, "out of memory");
    return 0;
}

static int fn_relay(parse_t *p, xmlNodePtr n, void *obj)
{
    relay_conf_t *r = new_item(p, n, sizeof(*r));
    char buf[48];

    if (!r)
        return -1;
    APPEND(((config_t *)obj)->relays, r);
    if (config_set_defaults(&relay_sec, r))
        return config_err(p, n, "out of memory");
    if (config_walk(p, n, &relay_sec, r))
        return -1;
    if (relay_flat_host(p, n, r))
        return -1;
    for (relay_host_conf_t *h = r->hosts; h; h = h->next) {
        if (dup_default(&h->server, "127.0.0.1") || dup_default(&h->mount, "/") ||
            dup_default(&h->username, r->username) || dup_default(&h->password, r->password) ||
            dup_default(&h->bind, r->bind))
            return config_err(p, n, "out of memory");
        if (!h->port)
            h->port = 8000;
        if (h->tls < 0)
            h->tls = r->tls;
        if (h->relay_shoutcast_metadata < 0)
            h->relay_shoutcast_metadata = r->relay_shoutcast_metadata;
        if (!h->timeout)
            h->timeout = 10;
    }
    if (!r->server && !(r->server = strdup(r->hosts->server)))
        return config_err(p, n, "out of memory");
    if (!r->mount && !(r->mount = strdup(r->hosts->mount)))
        return config_err(p, n, "out of memory");
    if (!r->local_mount) {
        if (r->mount[0] != '/')
            return config_err(p, n, "<relay> of \"%s\" needs a <local-mount> starting with '/'",
                              config_shown(r->mount, buf, sizeof(buf)));
        if (!(r->local_mount = strdup(r->mount)))
            return config_err(p, n, "out of memory");
    }
    return 0;
}

/* Legacy <directory><server><host/><touch-interval/></server>: checked, then dropped. */
typedef struct legacy_server {
    char *host;
    int touch_interval;
} legacy_server_t;

static const directive_t legacy_server_dirs[] = {
    PATH("host", legacy_server_t, host),
    INT("touch-interval", legacy_server_t, touch_interval, 0, INT_MAX),
    END,
};
static const section_t legacy_server_sec = {"server", legacy_server_dirs};

static int fn_legacy_server(parse_t *p, xmlNodePtr n, void *obj)
{
    legacy_server_t s = {NULL, 0};
    int rc = config_walk(p, n, &legacy_server_sec, &s);

    (void)obj;
    free(s.host);
    return rc;
}

static const directive_t directory_dirs[] = {
    PATH("yp-url", directory_conf_t, yp_url),
    INT_D("yp-url-timeout", directory_conf_t, yp_url_timeout, 1, 3600, 15),
    INT_D("touch-interval", directory_conf_t, touch_interval, 1, 86400, 600),
    INT_D("add-delay", directory_conf_t, add_delay, 0, 86400, 30),
    OLD_FN("server", fn_legacy_server, "ignored, use <yp-url>"),
    END,
};
static const section_t directory_sec = {"directory", directory_dirs};

static int fn_directory(parse_t *p, xmlNodePtr n, void *obj)
{
    directory_conf_t *d = new_item(p, n, sizeof(*d));
    int rc;

    if (!d)
        return -1;
    config_set_defaults(&directory_sec, d); /* numbers only: cannot fail */
    rc = config_walk(p, n, &directory_sec, d);
    if (rc == 0 && d->yp_url) {
        APPEND(((config_t *)obj)->directories, d);
        return 0;
    }
    if (rc == 0)
        config_warn_at(p, "directory", NULL, config_line(n),
                       "<directory> without <yp-url> ignored");
    free(d->yp_url);
    free(d);
    return rc;
}

static int fn_no_yp(parse_t *p, xmlNodePtr n, void *obj)
{
    static const directive_t d = {.name = "no-yp", .type = D_BOOL, .max = 1,
                                  .words = config_bool_words};
    int no_yp = 0;

    if (config_set_value(p, n, &d, &no_yp))
        return -1;
    ((mount_conf_t *)obj)->public = no_yp ? 0 : -1; /* as Icecast 2.4 */
    return 0;
}

/* <hls>: the same rows in <icecast> and in <mount>, with the global defaults there and -1
 * (unset: the global value) here */
#define HLS_DIRS(st, d_on, d_target, d_segments, d_part, d_sessions)                         \
    BOOL_D("enabled", st, hls.enabled, d_on),                                                  \
    INT_D("target-duration", st, hls.target_duration, 2, 60, d_target),                        \
    INT_D("segments", st, hls.segments, 3, 100, d_segments),                                   \
    INT_D("part-target-ms", st, hls.part_target_ms, 200, 5000, d_part),                        \
    BOOL_D("sessions", st, hls.sessions, d_sessions),                                         \
    INT_D("sessions-per-address", st, hls.sessions_per_address, -1, INT_MAX, -1), END
static const directive_t hls_dirs[] = {HLS_DIRS(config_t, 1, 6, 6, 500, 1)};
static const section_t hls_sec = {"hls", hls_dirs};
static const directive_t mount_hls_dirs[] = {HLS_DIRS(mount_conf_t, -1, -1, -1, -1, -1)};
static const section_t mount_hls_sec = {"hls", mount_hls_dirs};

/* <mount><ads>: -1 and NULL are unset (a default block's value, else the default: ads.h) */
static const directive_t mount_ads_dirs[] = {
    PATH("vast-url", mount_conf_t, ads.vast_url),
    TRI_D("preroll", mount_conf_t, ads.preroll, -1),
    INT_D("preroll-duration", mount_conf_t, ads.preroll_seconds, -1, 600, -1),
    TRI_D("allow-private", mount_conf_t, ads.allow_private, -1),
    PATH("title-prefix", mount_conf_t, ads.title_prefix),
    INT_D("request-timeout-ms", mount_conf_t, ads.request_timeout_ms, -1, 30000, -1),
    INT_D("creative-timeout-ms", mount_conf_t, ads.creative_timeout_ms, -1, 120000, -1),
    END,
};
static const section_t mount_ads_sec = {"ads", mount_ads_dirs};

static const directive_t mount_dirs[] = {
    MOUNT("mount-name", mount_conf_t, mount_name),
    STR("username", mount_conf_t, username),
    STR("password", mount_conf_t, password),
    /* -1: unset, the global value (or, for the interval, the default 16000) */
    INT_D("max-listeners", mount_conf_t, max_listeners, -1, INT_MAX, -1),
    INT("max-listener-duration", mount_conf_t, max_listener_duration, 0, INT_MAX),
    SIZE_D("burst-size", mount_conf_t, burst_size, -1, SIZE_MAX_BYTES, -1),
    SIZE_D("queue-size", mount_conf_t, queue_size, -1, SIZE_MAX_BYTES, -1),
    INT_D("source-timeout", mount_conf_t, source_timeout, -1, 86400, -1),
    INT_D("mp3-metadata-interval", mount_conf_t, mp3_metadata_interval, -1, 1 << 24, -1),
    INT_D("icy-metadata-interval", mount_conf_t, mp3_metadata_interval, -1, 1 << 24, -1),
    INT_D("metadata-interval", mount_conf_t, mp3_metadata_interval, -1, 1 << 24, -1), /* KH */
    /* Icecast-KH: a source's bits/s on average ("128k"); -1 unset, 0 no limit */
    ROW("limit-rate", D_LONG, mount_conf_t, limit_rate, .min = 0, .max = RATE_MAX,
        .flags = F_DEFAULT | F_BITRATE, .def = -1),
    PATH("listenurl", mount_conf_t, listenurl), /* Icecast-KH */
    PATH("dump-file", mount_conf_t, dump_file),
    PATH("intro", mount_conf_t, intro),
    PATH("fallback-mount", mount_conf_t, fallback_mount),
    PATH("fallback", mount_conf_t, fallback_mount), /* Icecast-KH: fallback-mount */
    BOOL("fallback-override", mount_conf_t, fallback_override),
    BOOL("fallback-when-full", mount_conf_t, fallback_when_full),
    PATH("charset", mount_conf_t, charset),
    TRI_D("public", mount_conf_t, public, -1),
    OLD_FN("no-yp", fn_no_yp, "use <public>"),
    BOOL("hidden", mount_conf_t, hidden),
    BOOL("no-mount", mount_conf_t, no_mount),
    TEXT("stream-name", mount_conf_t, stream_name),
    TEXT("stream-description", mount_conf_t, stream_description),
    TEXT("stream-url", mount_conf_t, stream_url),
    TEXT("genre", mount_conf_t, genre),
    PATH("bitrate", mount_conf_t, bitrate),
    PATH("type", mount_conf_t, type),
    PATH("subtype", mount_conf_t, subtype),
    STR("cluster-password", mount_conf_t, cluster_password),
    PATH("on-connect", mount_conf_t, on_connect),
    PATH("on-disconnect", mount_conf_t, on_disconnect),
    FN("authentication", fn_mount_auth),
    FN("http-headers", fn_mount_headers),
    SECTION("hls", mount_hls_sec),
    SECTION("ads", mount_ads_sec),
    KH("priority"),
    KH("min-queue-size"),
    KH("file-seekable"),
    KH("hijack"),
    KH("allow-chunked"),
    KH("max-bandwidth"),
    KH("wait-time"),
    KH("filter-theora"),
    KH("skip-accesslog"),
    KH("max-send-size"),
    KH("linger-for"),
    KH("redirect"),
    KH("redirect-to"),
    KH("ogg-passthrough"),
    KH("admin_comments_only"),
    KH("allow-url-ogg-metadata"),
    KH("ban-client"),
    KH("intro-skip-replay"),
    KH("so-sndbuf"),
    KH("max-stream-duration"),
    KH("preroll-log"),
    KH("accesslog"),
    END,
};
static const section_t mount_sec = {"mount", mount_dirs};

/* An element without attributes and without child elements ("<mount/>", which AzuraCast
 * writes for a station without mount points). */
static int is_empty(xmlNodePtr n)
{
    if (n->properties)
        return 0;
    for (xmlNodePtr ch = n->children; ch; ch = ch->next)
        if (ch->type == XML_ELEMENT_NODE)
            return 0;
    return 1;
}

/* What the <ads> rows' bounds cannot say (-1 there is "unset"). */
static int check_ads(parse_t *p, xmlNodePtr n, const ads_conf_t *a)
{
    if (a->vast_url && strncasecmp(a->vast_url, "http://", 7) != 0 &&
        strncasecmp(a->vast_url, "https://", 8) != 0)
        return config_err(p, n, "<ads><vast-url> must be an http:// or https:// URL");
    if (a->preroll_seconds == 0)
        return config_err(p, n, "<ads><preroll-duration> must be 1 to 600 seconds");
    if ((a->request_timeout_ms >= 0 && a->request_timeout_ms < 100) ||
        (a->creative_timeout_ms >= 0 && a->creative_timeout_ms < 100))
        return config_err(p, n, "<ads> timeouts are 100 ms at least");
    return 0;
}

static int fn_mount(parse_t *p, xmlNodePtr n, void *obj)
{
    config_t *c = obj;
    mount_conf_t *m;
    char *type = NULL, buf[48];
    const char *shown;

    if (is_empty(n)) {
        config_warn_at(p, "mount", NULL, config_line(n), "empty <mount> ignored");
        return 0;
    }
    if (!(m = new_item(p, n, sizeof(*m))))
        return -1;
    config_set_defaults(&mount_sec, m); /* numbers only: cannot fail */
    APPEND(c->mounts, m);
    if (config_attr(p, n, "type", &type))
        return -1;
    if (type && strcmp(type, "default") == 0) {
        m->is_default = 1;
    } else if (type && *type && strcmp(type, "normal") != 0) {
        config_err(p, n, "unknown mount type \"%s\" (expected \"normal\" or \"default\")",
                   config_shown(type, buf, sizeof(buf)));
        free(type);
        return -1;
    }
    free(type);
    if (config_walk(p, n, &mount_sec, m))
        return -1;
    if (!m->is_default && !m->mount_name)
        return config_err(p, n, "<mount> without <mount-name>");
    if (check_ads(p, n, &m->ads))
        return -1;
    shown = config_shown(m->mount_name ? m->mount_name : "type=\"default\"", buf, sizeof(buf));
    if (!m->fallback_mount && (m->fallback_override || m->fallback_when_full))
        config_warn_at(p, "fallback-mount", NULL, config_line(n),
                       "<mount> %s has fallback options but no <fallback-mount>", shown);
    for (const mount_conf_t *o = c->mounts; o != m && m->mount_name; o = o->next)
        if (!o->is_default && !m->is_default && o->mount_name &&
            strcmp(o->mount_name, m->mount_name) == 0)
            config_warn_at(p, "mount-name", NULL, config_line(n),
                           "<mount> %s defined twice, the first one is used", shown);
    return 0;
}

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
    sibling_conf_t *s = new_item(p, n, sizeof(*s));

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
    FN("listen-socket", fn_listen),
    FN("relay", fn_relay),
    FN("mount", fn_mount),
    FN("directory", fn_directory),
    FN("http-headers", fn_root_headers),
    SECTION("hls", hls_sec),
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
    config_free_fields(&mount_sec, m);
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

/* What the tables list is freed through them; the handlers' own allocations by hand. */
void directives_free(config_t *c)
{
    config_free_fields(&root_sec, c);
    free(c->source_password); /* set by its handler (fn_source_password), in no row */
    for (listen_conf_t *l = c->listen, *next; l; l = next) {
        next = l->next;
        config_free_fields(&listen_sec, l);
        free(l);
    }
    for (relay_conf_t *r = c->relays, *next; r; r = next) {
        next = r->next;
        config_free_fields(&relay_sec, r);
        for (relay_host_conf_t *h = r->hosts, *hn; h; h = hn) {
            hn = h->next;
            config_free_fields(&relay_host_sec, h);
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
        config_free_fields(&directory_sec, d);
        free(d);
    }
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
    free_headers(c->http_headers);
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
    if (!(l = new_item(p, root, sizeof(*l))))
        return -1;
    l->port = p->root_port ? p->root_port : 8000;
    l->bind_address = p->root_bind;
    p->root_bind = NULL;
    c->listen = l;
    return 0;
}

/* The rows of dirs (nested sections too) that m leaves as they are in unset, taken from def.
 * 0 or -1 (out of memory). */
static int merge_rows(const directive_t *dirs, mount_conf_t *m, const mount_conf_t *def,
                      const mount_conf_t *unset)
{
    for (const directive_t *d = dirs; d->name; d++) {
        char *to = (char *)m + d->off;
        const char *none = (const char *)unset + d->off, *from = (const char *)def + d->off;
        if (d->type == D_SECTION) {
            if (merge_rows(d->sub->dirs, m, def, unset))
                return -1;
        } else if (d->type == D_STR || d->type == D_PATH) {
            if (!*(char **)to && *(char *const *)from &&
                !(*(char **)to = strdup(*(char *const *)from)))
                return -1;
        } else if (d->type == D_LONG) {
            if (*(long *)to == *(const long *)none)
                *(long *)to = *(const long *)from;
        } else if (d->type == D_INT || d->type == D_BOOL) {
            if (*(int *)to == *(const int *)none)
                *(int *)to = *(const int *)from;
        }
    }
    return 0;
}

/* Icecast 2.4: a normal mount takes every setting it leaves unset from its default block. */
static int merge_mount(parse_t *p, xmlNodePtr n, mount_conf_t *m, const mount_conf_t *def)
{
    mount_conf_t unset;
    http_header_conf_t **tail = &m->http_headers;

    memset(&unset, 0, sizeof(unset));
    config_set_defaults(&mount_sec, &unset); /* numbers only: cannot fail */
    if (merge_rows(mount_dirs, m, def, &unset))
        return config_err(p, n, "out of memory");
    while (*tail)
        tail = &(*tail)->next;
    for (const http_header_conf_t *h = def->http_headers; h; h = h->next) {
        if (!(*tail = calloc(1, sizeof(**tail))))
            return config_err(p, n, "out of memory");
        (*tail)->status = h->status;
        if (!((*tail)->name = strdup(h->name)) || !((*tail)->value = strdup(h->value)))
            return config_err(p, n, "out of memory");
        tail = &(*tail)->next;
    }
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
        if (def && merge_mount(p, mn, m, def))
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
