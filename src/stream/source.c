/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * source: source clients (see source.h): authentication, mount creation, the read loop that
 * feeds the format handler, source-timeout. The Shoutcast v1 login is stream/shoutcast.c; it
 * hands its connection over here once logged in.
 *
 * A source belongs to the worker that accepted it; each worker keeps its own list of sources
 * for the timeout check. Reads go through a per-thread scratch buffer: the format handler copies
 * what it keeps into blocks.
 */
#include "stream/source.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "auth/auth.h"
#include "auth/auth_url.h"
#include "auth/guard.h"
#include "conf/config.h"
#include "core/bucket.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/list.h"
#include "core/log.h"
#include "core/str.h"
#include "core/url.h"
#include "format/format.h"
#include "http/chunked.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/worker.h"
#include "net/server.h"
#include "stream/events.h"
#include "stream/override.h"
#include "stream/mount.h"
#include "stream/dump.h"
#include "stream/station.h"

#define SOURCE_READ_BUF 65536
#define SOURCE_READ_BUDGET (256 * 1024) /* per readable event: see source_on_readable */
#define SOURCE_INFO_MAX 1024
/* <limit-rate> (Icecast-KH): the source is read no faster than the rate on average over a
 * minute, as KH averages it; a source that connects may send two seconds' worth at once. While
 * over, reading pauses for at least LIMIT_PAUSE_MS (KH: 310 ms) and the rest waits in TCP. */
#define LIMIT_WINDOW_S 60
#define LIMIT_START_S 2
#define LIMIT_PAUSE_MS 250

typedef struct source source_t;
struct source {
    conn_t *conn;
    mount_t *mount;
    format_t *fmt;
    struct dump *dump; /* <dump-file> recording, or NULL */
    uint64_t last_read_ms;
    int counted; /* holds a slot in the sources limit */
    int linked;  /* in its worker's sources */
    int chunked; /* the body is chunked (PUT with Transfer-Encoding: chunked) */
    chunked_t body;
    int relayed; /* a relay's connection: the mount is the relay's and outlives it */
    int quiet;   /* an upgrade's local feed (source_become_feed): no events, scripts, recording */
    list_t link; /* in worker_sources[its worker] */
    long limit;        /* <limit-rate> in bytes/s, 0: none */
    bucket_t allowance; /* what it may send (when limit) */
    int paused;        /* over its limit: reading waits for the deadline */
    int limit_said;
    /* the format handler holds bytes it gathered (format_sink_t.gathered): once the source
     * stops sending for quiet_ms(), the deadline has them emitted (quiet_armed) */
    size_t gathered;
    uint32_t read_gap_ms; /* between its last two reads */
    int quiet_armed;
};

static list_t worker_sources[SERVER_MAX_WORKERS]; /* each touched by its worker only */
/* sources that began or ended since the heap was last trimmed (heap_trim_after_churn) */
static atomic_uint source_churn;
static __thread unsigned char read_buf[SOURCE_READ_BUF];

/* ---- format sink ---- */

static void sink_emit(void *ctx, block_t *b)
{
    source_t *s = ctx;
    mount_publish(s->mount, b);
}

static void sink_set_headers(void *ctx, block_t *headers)
{
    source_t *s = ctx;
    mount_set_headers(s->mount, headers);
}

static void sink_set_tag(void *ctx, const char *key, const char *value)
{
    source_t *s = ctx;
    mount_set_tag(s->mount, key, value);
}

static void sink_tags_done(void *ctx)
{
    source_t *s = ctx;
    mount_update_meta(s->mount);
    char *title = mount_get_tag(s->mount, "title");
    events_emit(EVENT_METADATA, s->mount->name, s->conn->id, title);
    free(title);
}

static void sink_log(void *ctx, int level, const char *msg)
{
    source_t *s = ctx;
    char esc[1024];
    escape_log_utf8(esc, sizeof(esc), msg, strlen(msg));
    log_msg(level, "format", "%s: %s", s->mount->name, esc);
}

static void sink_gathered(void *ctx, size_t bytes)
{
    source_t *s = ctx;
    s->gathered = bytes;
    mount_set_gathered(s->mount, bytes);
}

/* ---- stream info from headers ---- */

/* A header value made safe to store and repeat in responses: control characters dropped,
 * length capped. */
static char *clean_value(const char *v, size_t len)
{
    if (!v)
        return NULL;
    if (len > SOURCE_INFO_MAX)
        len = SOURCE_INFO_MAX;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)v[i] >= 0x20 && v[i] != 0x7f)
            out[n++] = v[i];
    out[n] = '\0';
    return out;
}

static char *header_clean(const http_request_t *req, const char *a, const char *b)
{
    const http_header_t *h = http_find_header(req, a);
    if (!h && b)
        h = http_find_header(req, b);
    return h ? clean_value(h->value, h->value_len) : NULL;
}

/* The bitrate named in ice-audio-info ("bitrate=128", or "ice-bitrate=128" as libshout writes
 * it), as Icecast maps it to icy-br for listeners; NULL if there is none. */
static char *audio_info_bitrate(const char *audio_info)
{
    const char *p = audio_info ? strstr(audio_info, "bitrate=") : NULL;
    if (!p)
        return NULL;
    p += strlen("bitrate=");
    size_t n = strspn(p, "0123456789");
    return n > 0 && n < 10 ? strndup(p, n) : NULL;
}

/* What the source's headers say about the stream; the <mount> settings are merged over it by
 * the mount (mount_apply_config), again on every reload. */
static void build_info(mount_info_t *i, conn_t *c, const http_request_t *req)
{
    i->content_type = header_clean(req, "content-type", NULL);
    if (!i->content_type)
        i->content_type = strdup("audio/mpeg");
    i->name = header_clean(req, "ice-name", "icy-name");
    i->description = header_clean(req, "ice-description", "icy-description");
    i->genre = header_clean(req, "ice-genre", "icy-genre");
    i->url = header_clean(req, "ice-url", "icy-url");
    i->bitrate = header_clean(req, "ice-bitrate", "icy-br");
    i->audio_info = header_clean(req, "ice-audio-info", NULL);
    if (!i->bitrate)
        i->bitrate = audio_info_bitrate(i->audio_info);
    i->user_agent = header_clean(req, "user-agent", NULL);
    i->source_ip = strdup(c->ip);
    char *pub = header_clean(req, "ice-public", "icy-pub");
    i->public = pub ? atoi(pub) != 0 : -1;
    free(pub);
}

/* ---- authentication ---- */

int source_check_password(const config_t *cfg, const mount_conf_t *mc, const char *user,
                          const char *pass)
{
    if (mc && mc->password) {
        const char *want_user = mc->username ? mc->username : "source";
        return str_equal_ct(user, want_user) & str_equal_ct(pass, mc->password);
    }
    if (!cfg->source_password)
        return 0;
    return str_equal_ct(user, "source") & str_equal_ct(pass, cfg->source_password);
}

/* Whether the request carries a password at all (Basic, or ice-password where allowed). */
static int sent_credentials(const http_request_t *req, const config_t *cfg)
{
    return http_find_header(req, "authorization") ||
           (cfg->icelogin && http_find_header(req, "ice-password"));
}

/* 1: the right credentials; 0: wrong ones; -1: none given (libshout asks first without
 * them: a challenge, no failed login). */
static int authenticate(conn_t *c, const http_request_t *req, const config_t *cfg,
                        const mount_conf_t *mc)
{
    char *user = NULL, *pass = NULL;
    int ok = -1;
    if (http_parse_basic_auth(req, &user, &pass) == 0) {
        ok = source_check_password(cfg, mc, user, pass);
        free(client_of(c)->log_user);
        client_of(c)->log_user = str_dup(user);
    } else if (cfg->icelogin) {
        char *p = http_header_dup(req, "ice-password");
        if (p)
            ok = source_check_password(cfg, mc, "source", p);
        free(p);
    }
    free(user);
    free(pass);
    return ok;
}

/* ---- connection role ---- */

static void source_end(conn_t *c, const char *why)
{
    source_t *s = c->data;
    log_info("source %s on %s %s", CIDR_SHOWN(c->ip), s->mount->name, why);
    conn_close(c);
}

/* The stream bytes in buf[0..n) as the format handler must see them: a chunked body is
 * decoded in place. Returns their number (0 when buf held only framing), or -1 when the source
 * was ended: bad framing, or the end of the body (its last bytes ingested first). */
static ssize_t source_decode_body(conn_t *c, unsigned char *buf, ssize_t n)
{
    source_t *s = c->data;
    if (!s->chunked)
        return n;
    ssize_t r = chunked_decode(&s->body, buf, (size_t)n, NULL);
    if (r < 0) {
        char why[96];
        snprintf(why, sizeof(why), "dropped: %s", chunked_strerror((int)r));
        source_end(c, why);
        return -1;
    }
    if (!chunked_done(&s->body))
        return r;
    if (r > 0 && s->fmt->ops->ingest(s->fmt, buf, (size_t)r) < 0)
        source_end(c, "dropped: format error");
    else
        source_end(c, "ended its chunked body");
    return -1;
}

/* A metadata update for the stream itself (/admin/metadata on an Ogg mount) goes to the format
 * handler before the next bytes: it carries it from the next page a listener may start on. */
static void source_stream_meta(source_t *s)
{
    char *title, *artist;
    if (!mount_take_stream_meta(s->mount, &title, &artist))
        return;
    if (s->fmt->ops->set_meta)
        s->fmt->ops->set_meta(s->fmt, title, artist);
    free(title);
    free(artist);
}

/* The mount's <limit-rate> for s (at start and reload; an upgrade's local feed has none). */
static void limit_setup(source_t *s, const mount_conf_t *mc)
{
    long limit = !s->quiet && mc && mc->limit_rate > 0 ? mc->limit_rate / 8 : 0;
    if (limit == s->limit)
        return;
    s->limit = limit;
    bucket_init(&s->allowance, limit, LIMIT_WINDOW_S, LIMIT_START_S, loop_now_ms());
    if (!limit && s->paused) {
        s->paused = 0;
        s->quiet_armed = 0;
        conn_set_deadline(s->conn, 0);
        conn_rearm(s->conn);
    }
}

/* Bytes s may read now: SIZE_MAX without a limit; 0 when it is over its limit, its reading
 * then paused until the deadline (on_timeout: limit_resume). */
static size_t limit_room(source_t *s)
{
    if (!s->limit)
        return SIZE_MAX;
    size_t room = bucket_room(&s->allowance, loop_now_ms());
    if (room && s->paused) {
        s->paused = 0;
        conn_set_deadline(s->conn, 0);
    } else if (!room && !s->paused) {
        uint64_t wait = bucket_wait_ms(&s->allowance);
        s->paused = 1;
        s->quiet_armed = 0; /* the pause's deadline instead; reading resumes after it */
        conn_set_deadline(s->conn, wait > LIMIT_PAUSE_MS ? wait : LIMIT_PAUSE_MS);
        if (!s->limit_said++)
            log_info("source %s on %s sends faster than its limit-rate (%ld bit/s): read no "
                     "faster", CIDR_SHOWN(s->conn->ip), s->mount->name, s->limit * 8);
    }
    return room;
}

/* How long a source that holds gathered bytes may stay silent before they are emitted without
 * waiting for its next read: twice the coalescing time, or twice the gap between its last two
 * reads for a source that sends less often (its next read would have emitted them). */
static uint64_t quiet_ms(const source_t *s)
{
    uint64_t coalesce = (uint64_t)s->fmt->coalesce_ms * 2, gap = (uint64_t)s->read_gap_ms * 2;
    return gap > coalesce ? gap : coalesce;
}

/* After a read: the deadline for the gathered bytes, if none is set (it is not moved at every
 * read: when it passes early it is set again for what is left). */
static void quiet_arm(source_t *s)
{
    if (s->gathered && !s->paused && !s->quiet_armed && s->fmt->coalesce_ms > 0) {
        s->quiet_armed = 1;
        conn_set_deadline(s->conn, quiet_ms(s));
    }
}

/* A source's deadline: the pause of a source over its limit ended, or the source stayed quiet
 * with gathered bytes (they are emitted: a listener coming now gets them in its burst, which
 * counts them); any other deadline of a source ends it. */
static void source_on_timeout(conn_t *c)
{
    source_t *s = c->data;
    if (s && s->paused) {
        s->paused = 0;
        c->ops->on_readable(c);
    } else if (s && s->quiet_armed) {
        s->quiet_armed = 0;
        uint64_t silent = loop_now_ms() - s->last_read_ms, due = quiet_ms(s);
        if (silent < due) {
            s->quiet_armed = 1;
            conn_set_deadline(c, due - silent);
        } else if (s->fmt->ops->ingest(s->fmt, NULL, 0) < 0) {
            source_end(c, "dropped: format error");
        }
    } else {
        source_end(c, "timed out");
    }
}

/* Reads at most SOURCE_READ_BUDGET bytes per readable event, so a source that sends faster
 * than we read cannot hold its worker (other connections, timers, listener passes); what is
 * left is read on the next loop iteration, after the other events (conn_rearm). A source over
 * its <limit-rate> is read again when its pause ends (limit_room). */
static void source_on_readable(conn_t *c)
{
    source_t *s = c->data;
    size_t budget = SOURCE_READ_BUDGET;
    while (budget > 0) {
        size_t room = limit_room(s), want = budget < sizeof(read_buf) ? budget : sizeof(read_buf);
        if (room == 0)
            return;
        ssize_t n = conn_read(c, read_buf, room < want ? room : want);
        if (n > 0) {
            budget -= (size_t)n;
            if (s->limit)
                bucket_take(&s->allowance, (size_t)n);
            uint64_t now = loop_now_ms();
            uint64_t gap = now - s->last_read_ms;
            s->read_gap_ms = gap < 60000 ? (uint32_t)gap : 60000;
            s->last_read_ms = now;
            atomic_fetch_add_explicit(&s->mount->bytes_read, (uint64_t)n, memory_order_relaxed);
            if ((n = source_decode_body(c, read_buf, n)) < 0)
                return;
            source_stream_meta(s);
            if (s->fmt->ops->ingest(s->fmt, read_buf, (size_t)n) < 0) {
                source_end(c, "dropped: format error");
                return;
            }
            continue;
        }
        if (n == 0) {
            source_end(c, "disconnected");
            return;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            source_end(c, "disconnected (read error)");
        else
            quiet_arm(s);
        return;
    }
    if (conn_rearm(c) < 0)
        source_end(c, "dropped (epoll re-arm failed)");
}

void source_end_mount(mount_t *m)
{
    mount_end(m); /* listeners then follow the fallbacks, resolved by name (stream/fallback.c) */
}

static void source_release(conn_t *c)
{
    source_t *s = c->data;
    if (!s)
        return;
    if (s->linked)
        list_remove(&s->link);
    if (s->fmt) {
        if (s->fmt->ops->flush)
            s->fmt->ops->flush(s->fmt);
        format_free(s->fmt);
    }
    if (s->mount) {
        if (s->linked && !s->quiet)
            events_emit(EVENT_SOURCE_DISCONNECT, s->mount->name, c->id, CIDR_SHOWN(c->ip));
        if (!s->relayed)
            source_end_mount(s->mount);
        if (s->linked && !s->quiet) {
            station_source_ended(s->mount, s->dump);
            auth_url_mount_event(config_find_mount(server_config(), s->mount->name),
                                 s->mount->name, 0);
        }
        mount_unref(s->mount);
    }
    if (s->counted)
        atomic_fetch_sub(&server.stats.sources, 1);
    atomic_fetch_add_explicit(&source_churn, 1, memory_order_relaxed);
    free(s);
    c->data = NULL;
}

static const conn_ops_t source_ops = {
    .name = "source",
    .on_readable = source_on_readable,
    .on_writable = conn_write_pending,
    .on_hangup = NULL,
    .on_timeout = source_on_timeout,
    .on_close = source_release,
};

/* Sources coming and going leave free memory in the heap that is no block's: the requests and
 * read buffers of their connections, in the middle of the structures of those that stayed.
 * Every 10 s after sources began or ended, worker 0 gives its whole free pages back. */
static void heap_trim_after_churn(worker_t *w)
{
    static unsigned ticks;
    if (w->id != 0 || ++ticks % 10 != 0 ||
        !atomic_exchange_explicit(&source_churn, 0, memory_order_relaxed))
        return;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* Drops sources idle for longer than their source-timeout (a 1 s timer on every worker), gives
 * back the block pools' emptied regions (here, so that no listener's free unmaps) and trims the
 * heap after sources came and went. */
static void check_timeouts(worker_t *w, void *arg)
{
    block_pools_trim();
    heap_trim_after_churn(w);
    uint64_t now_ms = loop_now_ms();
    const config_t *cfg = server_config();
    source_t *s, *tmp;
    list_foreach_safe(s, tmp, &worker_sources[w->id], source_t, link) {
        if (s->conn->closing)
            continue;
        const mount_conf_t *mc = config_find_mount(cfg, s->mount->name);
        int timeout = config_mount_source_timeout(cfg, mc);
        if (timeout > 0 && now_ms - s->last_read_ms > (uint64_t)timeout * 1000u)
            source_end(s->conn, "timed out (no data within source-timeout)");
    }
}

/* A slot in <sources> for c, and its source state (c switched to the source role). NULL with
 * the HTTP status to fail with in *status. */
static source_t *source_new(conn_t *c, const char *mount_name, int relayed, int *status)
{
    if (atomic_fetch_add(&server.stats.sources, 1) >= server_config()->sources) {
        atomic_fetch_sub(&server.stats.sources, 1);
        log_warn("source %s on %s refused: too many sources connected", CIDR_SHOWN(c->ip),
                 mount_name);
        *status = 403;
        return NULL;
    }
    source_t *s = calloc(1, sizeof(*s));
    if (!s) {
        atomic_fetch_sub(&server.stats.sources, 1);
        *status = 500;
        return NULL;
    }
    s->counted = 1;
    atomic_fetch_add_explicit(&source_churn, 1, memory_order_relaxed);
    s->conn = c;
    s->relayed = relayed;
    c->data = s;
    c->ops = c->role = &source_ops;
    return s;
}

/* s's mount: a new one built whole from the request and published, or a relay's own mount
 * (*relay_mount, when set) given the new feed. Its format in *fops. 0 or an HTTP status. */
static int source_mount(source_t *s, const http_request_t *req, const char *mount_name,
                        const mount_conf_t *mc, mount_t **relay_mount,
                        const format_ops_t **fops)
{
    conn_t *c = s->conn;
    mount_feed_t feed = {.worker = c->worker, .conn_id = c->id};
    mount_info_t info = {0}; /* the source's (or this upstream's) headers and address */
    build_info(&info, c, req);
    if (relay_mount && *relay_mount) {
        s->mount = mount_ref(*relay_mount);
        *fops = format_for_content_type(mount_info(s->mount)->content_type);
        mount_set_source_info(s->mount, &info);
        feed.is_ogg = *fops == &format_ogg_ops;
        mount_set_feed(s->mount, &feed);
        return 0;
    }
    *fops = format_for_content_type(mc && mc->type ? mc->type : info.content_type);
    feed.is_ogg = *fops == &format_ogg_ops;
    int err = 0;
    s->mount = mount_create(mount_name, &info, &feed, &err); /* published whole */
    if (!s->mount) {
        if (err != -EPERM) /* a name the server keeps: mount_create logged it */
            log_warn("source %s on %s refused: %s", CIDR_SHOWN(c->ip), mount_name,
                     err == -EEXIST ? "mountpoint in use" : strerror(-err));
        return err == -EEXIST ? 409 : err == -EPERM ? 403 : 500;
    }
    if (relay_mount)
        *relay_mount = mount_ref(s->mount);
    return 0;
}

/* s's format handler, set for what the request and the mount's settings say. 0 or -ENOMEM. */
static int source_format(source_t *s, const format_ops_t *fops, const http_request_t *req,
                         const mount_conf_t *mc)
{
    format_sink_t sink = {s, sink_emit, sink_set_headers, sink_set_tag, sink_tags_done, sink_log,
                          sink_gathered};
    if (!(s->fmt = format_new(fops, &sink)))
        return -ENOMEM;
    const http_header_t *mi = http_find_header(req, "icy-metaint");
    if (mi && mi->value_len > 0 && mi->value_len < 8)
        s->fmt->icy_metaint = atoi(mi->value);
    if (s->fmt->icy_metaint < 0)
        s->fmt->icy_metaint = 0;
    s->fmt->charset = mc ? mc->charset : NULL;
    s->fmt->opus_title_updates = mc && mc->opus_title_updates;
    /* listeners are written once per window anyway: gathering reads for a quarter of it adds
     * little delay and saves block headers and iovecs */
    s->fmt->coalesce_ms = server_config()->write_window_ms / 4;
    /* a relay joins its upstream's stream where it is: its listeners (the first ones, and
     * those kept across a reconnect) start on a frame all the same */
    s->fmt->join_midway = s->relayed;
    return 0;
}

/* s is on the air: counted, announced (events, recording and scripts, fallback-override, URL
 * auth's mount_add, the log). */
static void source_announce(source_t *s, const char *mount_name, const mount_conf_t *mc)
{
    conn_t *c = s->conn;
    s->last_read_ms = loop_now_ms();
    list_insert_head(&worker_sources[c->worker->id], &s->link);
    s->linked = 1;
    atomic_fetch_add(s->relayed ? &server.stats.source_relay_connections
                                : &server.stats.source_client_connections, 1);
    atomic_fetch_add(&server.stats.source_total_connections, 1);
    if (!s->quiet) {
        events_emit(EVENT_SOURCE_CONNECT, mount_name, c->id, CIDR_SHOWN(c->ip));
        s->dump = station_source_started(s->mount);
        override_source_started(c->worker, s->mount);
        auth_url_mount_event(mc, mount_name, 1);
    }
    log_info("%s %s connected to %s (%s, %s)", s->relayed ? "relay from" : "source",
             CIDR_SHOWN(c->ip), mount_name, s->fmt->ops->name, mount_info(s->mount)->content_type);
}

/* Creates the mount (or, for a relay, takes *relay_mount when it is set) and switches c to the
 * source role. `response` is sent first (NULL for none); leftover bytes after the head are
 * ingested. 0, or an HTTP status to fail with. */
static int become(conn_t *c, const http_request_t *req, const char *mount_name,
                  mount_t **relay_mount, int quiet, const char *response, const char *leftover,
                  size_t leftover_len)
{
    const mount_conf_t *mc = config_find_mount(server_config(), mount_name);
    const format_ops_t *fops = NULL;
    int status = 0;
    source_t *s = source_new(c, mount_name, relay_mount != NULL, &status);
    if (!s)
        return status;
    s->quiet = quiet;
    if ((status = source_mount(s, req, mount_name, mc, relay_mount, &fops)))
        return status;
    if (source_format(s, fops, req, mc) < 0)
        return 500;
    source_announce(s, mount_name, mc);
    limit_setup(s, mc);
    if (s->limit)
        bucket_take(&s->allowance, leftover_len);
    client_of(c)->status = 200;
    if (response) /* its buffer is not kept for the source's life */
        conn_send(c, response, strlen(response), conn_drop_wbuf);
    atomic_fetch_add(&s->mount->bytes_read, leftover_len);
    if (leftover_len && !c->closing &&
        s->fmt->ops->ingest(s->fmt, (const unsigned char *)leftover, leftover_len) < 0)
        source_end(c, "dropped: format error");
    else if (leftover_len && !c->closing)
        quiet_arm(s);
    return 0;
}

int source_become(conn_t *c, const http_request_t *req, const char *mount_name,
                  const char *response, const char *leftover, size_t leftover_len)
{
    return become(c, req, mount_name, NULL, 0, response, leftover, leftover_len);
}

int source_become_relay(conn_t *c, const http_request_t *req, const char *mount_name,
                        mount_t **mount, const char *leftover, size_t leftover_len)
{
    return become(c, req, mount_name, mount, 0, NULL, leftover, leftover_len);
}

int source_become_feed(conn_t *c, const http_request_t *req, mount_t *mount,
                       const char *leftover, size_t leftover_len)
{
    return become(c, req, mount->name, &mount, 1, NULL, leftover, leftover_len);
}

static char *mount_from_path(const http_request_t *req)
{
    size_t len;
    char *dec = url_decode(req->path, req->path_len, 0, &len);
    if (!dec)
        return NULL;
    char *norm = dec[0] == '/' ? url_normalize_path(dec, len) : NULL;
    free(dec);
    return norm;
}

/* How the request body is framed: NULL with *chunked set, or why the request is refused
 * (one Transfer-Encoding, "chunked", without Content-Length is all we take). */
static const char *body_framing(const http_request_t *req, int *chunked)
{
    int seen = 0;
    *chunked = 0;
    for (size_t i = 0; i < req->num_headers; i++) {
        const http_header_t *h = &req->headers[i];
        if (!str_ieq(h->name, h->name_len, "transfer-encoding"))
            continue;
        if (seen++ || !str_ieq(h->value, h->value_len, "chunked"))
            return "Bad Request: unsupported Transfer-Encoding";
        *chunked = 1;
    }
    if (*chunked && http_find_header(req, "content-length"))
        return "Bad Request: both Content-Length and Transfer-Encoding";
    return NULL;
}

static void refuse_framing(conn_t *c, const char *mount, const char *why)
{
    static log_ratelimit_t limit;
    log_info_limited(&limit, 10000, "source %s on %s refused: %s", CIDR_SHOWN(c->ip), mount, why);
    client_send_error(c, 400, why);
}

static void source_accepted(conn_t *c, const http_request_t *req, size_t head_len,
                            const char *mount);

/* The auth server answered for a parked source (stream_auth), on its worker. */
static void url_auth_resumed(conn_t *c, auth_url_session_t *s)
{
    client_t *cl = client_of(c);
    if (s->user && !cl->log_user)
        cl->log_user = str_dup(s->user);
    if (!s->accepted) {
        if (s->unavailable) {
            auth_url_send_refusal(c, s);
        } else {
            char what[600];
            snprintf(what, sizeof(what), "source %s", s->mount_name);
            if (sent_credentials(cl->req, server_config()))
                guard_failed(c->ip, what, cl->log_user);
            client_send_error(c, 401, "Authentication Required");
        }
        auth_url_session_free(s);
        return;
    }
    guard_succeeded(c->ip);
    source_accepted(c, cl->req, (size_t)s->tag, s->mount_name);
    auth_url_session_free(s);
    if (!c->closing && c->role == &source_ops)
        conn_rearm(c); /* what it sent while waiting: the socket will not report it again */
}

/* stream_auth: the auth server decides instead of the passwords. */
static void ask_auth_server(conn_t *c, const http_request_t *req, size_t head_len,
                            const config_t *cfg, const mount_conf_t *mc, const char *mount)
{
    char *user = NULL, *pass = NULL;
    if (http_parse_basic_auth(req, &user, &pass) < 0 && cfg->icelogin)
        pass = http_header_dup(req, "ice-password"); /* user stays unknown: sent empty */
    auth_url_start_t r = auth_url_stream_auth(c, mc, mount, user, pass, 0, head_len, NULL,
                                              NULL, url_auth_resumed);
    free(user);
    free(pass);
    if (r == AUTH_URL_BUSY)
        client_send_error(c, 403, "Forbidden: busy, please try again later");
    else if (r == AUTH_URL_FAILED)
        client_send_error(c, 500, "Internal Server Error");
}

void source_start(conn_t *c, const http_request_t *req, size_t head_len)
{
    const config_t *cfg = server_config();
    char *mount = mount_from_path(req);
    if (!mount || strcmp(mount, "/") == 0) {
        free(mount);
        client_send_error(c, 400, "Bad Request: invalid mountpoint");
        return;
    }
    const mount_conf_t *mc = config_find_mount(cfg, mount);
    unsigned blocked = guard_blocked(c->ip);
    if (blocked) {
        free(mount);
        auth_send_refusal(c, AUTH_BLOCKED, blocked);
        return;
    }
    if (auth_url_checks_sources(mc)) {
        ask_auth_server(c, req, head_len, cfg, mc, mount);
        free(mount);
        return;
    }
    int verdict = authenticate(c, req, cfg, mc);
    if (verdict != 1) {
        char what[600];
        snprintf(what, sizeof(what), "source %s", mount);
        if (verdict == 0)
            guard_failed(c->ip, what, client_of(c)->log_user); /* logs, escaped */
        free(mount);
        client_send_error(c, 401, "Authentication Required");
        return;
    }
    guard_succeeded(c->ip);
    source_accepted(c, req, head_len, mount);
    free(mount);
}

/* An authenticated source request: checks its framing, answers and becomes the source. */
static void source_accepted(conn_t *c, const http_request_t *req, size_t head_len,
                            const char *mount)
{
    if (req->method == HTTP_METHOD_PUT && !http_find_header(req, "content-type")) {
        client_send_error(c, 403, "Forbidden: No Content-type given");
        return;
    }
    int chunked;
    chunked_t body;
    size_t leftover = c->rlen - head_len;
    const char *framing = body_framing(req, &chunked);
    if (chunked) {
        chunked_init(&body);
        ssize_t r = chunked_decode(&body, (unsigned char *)c->rbuf + head_len, leftover, NULL);
        if (r < 0)
            framing = "Bad Request: bad chunked framing";
        leftover = r < 0 ? 0 : (size_t)r;
    }
    if (framing) {
        refuse_framing(c, mount, framing);
        return;
    }
    const http_header_t *expect = http_find_header(req, "expect");
    char resp[512];
    int n = 0;
    if (expect && str_ieq(expect->value, expect->value_len, "100-continue"))
        n = snprintf(resp, sizeof(resp), "HTTP/1.1 100 Continue\r\n\r\n");
    snprintf(resp + n, sizeof(resp) - (size_t)n, "HTTP/1.0 200 OK\r\nServer: %s\r\n\r\n",
             server_ident());
    char *rbuf = c->rbuf;
    c->rbuf = NULL; /* the head buffer is no longer needed once the leftover is ingested */
    int status = source_become(c, req, mount, resp, rbuf + head_len, leftover);
    free(rbuf);
    client_drop_request(c);
    if (!status && chunked && !c->closing) {
        source_t *s = c->data;
        s->chunked = 1;
        s->body = body;
        if (chunked_done(&body))
            source_end(c, "ended its chunked body");
    }
    if (status) {
        source_abort(c);
        client_send_error(c, status == 409 ? 403 : status,
                        status == 409 ? "Forbidden: Mountpoint in use"
                        : status == 403 ? "Forbidden: too many sources connected"
                                        : "Internal Server Error");
    }
}

void source_abort(conn_t *c)
{
    source_release(c);
    c->ops = c->role = NULL;
}

/* ---- upgrade ---- */

int source_save(conn_t *c, buf_t *out)
{
    source_t *s = c->role == &source_ops && !c->closing ? c->data : NULL;
    if (!s || !s->fmt || !s->fmt->ops->save)
        return -ENOTSUP;
    rec_str(out, s->mount->name);
    rec_u8(out, (uint8_t)s->relayed);
    rec_str(out, s->fmt->ops->name);
    uint64_t now = loop_now_ms();
    rec_u64(out, now > s->last_read_ms ? now - s->last_read_ms : 0);
    rec_u8(out, (uint8_t)s->chunked);
    rec_u32(out, (uint32_t)s->body.state);
    rec_u64(out, s->body.remaining);
    rec_u64(out, s->body.line_len);
    rec_u32(out, (uint32_t)s->body.digits);
    rec_str(out, s->dump ? dump_path(s->dump) : NULL);
    s->fmt->ops->save(s->fmt, out);
    return 0;
}

void source_end_recordings(void)
{
    for (int i = 0; i < SERVER_MAX_WORKERS; i++) {
        source_t *s;
        if (!worker_sources[i].next) /* a slot never set up */
            continue;
        list_foreach(s, &worker_sources[i], source_t, link) {
            dump_stop(s->dump);
            s->dump = NULL;
        }
    }
    station_shutdown(); /* waits until they are written and closed */
}

static const format_ops_t *format_named(const char *name)
{
    const format_ops_t *all[] = {&format_generic_ops, &format_ogg_ops};
    for (size_t i = 0; name && i < sizeof(all) / sizeof(all[0]); i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

int source_adopt(conn_t *c, rec_reader_t *in, mount_t *(*find)(const char *name, void *arg),
                 void *arg)
{
    char *name = rec_get_str(in);
    int relayed = rec_get_u8(in);
    char *fmt_name = rec_get_str(in);
    uint64_t idle_ms = rec_get_u64(in);
    int chunked = rec_get_u8(in);
    chunked_t body = {.state = (int)rec_get_u32(in), .remaining = rec_get_u64(in),
                      .line_len = (size_t)rec_get_u64(in), .digits = (int)rec_get_u32(in)};
    char *recording = rec_get_str(in);
    const format_ops_t *fops = format_named(fmt_name);
    mount_t *m = name && !in->error ? find(name, arg) : NULL;
    free(name);
    free(fmt_name);
    if (!m || !fops || !fops->restore) {
        free(recording);
        return -EINVAL;
    }
    source_t *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    atomic_fetch_add(&server.stats.sources, 1);
    s->counted = 1;
    s->conn = c;
    s->mount = mount_ref(m);
    s->relayed = relayed;
    s->chunked = chunked;
    s->body = body;
    s->last_read_ms = loop_now_ms() - idle_ms;
    s->dump = recording ? dump_continue(m, recording) : NULL; /* before anything is published */
    free(recording);
    c->data = s;
    c->ops = c->role = &source_ops;
    list_insert_head(&worker_sources[c->worker->id], &s->link);
    s->linked = 1;
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    format_sink_t sink = {s, sink_emit, sink_set_headers, sink_set_tag, sink_tags_done, sink_log,
                          sink_gathered};
    if (!(s->fmt = format_new(fops, &sink)))
        return -ENOMEM;
    s->fmt->charset = mc ? mc->charset : NULL;
    s->fmt->opus_title_updates = mc && mc->opus_title_updates;
    s->fmt->coalesce_ms = server_config()->write_window_ms / 4;
    limit_setup(s, mc);
    return fops->restore(s->fmt, in);
}

static int source_module_init(worker_t *w)
{
    list_init(&worker_sources[w->id]);
    return worker_timer_add(w, 1000, check_timeouts, NULL);
}

/* A reload: this worker's sources gather reads for the new write window, and take the new
 * <charset>, <opus-title-updates> and <limit-rate> of their mount. */
static void source_module_reload(worker_t *w)
{
    const config_t *cfg = server_config();
    source_t *s;
    list_foreach(s, &worker_sources[w->id], source_t, link) {
        if (!s->fmt || !s->mount)
            continue;
        s->fmt->coalesce_ms = cfg->write_window_ms / 4;
        const mount_conf_t *mc = config_find_mount(cfg, s->mount->name);
        s->fmt->charset = mc ? mc->charset : NULL;
        s->fmt->opus_title_updates = mc && mc->opus_title_updates;
        limit_setup(s, mc);
    }
}

static const worker_module_t source_module = {
    .name = "source-timeouts",
    .init = source_module_init,
    .reload = source_module_reload,
};

void source_register(void)
{
    worker_register(&source_module);
}
