/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_pieces: segments and parts (see hls_route_internal.h), sent from the mount's blocks (an
 * ID3 timestamp tag, then writev of the block pieces: nothing copied), ranges and ETags; the
 * part being cut followed as it fills (chunked, to HTTP/1.1 requests, at the write window's
 * ticks).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "conf/config.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "hls/hls_route_internal.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_ads.h"

#define SEND_IOV 64

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
    hls_state_free(s);
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

/* Writes what the connection owes, as many bytes as the socket takes: what waits in the output
 * buffer, then the iovs pre (the reply's head and tag, not sent before: what the socket does
 * not take of them is queued), then bytes [*pos, end) of the block chain from *blk (the block
 * holding *pos, referenced: moved on as bytes go), up to SEND_IOV block pieces a writev, so
 * that a piece's head and its audio go in one system call. 1 all written, 0 the socket is
 * full, -1 the connection closed. */
static int write_blocks(conn_t *c, const struct iovec *pre, int npre, block_t **blk,
                        uint64_t *pos, uint64_t end)
{
    while (npre || c->woff < c->wlen || *pos < end) {
        struct iovec iov[SEND_IOV + 3];
        int n = 0;
        size_t queued = c->wlen - c->woff;
        if (queued)
            iov[n++] = (struct iovec){c->wbuf + c->woff, queued};
        for (int i = 0; i < npre; i++)
            iov[n++] = pre[i];
        uint64_t covered;
        if (*pos < end)
            n += blocks_iov(*blk, *pos, end, iov + n, SEND_IOV, &covered);
        if (n == 0)
            return 1; /* cannot happen: the bytes asked for are all published */
        ssize_t w = writev_counted(c, iov, n);
        if (w < 0)
            return -1;
        size_t left = (size_t)w, from_buf = left < queued ? left : queued;
        c->woff += from_buf;
        left -= from_buf;
        if (c->woff == c->wlen)
            c->woff = c->wlen = 0;
        for (int i = 0; i < npre; i++) { /* what the socket did not take waits in the buffer */
            size_t sent = left < pre[i].iov_len ? left : pre[i].iov_len;
            left -= sent;
            if (sent < pre[i].iov_len &&
                conn_queue(c, (const char *)pre[i].iov_base + sent, pre[i].iov_len - sent) < 0) {
                conn_close(c);
                return -1;
            }
        }
        npre = 0;
        if (w == 0)
            return 0;
        if (left)
            blocks_advance(blk, pos, (uint64_t)left, end);
    }
    return 1;
}

/* Writes the reply's head and tag (pre, not sent yet), what waits in the output buffer and
 * the block pieces, as many as the socket takes; the end of the piece ends the answer. */
static void piece_send(conn_t *c, const struct iovec *pre, int npre)
{
    piece_send_t *s = c->data;
    int r = write_blocks(c, pre, npre, &s->piece.blk, &s->pos, s->end);
    if (r == 0)
        conn_set_deadline(c, (uint64_t)server_config()->client_timeout * 1000);
    if (r == 1)
        piece_done(c);
}

static void piece_write(conn_t *c)
{
    piece_send(c, NULL, 0);
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
        if (!hls_request_number(p + 1, &n) || n == 0)
            return -1;
        a = n >= size ? 0 : size - n;
    } else {
        if (!(p = hls_request_number(p, &a)) || *p != '-')
            return 0;
        if (p[1] && (!hls_request_number(p + 1, &b) || b < a))
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
    hls_request_t req;     /* a kept copy: the part's bytes are counted to its session once
                            * complete */
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
    hls_state_free(f);
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
        f->chunk_off = 0;
        f->chunk_len = (size_t)(hls_put(hls_put_number(f->chunk, p.end - f->end, 1), "\r\n") -
                                f->chunk);
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
            hls_request_t r = f->req;
            uint64_t bytes = f->id3_len + (f->end - f->start);
            filling_release(c);
            c->role = NULL;
            conn_set_deadline(c, 0);
            if (hls_admit_count(&r, bytes))
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

#define FILLING_HEAD_MAX (2048 + 16 + HLS_ID3_MAX + 2)

/* The head of the chunked answer to r, the part being cut (p: what it holds, its tag), then
 * the tag as its first chunk, into head (FILLING_HEAD_MAX): queued at once, one copy. Its
 * length, 0 when it does not fit. */
static size_t filling_head(const hls_request_t *r, const hls_piece_t *p, int keep, char *head)
{
    char extra[512];
    char *e = hls_put(extra, r->private_ ? SEGMENT_CACHE_CONTROL_PRIVATE : SEGMENT_CACHE_CONTROL);
    e = hls_put(e, "ETag: \"");
    e = hls_put(hls_put_number(e, r->url.seq, 0), ".");
    e = hls_put(hls_put_number(e, (unsigned)r->url.part, 0), "\"\r\n");
    *hls_put(e, "Access-Control-Allow-Origin: *\r\n") = '\0';
    size_t hlen = response_head_chunked(head, 2048, keep, 200, hls_piece_type(p), extra);
    if (hlen > 0) {
        hlen = (size_t)(hls_put(hls_put_number(head + hlen, p->id3_len, 1), "\r\n") - head);
        memcpy(head + hlen, p->id3, p->id3_len);
        memcpy(head + hlen + p->id3_len, "\r\n", 2);
        hlen += p->id3_len + 2;
    }
    return hlen;
}

/* Starts sending the part being cut (HTTP/1.1, chunked) from what it holds: 1 if it did. An
 * HTTP/1.0 request is not answered chunked (RFC 9112 section 7.1): it waits for the part to
 * be complete, as a part further ahead does, and gets it with a length. */
static int start_filling(const hls_request_t *r)
{
    conn_t *c = r->c;
    const http_request_t *req = r->http;
    const hls_url_t *u = &r->url;
    hls_t *h = r->window;
    if (u->ad || u->part < 0 || !response_may_chunk(req) || req->method != HTTP_METHOD_GET ||
        http_find_header(req, "range"))
        return 0;
    hls_piece_t p = {0};
    if (hls_part_so_far(h, u->seq, u->part, &p) != HLS_FILLING)
        return 0;
    uint64_t held = p.blk ? p.end : 0;
    if (p.blk)
        block_unref(p.blk); /* what it holds is asked for again below */
    _Static_assert(sizeof(filling_t) <= HLS_STATE_BYTES, "a part followed is a state");
    filling_t *f = hls_state_new();
    char head[FILLING_HEAD_MAX];
    int keep = reply_keepalive_wanted(req);
    size_t hlen = filling_head(r, &p, keep, head);
    if (!f || hlen == 0 || conn_queue(c, head, hlen) < 0) {
        hls_state_free(f);
        client_send_error(c, 500, "Internal Server Error");
        return 1;
    }
    client_of(c)->status = 200;
    f->hls = h;
    hls_request_keep(&f->req, r);
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

/* Finds the piece r asks for into s->piece (referenced; s NULL: no memory): 1, else 0 with r
 * answered (404, 500), or parked until the part is complete and then answered again. */
static int piece_find(const hls_request_t *r, piece_send_t *s)
{
    const hls_url_t *u = &r->url;
    int rc = !s ? -ENOMEM : u->ad ? hls_adcut_piece(u->ad_id, u->init ? HLS_AD_INIT : u->seq, u->part,
                                                   u->ext, &s->piece)
                          : u->init ? hls_init_piece(r->window, u->seq, &s->piece)
                                    : hls_piece(r->window, u->seq, u->part, &s->piece);
    if (rc == HLS_PENDING) {
        /* the preload hint's part, or one just ahead: sent once it is complete */
        if (hls_playlists_park(r, u->seq, u->part) == 0)
            hls_pieces_answer(r); /* completed meanwhile */
        return 0;
    }
    if (rc != HLS_READY || strcmp(u->ext, hls_piece_ext(&s->piece)) != 0) {
        if (rc == HLS_READY)
            block_unref(s->piece.blk);
        client_send_error(r->c, rc == -ENOMEM ? 500 : 404,
                          rc == -ENOMEM ? "Internal Server Error"
                                        : "The file you requested could not be found");
        return 0;
    }
    return 1;
}

/* The head of the answer to r for bytes [from, to) of its piece (size bytes; range: asked for
 * as a range) into head (2048 bytes): its length, 0 when it does not fit; *status 200, 206,
 * or 304 when the request's If-None-Match names the piece's ETag. */
static size_t piece_head(const hls_request_t *r, const piece_send_t *s, int range,
                         uint64_t from, uint64_t to, uint64_t size, char *head, int *status)
{
    const hls_url_t *u = &r->url;
    char extra[512], crange[96] = "", etag[64];
    if (range)
        snprintf(crange, sizeof(crange), "Content-Range: bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64
                 "\r\n", from, to - 1, size);
    char *t = hls_put_number(hls_put(etag, "\""), u->seq, 0);
    if (u->init)
        t = hls_put(t, ".init");
    else if (u->part >= 0)
        t = hls_put_number(hls_put(t, "."), (unsigned)u->part, 0);
    *hls_put(t, "\"") = '\0';
    char *e = hls_put(extra, r->private_ ? SEGMENT_CACHE_CONTROL_PRIVATE : SEGMENT_CACHE_CONTROL);
    e = hls_put(hls_put(hls_put(e, "ETag: "), etag), "\r\n");
    *hls_put(hls_put(e, "Accept-Ranges: bytes\r\nAccess-Control-Allow-Origin: *\r\n"), crange) =
        '\0';
    const http_header_t *inm = http_find_header(r->http, "if-none-match");
    int not_modified = inm && inm->value_len == strlen(etag) &&
                       memcmp(inm->value, etag, inm->value_len) == 0;
    *status = not_modified ? 304 : range ? 206 : 200;
    return not_modified ? reply_head(head, 2048, s->keep, 304, NULL, -1, extra)
                        : reply_head(head, 2048, s->keep, *status, hls_piece_type(&s->piece),
                                     (long long)(to - from), extra);
}

void hls_pieces_answer(const hls_request_t *r)
{
    conn_t *c = r->c;
    const http_request_t *req = r->http;
    if (start_filling(r))
        return;
    _Static_assert(sizeof(piece_send_t) <= HLS_STATE_BYTES, "a piece being sent is a state");
    piece_send_t *s = hls_state_new();
    if (!piece_find(r, s)) {
        hls_state_free(s);
        return;
    }
    uint64_t id3 = s->piece.id3_len;
    uint64_t size = id3 + (s->piece.end - s->piece.start), from = 0, to = size;
    int range = piece_range(req, size, &from, &to);
    if (range < 0) {
        block_unref(s->piece.blk);
        hls_state_free(s);
        char extra[96];
        snprintf(extra, sizeof(extra), "Content-Range: bytes */%" PRIu64 "\r\n", size);
        static const char msg[] = "Request Range Not Satisfiable";
        reply_send(c, req, 416, "text/plain; charset=utf-8", msg, sizeof(msg) - 1, extra);
        return;
    }
    s->keep = reply_keepalive_wanted(req);
    char head[2048];
    int status;
    size_t hlen = piece_head(r, s, range, from, to, size, head, &status);
    if (hlen == 0) {
        block_unref(s->piece.blk);
        hls_state_free(s);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    client_of(c)->status = status;
    struct iovec pre[2] = {{head, hlen}};
    int npre = 1, audio = req->method != HTTP_METHOD_HEAD && status != 304;
    s->pos = s->piece.start;
    s->end = s->piece.end;
    if (!audio) {
        s->end = s->pos;
    } else {
        if (from < id3)
            pre[npre++] = (struct iovec){s->piece.id3 + from, (size_t)((to < id3 ? to : id3) - from)};
        s->pos = s->piece.start + (from > id3 ? from - id3 : 0);
        s->end = to > id3 ? s->piece.start + (to - id3) : s->pos;
    }
    if (audio && hls_admit_count(r, to - from))
        client_skip_log(c); /* counted in its session's line */
    if (audio && r->url.ad && from == 0 && to == size)
        hls_ads_fetched(r->window, &(hls_client_t){.ip = c->ip, .agent = r->agent,
                                                   .agent_len = r->agent_len, .conn_id = c->id,
                                                   .token = hls_request_token(r)},
                        r->url.ad_id, r->url.seq, r->url.part);
    c->data = s;
    c->role = &piece_ops;
    c->ops = &piece_ops;
    piece_send(c, pre, npre); /* head, tag and audio in one writev */
}

/* ---- an upgrade: what a connection owes goes to the new process (hls_playlists.c) ---- */

static void blocks_append(buf_t *out, const block_t *b, uint64_t pos, uint64_t end)
{
    for (; b && pos < end; b = block_next(b))
        if (block_end(b) > pos) {
            uint64_t stop = block_end(b) < end ? block_end(b) : end;
            buf_append(out, b->data + (pos - b->offset), (size_t)(stop - pos));
            pos = stop;
        }
}

int hls_pieces_owed(conn_t *c, buf_t *out, hls_owed_t *o)
{
    memset(o, 0, sizeof(*o));
    if (c->ops == &piece_ops) {
        piece_send_t *s = c->data;
        blocks_append(out, s->piece.blk, s->pos, s->end);
        o->keep = s->keep;
        return 0;
    }
    if (c->ops != &filling_ops)
        return -ENOENT;
    filling_t *f = c->data;
    buf_append(out, f->chunk + f->chunk_off, f->chunk_len - f->chunk_off);
    blocks_append(out, f->blk, f->pos, f->end);
    buf_append(out, "\r\n" + 2 - f->crlf_left, f->crlf_left);
    if (f->complete)
        buf_append(out, "0\r\n\r\n" + 5 - f->last_left, f->last_left);
    *o = (hls_owed_t){.hls = f->hls, .msn = f->waiter.msn, .start = f->start, .end = f->end,
                      .part = f->waiter.part, .follow = !f->complete, .started = f->blk != NULL,
                      .id3_len = f->id3_len, .keep = f->keep};
    return 0;
}
