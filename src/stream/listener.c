/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * listener: streaming a mount to one client (see listener.h).
 *
 * listener_flush() plans one writev as a list of segments (pending response head, codec header
 * blocks, stream block ranges, ICY metadata) without touching the cursor, writes, then commits
 * exactly the bytes the kernel took. Cursor moves take a reference on the new block before
 * dropping the old one; nothing is allocated or copied per block.
 */
#include "stream/listener.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "auth/auth.h"
#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/str.h"
#include "core/url.h"
#include "http/client.h"
#include "http/response.h"
#include "net/conn.h"
#include "net/worker.h"
#include "net/server.h"
#include "stream/events.h"
#include "stream/fallback.h"
#include "stream/sub.h"
#include "stream/mount.h"
#include "stream/session.h"

#define LISTENER_IOV 64
#define LISTENER_MAX_WRITE (256 * 1024)

enum { SEG_WBUF, SEG_HDR, SEG_DATA, SEG_META, SEG_TAIL, SEG_AD };

typedef struct seg {
    int kind;
    block_t *blk;      /* SEG_HDR, SEG_DATA, SEG_TAIL, SEG_AD */
    uint32_t pos;      /* start within blk */
    icy_meta_t *meta;  /* SEG_META: NULL = the single zero byte */
    uint32_t total;    /* SEG_META: full length of that metadata */
} seg_t;

static const unsigned char icy_zero_byte = 0;

static icy_meta_t *meta_at(block_t *b, uint32_t pos)
{
    if (pos >= b->len) {
        block_t *n = block_next(b);
        if (n)
            return n->meta;
    }
    return b->meta;
}

/* Plans audio from block b at p (the stream, a move's tail or an ad: kind) with
 * ICY metadata spliced in every metaint bytes, after n segments of `bytes`, up to the end of
 * the block that ends at or after offset `stop` (UINT64_MAX: as far as the chain goes);
 * returns the new count. */
static inline int plan_audio(listener_t *l, struct iovec *iov, seg_t *seg, int n, size_t bytes,
                             block_t *b, uint32_t p, int kind, uint64_t stop)
{
    uint32_t since = l->since_meta;
    icy_meta_t *last = l->last_meta;
    int first = 1;
    while (n < LISTENER_IOV && bytes < LISTENER_MAX_WRITE) {
        if (l->metaint && since >= l->metaint) {
            icy_meta_t *m;
            uint32_t off = 0;
            if (first && (l->meta_cur || l->meta_zero)) {
                m = l->meta_cur;
                off = l->meta_off;
            } else {
                m = meta_at(b, p);
                if (m == last)
                    m = NULL;
            }
            uint32_t total = m ? m->len : 1;
            iov[n] = (struct iovec){m ? m->data + off : (void *)&icy_zero_byte, total - off};
            seg[n++] = (seg_t){.kind = SEG_META, .meta = m, .total = total};
            bytes += total - off;
            since = 0;
            if (m)
                last = m;
            first = 0;
            continue;
        }
        first = 0;
        if (p >= b->len) {
            if (block_end(b) >= stop)
                break;
            block_t *nb = block_next(b);
            if (!nb)
                break;
            b = nb;
            p = 0;
            continue;
        }
        uint32_t take = b->len - p;
        if (l->metaint && take > l->metaint - since)
            take = l->metaint - since;
        iov[n] = (struct iovec){b->data + p, take};
        seg[n++] = (seg_t){.kind = kind, .blk = b, .pos = p};
        bytes += take;
        p += take;
        since += take;
    }
    return n;
}

/* Plans up to LISTENER_IOV segments; returns the count. */
static int plan(listener_t *l, struct iovec *iov, seg_t *seg)
{
    int n = 0;
    size_t bytes = 0;
    conn_t *c = l->conn;
    if (c->woff < c->wlen) {
        iov[n] = (struct iovec){c->wbuf + c->woff, c->wlen - c->woff};
        seg[n++] = (seg_t){.kind = SEG_WBUF};
        bytes += c->wlen - c->woff;
    }
    if (l->tail) /* a move's pending rest of a block: the new mount follows on the next plan */
        return plan_audio(l, iov, seg, n, bytes, l->tail, l->tail_pos, SEG_TAIL,
                          block_end(l->tail));
    if (l->need_sync)
        return n; /* its headers are chosen with its start block (skip_to_sync) */
    uint64_t stop = UINT64_MAX;
    if (l->ad) { /* in an ad break: the ads' blocks, or the stream up to where they go in */
        block_t *ab;
        uint32_t ap;
        int where = adbreak_where(l, &ab, &ap, &stop);
        if (where == ADBREAK_AD)
            return plan_audio(l, iov, seg, n, bytes, ab, ap, SEG_AD, UINT64_MAX);
        if (where == ADBREAK_HOLD)
            return n;
        if (where == ADBREAK_LIVE)
            stop = UINT64_MAX;
    }
    uint32_t hp = l->hdr_pos;
    for (block_t *h = l->hdr; h && n < LISTENER_IOV; h = block_next(h), hp = 0) {
        if (h->len > hp) {
            iov[n] = (struct iovec){h->data + hp, h->len - hp};
            seg[n++] = (seg_t){.kind = SEG_HDR, .blk = h, .pos = hp};
            bytes += h->len - hp;
        }
    }
    return plan_audio(l, iov, seg, n, bytes, l->blk, l->pos, SEG_DATA, stop);
}

static void move_cursor(listener_t *l, block_t *b, uint32_t pos)
{
    if (b != l->blk) {
        block_ref(b);
        block_unref(l->blk);
        l->blk = b;
    }
    l->pos = pos;
}

/* The tail is one block (plan_audio stops at its end), dropped once it is all sent. */
static void commit_tail(listener_t *l, const seg_t *s, size_t take)
{
    uint32_t pos = s->pos + (uint32_t)take;
    if (pos >= s->blk->len) {
        block_unref(l->tail);
        l->tail = NULL;
        l->tail_pos = 0;
        return;
    }
    l->tail_pos = pos;
}

static void commit_meta(listener_t *l, const seg_t *s, size_t take)
{
    if (!l->meta_cur && !l->meta_zero) {
        if (s->meta)
            l->meta_cur = icy_meta_ref(s->meta);
        else
            l->meta_zero = 1;
        l->meta_off = 0;
    }
    l->meta_off += (uint32_t)take;
    if (l->meta_off >= s->total) {
        if (l->meta_cur) {
            icy_meta_unref(l->last_meta);
            l->last_meta = l->meta_cur;
        }
        l->meta_cur = NULL;
        l->meta_zero = 0;
        l->meta_off = 0;
        l->since_meta = 0;
    }
}

static void commit_hdr(listener_t *l, const seg_t *s, size_t take, size_t len)
{
    if (take < len) {
        if (s->blk != l->hdr) {
            block_ref(s->blk);
            block_unref(l->hdr);
            l->hdr = s->blk;
        }
        l->hdr_pos = s->pos + (uint32_t)take;
        return;
    }
    block_t *next = block_next(s->blk);
    if (next)
        block_ref(next);
    block_unref(l->hdr);
    l->hdr = next;
    l->hdr_pos = 0;
}

/* Applies the first `done` bytes of the planned segments to the listener's state. */
static void commit(listener_t *l, const struct iovec *iov, const seg_t *seg, int n, size_t done)
{
    for (int i = 0; i < n && done > 0; i++) {
        size_t take = done < iov[i].iov_len ? done : iov[i].iov_len;
        done -= take;
        switch (seg[i].kind) {
        case SEG_WBUF:
            l->conn->woff += take;
            break;
        case SEG_HDR:
            commit_hdr(l, &seg[i], take, iov[i].iov_len);
            break;
        case SEG_DATA:
            move_cursor(l, seg[i].blk, seg[i].pos + (uint32_t)take);
            l->since_meta += (uint32_t)take;
            break;
        case SEG_META:
            commit_meta(l, &seg[i], take);
            break;
        case SEG_TAIL:
            commit_tail(l, &seg[i], take);
            l->since_meta += (uint32_t)take;
            break;
        case SEG_AD:
            adbreak_commit(l, seg[i].blk, seg[i].pos + (uint32_t)take);
            l->since_meta += (uint32_t)take;
            break;
        }
    }
}

/* The codec headers that apply at the sync block the cursor is on, taken as the listener's
 * header chain; -1 if the block predates the mount's current headers (a chained stream
 * switched since): keep looking for a later sync block. */
static int take_headers(listener_t *l)
{
    block_t *h = NULL;
    if (mount_headers_at(l->mount, l->blk->offset, &h) < 0)
        return -1;
    if (l->hdr)
        block_unref(l->hdr);
    l->hdr = h;
    l->hdr_pos = 0;
    return 0;
}

/* Skips to the next sync block (a listener that joined at the live edge). Its codec headers
 * are chosen only then: those current when it attached may not be the ones of the block it
 * starts at (an Ogg source whose headers were still incomplete, or a chain switch). */
static void skip_to_sync(listener_t *l)
{
    for (;;) {
        if (l->pos < l->blk->len && l->pos == 0 && (l->blk->flags & BLOCK_SYNC) &&
            take_headers(l) == 0) {
            l->need_sync = 0;
            return;
        }
        block_t *nb = block_next(l->blk);
        if (!nb)
            return;
        move_cursor(l, nb, 0);
    }
}

int listener_check_lag(listener_t *l, uint64_t head)
{
    if (l->ad) /* a blocked listener playing ads: its place in the stream moves on */
        adbreak_follow(l);
    uint64_t at = l->blk->offset + l->pos;
    uint64_t lag = head > at ? head - at : 0;
    long limit = atomic_load_explicit(&l->mount->queue_size, memory_order_relaxed);
    if (lag <= (uint64_t)limit)
        return 0;
    atomic_fetch_add_explicit(&l->mount->slow_listeners, 1, memory_order_relaxed);
    log_info("listener %llu on %s is %llu bytes behind (queue-size %ld), disconnecting",
             (unsigned long long)l->conn->id, l->mount->name, (unsigned long long)lag, limit);
    l->end_reason = SESSION_END_TOO_SLOW;
    conn_close(l->conn);
    return -1;
}

/* Takes a listener slot on m (max-listeners), as a new listener or one moving in (already
 * counted among the server's listeners). */
static int reserve_slot(mount_t *m, int moving)
{
    return moving ? mount_take_moving_slot(m) : mount_take_listener_slot(m);
}

/* A listener that cannot follow its ended mount to the fallback is closed; the mount logs it
 * once, not once per listener. */
static void fallback_refused(listener_t *l, mount_t *fb, int err)
{
    if (atomic_fetch_add(&l->mount->fallback_refused, 1) == 0)
        log_warn("listeners of %s cannot move to fallback %s (%s): closing them", l->mount->name,
                 fb->name, err == -ENOSPC ? "max-listeners reached"
                           : err == -EACCES ? "it has authentication they did not pass"
                                            : "different format: Ogg and non-Ogg do not mix");
}

/* The mount ended and l has had all of it: on to the fallback, resolved by name now, or close.
 * l keeps the name of the mount it asked for (home) for fallback-override. */
static void listener_release(conn_t *c);

/* The stream ended for this listener: its slots (mount, server) are given back now, not when
 * the peer gets round to closing; the connection only drains and closes (lingering). */
static void listener_finish(listener_t *l)
{
    conn_t *c = l->conn;
    l->end_reason = SESSION_END_SOURCE_GONE;
    listener_release(c);
    c->role = NULL;
    c->ops = &conn_writing_ops;
    conn_linger_close(c);
}

static int follow_fallback(listener_t *l)
{
    conn_t *c = l->conn;
    mount_t *from = l->mount; /* stays referenced by our subscription */
    mount_t *fb = fallback_target(from);
    if (fb) {
        int own_home = !l->home;
        if (own_home)
            l->home = strdup(from->name);
        int err = listener_move(l, fb);
        if (err == 0) {
            log_info("listener %llu moved from %s to fallback %s", (unsigned long long)c->id,
                     from->name, fb->name);
            mount_unref(fb);
            return 0;
        }
        if (own_home) {
            free(l->home);
            l->home = NULL;
        }
        fallback_refused(l, fb, err);
        mount_unref(fb);
    }
    if (!c->closing)
        listener_finish(l);
    return -1;
}

static int stream_finished(listener_t *l)
{
    return atomic_load_explicit(&l->mount->ended, memory_order_acquire) &&
           l->conn->woff >= l->conn->wlen && !l->hdr && !l->tail && !l->ad &&
           l->pos >= l->blk->len &&
           !block_next(l->blk) && !l->meta_cur && !l->meta_zero;
}


int listener_flush(listener_t *l)
{
    struct iovec iov[LISTENER_IOV];
    seg_t seg[LISTENER_IOV];
    conn_t *c = l->conn;
    if (c->closing)
        return -1;
    /* Lag is judged by the worker on later passes (listener_check_lag), against data this
     * listener has already had a whole write window to take. */
    for (;;) {
        if (l->need_sync)
            skip_to_sync(l);
        int n = plan(l, iov, seg);
        if (n <= 0)
            break;
        size_t want = 0;
        for (int i = 0; i < n; i++)
            want += iov[i].iov_len;
        ssize_t w = conn_writev(c, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                l->blocked = 1;
                return 0;
            }
            if (errno == EINTR)
                continue;
            conn_close(c);
            return -1;
        }
        commit(l, iov, seg, n, (size_t)w);
        conn_drop_wbuf(c); /* once the response head is sent */
        c->bytes_sent += (uint64_t)w;
        l->sub->bytes_pending += (uint64_t)w;
        if ((size_t)w < want) {
            l->blocked = 1;
            return 0;
        }
    }
    if (stream_finished(l))
        return follow_fallback(l);
    return 0;
}

/* Before a move: the block l is partway through (a header block, else its stream block)
 * becomes its tail, taken out of the cursor it was in, so that its rest is sent first. A
 * listener at a block boundary, or that has not started its stream, has no tail; one that
 * still has a tail from an earlier move has sent nothing since. */
static void keep_tail(listener_t *l)
{
    if (l->tail)
        return;
    if (l->hdr && l->hdr_pos > 0) {
        l->tail = l->hdr;
        l->tail_pos = l->hdr_pos;
        l->hdr = NULL;
    } else if (!l->need_sync && l->pos > 0 && l->pos < l->blk->len) {
        l->tail = l->blk;
        l->tail_pos = l->pos;
        l->blk = NULL;
    }
}

/* A password is never verified here: that takes a verifier thread, and moves run on the
 * worker, listener after listener; the identity a listener logged in with is what it brings
 * along. */
int listener_may_enter(const char *asked, const char *user, const mount_t *dest)
{
    const config_t *cfg = server_config();
    if (asked && strcmp(asked, dest->name) == 0)
        return 1;
    const mount_conf_t *from = asked && user ? config_find_mount(cfg, asked) : NULL;
    return auth_covers(from, config_find_mount(cfg, dest->name));
}

/* May l be moved to dest? (see listener_move) */
static int may_enter(const listener_t *l, const mount_t *dest)
{
    return listener_may_enter(l->asked, client_of(l->conn)->log_user, dest);
}

/* A listener's framing was promised in its response head and cannot change mid-connection:
 * ICY metadata (icy-metaint) is only ever spliced into non-Ogg streams, and an Ogg client
 * expects bare pages. So a listener moves only between mounts of the same family (Ogg to Ogg,
 * non-Ogg to non-Ogg) and keeps its own ICY interval there, whatever the destination's
 * setting. Icecast 2.4 likewise ignores moves between streams of different types. */
int listener_move(listener_t *l, mount_t *dest)
{
    worker_t *w = l->conn->worker;
    mount_t *old = l->mount;
    if (l->feed)
        return -EPERM; /* it feeds the old process of an upgrade this mount alone */
    if (atomic_load(&dest->is_ogg) != atomic_load(&old->is_ogg))
        return -EPROTO;
    if (!may_enter(l, dest))
        return -EACCES;
    if (reserve_slot(dest, 1) < 0)
        return -ENOSPC;
    sub_remove(w, l->sub, &l->link);
    atomic_fetch_sub(&old->listeners, 1);
    adbreak_end(l); /* its ads were chosen for the mount it leaves */
    keep_tail(l);
    if (l->blk)
        block_unref(l->blk);
    if (l->hdr)
        block_unref(l->hdr);
    l->hdr = NULL;
    /* the destination's title goes out at the next metadata point, even if the listener
     * already had that metadata object (a move back); a block being sent is finished first */
    icy_meta_unref(l->last_meta);
    l->last_meta = NULL;
    l->mount = mount_ref(dest);
    mount_unref(old);
    l->blk = mount_attach(dest, &l->pos, &l->hdr);
    l->need_sync = l->pos >= l->blk->len;
    l->sub = sub_get(w, dest);
    sub_add(w, l->sub, &l->link);
    if (!l->blocked)
        listener_flush(l);
    return 0;
}

/* ---- connection role ---- */


static void listener_on_writable(conn_t *c)
{
    listener_t *l = c->data;
    if (l->blocked) {
        l->blocked = 0;
        listener_flush(l);
    }
}

#define PROBE_MS 5000 /* a range probe that ends sooner is invalid (see range_probe) */

/* The listener's session record (stream/session.h), as it ends. */
static void end_session(conn_t *c, const listener_t *l)
{
    client_t *cl = client_of(c);
    session_record_t r = {
        .id = c->id, .mount = l->asked ? l->asked : l->mount->name, .served = l->mount->name,
        .start_ms = l->start_ms, .end_ms = session_now_ms(), .bytes = c->bytes_sent,
        .address = c->ip, .agent = cl->log_agent, .referer = cl->log_referer,
        .user = cl->log_user, .end = (session_end_t)l->end_reason,
        .country = l->country[0] ? l->country : NULL, .preroll = l->preroll,
        .key = l->key[0] ? l->key : NULL, .invalid = session_live_invalid(l->live),
    };
    if (l->probe && (!r.invalid || !r.invalid[0]) && r.end_ms - r.start_ms < PROBE_MS)
        r.invalid = SESSION_INVALID_PROBE;
    session_listener_leave(l->live);
    session_end(&r);
}

static void listener_release(conn_t *c)
{
    listener_t *l = c->data;
    if (!l)
        return;
    mount_t *m = l->mount;
    if (!l->feed) {
        end_session(c, l);
        events_emit(EVENT_LISTENER_LEAVE, m->name, c->id, CIDR_SHOWN(c->ip));
        atomic_fetch_sub(&m->listeners, 1);
        atomic_fetch_sub(&server.stats.listeners, 1);
    }
    sub_remove(c->worker, l->sub, &l->link);
    adbreak_end(l);
    block_unref(l->blk);
    if (l->hdr)
        block_unref(l->hdr);
    icy_meta_unref(l->last_meta);
    icy_meta_unref(l->meta_cur);
    if (l->tail)
        block_unref(l->tail);
    free(l->home);
    free(l->asked);
    mount_unref(m);
    free(l);
    c->data = NULL;
}

/* The listener's time is up: <max-listener-duration> since it joined, or the time limit its
 * URL authentication gave (whichever comes first: the deadline set last is the earlier). */
static void listener_time_up(conn_t *c)
{
    listener_t *l = c->data;
    log_info("listener %llu on %s reached its time limit, disconnecting",
             (unsigned long long)c->id, l->mount->name);
    l->end_reason = SESSION_END_TIME_LIMIT;
    conn_close(c);
}

static const conn_ops_t listener_ops = {
    .name = "listener",
    .on_readable = conn_discard_input,
    .on_writable = listener_on_writable,
    .on_hangup = NULL,
    .on_timeout = listener_time_up,
    .on_close = listener_release,
};

void listener_set_time_limit(conn_t *c, unsigned seconds)
{
    if (seconds == 0 || c->closing || c->ops != &listener_ops)
        return;
    uint64_t at = loop_now_ms() + (uint64_t)seconds * 1000u;
    if (!c->deadline_ms || at < c->deadline_ms) /* an earlier max-listener-duration stays */
        conn_set_deadline(c, (uint64_t)seconds * 1000u);
}

/* The mount's <max-listener-duration> in seconds, 0 for none. */
static int max_duration(const mount_t *m)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    return mc ? mc->max_listener_duration : 0;
}

static int wants_icy(const http_request_t *req)
{
    const http_header_t *h = http_find_header(req, "icy-metadata");
    return h && h->value_len > 0 && h->value[0] == '1';
}

/* The response head a listener of m gets. A content type that is not audio or video is
 * served as application/octet-stream (logged, rate-limited). */
static size_t stream_head(char *buf, size_t cap, mount_t *m, int metaint)
{
    const mount_info_t *i = mount_info(m);
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (i->content_type && response_stream_type(i->content_type) != i->content_type) {
        static log_ratelimit_t rl;
        char esc_type[256], esc_mount[256];
        log_warn_limited(&rl, 10000, "content type \"%s\" of %s is not audio or video: served "
                         "as application/octet-stream",
                         escape_log(esc_type, sizeof(esc_type), i->content_type,
                                    strlen(i->content_type)),
                         escape_log(esc_mount, sizeof(esc_mount), m->name, strlen(m->name)));
    }
    response_stream_t rs = {
        .content_type = i->content_type, .bitrate = i->bitrate, .description = i->description,
        .genre = i->genre, .name = i->name, .url = i->url, .audio_info = i->audio_info,
        .public = i->public, .headers = mc ? mc->http_headers : NULL,
    };
    return response_stream_head(buf, cap, &rs, metaint);
}

/* HEAD: the same status and headers a GET would get, without joining the mount (a full
 * mount is the caller's to decide, as for a GET). */
static void answer_head(conn_t *c, const http_request_t *req, mount_t *m)
{
    char head[8192]; /* six source values of up to 1 KB each fit */
    int metaint = wants_icy(req) ? atomic_load(&m->metaint) : 0;
    size_t hlen = stream_head(head, sizeof(head), m, metaint);
    mount_unref(m);
    client_of(c)->status = 200;
    conn_send(c, head, hlen, conn_linger_close);
}

static int is_full(mount_t *m)
{
    int max = atomic_load(&m->max_listeners);
    return max >= 0 && atomic_load(&m->listeners) >= max;
}

/* The listener key from the listener id the player sent in the query parameter the station
 * names (<audience><listener-id-param>): up to 256 bytes, not empty; else it stays "" (made
 * from address and agent). Only its hash is kept. */
static void listener_key_from_id(listener_t *l, const http_request_t *req)
{
    const char *param = server_config()->listener_id_param;
    char id[257];
    if (param && req->query &&
        url_query_value(req->query, req->query_len, param, id, sizeof(id)) && id[0])
        session_listener_key(NULL, NULL, id, l->key);
}

/* A range probe: "Range: bytes=0-0" or "bytes=0-1", which players (Safari, AVPlayer) send
 * to learn what the resource is before they play it. It is answered with the stream, as
 * Icecast answers it (Safari plays on from that answer when it keeps it); one that ends
 * within PROBE_MS is recorded as invalid, a probe (docs/AUDIENCE.md, invalid traffic). */
static int range_probe(const http_request_t *req)
{
    const http_header_t *h = http_find_header(req, "range");
    if (!h)
        return 0;
    char v[32];
    size_t n = h->value_len < sizeof(v) - 1 ? h->value_len : sizeof(v) - 1;
    memcpy(v, h->value, n);
    v[n] = '\0';
    return strcmp(v, "bytes=0-0") == 0 || strcmp(v, "bytes=0-1") == 0;
}

/* listener_start; a feed (listener_start_feed) takes no slot and is not counted. */
static int start(conn_t *c, const http_request_t *req, mount_t *m, const char *home, int feed)
{
    if (req->method == HTTP_METHOD_HEAD) {
        if (is_full(m))
            return LISTENER_FULL;
        answer_head(c, req, m);
        return 0;
    }
    if (!feed && reserve_slot(m, 0) < 0)
        return LISTENER_FULL;
    listener_t *l = calloc(1, sizeof(*l));
    char head[8192]; /* six source values of up to 1 KB each fit */
    int metaint = wants_icy(req) ? atomic_load(&m->metaint) : 0;
    size_t hlen = stream_head(head, sizeof(head), m, metaint);
    /* The head is queued before anything else changes: if copying it fails (ENOMEM), the
     * listener must not start (it would get audio with no HTTP head), and nothing has been
     * set up yet but the slot. conn_queue leaves the connection's buffer as it was on failure;
     * the 500 then needs memory too, and client_send_error closes the connection without it.
     * A test build can make this conn_queue fail (FAULT, core/fault.h). */
    if (!l || hlen == 0 || FAULT(FAULT_LISTENER_HEAD) || conn_queue(c, head, hlen) < 0) {
        free(l);
        if (!feed)
            atomic_fetch_sub(&m->listeners, 1);
        mount_unref(m);
        client_send_error(c, 500, "Internal Server Error");
        return 0;
    }
    if (feed && c->counted) { /* not among the clients either */
        conn_uncount(c);
    } else if (!feed) {
        atomic_fetch_add(&server.stats.listeners, 1);
        atomic_fetch_add(&server.stats.listener_connections, 1);
        atomic_fetch_add(&server.stats.client_connections, 1);
    }
    client_of(c)->status = 200;
    if (feed)
        client_skip_log(c); /* not a listener: no access-log line when it ends */
    l->conn = c;
    l->feed = feed;
    l->start_ms = session_now_ms();
    if (!feed) {
        session_locate(c->ip, l->country, sizeof(l->country));
        listener_key_from_id(l, req);
        l->probe = range_probe(req);
    }
    l->mount = m; /* the caller's reference becomes ours */
    l->metaint = (uint32_t)metaint;
    l->home = home ? strdup(home) : NULL; /* without memory: no way back with an override */
    l->asked = strdup(home ? home : m->name); /* without memory: it moves to open mounts only */
    l->blk = feed ? mount_attach_live(m, &l->pos, &l->hdr) : mount_attach(m, &l->pos, &l->hdr);
    l->need_sync = l->pos >= l->blk->len;
    c->data = l;
    c->ops = c->role = &listener_ops;
    /* the one deadline a streaming listener has (the head's was cleared): nothing else sets it */
    int limit = feed ? 0 : max_duration(m);
    if (limit > 0)
        conn_set_deadline(c, (uint64_t)limit * 1000u);
    l->sub = sub_get(c->worker, m);
    sub_add(c->worker, l->sub, &l->link);
    if (!feed) {
        events_emit(EVENT_LISTENER_JOIN, m->name, c->id, CIDR_SHOWN(c->ip));
        session_record_t r = {
            .id = c->id, .mount = l->asked ? l->asked : "", .start_ms = l->start_ms,
            .address = c->ip, .agent = client_of(c)->log_agent, .country = l->country,
            .key = l->key[0] ? l->key : NULL,
        };
        l->live = session_listener_join(&r);
    }
    if (!feed)
        adbreak_preroll(l); /* asked before the request buffer (its agent) goes */
    /* a streaming listener keeps no request buffer (req points into it: not used after this) */
    client_drop_request(c);
    listener_flush(l);
    return 0;
}

int listener_start(conn_t *c, const http_request_t *req, mount_t *m, const char *home)
{
    return start(c, req, m, home, 0);
}

void listener_start_feed(conn_t *c, const http_request_t *req, mount_t *m)
{
    start(c, req, m, NULL, 1);
}

listener_t *listener_of(conn_t *c)
{
    return c->role == &listener_ops && !c->closing ? c->data : NULL;
}

void listener_adopt(conn_t *c, listener_t *l)
{
    c->data = l;
    c->ops = c->role = &listener_ops;
    atomic_fetch_add(&server.stats.listeners, 1);
    atomic_fetch_add(&l->mount->listeners, 1);
    l->sub = sub_get(c->worker, l->mount);
    sub_add(c->worker, l->sub, &l->link);
    session_record_t r = {
        .id = c->id, .mount = l->asked ? l->asked : "", .start_ms = l->start_ms,
        .address = c->ip, .agent = client_of(c)->log_agent, .country = l->country,
        .key = l->key[0] ? l->key : NULL,
    };
    l->live = session_listener_join(&r);
}
