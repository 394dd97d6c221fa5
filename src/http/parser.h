/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * parser: zero-copy HTTP/1.x request-head parser with hard limits.
 *
 * The whole head is re-parsed from the start of the read buffer on each call (heads are small);
 * `prev_len` lets the caller skip rescanning for the end of the head. Results point into the
 * caller's buffer, which must stay unchanged while they are used. Accepts what broadcast
 * clients send: methods GET HEAD PUT POST SOURCE OPTIONS STATS (others parse and are reported
 * as HTTP_METHOD_OTHER), protocols "HTTP/x.y" and "ICE/x.y", CRLF line ends and "\r\r\n"
 * (NSV encoders); a bare LF ends a line only in a SOURCE request (DarkIce's login), anywhere
 * else it is a malformed head (RFC 9112 section 2.2). Header names are tokens; obsolete line
 * folding is rejected. Content-Length must be decimal digits within a long long; repeated, it
 * must repeat the same number (anything else is a malformed head: a body of unknown length).
 * Transfer-Encoding may only say "chunked", once (a coding we do not know: NOT_IMPLEMENTED).
 * It does not decode percent-escapes or read bodies. http_parse_response() reads the status
 * line and headers of an upstream server's answer (relays) with the same limits.
 */
#ifndef RIMECAST_HTTP_PARSER_H
#define RIMECAST_HTTP_PARSER_H

#include <stddef.h>

#define HTTP_MAX_HEADERS 64
#define HTTP_MAX_HEAD_BYTES 16384 /* request line + headers + blank line */
#define HTTP_MAX_URI 8192

enum {
    HTTP_PARSE_PARTIAL = 0,         /* need more bytes */
    HTTP_PARSE_ERROR = -1,          /* malformed -> 400 */
    HTTP_PARSE_TOO_LARGE = -2,      /* head over HTTP_MAX_HEAD_BYTES -> 431 */
    HTTP_PARSE_TOO_MANY_HEADERS = -3, /* -> 431 */
    HTTP_PARSE_URI_TOO_LONG = -4,   /* -> 414 */
    HTTP_PARSE_BAD_VERSION = -5,    /* protocol not HTTP/1.x or ICE/1.x -> 505 */
    HTTP_PARSE_NOT_IMPLEMENTED = -6, /* a transfer coding other than chunked -> 501 */
};
#define HTTP_PARSE_LOWEST HTTP_PARSE_NOT_IMPLEMENTED /* every result is at least this */

typedef enum {
    HTTP_METHOD_OTHER = 0,
    HTTP_METHOD_GET,
    HTTP_METHOD_HEAD,
    HTTP_METHOD_PUT,
    HTTP_METHOD_POST,
    HTTP_METHOD_SOURCE,
    HTTP_METHOD_OPTIONS,
    HTTP_METHOD_STATS,
} http_method_t;

typedef struct http_header {
    const char *name;
    size_t name_len;
    const char *value; /* leading/trailing spaces and tabs trimmed */
    size_t value_len;
} http_header_t;

typedef struct http_request {
    http_method_t method;
    const char *method_str;
    size_t method_len;
    const char *uri; /* raw request target */
    size_t uri_len;
    const char *path; /* uri up to '?' (not decoded) */
    size_t path_len;
    const char *query; /* after '?', NULL if none */
    size_t query_len;
    int is_ice;        /* protocol was ICE/1.0 */
    int version_major;
    int version_minor;
    long long content_length; /* -1 without a Content-Length header */
    size_t num_headers;       /* before headers: cleared with the fields above, in their lines */
    http_header_t headers[HTTP_MAX_HEADERS];
} http_request_t;

/* Parses the request head in buf[0..len). prev_len: the len of the previous call on the same
 * buffer (0 first). Returns the head length in bytes (> 0, including the blank line) when
 * complete, HTTP_PARSE_PARTIAL when more is needed, or a negative HTTP_PARSE_* error. */
int http_parse_request(const char *buf, size_t len, size_t prev_len, http_request_t *req);

/* A response head as relays read it from an upstream server: "HTTP/1.x SSS reason" or
 * Shoutcast's "ICY SSS reason", then header lines as in a request. */
typedef struct http_response {
    int status;        /* 100..999 */
    int is_icy;        /* status line was "ICY ..." */
    int version_minor; /* HTTP/1.x; 0 for ICY */
    const char *reason;
    size_t reason_len;
    http_header_t headers[HTTP_MAX_HEADERS];
    size_t num_headers;
} http_response_t;

/* Parses the response head in buf[0..len) (the whole buffer again on each call). Returns the
 * head length (> 0, including the blank line), HTTP_PARSE_PARTIAL, or a negative
 * HTTP_PARSE_* error (HTTP_PARSE_BAD_VERSION for a protocol other than HTTP/1.x and ICY). */
int http_parse_response(const char *buf, size_t len, http_response_t *resp);

/* First header of a response with this name (case-insensitive) or NULL. */
const http_header_t *http_response_header(const http_response_t *resp, const char *name);

/* First header with this name (case-insensitive) or NULL. */
const http_header_t *http_find_header(const http_request_t *req, const char *name);

/* Copies a header value into a malloc'd NUL-terminated string, NULL if absent. */
char *http_header_dup(const http_request_t *req, const char *name);

/* Parses "Authorization: Basic <b64>" into malloc'd user and password. Returns 0, or -1 if the
 * header is absent, not Basic, not valid base64, has no ':' or is longer than 1024 bytes. */
int http_parse_basic_auth(const http_request_t *req, char **user, char **pass);

/* Reason phrase for a status code ("OK", "Not Found", ...). */
const char *http_status_text(int status);

#endif
