/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_shoutcast: a Shoutcast v1 source login as it arrives on a shoutcast-compat socket:
 * the password line, then the ICY header block, parsed behind a "SOURCE <mount>" request line
 * (stream/shoutcast_parse.c with the HTTP parser). The first input byte picks the mount
 * name's length from a fixed long name. Lengths must stay inside the input, the request must
 * be a SOURCE request on that mount, and every header must point inside the parsed text.
 */
// fuzz-sources: src/stream/shoutcast_parse.c src/http/parser.c src/core/str.c
// fuzz-args: -max_len=20000
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/shoutcast_parse.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const char *p, size_t n, const char *buf, size_t len)
{
    return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char long_mount[1025];
    if (size < 1)
        return 0;
    if (!long_mount[0]) {
        memset(long_mount, 'm', sizeof(long_mount) - 1);
        long_mount[0] = '/';
    }
    size_t mlen = 1 + (size_t)data[0] * 4;
    char mount[sizeof(long_mount)];
    memcpy(mount, long_mount, mlen);
    mount[mlen] = '\0';
    const char *in = (const char *)data + 1;
    size_t len = size - 1;

    size_t plen = 0;
    long line = shoutcast_password_line(in, len, &plen);
    if (line <= 0)
        return 0;
    REQUIRE((size_t)line <= len && plen < (size_t)line && in[line - 1] == '\n');
    REQUIRE(memchr(in, '\0', plen) == NULL);
    const char *rest = in + line;
    size_t rlen = len - (size_t)line;
    size_t hlen = shoutcast_headers_end(rest, rlen);
    if (!hlen)
        return 0;
    REQUIRE(hlen <= rlen && rest[hlen - 1] == '\n');

    http_request_t *req = malloc(sizeof(*req));
    REQUIRE(req);
    char *text = NULL;
    if (shoutcast_parse_headers(mount, rest, hlen, &text, req) == 0) {
        size_t tlen = strlen("SOURCE  HTTP/1.0\r\n") + mlen + hlen;
        REQUIRE(text && req->method == HTTP_METHOD_SOURCE);
        REQUIRE(req->path_len == mlen && memcmp(req->path, mount, mlen) == 0);
        REQUIRE(req->num_headers <= HTTP_MAX_HEADERS);
        for (size_t i = 0; i < req->num_headers; i++) {
            const http_header_t *h = &req->headers[i];
            REQUIRE(inside(h->name, h->name_len, text, tlen));
            REQUIRE(inside(h->value, h->value_len, text, tlen));
        }
        free(text);
    } else {
        REQUIRE(text == NULL);
    }
    free(req);
    return 0;
}
