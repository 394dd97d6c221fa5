/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * response: response heads and error pages (see response.h).
 */
#include "http/response.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "conf/config.h"
#include "core/escape.h"
#include "http/parser.h"
#include "net/server.h"

typedef struct out {
    char *buf;
    size_t cap, len;
    int overflow;
} out_t;

static void out_printf(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(out_t *o, const char *fmt, ...)
{
    if (o->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->cap - o->len)
        o->overflow = 1;
    else
        o->len += (size_t)n;
}

/* Appends len bytes of s: the heads every request is answered with are built without printf. */
static void out_mem(out_t *o, const char *s, size_t len)
{
    if (o->overflow)
        return;
    if (len >= o->cap - o->len) {
        o->overflow = 1;
        return;
    }
    memcpy(o->buf + o->len, s, len);
    o->len += len;
    o->buf[o->len] = '\0';
}

static void out_str(out_t *o, const char *s)
{
    out_mem(o, s, strlen(s));
}

size_t response_number(char *out, unsigned long long v, int hex)
{
    char digits[24], *d = digits + sizeof(digits);
    unsigned base = hex ? 16 : 10;
    do
        *--d = "0123456789abcdef"[v % base];
    while (v /= base);
    size_t n = (size_t)(digits + sizeof(digits) - d);
    memcpy(out, d, n);
    return n;
}

/* A decimal number (a status, a length). */
static void out_num(out_t *o, long long v)
{
    char digits[24];
    size_t n = 0;
    if (v < 0)
        digits[n++] = '-';
    n += response_number(digits + n, v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v,
                         0);
    out_mem(o, digits, n);
}

/* "name: value\r\n" */
static void out_header(out_t *o, const char *name, const char *value)
{
    out_str(o, name);
    out_mem(o, ": ", 2);
    out_str(o, value ? value : "");
    out_mem(o, "\r\n", 2);
}

/* The Date header's value, formatted once a second per thread. */
static const char *http_date_now(void)
{
    static __thread time_t at = -1;
    static __thread char date[64];
    time_t now = time(NULL);
    if (now != at) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
        at = now;
    }
    return date;
}

/* Is `name` (nlen bytes) one of the configured headers that apply to `status`? Names compare
 * case-insensitively, as HTTP does. */
static int header_listed(const http_header_conf_t *list, int status, const char *name,
                         size_t nlen)
{
    for (const http_header_conf_t *h = list; h; h = h->next)
        if ((h->status == 0 || h->status == status) && strlen(h->name) == nlen &&
            strncasecmp(h->name, name, nlen) == 0)
            return 1;
    return 0;
}

/* Built-in header lines ("Name: value\r\n" each) minus those the config sets itself: a
 * configured header replaces the built-in one of the same name, never duplicates it. */
static void builtin_lines(out_t *o, int status, const http_header_conf_t *mount_headers,
                          const char *lines)
{
    const char *p = lines;
    while (p && *p) {
        const char *eol = strchr(p, '\n'); /* each line ends with CRLF */
        size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t)(colon - p) : 0;
        if (!colon || (!header_listed(server_config()->http_headers, status, p, nlen) &&
                       !header_listed(mount_headers, 200, p, nlen)))
            out_mem(o, p, len);
        p += len;
    }
}

/* The status line (HTTP/1.0 as Icecast's, HTTP/1.1 with http11), Server, Date, Connection
 * (Close, or keep-alive with keep), then the configured headers: the global ones for this
 * status (unless the mount sets the same name) and the mount's own. */
static void common_headers(out_t *o, int http11, int status,
                           const http_header_conf_t *mount_headers, int keep)
{
    out_mem(o, http11 ? "HTTP/1.1 " : "HTTP/1.0 ", 9);
    out_num(o, status);
    out_mem(o, " ", 1);
    out_str(o, http_status_text(status));
    out_mem(o, "\r\n", 2);
    out_header(o, "Server", server_ident());
    out_header(o, "Date", http_date_now());
    out_header(o, "Connection", keep ? "keep-alive" : "Close");
    for (const http_header_conf_t *h = server_config()->http_headers; h; h = h->next)
        if ((h->status == 0 || h->status == status) &&
            !header_listed(mount_headers, status, h->name, strlen(h->name)))
            out_header(o, h->name, h->value);
    for (const http_header_conf_t *h = mount_headers; h; h = h->next)
        out_header(o, h->name, h->value);
}

/* A head with a Content-Length (>= 0), none (-1), or chunked (HTTP/1.1). */
enum { LENGTH_NONE = -1, LENGTH_CHUNKED = -2 };

static size_t build_head(char *buf, size_t cap, int keep, int status, const char *content_type,
                         long long content_length, const char *extra)
{
    out_t o = {buf, cap, 0, 0};
    common_headers(&o, content_length == LENGTH_CHUNKED, status, NULL, keep);
    if (content_type)
        out_header(&o, "Content-Type", content_type);
    if (content_length >= 0) {
        out_mem(&o, "Content-Length: ", 16);
        out_num(&o, content_length);
        out_mem(&o, "\r\n", 2);
    } else if (content_length == LENGTH_CHUNKED) {
        out_str(&o, "Transfer-Encoding: chunked\r\n");
    }
    builtin_lines(&o, status, NULL, extra);
    out_mem(&o, "\r\n", 2);
    return o.overflow ? 0 : o.len;
}

size_t response_head_kept(char *buf, size_t cap, int keep, int status, const char *content_type,
                          long long content_length, const char *extra)
{
    return build_head(buf, cap, keep, status, content_type,
                      content_length >= 0 ? content_length : LENGTH_NONE, extra);
}

int response_may_chunk(const http_request_t *req)
{
    return !req->is_ice && req->version_major == 1 && req->version_minor >= 1;
}

size_t response_head_chunked(char *buf, size_t cap, int keep, int status,
                             const char *content_type, const char *extra)
{
    return build_head(buf, cap, keep, status, content_type, LENGTH_CHUNKED, extra);
}

size_t response_head(char *buf, size_t cap, int status, const char *content_type,
                     long long content_length, const char *extra)
{
    return response_head_kept(buf, cap, 0, status, content_type, content_length, extra);
}

/* A source-supplied header, left out when it would not leave `reserve` bytes for the lines
 * after it: a source's long ice-* values must not cost its listeners their head. */
static void icy_header(out_t *o, const char *name, const char *value, size_t reserve)
{
    if (!value || !*value)
        return;
    size_t need = strlen(name) + strlen(value) + 4;
    if (o->len + need + reserve > o->cap)
        return;
    out_header(o, name, value);
}

/* Bytes the lines after the icy-* headers may take: icy-pub, the mount's configured headers,
 * icy-metaint and the blank line. */
static size_t stream_tail_len(const response_stream_t *i, int metaint)
{
    size_t n = 16 + (metaint > 0 ? 32 : 0) + 2;
    for (const http_header_conf_t *h = i->headers; h; h = h->next)
        n += strlen(h->name) + 4 + (h->value ? strlen(h->value) : 0);
    return n;
}

static int is_token_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$&^_.+-", ch));
}

const char *response_stream_type(const char *ctype)
{
    static const char *const exact[] = {"application/ogg", "application/x-ogg",
                                        "application/octet-stream"};
    const char *p = NULL;
    if (!ctype)
        return "audio/mpeg";
    if (strncasecmp(ctype, "audio/", 6) == 0 || strncasecmp(ctype, "video/", 6) == 0) {
        p = ctype + 6;
        const char *sub = p;
        while (is_token_char(*p))
            p++;
        if (p == sub)
            p = NULL;
    }
    for (size_t k = 0; !p && k < sizeof(exact) / sizeof(exact[0]); k++) {
        size_t n = strlen(exact[k]);
        if (strncasecmp(ctype, exact[k], n) == 0)
            p = ctype + n;
    }
    /* then nothing, or parameters; never a ',' (a browser takes the last of a list) */
    if (p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if ((*p == '\0' || *p == ';') && !strchr(p, ','))
            return ctype;
    }
    return "application/octet-stream";
}

size_t response_stream_head(char *buf, size_t cap, const response_stream_t *i, int metaint)
{
    out_t o = {buf, cap, 0, 0};
    size_t tail = stream_tail_len(i, metaint);
    common_headers(&o, 0, 200, i->headers, 0); /* Icecast's HTTP/1.0: players expect it */
    out_header(&o, "Content-Type", response_stream_type(i->content_type));
    /* a stream is never a page: no sniffing it into one, and should a browser show it as a
     * document all the same, it has no origin of ours and runs no script */
    builtin_lines(&o, 200, i->headers,
                  "X-Content-Type-Options: nosniff\r\nContent-Security-Policy: sandbox\r\n"
                  "Cache-Control: no-cache, no-store\r\nExpires: Mon, 26 Jul 1997 05:00:00 GMT\r\n"
                  "Pragma: no-cache\r\n"
                  "Access-Control-Allow-Origin: *\r\nAccess-Control-Allow-Headers: Origin, "
                  "Accept, X-Requested-With, Content-Type, Icy-MetaData\r\n"
                  "Access-Control-Expose-Headers: icy-metaint, icy-name, icy-description, "
                  "icy-genre, icy-url, icy-br, icy-pub\r\n");
    icy_header(&o, "icy-br", i->bitrate, tail);
    icy_header(&o, "icy-description", i->description, tail);
    icy_header(&o, "icy-genre", i->genre, tail);
    icy_header(&o, "icy-name", i->name, tail);
    if (i->public >= 0)
        out_printf(&o, "icy-pub: %d\r\n", i->public);
    icy_header(&o, "icy-url", i->url, tail);
    icy_header(&o, "ice-audio-info", i->audio_info, tail);
    if (metaint > 0)
        out_printf(&o, "icy-metaint: %d\r\n", metaint);
    out_printf(&o, "\r\n");
    return o.overflow ? 0 : o.len;
}

char *response_error(int status, const char *message, size_t *len)
{
    char *esc = escape_xml(message, strlen(message));
    char body[2048];
    int blen = snprintf(body, sizeof(body),
                        "<html><head><title>Error %d</title><meta name=\"viewport\" "
                        "content=\"width=device-width, initial-scale=1\"></head><body><b>%d - "
                        "%s</b></body></html>\r\n",
                        status, status, esc ? esc : "");
    free(esc);
    if (blen < 0 || (size_t)blen >= sizeof(body))
        blen = 0;
    char head[2048];
    const char *extra = status == 401 ? "WWW-Authenticate: Basic realm=\"Icecast2 Server\"\r\n"
                                      : NULL;
    size_t hlen = response_head(head, sizeof(head), status, "text/html; charset=utf-8", blen,
                                extra);
    char *out = malloc(hlen + (size_t)blen + 1);
    if (!out || hlen == 0) {
        free(out);
        return NULL;
    }
    memcpy(out, head, hlen);
    memcpy(out + hlen, body, (size_t)blen);
    *len = hlen + (size_t)blen;
    return out;
}
