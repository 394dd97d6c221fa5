/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_intros: intro segments (see hls_route_internal.h):
 * <mount>/hls/intro/<n>.<ext>?file=<file>&v=<version>, and an Opus intro's init segment
 * <mount>/hls/intro/init.mp4?file=<file>&v=<version>, copied to the connection's output. A
 * GET keeps its request value until the last byte went out: then its session's intro may
 * count as played.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/url.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "hls/hls_route_internal.h"
#include "hls/hls.h"
#include "hls/hls_intro.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"
#include "stream/webfile.h"

/* ---- intro segments: <mount>/hls/intro/<n>.<ext>?file=<file>&v=<version> ---- */
/* (an Opus intro's init segment: <mount>/hls/intro/init.mp4?file=<file>&v=<version>) */

/* The intro r names (the file of its query, at the version it names), if its window serves
 * it, with the segment r->url.intro_seg: a new reference, or NULL. */
static hls_intro_t *intro_of_request(const hls_request_t *r)
{
    const http_request_t *req = r->http;
    int n = r->url.intro_seg;
    uint64_t version = 0;
    char *file = req->query ? url_query_param(req->query, req->query_len, "file") : NULL;
    int ok = file && hls_request_query_number(req, "v", &version) == HLS_ARG_SET;
    hls_intro_t *in = NULL;
    if (ok && hls_session_intro_known(r->window, file))
        in = hls_intro_get(file, hls_target_duration(r->window));
    if (in && ((uint64_t)in->version != version || n >= in->nsegs ||
               (n == HLS_INTRO_INIT && !in->init))) {
        hls_intro_unref(in);
        in = NULL;
    }
    free(file);
    return in;
}

/* An intro segment being sent to a GET: its request and intro, kept until the last byte went
 * out (the connection's role data). */
typedef struct intro_sending {
    hls_request_t req;
    hls_intro_t *in;
} intro_sending_t;

static void intro_sending_release(conn_t *c)
{
    intro_sending_t *s = c->data;
    if (!s)
        return;
    hls_intro_unref(s->in);
    free(s);
    c->data = NULL;
}

static const conn_ops_t intro_sending_role = {
    .name = "hls intro",
    .on_close = intro_sending_release,
};

/* The last byte of an intro segment went out: a session that fetched the last one it plays
 * counts the intro as played. */
static void intro_sent(conn_t *c)
{
    intro_sending_t *s = c->role == &intro_sending_role ? c->data : NULL;
    if (s) {
        const hls_request_t *r = &s->req;
        hls_client_t who = {.ip = c->ip, .agent = r->agent, .agent_len = r->agent_len,
                            .conn_id = c->id, .token = hls_request_token(r)};
        hls_session_intro_fetched(r->window, &who, s->in->name, r->url.intro_seg);
        intro_sending_release(c);
        c->role = NULL;
    }
    if (reply_keepalive_wanted(client_of(c)->req))
        reply_next_request(c);
    else
        conn_linger_close(c);
}

/* An intro segment: its ID3 tag (the intro's own time from 0) and its frames; or an Opus
 * intro's init segment or fragment, built when the intro was cut. The bytes are copied to the
 * connection's output: intros are short and a cache in front serves them. */
void hls_intros_answer(const hls_request_t *r)
{
    conn_t *c = r->c;
    const http_request_t *req = r->http;
    int n = r->url.intro_seg;
    hls_intro_t *in = intro_of_request(r);
    if (!in) {
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    unsigned char id3[HLS_ID3_MAX];
    uint32_t tag = 0;
    const char *body, *type = in->init ? "audio/mp4" : in->adts ? "audio/aac" : "audio/mpeg";
    size_t len;
    if (in->init) { /* no ID3 tag in front: a fragment carries its time (emsg, tfdt) */
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
    snprintf(extra, sizeof(extra), "Cache-Control: %s, max-age=%d, immutable\r\n"
             "ETag: \"intro.%lld.%s\"\r\nAccess-Control-Allow-Origin: *\r\n",
             r->private_ ? "private" : "public", SEGMENT_MAX_AGE, in->version, etag);
    int keep = reply_keepalive_wanted(req);
    size_t hlen = reply_head(head, sizeof(head), keep, 200, type, (long long)(tag + len), extra);
    int head_only = req->method == HTTP_METHOD_HEAD;
    /* a GET's segment counts to its session's intro once sent: its request kept till then */
    intro_sending_t *s = head_only ? NULL : calloc(1, sizeof(*s));
    if (hlen == 0 || (!head_only && !s) || conn_queue(c, head, hlen) < 0 ||
        (!head_only && tag && conn_queue(c, (const char *)id3, tag) < 0)) {
        free(s);
        hls_intro_unref(in);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    client_of(c)->status = 200;
    if (!head_only && hls_admit_count(r, tag + len))
        client_skip_log(c); /* counted in its session's line */
    if (s) {
        hls_request_keep(&s->req, r);
        s->in = in; /* the reference taken above */
        c->data = s;
        c->role = &intro_sending_role;
    } else {
        hls_intro_unref(in);
    }
    c->ops = &reply_sending_ops;
    /* a GET's body: the intro's bytes, held by s until they are sent; a HEAD sends none */
    conn_send(c, head_only ? "" : body, head_only ? 0 : len, intro_sent);
}
