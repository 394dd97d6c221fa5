/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * url: the pieces of a request URL: percent-decoding and -encoding, query parameters, and
 * normalisation of a request path. Input is (pointer, length) and never read past; results are
 * malloc'd and owned by the caller. Stateless, safe from any thread. Parsing the request line
 * itself is the HTTP parser's job (http/parser.h).
 */
#ifndef RIMECAST_URL_H
#define RIMECAST_URL_H

#include <stddef.h>

/* Percent-decoding of a URL component: %XX decoded, '+' -> ' ' when plus_is_space.
 * Returns malloc'd string and *outlen (if outlen is not NULL), or NULL for a malformed escape,
 * %00 or a raw NUL (the result is used as a C string), or ENOMEM. */
char *url_decode(const char *s, size_t len, int plus_is_space, size_t *outlen);

/* Percent-encodes everything but unreserved characters and '/'. malloc'd, NULL on ENOMEM. */
char *url_encode(const char *s, size_t len);

/* Appends "&name=value" (no '&' when b is empty) to a form body, the value escaped as Icecast
 * escapes its POST fields: every byte but [A-Za-z0-9] as %xx with lowercase hex. NULL value is
 * "". 0 or -ENOMEM. */
typedef struct buf buf_t;
int url_form_append(buf_t *b, const char *name, const char *value);

/* Finds parameter `name` in a query string "a=1&b=2" (no leading '?') and returns its decoded
 * value (malloc'd; "" for "name" without '='), or NULL if absent or malformed. Names are
 * compared after decoding; the first match wins. */
char *url_query_param(const char *query, size_t len, const char *name);
/* The same value decoded into out (cap bytes, NUL included) instead of malloc'd: out, or NULL
 * if absent, malformed or longer than cap - 1. */
const char *url_query_value(const char *query, size_t len, const char *name, char *out,
                            size_t cap);

/* Normalises a request path (already percent-decoded): collapses "//", resolves "." and "..".
 * Returns malloc'd path starting with '/', or NULL if it would leave the root, does not start
 * with '/', contains NUL, backslash, or a segment ending in '.' other than "." and "..". */
char *url_normalize_path(const char *path, size_t len);
/* A request path as sent (raw, len bytes) percent-decoded ('+' kept) and normalised as above,
 * into out (cap bytes; it needs len + 1): out, or NULL when malformed or longer. */
const char *url_request_path(const char *raw, size_t len, char *out, size_t cap);

#endif
