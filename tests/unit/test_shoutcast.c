/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_shoutcast: the Shoutcast v1 login parsing: the password line (CRLF, LF, none yet, a
 * NUL byte), the end of the ICY header block (including an empty block), and the headers
 * parsed behind a "SOURCE <mount>" request line.
 */
#include "stream/shoutcast_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void password_lines(void)
{
    size_t n = 99;
    CHECK(shoutcast_password_line("hackme\r\nicy-name: x", 19, &n) == 8 && n == 6);
    CHECK(shoutcast_password_line("hackme\nrest", 11, &n) == 7 && n == 6);
    CHECK(shoutcast_password_line("\r\n", 2, &n) == 2 && n == 0);
    /* no newline yet: wait (the header timeout or the buffer limit ends it) */
    CHECK(shoutcast_password_line("hackme", 6, &n) == 0);
    CHECK(shoutcast_password_line("", 0, &n) == 0);
    /* a NUL would cut the password short when compared as a C string */
    CHECK(shoutcast_password_line("hack\0me\r\n", 9, &n) == -1);
    CHECK(shoutcast_password_line("a\r\r\n", 4, &n) == 4 && n == 2);
}

static void header_block_end(void)
{
    const char *h = "icy-name: a\r\nicy-br: 128\r\n\r\nDATA";
    CHECK(shoutcast_headers_end(h, strlen(h)) == strlen(h) - 4);
    CHECK(shoutcast_headers_end("icy-name: a\n\nDATA", 17) == 13);
    CHECK(shoutcast_headers_end("icy-name: a\r\n\nDATA", 18) == 14);
    CHECK(shoutcast_headers_end("\r\nDATA", 6) == 2); /* no headers at all */
    CHECK(shoutcast_headers_end("\nDATA", 5) == 1);
    CHECK(shoutcast_headers_end("icy-name: a\r\n", 13) == 0);
    CHECK(shoutcast_headers_end("icy-name: a\r\n\r", 14) == 0);
    CHECK(shoutcast_headers_end("", 0) == 0);
}

static void headers_as_source_request(void)
{
    http_request_t req;
    char *text = NULL;
    const char *h = "icy-name: My Radio\r\nicy-genre: Jazz\r\ncontent-type: audio/mpeg\r\n\r\n";
    CHECK(shoutcast_parse_headers("/live", h, strlen(h), &text, &req) == 0);
    CHECK(text && req.method == HTTP_METHOD_SOURCE && req.num_headers == 3);
    CHECK(req.path_len == 5 && memcmp(req.path, "/live", 5) == 0);
    const http_header_t *name = http_find_header(&req, "icy-name");
    CHECK(name && name->value_len == 8 && memcmp(name->value, "My Radio", 8) == 0);
    free(text);
    CHECK(shoutcast_parse_headers("/live", "\r\n", 2, &text, &req) == 0);
    CHECK(req.num_headers == 0);
    free(text);
    const char *bad = "icy-name My Radio\r\n\r\n";
    CHECK(shoutcast_parse_headers("/live", bad, strlen(bad), &text, &req) == -EINVAL);
    CHECK(text == NULL);
}

int main(void)
{
    RUN(password_lines);
    RUN(header_block_end);
    RUN(headers_as_source_request);
    return testlib_done();
}
