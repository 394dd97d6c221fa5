/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_playlists: the media playlist of a session (see hls_route_internal.h), and blocking
 * reloads (_HLS_msn/_HLS_part) and pieces asked for before they exist parked until the part
 * is there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/buf.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/worker.h"
#include "hls/hls_route_internal.h"
#include "hls/hls.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"

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
        hls_playlists_answer(c, client_of(c)->req, h);
    else
        hls_pieces_answer(c, client_of(c)->req, h, &u);
}

/* Parks c until (msn, part) exists to answer u again: 1 parked, 0 it is there (answer now),
 * -1 answered (400). */
int hls_playlists_park(conn_t *c, hls_t *h, const hls_url_t *u, uint64_t msn, int part)
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

void hls_playlists_answer(conn_t *c, const http_request_t *req, hls_t *h)
{
    if (hls_admit_poll(c, req, h, NULL))
        hls_playlists_answer_session(c, req, h);
}

/* The media playlist as the request's session sees it (its intro first), else everyone's. */
static int playlist_of(const http_request_t *req, hls_t *h, buf_t *out)
{
    const char *token = hls_sessions_wanted(h->name) ? hls_route_query(req, "session") : NULL;
    return token ? hls_session_playlist(h, token, out, 1) : hls_playlist(h, out, 1);
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

/* The playlist, once the request's session went on (blocking reloads parked). */
void hls_playlists_answer_session(conn_t *c, const http_request_t *req, hls_t *h)
{
    uint64_t msn, part = 0;
    int has_msn = hls_route_query_number(req, "_HLS_msn", &msn);
    int has_part = hls_route_query_number(req, "_HLS_part", &part);
    if (has_msn < 0 || has_part < 0 || (has_part && !has_msn) || part >= HLS_MAX_PARTS) {
        client_send_error(c, 400, "Bad Request: malformed _HLS_msn or _HLS_part");
        return;
    }
    int target = hls_target_duration(h);
    /* rendered into a buffer of the thread's: reply_send writes or copies it before it
     * returns, so the next request on this thread (a pipelined one, even) may reuse it */
    static __thread buf_t bufs[2]; /* the playlist, and the same with its URIs tagged */
    buf_t *out = &bufs[0], *tagged = &bufs[1];
    if (out->data) {
        out->data[out->len = 0] = '\0';
    } else {
        pthread_once(&out_once, out_key_make);
        pthread_setspecific(out_key, bufs);
    }
    const hls_url_t self = {.playlist = 1, .part = -1};
    int rc;
    if (has_msn) {
        if ((rc = hls_playlists_park(c, h, &self, msn, has_part ? (int)part : -1)) != 0)
            return;
    }
    if ((rc = playlist_of(req, h, out)) == -EAGAIN) {
        /* the window has no complete segment yet: the first one is waited for */
        int next_part;
        hls_next_part(h, &msn, &next_part);
        if (hls_playlists_park(c, h, &self, msn, -1) != 0)
            return;
        rc = playlist_of(req, h, out);
    }
    /* a protected mount's pieces answer only to the session's token: its URIs carry it */
    const char *token = rc >= 0 && hls_admit_protected(h) ? hls_route_query(req, "session")
                                                          : NULL;
    int private_ = token != NULL;
    if (token) {
        if (tagged->data)
            tagged->data[tagged->len = 0] = '\0';
        rc = hls_token_form(token) ? hls_token_tag_playlist(out->data, out->len, token, tagged)
                                   : -EINVAL;
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
    hls_admit_count(c, req, h, sent->len);
    reply_send(c, req, 200, PLAYLIST_TYPE, sent->data, sent->len, extra);
}
