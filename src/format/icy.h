/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icy: reading ICY (Shoutcast) metadata text: the StreamTitle/StreamUrl fields of a metadata
 * block a source sends inline (utf8_from_text converts the text).
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


#endif
