/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shoutcast_parse: the pure steps of a Shoutcast v1 source login (see shoutcast.h), apart
 * from the connection so they can be unit-tested and fuzzed: the password line, the end of
 * the ICY header block, and those headers parsed as a "SOURCE <mount>" request.
 * Stateless, safe from any thread; never reads past the given length.
 */
#ifndef RIMECAST_SHOUTCAST_PARSE_H
#define RIMECAST_SHOUTCAST_PARSE_H

#include <stddef.h>

#include "http/parser.h"

/* The password line at buf[0..len): "password\n" or "password\r\n".
 * Returns the bytes it takes (newline included) and *pass_len (newline and one '\r'
 * removed); 0 if no newline has arrived yet; -1 if the password holds a NUL byte. */
long shoutcast_password_line(const char *buf, size_t len, size_t *pass_len);

/* The ICY header block at buf[0..len) ends with an empty line ("\n" or "\r\n"; the block may
 * be that line alone). Returns its length (blank line included), or 0 if not complete. */
size_t shoutcast_headers_end(const char *buf, size_t len);

/* Parses the header block buf[0..hlen) (from shoutcast_headers_end) as the headers of
 * "SOURCE <mount> HTTP/1.0". On success returns 0, *text (malloc'd, owned by the caller, to
 * be freed after req is no longer used: req points into it); -ENOMEM, or -EINVAL for
 * headers the HTTP parser refuses (*text NULL). */
int shoutcast_parse_headers(const char *mount, const char *buf, size_t hlen, char **text,
                            http_request_t *req);

#endif
