/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * str: small string helpers, and the one escaping helper per output language.
 *
 * Everything a client sends is untrusted: it leaves the server only through str_escape_xml
 * (HTML and XML), str_escape_json, or str_escape_log. Escapers return a malloc'd NUL-terminated
 * string (caller frees) or NULL on ENOMEM; the *_buf variants write into a caller buffer and
 * truncate safely. Decoders never read past their input length.
 */
#ifndef RIMECAST_STR_H
#define RIMECAST_STR_H

#include <stddef.h>

/* & < > " ' -> entities; bytes < 0x20 other than \t \n \r are dropped (not valid in XML 1.0);
 * invalid UTF-8 sequences become U+FFFD. */
char *str_escape_xml(const char *s, size_t len);
/* JSON string body (no surrounding quotes): \" \\ \b \f \n \r \t, other < 0x20 and 0x7f as
 * \u00XX, "</" as "<\/"; invalid UTF-8 becomes U+FFFD. */
char *str_escape_json(const char *s, size_t len);
/* For log lines: printable ASCII kept except '\\' and '"' which become \\ and \";
 * every other byte (CR, LF, control, >= 0x80) becomes \xHH. Writes at most outlen-1 bytes plus
 * NUL into out, never splitting an escape; returns out. */
char *str_escape_log(char *out, size_t outlen, const char *s, size_t len);

/* Same, but valid UTF-8 characters from U+00A0 up and '"' are kept (for the playlist log, whose
 * fields are separated by '|'). */
char *str_escape_log_utf8(char *out, size_t outlen, const char *s, size_t len);

/* Base64 (RFC 4648, padding required, no whitespace) into out (outlen >= len*3/4+1, NUL added).
 * Returns decoded length or -1 on any invalid input. */
long str_base64_decode(const char *in, size_t len, unsigned char *out, size_t outlen);
/* Base64 encode; returns malloc'd string. */
char *str_base64_encode(const unsigned char *in, size_t len);

/* Percent-decoding of a URL component: %XX decoded, '+' -> ' ' when plus_is_space.
 * Returns malloc'd string and *outlen, or NULL for a malformed escape or %00 (NUL). */
char *str_url_decode(const char *s, size_t len, int plus_is_space, size_t *outlen);
/* Percent-encodes everything but unreserved characters and '/'. malloc'd. */
char *str_url_encode(const char *s, size_t len);

/* Finds parameter `name` in a query string "a=1&b=2" (no leading '?') and returns its decoded
 * value (malloc'd), or NULL if absent or malformed. */
char *str_query_param(const char *query, size_t len, const char *name);

/* Case-insensitive comparison of a (ptr,len) string with a NUL-terminated one. 1 if equal. */
int str_ieq(const char *s, size_t len, const char *lit);

/* Converts len bytes in `charset` (e.g. "ISO-8859-1", "UTF-8", "latin1", "cp1252") to UTF-8
 * using iconv; malloc'd. NULL for an unknown charset or invalid input. */
char *str_to_utf8(const char *s, size_t len, const char *charset);

/* Normalises a request path (already percent-decoded): collapses "//", resolves "." and "..".
 * Returns malloc'd path starting with '/', or NULL if it would leave the root, contains NUL,
 * backslash, or a segment ending in '.' other than "." and "..". */
char *str_normalize_path(const char *path, size_t len);

/* 1 if s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or code points above
 * U+10FFFF), else 0. */
int str_utf8_valid(const char *s, size_t len);
/* Length (1-4) of the valid UTF-8 character at s[0..len), or 0 if invalid or truncated. */
size_t str_utf8_char_len(const char *s, size_t len);
/* Best-effort text conversion for metadata: from charset when given and the text is valid in
 * it, else as UTF-8 when it is valid UTF-8, else as ISO-8859-1. malloc'd; NULL only on ENOMEM. */
char *str_text_to_utf8(const char *s, size_t len, const char *charset);

/* strdup that accepts NULL. */
char *str_dup(const char *s);
char *str_ndup(const char *s, size_t len);

#endif
