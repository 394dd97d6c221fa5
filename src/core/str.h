/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * str: generic string helpers: duplication, case-insensitive and constant-time comparison,
 * base64.
 * Results are malloc'd and owned by the caller; decoders never read past their input length.
 * Escaping for output languages lives in core/escape.h, UTF-8 and charsets in core/utf8.h,
 * percent-coding, query strings and paths in core/url.h.
 */
#ifndef RIMECAST_STR_H
#define RIMECAST_STR_H

#include <stddef.h>

/* Base64 (RFC 4648, padding required, no whitespace) into out (outlen >= len*3/4+1, NUL added).
 * Returns decoded length or -1 on any invalid input. */
long str_base64_decode(const char *in, size_t len, unsigned char *out, size_t outlen);
/* Base64 encode; returns malloc'd string, NULL on ENOMEM. */
char *str_base64_encode(const unsigned char *in, size_t len);

/* Case-insensitive comparison of a (ptr,len) string with a NUL-terminated one. 1 if equal. */
int str_ieq(const char *s, size_t len, const char *lit);

/* 1 if a and b are equal, in a time that depends only on their lengths, not on where they
 * differ (passwords, hashes). NULL equals nothing. */
int str_equal_ct(const char *a, const char *b);

/* strdup that accepts NULL (and returns NULL for it). */
char *str_dup(const char *s);
/* Copies len bytes of s and a NUL; malloc'd. NULL if s is NULL or on ENOMEM. */
char *str_ndup(const char *s, size_t len);

#endif
