/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * shoutcast_parse: password line, header block end and header parsing of a Shoutcast v1
 * login (see shoutcast_parse.h). The headers go through the one HTTP parser, behind a
 * request line of our own, so they get the same limits and checks as any request head.
 */
#include "stream/shoutcast_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long shoutcast_password_line(const char *buf, size_t len, size_t *pass_len)
{
    const char *nl = memchr(buf, '\n', len);
    if (!nl)
        return 0;
    size_t plen = (size_t)(nl - buf);
    if (plen > 0 && buf[plen - 1] == '\r')
        plen--;
    if (memchr(buf, '\0', plen))
        return -1;
    *pass_len = plen;
    return (long)(nl - buf) + 1;
}

size_t shoutcast_headers_end(const char *buf, size_t len)
{
    size_t line = 0; /* start of the current line */
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        size_t n = i - line;
        if (n == 0 || (n == 1 && buf[line] == '\r'))
            return i + 1;
        line = i + 1;
    }
    return 0;
}

int shoutcast_parse_headers(const char *mount, const char *buf, size_t hlen, char **text,
                            http_request_t *req)
{
    static const char line_fmt[] = "SOURCE %s HTTP/1.0\r\n";
    size_t mlen = strlen(mount), cap = mlen + sizeof(line_fmt) + hlen;
    *text = NULL;
    char *t = malloc(cap);
    if (!t)
        return -ENOMEM;
    int flen = snprintf(t, cap, line_fmt, mount);
    if (flen < 0 || (size_t)flen + hlen >= cap) {
        free(t);
        return -EINVAL;
    }
    memcpy(t + flen, buf, hlen);
    if (http_parse_request(t, (size_t)flen + hlen, 0, req) <= 0) {
        free(t);
        return -EINVAL;
    }
    *text = t;
    return 0;
}
