/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_route: the HLS URLs of a mount (see hls_route.h): <mount>/hls.m3u8, the media playlist
 * (blocking reloads with _HLS_msn/_HLS_part parked until the part exists), and
 * <mount>/hls/<seq>.<ext> and <mount>/hls/<seq>.<part>.<ext>, segments and parts sent from the
 * mount's blocks (an ID3 timestamp tag, then writev of the block pieces: nothing copied), and
 * an Opus mount's init segments <mount>/hls/<id>.init.mp4 (its pieces are fMP4 fragments).
 * The window itself (cutting, waiting lists) is stream/hls.c.
 */
#include "router/hls_route.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/auth_url.h"
#include "conf/config.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/str.h"
#include "core/url.h"
#include "http/client.h"
#include "http/reply.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "router/router.h"
#include "stream/hls.h"
#include "stream/hls_intro.h"
#include "stream/hls_session.h"
#include "stream/webfile.h"
#include "stream/fallback.h"
#include "stream/mount.h"
#include "upstream/relay.h"

#define PLAYLIST_TYPE "application/vnd.apple.mpegurl"
#define SEGMENT_MAX_AGE 3600
#define SEND_IOV 64

/* A mount name taken from a URL path: a buffer of the caller's (no allocation a request). */
typedef char hls_name_t[HTTP_MAX_URI + 1];

typedef struct hls_url {
    const char *mount; /* in the caller's hls_name_t */
    int playlist;     /* else a segment or part */
    uint64_t seq;
    int part;         /* -1: the whole segment */
    int init;         /* the init segment seq names (an Opus window's) */
    const char *ext;
} hls_url_t;

/* Reads "<digits>" into *v; returns the end or NULL. */
static const char *read_number(const char *p, uint64_t *v)
{
    if (*p < '0' || *p > '9')
        return NULL;
    uint64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            return NULL;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *v = n;
    return p;
}

/* Copies the first len bytes of path into name as a C string: 1, or 0 when they do not fit. */
static int name_of(hls_name_t name, const char *path, size_t len)
{
    if (len >= sizeof(hls_name_t))
        return 0;
    memcpy(name, path, len);
    name[len] = '\0';
    return 1;
}

/* 1 if path is an HLS URL of a mount (u filled; its mount copied into name unless name is
 * NULL: a question of whether it is one needs no copy), else 0. */
static int parse_url(const char *path, hls_url_t *u, char *name)
{
    static const char playlist[] = "/hls.m3u8";
    size_t len = strlen(path), pl = sizeof(playlist) - 1;
    memset(u, 0, sizeof(*u));
    u->part = -1;
    if (len > pl + 1 && strcmp(path + len - pl, playlist) == 0) {
        u->playlist = 1;
        u->mount = name;
        return !name || name_of(name, path, len - pl);
    }
    const char *dir = NULL;
    for (const char *p = strstr(path, "/hls/"); p; p = strstr(p + 1, "/hls/"))
        dir = p;
    if (!dir || dir == path)
        return 0;
    uint64_t part;
    const char *p = read_number(dir + 5, &u->seq);
    if (p && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        if (!(p = read_number(p + 1, &part)) || part >= HLS_MAX_PARTS)
            return 0;
        u->part = (int)part;
    }
    if (p && u->part < 0 && strcmp(p, ".init.mp4") == 0) {
        u->init = 1;
        p += sizeof(".init") - 1;
    }
    /* a static string: a parked request answers again after the path is gone */
    static const char *const exts[] = {"mp3", "aac", "mp4"};
    for (size_t i = 0; p && *p == '.' && !u->ext && i < sizeof(exts) / sizeof(exts[0]); i++)
        if (strcmp(p + 1, exts[i]) == 0)
            u->ext = exts[i];
    if (!u->ext)
        return 0;
    u->mount = name;
    return !name || name_of(name, path, (size_t)(dir - path));
}

/* The window of mount name `name` served by live mount m (the caller's reference is taken):
 * m itself, or the live fallback of a mount of that name with no source. NULL with the error
 * answered. */
static hls_t *window_for(conn_t *c, const http_request_t *req, const char *name, mount_t *m)
{
    int why = req->method != HTTP_METHOD_GET && req->method != HTTP_METHOD_HEAD ? -1
                                                                                : hls_offered(m);
    if (why != HLS_OFFERED) {
        static const int status[] = {405, 404, 415, 403, 503};
        static const char *const text[] = {
            "Method Not Allowed",
            "HLS is not enabled on this mount",
            "Unsupported Media Type: HLS needs an MP3 or AAC (ADTS) stream, or Ogg Opus",
            "Forbidden: HLS without sessions is not served on mounts with listener "
            "authentication",
            "Service Unavailable: the stream's codec headers have not come yet",
        };
        mount_unref(m);
        client_send_error(c, status[why < 0 ? 0 : why], text[why < 0 ? 0 : why]);
        return NULL;
    }
    hls_t *h = hls_touch_as(name, m);
    mount_unref(m);
    if (!h)
        client_send_error(c, 500, "Internal Server Error");
    return h;
}

/* ---- playlists ---- */

/* A request waiting for a part: a blocking playlist reload, or a part (the preload hint) or
 * segment asked for before it is complete. */
typedef struct parked {
    hls_waiter_t waiter;
    hls_t *hls;
    hls_url_t url;      /* what was asked for (mount not kept) */
} parked_t;

static void parked_release(conn_t *c)
{
    parked_t *p = c->data;
    if (!p)
        return;
    hls_unwait(&p->waiter);
    free(p);
    c->data = NULL;
}

static void parked_timeout(conn_t *c)
{
    parked_release(c);
    c->role = NULL;
    client_send_error(c, 503, "Service Unavailable: the part asked for did not come in time");
}

static const conn_ops_t parked_ops = {
    .name = "hls wait",
    .on_timeout = parked_timeout,
    .on_close = parked_release,
};

static void answer_playlist(conn_t *c, const http_request_t *req, hls_t *h);
static void answer_piece(conn_t *c, const http_request_t *req, hls_t *h, const hls_url_t *u);

/* A part a parked request waits for exists (on its worker): it is answered again. */
static void parked_woken(worker_t *w, void *arg)
{
    conn_t *c = worker_find_conn(w, (uint64_t)(uintptr_t)arg);
    if (!c || c->ops != &parked_ops || c->closing)
        return;
    parked_t *p = c->data;
    hls_t *h = p->hls;
    hls_url_t u = p->url;
    parked_release(c);
    c->role = NULL;
    conn_set_deadline(c, 0);
    if (u.playlist)
        answer_playlist(c, client_of(c)->req, h);
    else
        answer_piece(c, client_of(c)->req, h, &u);
}

/* Parks c until (msn, part) exists to answer u again: 1 parked, 0 it is there (answer now),
 * -1 answered (400). */
static int park(conn_t *c, hls_t *h, const hls_url_t *u, uint64_t msn, int part)
{
    parked_t *p = calloc(1, sizeof(*p));
    if (!p) {
        client_send_error(c, 500, "Internal Server Error");
        return -1;
    }
    p->hls = h;
    p->url = *u;
    p->url.mount = NULL;
    p->waiter.msn = msn;
    p->waiter.part = part;
    p->waiter.worker = c->worker;
    p->waiter.fn = parked_woken;
    p->waiter.arg = (void *)(uintptr_t)c->id;
    int rc = hls_wait(h, &p->waiter);
    if (rc <= 0) {
        free(p);
        if (rc < 0)
            client_send_error(c, 400, "Bad Request: _HLS_msn or _HLS_part is too far ahead");
        return rc;
    }
    c->data = p;
    c->role = &parked_ops;
    c->ops = &parked_ops;
    /* a blocking reload is answered within three target durations, else 503 */
    conn_set_deadline(c, (uint64_t)hls_target_duration(h) * 3000);
    return 1;
}

/* A query parameter of req, decoded into a buffer of the thread's (good until the next call
 * on it; a query is shorter than a request head), NULL if absent or malformed: a request asks
 * for up to four, without an allocation each. */
static const char *query_param(const http_request_t *req, const char *name)
{
    static __thread char value[HTTP_MAX_HEAD_BYTES];
    return req->query ? url_query_value(req->query, req->query_len, name, value, sizeof(value))
                      : NULL;
}

/* The value of header `name` of req as a C string in buf (HTTP_MAX_HEAD_BYTES: a value is
 * shorter than its head), or NULL without it. */
static const char *header_value(const http_request_t *req, const char *name, char *buf)
{
    const http_header_t *h = http_find_header(req, name);
    if (!h || h->value_len >= HTTP_MAX_HEAD_BYTES)
        return NULL;
    memcpy(buf, h->value, h->value_len);
    buf[h->value_len] = '\0';
    return buf;
}

/* Reads a decimal query parameter: 1 found (*v), 0 absent, -1 malformed. */
static int query_number(const http_request_t *req, const char *name, uint64_t *v)
{
    const char *s = query_param(req, name);
    if (!s)
        return 0;
    const char *end = read_number(s, v);
    return end && *end == '\0' ? 1 : -1;
}

/* A request without a session: the multivariant playlist naming the media playlist with a
 * new session's token. Never cached: each client gets its own. */
static void answer_multivariant(conn_t *c, const http_request_t *req, hls_t *h)
{
    char token[HLS_TOKEN_LEN + 1];
    buf_t out = BUF_INIT;
    if (hls_session_token(token) < 0 || hls_multivariant(h, &out, token) < 0) {
        buf_free(&out);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    reply_send(c, req, 200, PLAYLIST_TYPE, out.data, out.len,
               "Cache-Control: no-cache, no-store\r\nAccess-Control-Allow-Origin: *\r\n");
    buf_free(&out);
}

/* The mount block whose listener authentication a session of h passes, NULL for none (*name:
 * the mount name it is found by, in buf; NULL when it does not fit). */
static const mount_conf_t *login_conf(hls_t *h, hls_name_t buf, const char **name)
{
    *name = hls_session_login_mount(h, buf, sizeof(hls_name_t));
    const mount_conf_t *mc = *name ? config_find_mount(server_config(), *name) : NULL;
    return mc && mc->auth ? mc : NULL;
}

static void login_begin(conn_t *c, const http_request_t *req, hls_t *h, const mount_conf_t *mc,
                        const char *name);
static void answer_playlist_of_session(conn_t *c, const http_request_t *req, hls_t *h);

/* The session a media playlist request belongs to goes on, or begins (on a mount with listener
 * authentication, with login: the first request of a session is authenticated, login NULL,
 * and comes back here once let in): 1, else c was answered or waits for its login. */
static int session_poll(conn_t *c, const http_request_t *req, hls_t *h, hls_login_t *login)
{
    if (!hls_sessions_wanted(h->name))
        return 1;
    const char *token = query_param(req, "session");
    if (!token) {
        answer_multivariant(c, req, h);
        return 0;
    }
    hls_name_t login_buf;
    const char *login_name;
    const mount_conf_t *mc = login_conf(h, login_buf, &login_name);
    /* the agent, referer and URI in buffers of the thread's: copied only by a session begun */
    static __thread char agent[HTTP_MAX_HEAD_BYTES], referer[HTTP_MAX_HEAD_BYTES];
    static __thread char uri[HTTP_MAX_HEAD_BYTES + sizeof("?session=") + HLS_TOKEN_LEN];
    int n = snprintf(uri, sizeof(uri), "%.*s?session=%s", (int)req->path_len, req->path, token);
    hls_client_t who = {c->ip, header_value(req, "user-agent", agent),
                        header_value(req, "referer", referer), uri, c->id};
    int rc = !hls_session_token_valid(token) ? -EINVAL
             : n < 0 || (size_t)n >= sizeof(uri) || !login_name ? -ENOMEM
             : mc || login ? hls_session_poll_login(h, token, &who, login)
                           : hls_session_poll(h, token, &who, 0);
    if (rc == 0)
        client_skip_log(c); /* the session's own line says it all when it ends */
    else if (rc == -ENOENT)
        login_begin(c, req, h, mc, login_name); /* its first request: a listener's login */
    else if (rc == -EINVAL)
        client_send_error(c, 400, "Bad Request: malformed session");
    else if (rc == -ENOSPC)
        client_send_error(c, 403, "Forbidden: too many listeners");
    else if (rc == -EPERM)
        client_send_error(c, 403, "Forbidden: this session was ended");
    else if (rc == -ETIME)
        client_send_error(c, 403, "Forbidden: this session reached its time limit");
    else if (rc < 0)
        client_send_error(c, 500, "Internal Server Error");
    return rc == 0;
}

/* ---- a session's login: its first playlist request is authenticated as a listener's GET ---- */

/* The login passed: the session begins with it and its playlist is answered. */
static void login_done(conn_t *c, hls_t *h, hls_login_t *login)
{
    const http_request_t *req = client_of(c)->req;
    if (session_poll(c, req, h, login))
        answer_playlist_of_session(c, req, h);
}

static hls_t *window_of_request(conn_t *c);
static int parse_intro_url(const char *path, char *name, int *n);

/* URL authentication answered for c: 1 if it accepted (its user goes to the access log),
 * else 0 with the listener's refusal sent and s freed. */
static int url_login_accepted(conn_t *c, auth_url_session_t *s)
{
    if (!s->accepted) {
        auth_url_send_refusal(c, s);
        auth_url_session_free(s);
        return 0;
    }
    if (s->user) {
        free(client_of(c)->log_user);
        client_of(c)->log_user = str_dup(s->user);
    }
    return 1;
}

/* Starts the login of the listener on c (req) of `name`, whose block mc has authentication:
 * URL authentication (url_done runs with the answer, parked meanwhile or at once), else
 * htpasswd (user_done runs once verified); refusals are answered as a listener's. 1 when
 * there is no authentication to pass after all: the caller goes on. */
static int login_start(conn_t *c, const http_request_t *req, const mount_conf_t *mc,
                       const char *name, auth_url_resume_fn url_done, auth_admitted_fn user_done)
{
    if (!auth_url_enabled(mc))
        return auth_listener_begin(c, req, name, user_done);
    auth_url_session_t *s = NULL;
    switch (auth_url_listener_add(c, mc, name, req, url_done, &s)) {
    case AUTH_URL_PARKED:
        break;
    case AUTH_URL_ACCEPTED:
        url_done(c, s);
        break;
    case AUTH_URL_BUSY:
        client_send_error(c, 403, "Forbidden: busy, please try again later");
        break;
    case AUTH_URL_FAILED:
        client_send_error(c, 500, "Internal Server Error");
        break;
    }
    return 0;
}

/* URL authentication answered (on c's worker), or let in at once (no listener_add URL). */
static void url_login_resumed(conn_t *c, auth_url_session_t *s)
{
    hls_t *h = window_of_request(c);
    if (!h) {
        auth_url_session_free(s);
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    if (!url_login_accepted(c, s))
        return;
    /* a preroll the auth server named is played first instead of the mount's intro */
    hls_login_t login = {.url = s, .user_name = s->user, .time_limit_s = s->timelimit,
                         .intro = s->preroll};
    login_done(c, h, &login);
}

/* The window a request of c asked for: the mount in its path (a login resumed later). */
static hls_t *window_of_request(conn_t *c)
{
    const http_request_t *req = client_of(c)->req;
    size_t len;
    char *dec = url_decode(req->path, req->path_len, 0, &len);
    char *path = dec && dec[0] == '/' ? url_normalize_path(dec, len) : NULL;
    const char *alias = path ? router_alias(c, path) : NULL;
    hls_url_t u;
    hls_name_t name;
    int n;
    const char *p = alias ? alias : path;
    hls_t *h = p && (parse_url(p, &u, name) || parse_intro_url(p, name, &n)) ? hls_find(name)
                                                                          : NULL;
    free(dec);
    free(path);
    return h;
}

/* The htpasswd file let the listener in (on c's worker): the user's place among the mount's
 * users, which auth_listener_begin gave the connection to end, is the session's now. */
static void user_login_verified(conn_t *c, const char *mount)
{
    (void)mount;
    client_t *cl = client_of(c);
    hls_t *h = window_of_request(c);
    hls_login_t login = {.user = cl->on_end ? cl->on_end_arg : NULL, .user_name = cl->log_user};
    cl->on_end = NULL;
    cl->on_end_arg = NULL;
    if (!h) {
        auth_session_end(login.user);
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    login_done(c, h, &login);
}

/* Authenticates the first playlist request of a session of h as a listener of `name` (mc its
 * block): parked while the auth server or the verifier thread decides, refused as a listener
 * is, or let in (login_done). */
static void login_begin(conn_t *c, const http_request_t *req, hls_t *h, const mount_conf_t *mc,
                        const char *name)
{
    if (login_start(c, req, mc, name, url_login_resumed, user_login_verified)) {
        hls_login_t none = {0}; /* the authentication went away (a reload) */
        login_done(c, h, &none);
    }
}

/* Bytes sent to the session c belongs to (see hls_session_add_bytes): 1 if it has one. */
static int count_to_session(conn_t *c, const http_request_t *req, hls_t *h, uint64_t bytes)
{
    static __thread char agent[HTTP_MAX_HEAD_BYTES];
    hls_client_t who = {.ip = c->ip, .agent = header_value(req, "user-agent", agent),
                        .conn_id = c->id};
    return hls_session_add_bytes(h, &who, bytes);
}

static void answer_playlist(conn_t *c, const http_request_t *req, hls_t *h)
{
    if (session_poll(c, req, h, NULL))
        answer_playlist_of_session(c, req, h);
}

/* The media playlist as the request's session sees it (its intro first), else everyone's. */
static int playlist_of(const http_request_t *req, hls_t *h, buf_t *out)
{
    const char *token = hls_sessions_wanted(h->name) ? query_param(req, "session") : NULL;
    return token ? hls_session_playlist(h, token, out, 1) : hls_playlist(h, out, 1);
}

/* The playlist, once the request's session went on (blocking reloads parked). */
static void answer_playlist_of_session(conn_t *c, const http_request_t *req, hls_t *h)
{
    uint64_t msn, part = 0;
    int has_msn = query_number(req, "_HLS_msn", &msn);
    int has_part = query_number(req, "_HLS_part", &part);
    if (has_msn < 0 || has_part < 0 || (has_part && !has_msn) || part >= HLS_MAX_PARTS) {
        client_send_error(c, 400, "Bad Request: malformed _HLS_msn or _HLS_part");
        return;
    }
    int target = hls_target_duration(h);
    /* rendered into a buffer of the thread's: reply_send writes or copies it before it
     * returns, so the next request on this thread (a pipelined one, even) may reuse it */
    static __thread buf_t out;
    if (out.data)
        out.data[out.len = 0] = '\0';
    const hls_url_t self = {.playlist = 1, .part = -1};
    int rc;
    if (has_msn) {
        if ((rc = park(c, h, &self, msn, has_part ? (int)part : -1)) != 0)
            return;
    }
    if ((rc = playlist_of(req, h, &out)) == -EAGAIN) {
        /* the window has no complete segment yet: the first one is waited for */
        int next_part;
        hls_next_part(h, &msn, &next_part);
        if (park(c, h, &self, msn, -1) != 0)
            return;
        rc = playlist_of(req, h, &out);
    }
    if (rc < 0) {
        buf_free(&out);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    char extra[256];
    /* a plain reload changes each part; a blocking one names the state it waits for */
    snprintf(extra, sizeof(extra),
             "Cache-Control: public, max-age=%d\r\nAccess-Control-Allow-Origin: *\r\n",
             has_msn ? 6 * target : target > 1 ? target / 2 : 1);
    count_to_session(c, req, h, out.len);
    reply_send(c, req, 200, PLAYLIST_TYPE, out.data, out.len, extra);
}

/* ---- segments and parts ---- */

typedef struct piece_send {
    hls_piece_t piece;     /* blk: the block holding pos */
    uint64_t pos, end;     /* stream offsets still to send */
    int keep;
} piece_send_t;

static void piece_release(conn_t *c)
{
    piece_send_t *s = c->data;
    if (!s)
        return;
    if (s->piece.blk)
        block_unref(s->piece.blk);
    free(s);
    c->data = NULL;
}

static void piece_write(conn_t *c);

static const conn_ops_t piece_ops = {
    .name = "hls segment",
    .on_writable = piece_write,
    .on_timeout = conn_send_timeout,
    .on_close = piece_release,
};

static void piece_done(conn_t *c)
{
    piece_send_t *s = c->data;
    int keep = s->keep;
    piece_release(c);
    c->role = NULL;
    c->ops = &reply_sending_ops;
    conn_set_deadline(c, 0);
    if (keep)
        reply_next_request(c);
    else
        conn_linger_close(c);
}

/* Points iov (at most max entries) at bytes [pos, end) of the block chain from blk (the block
 * holding pos): the number of entries; *covered is set to how far they reach. */
static int blocks_iov(const block_t *blk, uint64_t pos, uint64_t end, struct iovec *iov, int max,
                      uint64_t *covered)
{
    int n = 0;
    for (const block_t *b = blk; b && n < max && pos < end; b = block_next(b)) {
        if (block_end(b) <= pos)
            continue;
        uint64_t stop = block_end(b) < end ? block_end(b) : end;
        iov[n].iov_base = (void *)(b->data + (pos - b->offset));
        iov[n++].iov_len = (size_t)(stop - pos);
        pos = stop;
    }
    *covered = pos;
    return n;
}

/* Moves *pos on by n written bytes and *blk (referenced) to the block holding it. */
static void blocks_advance(block_t **blk, uint64_t *pos, uint64_t n, uint64_t end)
{
    *pos += n;
    while (block_end(*blk) <= *pos && *pos < end) {
        block_t *next = block_ref(block_next(*blk));
        block_unref(*blk);
        *blk = next;
    }
}

/* One writev of iov (made again when interrupted): the bytes written, counted in bytes_sent;
 * 0 the socket is full; -1 the connection closed. */
static ssize_t writev_counted(conn_t *c, const struct iovec *iov, int n)
{
    for (;;) {
        ssize_t w = conn_writev(c, iov, n);
        if (w >= 0) {
            c->bytes_sent += (uint64_t)w;
            return w;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        if (errno != EINTR) {
            conn_close(c);
            return -1;
        }
    }
}

/* Writes bytes [*pos, end) of the block chain from *blk (the block holding *pos, referenced:
 * moved on as bytes go), as many as the socket takes, one writev of up to SEND_IOV pieces at
 * a time: 1 all written, 0 the socket is full, -1 the connection closed. */
static int write_blocks(conn_t *c, block_t **blk, uint64_t *pos, uint64_t end)
{
    while (*pos < end) {
        struct iovec iov[SEND_IOV];
        uint64_t covered;
        int n = blocks_iov(*blk, *pos, end, iov, SEND_IOV, &covered);
        if (n == 0)
            return 1; /* cannot happen: the bytes asked for are all published */
        ssize_t w = writev_counted(c, iov, n);
        if (w <= 0)
            return (int)w;
        blocks_advance(blk, pos, (uint64_t)w, end);
    }
    return 1;
}

/* Writes the block pieces, as many as the socket takes (the head and tag went first). */
static void piece_write(conn_t *c)
{
    piece_send_t *s = c->data;
    int r = s->pos < s->end ? write_blocks(c, &s->piece.blk, &s->pos, s->end) : 1;
    if (r == 0)
        conn_set_deadline(c, (uint64_t)server_config()->client_timeout * 1000);
    if (r == 1)
        piece_done(c);
}

/* After the head (and the tag bytes in the range) went out. */
static void piece_head_sent(conn_t *c)
{
    c->ops = &piece_ops;
    piece_write(c);
}

/* Parses "Range: bytes=a-b" against size: 1 with [*from, *to), 0 none, -1 unsatisfiable. */
static int piece_range(const http_request_t *req, uint64_t size, uint64_t *from, uint64_t *to)
{
    const http_header_t *h = http_find_header(req, "range");
    if (!h)
        return 0;
    char v[64];
    if (h->value_len >= sizeof(v))
        return 0;
    memcpy(v, h->value, h->value_len);
    v[h->value_len] = '\0';
    uint64_t a = 0, b = size - 1;
    const char *p = strncmp(v, "bytes=", 6) == 0 ? v + 6 : NULL;
    if (!p || strchr(p, ','))
        return 0; /* one range only; anything else gets the whole piece */
    if (*p == '-') {
        uint64_t n;
        if (!read_number(p + 1, &n) || n == 0)
            return -1;
        a = n >= size ? 0 : size - n;
    } else {
        if (!(p = read_number(p, &a)) || *p != '-')
            return 0;
        if (p[1] && (!read_number(p + 1, &b) || b < a))
            return 0;
        if (b >= size)
            b = size - 1;
        if (a >= size)
            return -1;
    }
    *from = a;
    *to = b + 1;
    return 1;
}

/* ---- the part being cut, sent as it fills (chunked) ---- */

/* A part followed as it fills: each stretch of it the window cut is one chunk, written from
 * the blocks; between stretches the connection waits (a waiter that follows the part). */
typedef struct filling {
    hls_waiter_t waiter;
    hls_t *hls;
    block_t *blk;          /* the block holding pos (referenced), NULL before the first frame */
    uint64_t start;        /* the part's first byte */
    uint64_t pos, end;     /* sent up to pos; the window had cut up to end */
    char chunk[20];        /* the head of the chunk [pos, end): its size in hex, CRLF */
    size_t chunk_off, chunk_len; /* bytes of it written, and in all */
    size_t crlf_left;      /* bytes of the CRLF ending the chunk still to write */
    size_t last_left;      /* bytes of the last (empty) chunk still to write, once complete */
    int complete;          /* end is the part's end */
    int keep;
    uint32_t id3_len;      /* the tag sent in front */
} filling_t;

static void filling_release(conn_t *c)
{
    filling_t *f = c->data;
    if (!f)
        return;
    hls_unwait(&f->waiter);
    if (f->blk)
        block_unref(f->blk);
    free(f);
    c->data = NULL;
}

static void filling_write(conn_t *c);

static const conn_ops_t filling_ops = {
    .name = "hls part filling",
    .on_writable = filling_write,
    /* the part never completed (the source left): the answer ends cut short */
    .on_close = filling_release,
};

/* Asks the window how far the part goes now: 1 when there is more to write (a chunk head
 * made) or it is complete, 0 waiting for it to grow, -1 closed. */
static int filling_more(conn_t *c, filling_t *f)
{
    hls_piece_t p = {0};
    int rc = hls_part_so_far(f->hls, f->waiter.msn, f->waiter.part, &p);
    if (rc == HLS_READY)
        rc = hls_piece(f->hls, f->waiter.msn, f->waiter.part, &p);
    if (rc == HLS_FILLING || rc == HLS_READY) {
        if (!f->blk && p.blk) {
            f->blk = block_ref(p.blk);
            f->start = f->pos = f->end = p.start;
        }
        if (p.blk)
            block_unref(p.blk);
    }
    if ((rc != HLS_READY && rc != HLS_FILLING) || (f->blk && p.start != f->start)) {
        conn_close(c); /* the stream broke under it */
        return -1;
    }
    f->complete = rc == HLS_READY;
    if (p.end > f->end) {
        int n = snprintf(f->chunk, sizeof(f->chunk), "%llx\r\n",
                         (unsigned long long)(p.end - f->end));
        f->chunk_off = 0;
        f->chunk_len = (size_t)n;
        f->end = p.end;
        f->crlf_left = 2;
        return 1;
    }
    if (f->complete)
        return 1;
    f->waiter.seen_end = f->end;
    int w = hls_wait(f->hls, &f->waiter);
    return w == 0 ? filling_more(c, f) : 0; /* 0: grew meanwhile, ask again */
}

/* Writes what the connection owes in one writev: the output buffer (before the first chunk
 * the reply head and tag), the chunk head, the part's bytes [pos, end), the CRLF ending the
 * chunk, and once the part is complete the last chunk. 1 all written, 0 the socket is full,
 * -1 the connection closed. */
static int filling_send(conn_t *c, filling_t *f)
{
    static const char crlf[] = "\r\n", last[] = "0\r\n\r\n";
    while (c->woff < c->wlen || f->chunk_off < f->chunk_len || f->pos < f->end || f->crlf_left ||
           (f->complete && f->last_left)) {
        struct iovec iov[SEND_IOV + 4]; /* output buffer, chunk head, blocks, CRLF, last chunk */
        int n = 0;
        size_t queued = c->wlen - c->woff, chunk = f->chunk_len - f->chunk_off;
        if (queued)
            iov[n++] = (struct iovec){c->wbuf + c->woff, queued};
        if (chunk)
            iov[n++] = (struct iovec){f->chunk + f->chunk_off, chunk};
        uint64_t covered = f->pos;
        if (f->blk && f->pos < f->end)
            n += blocks_iov(f->blk, f->pos, f->end, iov + n, SEND_IOV, &covered);
        if (covered == f->end && f->crlf_left)
            iov[n++] = (struct iovec){(void *)(crlf + 2 - f->crlf_left), f->crlf_left};
        if (covered == f->end && f->complete && f->last_left)
            iov[n++] = (struct iovec){(void *)(last + 5 - f->last_left), f->last_left};
        if (n == 0)
            return 1; /* cannot happen: the bytes owed are all published */
        ssize_t w = writev_counted(c, iov, n);
        if (w <= 0)
            return (int)w;
        size_t left = (size_t)w, from_buf = left < queued ? left : queued;
        c->woff += from_buf;
        left -= from_buf;
        if (c->woff == c->wlen)
            c->woff = c->wlen = 0;
        size_t from_chunk = left < chunk ? left : chunk;
        f->chunk_off += from_chunk;
        left -= from_chunk;
        uint64_t from_blocks = left < f->end - f->pos ? left : f->end - f->pos;
        if (from_blocks)
            blocks_advance(&f->blk, &f->pos, from_blocks, f->end);
        left -= (size_t)from_blocks;
        size_t from_crlf = left < f->crlf_left ? left : f->crlf_left;
        f->crlf_left -= from_crlf;
        f->last_left -= left - from_crlf;
    }
    return 1;
}

/* Writes what is owed (one writev a chunk), then asks for more or waits. */
static void filling_write(conn_t *c)
{
    filling_t *f = c->data;
    if (f->waiter.linked)
        return; /* a writable edge while the part is waited for: what is queued goes with it */
    for (;;) {
        if (filling_send(c, f) <= 0 || f->waiter.linked)
            return; /* closed, resumes when writable, or waits for the part */
        if (f->complete) {
            int keep = f->keep;
            hls_t *h = f->hls;
            uint64_t bytes = f->id3_len + (f->end - f->start);
            filling_release(c);
            c->role = NULL;
            conn_set_deadline(c, 0);
            if (count_to_session(c, client_of(c)->req, h, bytes))
                client_skip_log(c); /* counted in its session's line */
            c->ops = &reply_sending_ops;
            if (keep) /* all sent, the last chunk too */
                reply_next_request(c);
            else
                conn_linger_close(c);
            return;
        }
        if (filling_more(c, f) < 0)
            return;
    }
}

/* The part a connection follows grew (on its worker). */
static void filling_woken(worker_t *w, void *arg)
{
    conn_t *c = worker_find_conn(w, (uint64_t)(uintptr_t)arg);
    if (!c || c->ops != &filling_ops || c->closing)
        return;
    if (filling_more(c, c->data) > 0)
        filling_write(c);
}

/* Starts sending the part being cut (HTTP/1.1, chunked) from what it holds: 1 if it did. */
static int start_filling(conn_t *c, const http_request_t *req, hls_t *h, const hls_url_t *u)
{
    if (u->part < 0 || req->version_minor < 1 || req->method != HTTP_METHOD_GET ||
        http_find_header(req, "range"))
        return 0;
    hls_piece_t p = {0};
    if (hls_part_so_far(h, u->seq, u->part, &p) != HLS_FILLING)
        return 0;
    uint64_t held = p.blk ? p.end : 0;
    if (p.blk)
        block_unref(p.blk); /* what it holds is asked for again below */
    filling_t *f = calloc(1, sizeof(*f));
    /* the reply head, then the tag as the first chunk: queued at once, one copy */
    char extra[512], head[2048 + 16 + HLS_ID3_MAX + 2];
    snprintf(extra, sizeof(extra),
             "Transfer-Encoding: chunked\r\nCache-Control: public, max-age=%d, immutable\r\n"
             "ETag: \"%llu.%d\"\r\nAccess-Control-Allow-Origin: *\r\n", SEGMENT_MAX_AGE,
             (unsigned long long)u->seq, u->part);
    int keep = reply_keepalive_wanted(req);
    size_t hlen = reply_head(head, 2048, keep, 200, hls_piece_type(&p), -1, extra);
    if (hlen > 0) {
        hlen += (size_t)snprintf(head + hlen, 16, "%x\r\n", (unsigned)p.id3_len);
        memcpy(head + hlen, p.id3, p.id3_len);
        memcpy(head + hlen + p.id3_len, "\r\n", 2);
        hlen += p.id3_len + 2;
    }
    if (!f || hlen == 0 || conn_queue(c, head, hlen) < 0) {
        free(f);
        client_send_error(c, 500, "Internal Server Error");
        return 1;
    }
    client_of(c)->status = 200;
    f->hls = h;
    f->last_left = 5;
    f->keep = keep;
    f->id3_len = p.id3_len;
    f->waiter.msn = u->seq;
    f->waiter.part = u->part;
    f->waiter.follow = 1;
    f->waiter.worker = c->worker;
    f->waiter.fn = filling_woken;
    f->waiter.arg = (void *)(uintptr_t)c->id;
    c->data = f;
    c->role = &filling_ops;
    c->ops = &filling_ops;
    /* a part completes within its target: three target durations bound a stalled source */
    conn_set_deadline(c, (uint64_t)hls_target_duration(h) * 3000);
    /* With a write window, the answer waits for the window's next tick (counted from the
     * part's start) or the part's end, and goes out in one writev with what was cut by then:
     * the part asked for the moment it begins holds next to nothing yet. */
    f->waiter.seen_end = held;
    if (server_config()->write_window_ms > 0 && hls_wait(h, &f->waiter) > 0)
        return 1;
    if (filling_more(c, f) >= 0)
        filling_write(c);
    return 1;
}

static void answer_piece(conn_t *c, const http_request_t *req, hls_t *h, const hls_url_t *u)
{
    if (start_filling(c, req, h, u))
        return;
    piece_send_t *s = calloc(1, sizeof(*s));
    int rc = !s ? -ENOMEM : u->init ? hls_init_piece(h, u->seq, &s->piece)
                                    : hls_piece(h, u->seq, u->part, &s->piece);
    if (rc == HLS_PENDING) {
        /* the preload hint's part, or one just ahead: sent once it is complete */
        free(s);
        if (park(c, h, u, u->seq, u->part) == 0)
            answer_piece(c, req, h, u); /* completed meanwhile */
        return;
    }
    if (rc != HLS_READY || strcmp(u->ext, hls_piece_ext(&s->piece)) != 0) {
        if (rc == HLS_READY)
            block_unref(s->piece.blk);
        free(s);
        client_send_error(c, rc == -ENOMEM ? 500 : 404,
                          rc == -ENOMEM ? "Internal Server Error"
                                        : "The file you requested could not be found");
        return;
    }
    uint64_t id3 = s->piece.id3_len;
    uint64_t size = id3 + (s->piece.end - s->piece.start), from = 0, to = size;
    int range = piece_range(req, size, &from, &to);
    char extra[512], crange[96] = "";
    if (range < 0) {
        block_unref(s->piece.blk);
        free(s);
        snprintf(extra, sizeof(extra), "Content-Range: bytes */%" PRIu64 "\r\n", size);
        static const char msg[] = "Request Range Not Satisfiable";
        reply_send(c, req, 416, "text/plain; charset=utf-8", msg, sizeof(msg) - 1, extra);
        return;
    }
    if (range)
        snprintf(crange, sizeof(crange), "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64
                 "\r\n", from, to - 1, size);
    char etag[64];
    if (u->init)
        snprintf(etag, sizeof(etag), "\"%" PRIu64 ".init\"", u->seq);
    else if (u->part < 0)
        snprintf(etag, sizeof(etag), "\"%" PRIu64 "\"", u->seq);
    else
        snprintf(etag, sizeof(etag), "\"%" PRIu64 ".%d\"", u->seq, u->part);
    snprintf(extra, sizeof(extra),
             "Cache-Control: public, max-age=%d, immutable\r\nETag: %s\r\n"
             "Accept-Ranges: bytes\r\nAccess-Control-Allow-Origin: *\r\n%s",
             SEGMENT_MAX_AGE, etag, crange);
    s->keep = reply_keepalive_wanted(req);
    char head[2048];
    size_t hlen = reply_head(head, sizeof(head), s->keep, range ? 206 : 200,
                             hls_piece_type(&s->piece), (long long)(to - from), extra);
    const http_header_t *inm = http_find_header(req, "if-none-match");
    int not_modified = inm && inm->value_len == strlen(etag) &&
                       memcmp(inm->value, etag, inm->value_len) == 0;
    if (not_modified)
        hlen = reply_head(head, sizeof(head), s->keep, 304, NULL, -1, extra);
    if (hlen == 0 || conn_queue(c, head, hlen) < 0) {
        block_unref(s->piece.blk);
        free(s);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    client_of(c)->status = not_modified ? 304 : range ? 206 : 200;
    s->pos = s->piece.start;
    s->end = s->piece.end;
    if (req->method == HTTP_METHOD_HEAD || not_modified) {
        s->end = s->pos;
    } else {
        if (from < id3)
            conn_queue(c, (const char *)s->piece.id3 + from, (size_t)((to < id3 ? to : id3) - from));
        s->pos = s->piece.start + (from > id3 ? from - id3 : 0);
        s->end = to > id3 ? s->piece.start + (to - id3) : s->pos;
    }
    if (req->method != HTTP_METHOD_HEAD && !not_modified && count_to_session(c, req, h, to - from))
        client_skip_log(c); /* counted in its session's line */
    c->data = s;
    c->role = &piece_ops;
    c->ops = &reply_sending_ops;
    c->after_write = piece_head_sent;
    conn_write_pending(c);
}

/* ---- intro segments: <mount>/hls/intro/<n>.<ext>?file=<file>&v=<version> ---- */
/* (an Opus intro's init segment: <mount>/hls/intro/init.mp4?file=<file>&v=<version>) */

/* If path is an intro segment's URL: 1 with its mount (copied into name unless it is NULL)
 * and number (HLS_INTRO_INIT for an init segment), else 0. */
static int parse_intro_url(const char *path, char *name, int *n)
{
    static const char dir[] = "/hls/intro/";
    const char *d = strstr(path, dir);
    const char *at = d && d != path ? d + sizeof(dir) - 1 : NULL;
    uint64_t v = 0;
    const char *p = at && strcmp(at, "init.mp4") == 0 ? "" : at ? read_number(at, &v) : NULL;
    if (!p || v >= HLS_INTRO_MAX_SEGS ||
        (*p && strcmp(p, ".mp3") != 0 && strcmp(p, ".aac") != 0 && strcmp(p, ".mp4") != 0))
        return 0;
    *n = *p ? (int)v : HLS_INTRO_INIT;
    return !name || name_of(name, path, (size_t)(d - path));
}

/* The intro a request of c names (the file of its query, at the version it names), if h
 * serves it, and the segment number: a new reference, or NULL. */
static hls_intro_t *intro_of_request(const http_request_t *req, hls_t *h, int *n)
{
    hls_name_t mount;
    uint64_t version = 0;
    char *file = req->query ? url_query_param(req->query, req->query_len, "file") : NULL;
    int ok = file && query_number(req, "v", &version) == 1;
    hls_intro_t *in = NULL;
    size_t len;
    char *dec = url_decode(req->path, req->path_len, 0, &len);
    if (ok && dec && parse_intro_url(dec, mount, n) && hls_session_intro_known(h, file))
        in = hls_intro_get(file, hls_target_duration(h));
    if (in && ((uint64_t)in->version != version || *n >= in->nsegs ||
               (*n == HLS_INTRO_INIT && !in->init))) {
        hls_intro_unref(in);
        in = NULL;
    }
    free(dec);
    free(file);
    return in;
}

/* The last byte of an intro segment went out: a session that fetched the last one it plays
 * counts the intro as played. */
static void intro_sent(conn_t *c)
{
    const http_request_t *req = client_of(c)->req;
    hls_t *h = window_of_request(c);
    int n;
    hls_intro_t *in = h ? intro_of_request(req, h, &n) : NULL;
    if (in && req->method == HTTP_METHOD_GET) {
        const http_header_t *ua = http_find_header(req, "user-agent");
        char *agent = ua ? strndup(ua->value, ua->value_len) : NULL;
        hls_client_t who = {.ip = c->ip, .agent = agent, .conn_id = c->id};
        hls_session_intro_fetched(h, &who, in->name, n);
        free(agent);
    }
    hls_intro_unref(in);
    if (reply_keepalive_wanted(req))
        reply_next_request(c);
    else
        conn_linger_close(c);
}

/* An intro segment: its ID3 tag (the intro's own time from 0) and its frames; or an Opus
 * intro's init segment or fragment, built when the intro was cut. The bytes are copied to the
 * connection's output: intros are short and a cache in front serves them. */
static void answer_intro(conn_t *c, const http_request_t *req, hls_t *h)
{
    int n;
    hls_intro_t *in = intro_of_request(req, h, &n);
    if (!in) {
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    unsigned char id3[HLS_ID3_MAX];
    uint32_t tag = 0;
    const char *body, *type = in->init ? "audio/mp4" : in->adts ? "audio/aac" : "audio/mpeg";
    size_t len;
    if (in->init) { /* no ID3 tag: a fragment carries its time (tfdt) */
        const block_t *b = n == HLS_INTRO_INIT ? in->init : in->segs[n].frag;
        body = (const char *)b->data;
        len = b->len;
    } else {
        uint64_t before = 0;
        for (int i = 0; i < n; i++)
            before += in->segs[i].samples;
        tag = hls_id3_tag(id3, before * 90000 / in->rate, NULL);
        body = (const char *)in->file->data + in->segs[n].start;
        len = in->segs[n].end - in->segs[n].start;
    }
    char extra[256], head[2048], etag[16];
    snprintf(etag, sizeof(etag), n == HLS_INTRO_INIT ? "init" : "%d", n);
    snprintf(extra, sizeof(extra), "Cache-Control: public, max-age=%d, immutable\r\n"
             "ETag: \"intro.%lld.%s\"\r\nAccess-Control-Allow-Origin: *\r\n", SEGMENT_MAX_AGE,
             in->version, etag);
    int keep = reply_keepalive_wanted(req);
    size_t hlen = reply_head(head, sizeof(head), keep, 200, type, (long long)(tag + len), extra);
    int head_only = req->method == HTTP_METHOD_HEAD;
    if (hlen == 0 || conn_queue(c, head, hlen) < 0 ||
        (!head_only && tag && conn_queue(c, (const char *)id3, tag) < 0)) {
        hls_intro_unref(in);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    client_of(c)->status = 200;
    if (!head_only && count_to_session(c, req, h, tag + len))
        client_skip_log(c); /* counted in its session's line */
    c->ops = &reply_sending_ops;
    conn_send(c, head_only ? "" : body, head_only ? 0 : len, intro_sent);
    hls_intro_unref(in);
}

/* Answers an HLS URL of mount name `name` served by live mount m (its reference taken). */
static void answer(conn_t *c, const http_request_t *req, const hls_url_t *u, const char *name,
                   mount_t *m)
{
    hls_t *h = window_for(c, req, name, m);
    if (!h)
        return;
    if (u->playlist)
        answer_playlist(c, req, h);
    else
        answer_piece(c, req, h, u);
}

/* ---- an on-demand relay's playlist: the session's login, then the relay ---- */

/* The on-demand relay a playlist request started is live (the request was kept). A login
 * that came first rode on the connection, as a waiting listener's does: the session takes
 * it. */
static void relay_live(conn_t *c, mount_t *m, unsigned time_limit_s)
{
    client_t *cl = client_of(c);
    const http_request_t *req = cl->req;
    hls_login_t login = {.time_limit_s = time_limit_s, .user_name = cl->log_user};
    int logged_in = cl->on_end != NULL;
    if (cl->on_end == auth_url_session_end) {
        login.url = cl->on_end_arg;
        login.intro = login.url->preroll;
    } else if (cl->on_end) {
        login.user = cl->on_end_arg; /* htpasswd's place among the mount's users */
    }
    cl->on_end = NULL;
    cl->on_end_arg = NULL;
    hls_t *h = window_for(c, req, m->name, m);
    if (!h)
        hls_login_drop(&login);
    else if (logged_in)
        login_done(c, h, &login);
    else
        answer_playlist(c, req, h);
}

/* The request waits for the relay (its login, if any, held by the connection meanwhile:
 * ended with it if it leaves first). */
static void relay_wait(conn_t *c, const char *name, unsigned time_limit_s)
{
    if (!relay_park_listener(c, name, time_limit_s, relay_live))
        client_send_error(c, 404, "The file you requested could not be found");
}

static void relay_url_resumed(conn_t *c, auth_url_session_t *s)
{
    if (!url_login_accepted(c, s))
        return;
    client_t *cl = client_of(c);
    cl->on_end = auth_url_session_end; /* listener_remove if it leaves before the relay came */
    cl->on_end_arg = s;
    relay_wait(c, s->mount_name, s->timelimit);
}

static void relay_user_verified(conn_t *c, const char *mount)
{
    relay_wait(c, mount, 0);
}

/* An on-demand relay's playlist: a session's first request on a mount with listener
 * authentication logs in before the relay is started (a refused one never makes it
 * connect, as for a listener), then waits for the relay. */
static void relay_start(conn_t *c, const http_request_t *req, const char *name)
{
    const mount_conf_t *mc = config_find_mount(server_config(), name);
    const char *token = mc && mc->auth && hls_sessions_wanted(name)
                            ? query_param(req, "session") : NULL;
    hls_t *h = token ? hls_find(name) : NULL;
    int login = token && hls_session_token_valid(token) && !(h && hls_session_known(h, token));
    if (!login || login_start(c, req, mc, name, relay_url_resumed, relay_user_verified))
        relay_wait(c, name, 0);
}

int hls_route_names(const char *path)
{
    hls_url_t u;
    int n;
    return parse_url(path, &u, NULL) || parse_intro_url(path, NULL, &n);
}

int hls_route(conn_t *c, const http_request_t *req, const char *path)
{
    hls_url_t u;
    hls_name_t name;
    int intro_n;
    if (parse_intro_url(path, name, &intro_n)) {
        mount_t *m = mount_find(name);
        if (!m)
            m = fallback_for_sourceless(name);
        hls_t *h = m ? window_for(c, req, name, m) : NULL;
        if (h)
            answer_intro(c, req, h);
        return m != NULL;
    }
    if (!parse_url(path, &u, name))
        return 0;
    int on_demand = relay_is_on_demand(u.mount);
    mount_t *m = mount_find(u.mount);
    /* a mount with no source: its fallback serves its HLS, as it would its listeners */
    if (!m && !on_demand)
        m = fallback_for_sourceless(u.mount);
    /* an on-demand relay's playlist starts it, as a listener does (its segments and parts
     * come once it is live) */
    int start_relay = !m && on_demand && u.playlist && req->method == HTTP_METHOD_GET;
    if (m)
        answer(c, req, &u, u.mount, m);
    else if (start_relay)
        relay_start(c, req, u.mount);
    /* else not a live mount's: the URL is left to files and the other routes */
    return m || start_relay;
}
