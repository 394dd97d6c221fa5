/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * snapshot: what icecast.xml is loaded into (config_t and its blocks), the warning callback and
 * the lookups on a loaded snapshot (snapshot.c), with no parser. The engine (walk.h) and the
 * vocabulary (directives.h) fill these; everything outside src/conf includes conf/config.h,
 * which includes this and declares the loader.
 * Numbers: -1 in a per-mount field means "inherit the global value".
 */
#ifndef RIMECAST_CONF_SNAPSHOT_H
#define RIMECAST_CONF_SNAPSHOT_H

#include "core/cidr.h"

typedef struct kv_conf {
    char *name;
    char *value;
    struct kv_conf *next;
} kv_conf_t;

typedef struct http_header_conf {
    char *name;
    char *value;
    int status; /* 0 = any status */
    struct http_header_conf *next;
} http_header_conf_t;

/* What a listen socket serves: plain HTTP, TLS only (Icecast 2.5 "rfc2818", <ssl>1</ssl>), or
 * either, told apart by the first byte a client sends ("auto"). */
enum { LISTEN_TLS_OFF = 0, LISTEN_TLS_ON = 1, LISTEN_TLS_AUTO = 2,
       LISTEN_TLS_AUTO_NO_PLAIN = 3, LISTEN_TLS_RFC2817 = 4 }; /* the last two are refused */

typedef struct listen_conf {
    int port;
    char *bind_address;    /* NULL = all addresses */
    char *shoutcast_mount; /* NULL unless set on this socket */
    int shoutcast_compat;
    int tls;               /* LISTEN_TLS_*: <ssl> 0/1 or <tls> (Icecast 2.5 words) */
    int so_sndbuf;         /* 0 = system default */
    struct listen_conf *next;
} listen_conf_t;

typedef struct auth_conf {
    char *type;         /* "htpasswd", "url", ... */
    kv_conf_t *options; /* <option name= value=/> in order */
} auth_conf_t;

/* <hls> (Rimecast), globally and per <mount>: HLS and Low-Latency HLS of MP3 and AAC mounts.
 * In a <mount>, -1 takes the global value. */
typedef struct hls_conf {
    int enabled;         /* 1 */
    int target_duration; /* seconds a segment lasts at most; 6 */
    int segments;        /* complete segments a playlist lists; 6 */
    int part_target_ms;  /* a low-latency part lasts at most this; 1000 */
    int sessions;        /* 1: hls.m3u8 hands out session tokens (listeners counted); 1 */
    int sessions_per_address; /* sessions one address may hold on a mount, 0 no limit;
                               * -1 (the default): half of max-listeners, at most 100 */
} hls_conf_t;

/* <mount><ads> (Rimecast): ad breaks on the mount, each listener hearing the ads an ad server
 * (VAST) chooses for it (docs/ADS.md). -1 and NULL: unset (taken from a default block, else the
 * default named beside each). */
typedef struct ads_conf {
    char *vast_url;          /* the ad server's URL template ({ip} {ua} ...); NULL: no ads */
    int preroll;             /* 1: a listener joining hears ads first; 0 */
    int preroll_seconds;     /* the longest preroll; 30 */
    int allow_private;       /* 1: URLs may reach loopback, link-local, private addresses; 0 */
    char *title_prefix;      /* a title starting so signals a break; "ADBREAK_LENGTH_" */
    int request_timeout_ms;  /* an ad server's answer (each wrapper too); 2000 */
    int creative_timeout_ms; /* fetching a creative; 10000 */
} ads_conf_t;

typedef struct mount_conf {
    char *mount_name;   /* NULL for type="default", unless it carries a pattern ("/live*") */
    int is_default;     /* <mount type="default"> */
    char *username;     /* source user, default "source" */
    char *password;     /* mount source password or NULL */
    int max_listeners;  /* -1 unlimited */
    int max_listener_duration; /* 0 = none */
    long burst_size;    /* -1 = global */
    long queue_size;    /* -1 = global */
    int source_timeout; /* -1 = global */
    int mp3_metadata_interval; /* -1 = default (source's or 16000); 0 disables */
    long limit_rate;    /* <limit-rate> (Icecast-KH): bits/s a source may send on average, read
                         * no faster (stream/source.c); -1 unset, 0 no limit */
    char *listenurl;    /* <listenurl> (Icecast-KH): the URL published as the mount's listenurl
                         * (stats, status pages, YP); NULL = built from <hostname> and port */
    char *dump_file;
    char *intro;
    char *fallback_mount;
    int fallback_override;
    int fallback_when_full;
    char *charset;
    int opus_title_updates; /* <opus-title-updates> 1: admin title updates are carried into an
                             * Ogg Opus stream as a new chain link; 0 (default): refused, as
                             * Icecast 2.4 refuses them (admin/commands.c) */
    int public;         /* -1 = source decides */
    int hidden;
    int no_mount;
    char *stream_name;
    char *stream_description;
    char *stream_url;
    char *genre;
    char *bitrate;
    char *type;         /* content type override */
    char *subtype;
    char *cluster_password;
    char *on_connect;
    char *on_disconnect;
    auth_conf_t *auth;
    http_header_conf_t *http_headers;
    hls_conf_t hls;     /* -1 members: the global <hls> */
    ads_conf_t ads;     /* <ads> */
    struct mount_conf *next;
} mount_conf_t;

/* At most this many upstreams in one <relay> (the flat one and the <host>/<upstream> blocks). */
#define RELAY_MAX_HOSTS 16

/* One upstream of a <relay>: Icecast-KH's <host> block, Icecast 2.5's <upstream> block, or the
 * relay's own flat fields. After load every field is set (the relay's values filled in). */
typedef struct relay_host_conf {
    char *server;       /* default 127.0.0.1 */
    int port;           /* default 8000 */
    char *mount;        /* default "/" */
    char *username;     /* default the relay's */
    char *password;     /* default the relay's */
    char *bind;         /* default the relay's */
    int tls;            /* default the relay's */
    int relay_shoutcast_metadata; /* default the relay's */
    int timeout;        /* <timeout> seconds to connect and to get the response head; default 10 */
    struct relay_host_conf *next;
} relay_host_conf_t;

typedef struct relay_conf {
    char *server;       /* default 127.0.0.1 */
    int port;           /* default 8000 */
    char *mount;        /* default "/" */
    char *local_mount;  /* default = mount */
    char *username;
    char *password;
    int relay_shoutcast_metadata; /* default 1 */
    int on_demand;      /* default = relays-on-demand */
    char *bind;
    int tls;            /* <tls>/<ssl> 1: the upstream speaks HTTPS (verified); default 0 */
    /* the upstreams, tried in this order: the flat fields above first when the block has any
     * of <server>, <port>, <mount> (or has no <host>/<upstream> block), then the blocks */
    relay_host_conf_t *hosts;
    int nhosts;         /* 1..RELAY_MAX_HOSTS */
    struct relay_conf *next;
} relay_conf_t;

typedef struct directory_conf {
    char *yp_url;
    int yp_url_timeout; /* default 15 */
    int touch_interval; /* default 600 */
    int add_delay;      /* seconds a source streams before it is listed; default 30 */
    struct directory_conf *next;
} directory_conf_t;

/* A sibling server new listeners are sent to (302) when this one is full or past its
 * <redirect-share> (Rimecast):
 * "http://host:port" or "https://host:port", checked at load time. */
typedef struct sibling_conf {
    char *url;
    struct sibling_conf *next;
} sibling_conf_t;

typedef struct alias_conf {
    char *source;
    char *destination;
    int port;           /* -1 any */
    char *bind_address; /* NULL any */
    struct alias_conf *next;
} alias_conf_t;

/* One start-up warning: the setting it is about (element name, e.g. "relay"), where, and
 * the message without the "file:line: " prefix. */
typedef struct config_warning {
    char *setting;
    long line;
    char *text;
    struct config_warning *next;
} config_warning_t;

/* <security><login-backoff> (Rimecast): the per-address back-off after failed logins
 * (auth/guard.h says how each value is used). */
typedef struct {
    int failures;       /* failed logins within window that block an address; 5, 0 = never */
    int window;         /* s; 60 */
    int block;          /* the first block, s; each later one doubles; 2 */
    int block_max;      /* s; 300 */
    int forget;         /* s without a failure after which one earlier block is forgotten; 600 */
    int ipv4_prefix;    /* addresses within one such prefix count as one; 32 */
    int ipv6_prefix;    /* 64 */
    int exempt_local;   /* loopback and the trusted proxies are never blocked; 1 */
    cidr_list_t exempt; /* <exempt> addresses and ranges, never blocked */
} login_backoff_conf_t;

typedef struct config {
    char *filename;
    config_warning_t *warnings; /* in file order; NULL when the file loaded cleanly */

    /* root level */
    char *location;     /* "Earth" */
    char *admin;        /* "icemaster@localhost" */
    char *hostname;     /* "localhost" */
    char *server_id;    /* NULL = "Rimecast <version>" */
    int fileserve;      /* 1 */
    char *mime_types;   /* "/etc/mime.types" */
    int icelogin;       /* 0 */
    char *shoutcast_mount; /* "/stream" */
    int relays_on_demand;
    char *master_server;
    int master_server_port;
    int master_ssl_port;        /* Icecast-KH: the master's HTTPS port (list and relays); 0 */
    int master_update_interval; /* 120 */
    char *master_username;      /* "relay" */
    char *master_password;
    sibling_conf_t *siblings;   /* <redirect-siblings><sibling> (Rimecast) */
    int sibling_poll_interval;  /* <redirect-siblings><poll-interval>, seconds; 5 */
    int sibling_share;          /* <redirect-siblings><redirect-share>: percent of this server's
                                 * limits above which new listeners go to a less loaded sibling;
                                 * 100 (only when full) */

    /* <limits> */
    int clients;        /* 256 */
    int sources;        /* 16 */
    long queue_size;    /* 524288 */
    int client_timeout; /* 30 */
    int header_timeout; /* 15 */
    int source_timeout; /* 10 */
    long burst_size;    /* 65536; burst-on-connect 0 -> 0 */
    int workers;        /* 0 = number of online CPUs (Rimecast extension) */
    int max_listeners;  /* listeners on all mounts together (Icecast-KH); -1 or 0 = no limit */
    int write_window_ms; /* listener write coalescing window, ms; 0 = write every block (Rimecast);
                          * default 500 */
    int script_timeout; /* s before an on-connect/on-disconnect script is killed (Rimecast); 60 */
    int upgrade_drain;  /* s the old process of an upgrade serves its TLS listeners (Rimecast); 3600 */
    int shutdown_grace; /* s a stopping server serves on with /health at 503 (Rimecast); 0 */

    /* <authentication> */
    char *source_password;
    char *relay_user;   /* "relay" */
    char *relay_password;
    char *admin_user;   /* "admin" */
    char *admin_password;

    listen_conf_t *listen;      /* at least one after load (root <port> or 8000) */
    relay_conf_t *relays;
    mount_conf_t *mounts;       /* normal and default mounts in file order */
    directory_conf_t *directories;
    http_header_conf_t *http_headers;

    /* <paths> */
    char *basedir;      /* PKGDATADIR (/usr/local/share/rimecast) */
    char *logdir;       /* LOCALSTATEDIR/log/rimecast */
    char *webroot;      /* PKGDATADIR/web */
    char *adminroot;    /* PKGDATADIR/admin */
    char *pidfile;
    char *allow_ip;     /* files of addresses and CIDR ranges, one a line (auth/access.h) */
    char *deny_ip;
    char *deny_agents;  /* file of User-Agent patterns, one a line (Rimecast, as Icecast-KH) */
    char *trusted_proxies; /* file of proxy addresses whose X-Forwarded-For is believed */
    cidr_list_t forwarded_for; /* <x-forwarded-for> (Icecast-KH, repeatable): more such proxies,
                                * addresses and ranges written in the config itself */
    char *geoip_db;     /* MaxMind .mmdb (Country or City): listeners' countries; NULL = none */
    char *ssl_certificate;      /* PEM: certificate chain, and the key unless ssl_private_key */
    char *ssl_private_key;      /* PEM key (Icecast-KH), NULL = in ssl_certificate */
    char *ssl_allowed_ciphers;  /* TLS 1.2 cipher list; NULL = the built-in default */
    char *ssl_cafile;           /* PEM CA certificates trusted for upstreams (Icecast-KH), besides
                                 * the system's; NULL = the system's only */
    alias_conf_t *aliases;

    /* <logging> */
    char *accesslog;    /* "access.log", relative to logdir; "-" = stderr */
    char *errorlog;     /* "error.log" */
    char *playlistlog;
    int loglevel;       /* 3 */
    int logsize;
    int logarchive;
    char *sessionlog;   /* "sessions.log": a JSON line per listener session; "none" = off */
    char *audience_db;  /* "audience.db": the SQLite store of sessions, or a libpq URI
                         * (postgresql://...): a PostgreSQL store; "none" = off */
    char *audience_server; /* <server-name>: the name its records carry; NULL = <hostname> */
    long spool_size;    /* bytes the spool of records waiting for PostgreSQL may hold */
    int address_truncation; /* store and log only IPv4 /24, IPv6 /48 of listeners' addresses */
    int qualified_seconds;  /* 60: a session this long or longer is a qualified one */
    int retention_days;     /* 0: the store keeps its records; else it removes older ones */
    char *listener_id_param; /* <listener-id-param>: the query parameter a player's listener
                              * id comes in (the listener key); NULL: none */
    int resume_seconds;     /* 180: a listener back this soon continues its session; 0: off */
    char *audience_bots;    /* <bots>: a robots list in the IAB/ABC format, beside the built-in
                             * one (audience/bots.h); NULL: the built-in list only */
    int max_concurrent;     /* <max-concurrent-per-listener>: sessions of one listener key on a
                             * mount at once past which they are invalid traffic; 0: no limit */
    char *audience_export;  /* <export-dir>: a file of each UTC day's sessions; NULL: none */

    /* <security> */
    int chroot;
    char *user;         /* changeowner; NULL = none */
    char *group;
    login_backoff_conf_t backoff; /* <login-backoff> (Rimecast) */
    hls_conf_t hls;               /* <hls> (Rimecast) */
} config_t;

/* Called for non-fatal problems (unknown element, deprecated form, unimplemented setting):
 * "file:line: message". The same warnings are kept in config_t.warnings. */
typedef void (*config_warn_fn)(const char *msg);

/* The <mount> block for this mount name, else the type="default" block, else NULL.
 * Normal blocks are merged with their default block at load time (unset fields and headers
 * taken from it, as Icecast 2.4 does); a normal mount-name with * ? [ also matches as a
 * pattern after exact names. */
const mount_conf_t *config_find_mount(const config_t *c, const char *mount);
/* Only a normal block with exactly this name, else NULL. */
const mount_conf_t *config_find_mount_exact(const config_t *c, const char *mount);
/* Settings a <mount> block may override (-1 there: unset): the value in force for a mount
 * whose block is mc (NULL: none), the block's when it sets one, else the global one. */
long config_mount_burst_size(const config_t *c, const mount_conf_t *mc);
long config_mount_queue_size(const config_t *c, const mount_conf_t *mc);
int config_mount_source_timeout(const config_t *c, const mount_conf_t *mc);
/* The first type="default" block without mount-name or whose mount-name pattern (fnmatch,
 * FNM_PATHNAME) matches mount, else NULL. */
const mount_conf_t *config_find_default_mount(const config_t *c, const char *mount);

#endif
