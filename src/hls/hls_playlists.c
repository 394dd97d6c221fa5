/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_playlists: the media playlist of a session (see hls_route_internal.h), and blocking
 * reloads (_HLS_msn/_HLS_part) and pieces asked for before they exist parked until the part
 * is there. On an upgrade (hls_carry.h) the requests parked, and the segments and parts being
 * sent, go to the new process with their request, which answers them on its carried window.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/record.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "hls/hls_route_internal.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_carry.h"
#include "hls/hls_ads.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"

/* A request waiting for a part: a blocking playlist reload, or a part (the preload hint) or
 * segment asked for before it is complete. It keeps its request value, and is answered again
 * from it. */
typedef struct parked {
    hls_waiter_t waiter;
    hls_request_t req;  /* a kept copy (hls_request_keep); req.window NULL: a carried one whose
                         * stream did not come */
} parked_t;

static void parked_release(conn_t *c)
{
    parked_t *p = c->data;
    if (!p)
        return;
    hls_unwait(&p->waiter);
    hls_state_free(p);
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

/* A part a parked request waits for exists (on its worker): it is answered again, from the
 * request value it kept. */
static void parked_woken(worker_t *w, void *arg)
{
    conn_t *c = worker_find_conn(w, (uint64_t)(uintptr_t)arg);
    if (!c || c->ops != &parked_ops || c->closing)
        return;
    parked_t *p = c->data;
    hls_name_t login_buf;
    hls_request_t r = p->req;
    hls_request_resume(&r, login_buf);
    parked_release(c);
    c->role = NULL;
    conn_set_deadline(c, 0);
    if (r.url.playlist)
        hls_playlists_answer(&r);
    else
        hls_pieces_answer(&r);
}

/* A parked request of c, its waiter set for (msn, part): NULL without memory. */
static parked_t *parked_new(conn_t *c, uint64_t msn, int part)
{
    _Static_assert(sizeof(parked_t) <= HLS_STATE_BYTES, "a parked request is a state");
    parked_t *p = hls_state_new();
    if (!p)
        return NULL;
    p->waiter.msn = msn;
    p->waiter.part = part;
    p->waiter.worker = c->worker;
    p->waiter.fn = parked_woken;
    p->waiter.arg = (void *)(uintptr_t)c->id;
    return p;
}

int hls_playlists_park(const hls_request_t *r, uint64_t msn, int part)
{
    conn_t *c = r->c;
    parked_t *p = parked_new(c, msn, part);
    if (!p) {
        client_send_error(c, 500, "Internal Server Error");
        return -1;
    }
    int rc = hls_wait(r->window, &p->waiter);
    if (rc <= 0) {
        hls_state_free(p);
        if (rc < 0)
            client_send_error(c, 400, "Bad Request: _HLS_msn or _HLS_part is too far ahead");
        return rc;
    }
    hls_request_keep(&p->req, r);
    c->data = p;
    c->role = &parked_ops;
    c->ops = &parked_ops;
    /* a blocking reload is answered within three target durations, else 503 */
    conn_set_deadline(c, (uint64_t)hls_target_duration(r->window) * 3000);
    return 1;
}

void hls_playlists_answer(hls_request_t *r)
{
    if (hls_admit_poll(r, NULL))
        hls_playlists_answer_session(r);
}

/* The media playlist as the request's session sees it (its intro first), else everyone's. */
static int playlist_of(const hls_request_t *r, buf_t *out)
{
    const char *token = r->sessions ? hls_request_token(r) : NULL;
    return token ? hls_session_playlist(r->window, token, out, 1, r->c->worker,
                                        (hls_sess_hint_t *)&r->hint)
                 : hls_playlist(r->window, out, 1);
}

/* The thread's playlist buffer (below), freed when its thread ends. */
static pthread_key_t out_key;
static pthread_once_t out_once = PTHREAD_ONCE_INIT;

static void out_free(void *b)
{
    buf_free(&((buf_t *)b)[0]);
    buf_free(&((buf_t *)b)[1]);
}

static void out_key_make(void)
{
    pthread_key_create(&out_key, out_free);
}

/* The thread's buffers for a playlist, and the same with its URIs tagged: emptied. */
static buf_t *playlist_bufs(void)
{
    /* rendered into buffers of the thread's: reply_send writes or copies them before it
     * returns, so the next request on this thread (a pipelined one, even) may reuse them */
    static __thread buf_t bufs[2];
    if (bufs[0].data) {
        bufs[0].data[bufs[0].len = 0] = '\0';
    } else {
        pthread_once(&out_once, out_key_make);
        pthread_setspecific(out_key, bufs);
    }
    if (bufs[1].data)
        bufs[1].data[bufs[1].len = 0] = '\0';
    return bufs;
}

/* Renders r's playlist into out, parking r while what it waits for is not there: 0 (>= 0)
 * rendered, 1 parked or answered, < 0 an error to answer. */
static int playlist_render(hls_request_t *r, buf_t *out)
{
    hls_t *h = r->window;
    uint64_t msn = r->msn;
    int part = r->part_arg == HLS_ARG_SET ? (int)r->hls_part : -1;
    const char *token = r->sessions ? hls_request_token(r) : NULL;
    if (r->msn_arg == HLS_ARG_SET && token)
        hls_ads_reload_at(h, token, &msn, &part); /* a session past an ad break numbers its own */
    if (r->msn_arg == HLS_ARG_SET && hls_playlists_park(r, msn, part) != 0)
        return 1;
    int rc = playlist_of(r, out);
    if (rc == -EAGAIN || rc == -EINPROGRESS) {
        /* the window has no complete segment yet: the first one is waited for; or the
         * session's preroll is being decided: asked again when the next part is cut */
        uint64_t next_msn;
        int next_part;
        hls_next_part(h, &next_msn, &next_part);
        if (hls_playlists_park(r, next_msn, rc == -EAGAIN ? -1 : next_part) != 0)
            return 1;
        rc = playlist_of(r, out);
    }
    return rc < 0 ? rc : 0;
}

/* The playlist, once the request's session went on (blocking reloads parked). */
void hls_playlists_answer_session(hls_request_t *r)
{
    conn_t *c = r->c;
    int has_msn = r->msn_arg == HLS_ARG_SET, has_part = r->part_arg == HLS_ARG_SET;
    if (r->msn_arg == HLS_ARG_BAD || r->part_arg == HLS_ARG_BAD || (has_part && !has_msn) ||
        (has_part && r->hls_part >= HLS_MAX_PARTS)) {
        client_send_error(c, 400, "Bad Request: malformed _HLS_msn or _HLS_part");
        return;
    }
    int target = hls_target_duration(r->window);
    buf_t *out = playlist_bufs(), *tagged = out + 1;
    int rc = playlist_render(r, out);
    if (rc > 0)
        return;
    /* a protected mount's pieces answer only to the session's token: its URIs carry it */
    int private_ = rc >= 0 && hls_admit_protected(r) && r->token_arg != HLS_ARG_ABSENT;
    if (private_) {
        const char *token = hls_request_token(r);
        rc = token ? hls_token_tag_playlist(out->data, out->len, token, tagged) : -EINVAL;
    }
    if (rc < 0) {
        buf_free(out);
        buf_free(tagged);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    const buf_t *sent = private_ ? tagged : out;
    char extra[128];
    /* a plain reload changes each part; a blocking one names the state it waits for */
    char *e = hls_put(extra, private_ ? "Cache-Control: private, max-age="
                                      : "Cache-Control: public, max-age=");
    e = hls_put_number(e, (unsigned)(has_msn ? 6 * target : target > 1 ? target / 2 : 1), 0);
    *hls_put(e, "\r\nAccess-Control-Allow-Origin: *\r\n") = '\0';
    hls_admit_count(r, sent->len);
    reply_send(c, r->http, 200, PLAYLIST_TYPE, sent->data, sent->len, extra);
}

/* ---- an upgrade: the requests in flight go to the new process ---- */

enum { CARRIED_PARKED, CARRIED_OWED };

/* A part that was being sent as it filled when the process handed over: what was sent of it
 * is known (o), the rest goes once the part is complete. */
typedef struct owed {
    hls_waiter_t waiter;
    hls_owed_t o;
} owed_t;

static void owed_release(conn_t *c)
{
    owed_t *w = c->data;
    if (!w)
        return;
    hls_unwait(&w->waiter);
    free(w);
    c->data = NULL;
}

static const conn_ops_t owed_ops = {
    .name = "hls part carried",
    .on_writable = conn_write_pending, /* what was owed at the hand-over, meanwhile */
    /* the part never completed (the source left): the answer ends cut short */
    .on_close = owed_release,
};

static void save_owed(const hls_owed_t *o, const buf_t *bytes, buf_t *out)
{
    rec_u8(out, CARRIED_OWED);
    rec_str(out, o->hls ? o->hls->name : NULL);
    rec_bytes(out, bytes->data, bytes->len);
    rec_u64(out, o->msn);
    rec_u32(out, (uint32_t)o->part);
    rec_u8(out, (uint8_t)o->follow);
    rec_u8(out, (uint8_t)o->started);
    rec_u64(out, o->start);
    rec_u64(out, o->end);
    rec_u32(out, o->id3_len);
    rec_u8(out, (uint8_t)o->keep);
}

int hls_playlists_carry_save(conn_t *c, buf_t *out)
{
    buf_t bytes = BUF_INIT;
    hls_owed_t o;
    if (c->closing || c->tls) {
        return -ENOENT;
    } else if (c->ops == &parked_ops) {
        const parked_t *p = c->data;
        rec_u8(out, CARRIED_PARKED);
        rec_str(out, p->req.window ? p->req.window->name : NULL);
        rec_u8(out, (uint8_t)p->req.url.playlist);
        rec_u64(out, p->req.url.seq);
        rec_u32(out, (uint32_t)p->req.url.part);
        rec_u8(out, (uint8_t)p->req.url.init);
        rec_str(out, p->req.url.ext);
    } else if (c->ops == &owed_ops) { /* carried by an upgrade before, still waiting */
        save_owed(&((owed_t *)c->data)->o, &bytes, out);
    } else if (hls_pieces_owed(c, &bytes, &o) == 0) {
        save_owed(&o, &bytes, out);
        if (bytes.error)
            out->error = bytes.error;
        buf_free(&bytes);
    } else {
        return -ENOENT;
    }
    client_input_save(c, out); /* the request, answered again or counted in the new process */
    return 0;
}

/* The request c was answering, carried in its input: parsed again (c->rbuf). */
static int request_restore(conn_t *c, rec_reader_t *in)
{
    client_t *cl = client_of(c);
    int rc = client_input_restore(c, in);
    if (rc < 0 || !c->rbuf)
        return rc < 0 ? rc : -EINVAL;
    if (!(cl->req = malloc(sizeof(*cl->req))))
        return -ENOMEM;
    int head = http_parse_request(c->rbuf, c->rlen, 0, cl->req);
    if (head <= 0)
        return -EINVAL;
    cl->parsed_len = (size_t)head;
    return 0;
}

/* The request value of a carried request of window h (NULL: its stream did not come), its URL
 * in r->url: the rest read from its restored head (the record names the window). */
static void carried_request(hls_request_t *r, conn_t *c, hls_t *h)
{
    hls_request_read_head(r, c, client_of(c)->req);
    r->window = h;
    r->mount = h ? h->name : NULL;
    const config_t *cfg = server_config();
    r->conf = h ? config_find_mount(cfg, h->name) : NULL;
    r->sessions = h && hls_sessions_wanted_conf(cfg, h->name, r->conf);
}

/* A carried parked request, on its worker's first turn: answered again on the carried window
 * (parked again if its part is still to come). */
static void carried_woken(worker_t *w, void *arg)
{
    conn_t *c = worker_find_conn(w, (uint64_t)(uintptr_t)arg);
    if (!c || c->ops != &parked_ops || c->closing)
        return;
    parked_t *p = c->data;
    if (p->req.window) {
        if (!p->req.url.playlist && p->req.sessions) {
            /* a piece was admitted in the old process: private if a login covers its window,
             * as hls_admit_piece decided there */
            hls_name_t login_buf;
            hls_request_t r = p->req;
            hls_request_resume(&r, login_buf);
            p->req.private_ = hls_admit_login_of(&r) != NULL;
        }
        parked_woken(w, arg);
        return;
    }
    parked_release(c);
    c->role = NULL;
    conn_set_deadline(c, 0);
    client_send_error(c, 503, "Service Unavailable: the stream did not come with the upgrade");
}

static int adopt_parked(conn_t *c, rec_reader_t *in, hls_t *h)
{
    static const char *const exts[] = {"mp3", "aac", "mp4"};
    parked_t *p = parked_new(c, 0, 0);
    if (!p)
        return -ENOMEM;
    hls_url_t *u = &p->req.url;
    u->playlist = rec_get_u8(in);
    u->seq = rec_get_u64(in);
    u->part = (int)(int32_t)rec_get_u32(in);
    u->init = rec_get_u8(in);
    char *ext = rec_get_str(in);
    for (size_t i = 0; ext && i < sizeof(exts) / sizeof(exts[0]); i++)
        if (strcmp(ext, exts[i]) == 0)
            u->ext = exts[i]; /* a static string, as the router's */
    int bad = !u->playlist && !u->ext;
    free(ext);
    int rc = bad ? -EINVAL : request_restore(c, in);
    if (rc < 0 || in->error) {
        hls_state_free(p);
        return rc < 0 ? rc : -EINVAL;
    }
    carried_request(&p->req, c, h);
    c->data = p;
    c->role = &parked_ops;
    c->ops = &parked_ops;
    return worker_post(c->worker, carried_woken, (void *)(uintptr_t)c->id);
}

/* The rest of the answer once owed is queued: written, then the next request or the end. */
static void owed_finish(conn_t *c, int keep)
{
    c->ops = &reply_sending_ops;
    c->after_write = keep ? reply_next_request : conn_linger_close;
    if (c->woff < c->wlen) {
        conn_write_pending(c);
    } else {
        void (*fn)(conn_t *) = c->after_write;
        c->after_write = NULL;
        fn(c);
    }
}

/* The piece's bytes counted to its session (a part sent as it filled: once complete). */
static void owed_count(conn_t *c, hls_t *h, uint64_t bytes)
{
    hls_request_t r = {.url = {.part = -1}};
    if (!h)
        return;
    carried_request(&r, c, h);
    if (hls_admit_count(&r, bytes))
        client_skip_log(c); /* counted in its session's line */
}

/* A carried part sent as it filled (on its worker): once complete, its last chunk and the
 * empty one end the answer; a stream that broke under it cuts it short, as it would have. */
static void owed_woken(worker_t *w, void *arg)
{
    conn_t *c = worker_find_conn(w, (uint64_t)(uintptr_t)arg);
    if (!c || c->ops != &owed_ops || c->closing)
        return;
    owed_t *x = c->data;
    hls_piece_t p = {0};
    int rc;
    while ((rc = x->o.hls ? hls_piece(x->o.hls, x->o.msn, x->o.part, &p) : HLS_GONE) ==
           HLS_PENDING)
        if (hls_wait(x->o.hls, &x->waiter) > 0)
            return;
    if (rc != HLS_READY || (x->o.started && (p.start != x->o.start || p.end < x->o.end))) {
        if (rc == HLS_READY)
            block_unref(p.blk);
        conn_close(c);
        return;
    }
    uint64_t from = x->o.started ? x->o.end : p.start;
    buf_t b = BUF_INIT;
    if (p.end > from) {
        char head[20];
        buf_append(&b, head, (size_t)(hls_put(hls_put_number(head, p.end - from, 1), "\r\n") -
                                      head));
        for (const block_t *k = p.blk; k && from < p.end; k = block_next(k))
            if (block_end(k) > from) {
                uint64_t stop = block_end(k) < p.end ? block_end(k) : p.end;
                buf_append(&b, k->data + (from - k->offset), (size_t)(stop - from));
                from = stop;
            }
        buf_append_str(&b, "\r\n");
    }
    buf_append_str(&b, "0\r\n\r\n");
    block_unref(p.blk);
    int keep = x->o.keep;
    hls_t *h = x->o.hls;
    uint64_t bytes = x->o.id3_len + (p.end - p.start);
    owed_release(c);
    c->role = NULL;
    conn_set_deadline(c, 0);
    if (b.error || conn_queue(c, b.data, b.len) < 0) {
        buf_free(&b);
        conn_close(c);
        return;
    }
    buf_free(&b);
    owed_count(c, h, bytes);
    owed_finish(c, keep);
}

/* A carried answer with nothing left to write (on its worker): it ends. */
static void owed_sent(worker_t *w, void *arg)
{
    conn_t *c = worker_find_conn(w, (uint64_t)(uintptr_t)arg);
    if (c && c->ops == &reply_sending_ops && !c->closing && c->after_write)
        owed_finish(c, c->after_write == reply_next_request);
}

/* A piece that was being sent: its owed bytes go out, and a part still being cut is then
 * followed to its end. */
static int adopt_owed(conn_t *c, rec_reader_t *in, hls_t *h)
{
    size_t n;
    const unsigned char *bytes = rec_get_bytes(in, &n);
    hls_owed_t o = {.hls = h};
    o.msn = rec_get_u64(in);
    o.part = (int)rec_get_u32(in);
    o.follow = rec_get_u8(in);
    o.started = rec_get_u8(in);
    o.start = rec_get_u64(in);
    o.end = rec_get_u64(in);
    o.id3_len = rec_get_u32(in);
    o.keep = rec_get_u8(in);
    int rc = request_restore(c, in);
    if (rc < 0 || in->error)
        return rc < 0 ? rc : -EINVAL;
    if (n && conn_queue(c, (const char *)bytes, n) < 0)
        return -ENOMEM;
    if (!o.follow) {
        if (o.started)
            owed_count(c, h, o.id3_len + (o.end - o.start));
        c->ops = &reply_sending_ops;
        c->after_write = o.keep ? reply_next_request : conn_linger_close;
        /* written when the socket says it has room, as a carried answer */
        return c->woff < c->wlen ? 0
                                 : worker_post(c->worker, owed_sent, (void *)(uintptr_t)c->id);
    }
    owed_t *x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->o = o;
    x->waiter.msn = o.msn;
    x->waiter.part = o.part;
    x->waiter.worker = c->worker;
    x->waiter.fn = owed_woken;
    x->waiter.arg = (void *)(uintptr_t)c->id;
    c->data = x;
    c->role = &owed_ops;
    c->ops = &owed_ops;
    c->after_write = NULL;
    if (!c->deadline_ms && h)
        conn_set_deadline(c, (uint64_t)hls_target_duration(h) * 3000);
    return worker_post(c->worker, owed_woken, (void *)(uintptr_t)c->id);
}

int hls_playlists_carry_adopt(conn_t *c, rec_reader_t *in)
{
    int kind = rec_get_u8(in);
    char *name = rec_get_str(in);
    hls_t *h = name ? hls_find(name) : NULL;
    free(name);
    if (in->error)
        return -EINVAL;
    return kind == CARRIED_PARKED ? adopt_parked(c, in, h)
           : kind == CARRIED_OWED ? adopt_owed(c, in, h)
                                  : -EINVAL;
}
