/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * utf8: UTF-8 validation and decoding, and conversion of text in other charsets (metadata
 * from sources, admin updates) to UTF-8. Input is (pointer, length) and never read past;
 * converted text is malloc'd and owned by the caller. Stateless, safe from any thread.
 * Escaping for an output language is not here (see core/escape.h).
 */
#ifndef RIMECAST_UTF8_H
#define RIMECAST_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the character at s[0..len) (len > 0): returns its length (1-4) and stores its code
 * point in *cp, or returns 0 when the sequence is invalid (overlong form, surrogate, above
 * U+10FFFF, bad continuation byte) or truncated. */
size_t utf8_decode(const char *s, size_t len, uint32_t *cp);

/* Length (1-4) of the valid UTF-8 character at s[0..len), or 0 if invalid, truncated or len
 * is 0. */
size_t utf8_char_len(const char *s, size_t len);

/* 1 if s[0..len) is well-formed UTF-8 (no overlong forms, surrogates or code points above
 * U+10FFFF), else 0. */
int utf8_valid(const char *s, size_t len);

/* Strict conversion of len bytes in `charset` (e.g. "ISO-8859-1", "UTF-8", "latin1",
 * "cp1252") to UTF-8 using iconv; malloc'd. NULL for an unknown charset, invalid input in
 * that charset, or ENOMEM. */
char *utf8_from_charset(const char *s, size_t len, const char *charset);

/* Best-effort conversion for metadata: from charset when given and the text is valid in it,
 * else as UTF-8 when it is valid UTF-8, else as ISO-8859-1. malloc'd; NULL only on ENOMEM. */
char *utf8_from_text(const char *s, size_t len, const char *charset);

#endif
