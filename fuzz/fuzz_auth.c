/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_auth: libFuzzer driver for the auth layer's parsers: htpasswd lines and files, CIDR
 * ranges and range lists. A range that parses must match its own address; a parsed
 * htpasswd line must point inside its input.
 */
// fuzz-sources: src/auth/htpasswd.c src/auth/md5.c src/core/cidr.c src/core/watched.c src/core/str.c src/core/escape.c src/core/log.c src/core/loop.c src/core/safefile.c src/core/buf.c src/core/utf8.c
// fuzz-pkgs: libxcrypt
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cidr.h"
#include "auth/htpasswd.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *u, *h;
    size_t ul, hl;
    long bad = 0;

    if (htpasswd_parse_line(s, size, &u, &ul, &h, &hl) == 1)
        REQUIRE(u == s && ul > 0 && h + hl <= s + size && memchr(u, ':', ul) == NULL);
    REQUIRE(htpasswd_count(s, size, &bad) >= 0 && bad >= 0);

    cidr_t r;
    if (cidr_parse(s, size, &r) == 0) {
        REQUIRE(r.prefix <= 128);
        REQUIRE(cidr_match(&r, r.addr));
    }
    cidr_list_t l;
    long n = cidr_list_parse(s, size, &l, &bad);
    REQUIRE(n >= 0 && (size_t)n == l.n);
    for (size_t i = 0; i < l.n; i++)
        REQUIRE(cidr_list_match(&l, l.v[i].addr));
    cidr_list_free(&l);
    return 0;
}
