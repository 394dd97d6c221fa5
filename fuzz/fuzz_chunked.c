/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_chunked: chunked request bodies. The first input byte chooses the piece size; the rest
 * is decoded in pieces and in one go. Both ways must agree (same body or same error), the body
 * never grows, and nothing is consumed after the end of the body.
 */
// fuzz-sources: src/http/chunked.c
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/chunked.h"

static ssize_t decode(const uint8_t *data, size_t len, size_t piece, unsigned char *body)
{
    chunked_t d;
    chunked_init(&d);
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, data, len);
    size_t at = 0, out = 0;
    ssize_t r = 0;
    while (at < len && !chunked_done(&d)) {
        size_t n = len - at < piece ? len - at : piece, used;
        r = chunked_decode(&d, copy + at, n, &used);
        if (r < 0)
            break;
        if ((size_t)r > used || used > n)
            abort();
        memcpy(body + out, copy + at, (size_t)r);
        out += (size_t)r;
        at += n;
    }
    free(copy);
    return r < 0 ? r : (ssize_t)out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t piece = (size_t)data[0] % 17 + 1;
    data++;
    size--;
    unsigned char *a = malloc(size + 1), *b = malloc(size + 1);
    ssize_t ra = decode(data, size, piece, a);
    ssize_t rb = decode(data, size, size ? size : 1, b);
    if (ra != rb || (ra > 0 && memcmp(a, b, (size_t)ra) != 0) || ra > (ssize_t)size)
        abort();
    free(a);
    free(b);
    return 0;
}
