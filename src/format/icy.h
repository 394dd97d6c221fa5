/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icy: reading ICY (Shoutcast) metadata text: the StreamTitle/StreamUrl fields of a metadata
 * block a source sends inline, and the conversion of its text to UTF-8.
 * Building outbound metadata blocks is not here (see icy_meta_new in core/block.h).
 */
#ifndef RIMECAST_ICY_H
#define RIMECAST_ICY_H

#include <stddef.h>

/* Extracts the values of StreamTitle='...'; and StreamUrl='...'; from a metadata body
 * meta[0..len) (the bytes after the length byte; NUL padding allowed, text ends at the first
 * NUL). Values may contain quotes: a value ends at a "';" followed by the end of the text or by
 * another Key='. A value without terminator runs to the end. *title and *url are malloc'd raw
 * (unconverted) NUL-terminated strings, or NULL when the field is absent.
 * Returns 0, or -ENOMEM (then both are NULL). */
int icy_parse(const char *meta, size_t len, char **title, char **url);

/* 1 if s[0..len) is valid UTF-8 (no overlongs, no surrogates). */
int icy_utf8_valid(const char *s, size_t len);

/* Converts s[0..len) from charset to UTF-8 (malloc'd, NUL-terminated). charset NULL means
 * UTF-8 if the text is valid UTF-8, else ISO-8859-1. An unknown charset or text invalid in it
 * falls back to that same rule. Returns NULL only on ENOMEM. */
char *icy_to_utf8(const char *s, size_t len, const char *charset);

#endif
