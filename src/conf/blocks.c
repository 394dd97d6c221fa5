/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blocks: the repeatable blocks of icecast.xml as tables (see blocks.h): <listen-socket>,
 * <relay> with its <host>/<upstream> upstreams, <directory>, <mount> with its
 * <authentication> and <hls>. Each block's handler allocates the object, links it into the
 * config and walks the block's own table; a normal mount's merging with its default block is
 * here because it walks the mount's table. Applied by the engine in walk.c, called from the
 * root table in directives.c.
 */
#include "conf/blocks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf/lists.h"

/* <authentication type=...><option name= value=/></authentication> inside <mount> */
static int fn_option(parse_t *p, xmlNodePtr n, void *obj)
{
    auth_conf_t *a = obj;
    kv_conf_t *kv = conf_new_item(p, n, sizeof(*kv));

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
    if (!(m->auth = conf_new_item(p, n, sizeof(*m->auth))))
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

static int fn_mount_headers(parse_t *p, xmlNodePtr n, void *obj)
{
    return conf_walk_headers(p, n, &((mount_conf_t *)obj)->http_headers);
}

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

int blocks_listen(parse_t *p, xmlNodePtr n, void *obj)
{
    listen_conf_t *l = conf_new_item(p, n, sizeof(*l));

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
    if (!(h = conf_new_item(p, n, sizeof(*h))))
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
    relay_host_conf_t *h = conf_new_item(p, n, sizeof(*h));
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

int blocks_relay(parse_t *p, xmlNodePtr n, void *obj)
{
    relay_conf_t *r = conf_new_item(p, n, sizeof(*r));
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

int blocks_directory(parse_t *p, xmlNodePtr n, void *obj)
{
    directory_conf_t *d = conf_new_item(p, n, sizeof(*d));
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
const section_t blocks_hls_sec = {"hls", hls_dirs};
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
    BOOL("opus-title-updates", mount_conf_t, opus_title_updates), /* Rimecast */
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

int blocks_mount(parse_t *p, xmlNodePtr n, void *obj)
{
    config_t *c = obj;
    mount_conf_t *m;
    char *type = NULL, buf[48];
    const char *shown;

    if (is_empty(n)) {
        config_warn_at(p, "mount", NULL, config_line(n), "empty <mount> ignored");
        return 0;
    }
    if (!(m = conf_new_item(p, n, sizeof(*m))))
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

/* ---------------------------------------------------------------- merging and freeing */

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
int blocks_merge_mount(parse_t *p, xmlNodePtr n, mount_conf_t *m, const mount_conf_t *def)
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
    conf_free_headers(m->http_headers);
    free(m);
}

/* The repeatable blocks of c, through their tables; the handlers' own allocations by hand. */
void blocks_free(config_t *c)
{
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
}
