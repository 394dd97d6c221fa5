/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_intros: intro segments (see hls_route_internal.h):
 * <mount>/hls/intro/<n>.<ext>?file=<file>&v=<version>, and an Opus intro's init segment
 * <mount>/hls/intro/init.mp4?file=<file>&v=<version>, copied to the connection's output.
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

/* The intro a request of c names (the file of its query, at the version it names), if h
 * serves it, and the segment number: a new reference, or NULL. */
static hls_intro_t *intro_of_request(const http_request_t *req, hls_t *h, int *n)
{
    hls_name_t mount;
    uint64_t version = 0;
    char *file = req->query ? url_query_param(req->query, req->query_len, "file") : NULL;
    int ok = file && hls_route_query_number(req, "v", &version) == 1;
    hls_intro_t *in = NULL;
    size_t len;
    char *dec = url_decode(req->path, req->path_len, 0, &len);
    if (ok && dec && hls_route_parse_intro(dec, mount, n) && hls_session_intro_known(h, file))
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
    hls_t *h = hls_route_window_of(c);
    int n;
    hls_intro_t *in = h ? intro_of_request(req, h, &n) : NULL;
    if (in && req->method == HTTP_METHOD_GET) {
        const http_header_t *ua = http_find_header(req, "user-agent");
        char *agent = ua ? strndup(ua->value, ua->value_len) : NULL;
        const char *t = hls_route_query(req, "session");
        hls_client_t who = {.ip = c->ip, .agent = agent, .conn_id = c->id,
                            .token = t && hls_token_form(t) ? t : NULL};
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
void hls_intros_answer(conn_t *c, const http_request_t *req, hls_t *h, int private_)
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
             private_ ? "private" : "public", SEGMENT_MAX_AGE, in->version, etag);
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
    if (!head_only && hls_admit_count(c, req, h, tag + len))
        client_skip_log(c); /* counted in its session's line */
    c->ops = &reply_sending_ops;
    conn_send(c, head_only ? "" : body, head_only ? 0 : len, intro_sent);
    hls_intro_unref(in);
}
