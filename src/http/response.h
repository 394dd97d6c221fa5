/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * response: builds HTTP response heads into caller buffers: the common headers every answer
 * carries (Server, Date, Connection, the config's <http-headers>), error pages, the head a
 * listener gets before the stream, and the head of every chunked answer (HTTP/1.1 only). Values that came from clients are sanitized where stored
 * (no CR/LF can reach a header) and HTML-escaped in pages.
 */
#ifndef RIMECAST_RESPONSE_H
#define RIMECAST_RESPONSE_H

#include <stddef.h>

typedef struct http_header_conf http_header_conf_t;

/* What a listener's head says about the stream (strings already free of control characters). */
typedef struct response_stream {
    const char *content_type, *bitrate, *description, *genre, *name, *url, *audio_info;
    int public;                        /* -1 unknown */
    const http_header_conf_t *headers; /* the mount's <http-headers>, or NULL */
} response_stream_t;

/* "HTTP/1.0 <status> <text>\r\n" (Icecast's status line: every answer has it but a chunked
 * one) + Server, Date, Connection: Close, the configured extra headers for this status,
 * Content-Type (if not NULL), Content-Length (if >= 0) and `extra` (complete header lines,
 * may be NULL). A configured header replaces a line of `extra` with
 * the same name (case-insensitive); it never appears twice. Ends with the blank line.
 * Returns the length, or 0 if it did not fit. */
size_t response_head(char *buf, size_t cap, int status, const char *content_type,
                     long long content_length, const char *extra);
/* The same with "Connection: keep-alive" instead of "Connection: Close" when keep is set. */
size_t response_head_kept(char *buf, size_t cap, int keep, int status, const char *content_type,
                          long long content_length, const char *extra);

/* 1 if req may be answered chunked: HTTP/1.1 or later, never HTTP/1.0 nor ICE (RFC 9112
 * section 7.1). Another answer of unknown length waits to be complete for a Content-Length. */
typedef struct http_request http_request_t;
int response_may_chunk(const http_request_t *req);
/* A head for a body sent chunked, to a request response_may_chunk takes: "HTTP/1.1 <status>"
 * (chunked framing under an HTTP/1.0 status line is faulty, RFC 9112 section 6.1), then the
 * lines of response_head_kept with "Transfer-Encoding: chunked" in place of a length. Every
 * chunked answer is made here. The length, or 0 if it did not fit. */
size_t response_head_chunked(char *buf, size_t cap, int keep, int status,
                             const char *content_type, const char *extra);

/* Writes v in decimal, or in lower-case hex with `hex` (a chunk's size), at out (room for 20
 * characters), without a NUL: the length. For the numbers of heads built without printf. */
size_t response_number(char *out, unsigned long long v, int hex);

/* The content type a stream of ctype is served as: ctype when it is audio/ or video/ (any
 * subtype), application/ogg, application/x-ogg or application/octet-stream (parameters kept,
 * no list), else application/octet-stream, so that a source cannot serve a page (text/html,
 * SVG) with script on the server's origin; audio/mpeg for NULL. */
const char *response_stream_type(const char *ctype);

/* The listener's head: 200, the content type of response_stream_type, icy-* headers,
 * no-cache headers, X-Content-Type-Options: nosniff and Content-Security-Policy: sandbox,
 * icy-metaint when metaint > 0, CORS headers; the mount's headers replace global and built-in
 * ones of the same name. Source-supplied icy-* values that would not fit in cap are left out.
 * Returns the length, or 0 if even the rest does not fit. */
size_t response_stream_head(char *buf, size_t cap, const response_stream_t *s, int metaint);

/* Complete error response with a small HTML body (message is escaped). Returns malloc'd bytes
 * and their length in *len, or NULL. */
char *response_error(int status, const char *message, size_t *len);

#endif
