/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * master_parse: one line of a master's stream list as a mount to relay (see master.h). The
 * list is the master's text: untrusted. Pure, apart from master.c's poller, so that the
 * fuzzer reaches it.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/url.h"
#include "upstream/master.h"

char *master_parse_name(const char *line, size_t len)
{
    const char *p = line;
    size_t n = len;
    size_t skip = n > 7 && strncasecmp(p, "http://", 7) == 0    ? 7
                  : n > 8 && strncasecmp(p, "https://", 8) == 0 ? 8
                                                                 : 0;
    if (skip) {
        const char *slash = memchr(p + skip, '/', n - skip);
        if (!slash)
            return NULL;
        n -= (size_t)(slash - p);
        p = slash;
    }
    if (n == 0 || n > MASTER_PARSE_MAX_NAME || p[0] != '/' || (n == 1))
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] <= 0x20 || p[i] == 0x7f)
            return NULL;
    char *norm = url_normalize_path(p, n);
    if (!norm || strlen(norm) != n || memcmp(norm, p, n) != 0) {
        free(norm);
        return NULL;
    }
    return norm;
}
