/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * utf8: the one UTF-8 decoder of the server (validation, escaping and metadata conversion all
 * go through utf8_decode), and charset conversion through iconv (see utf8.h).
 */
#include "core/utf8.h"

#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

size_t utf8_decode(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned char c = p[0];
    size_t n;
    uint32_t v, min;

    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (len < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

size_t utf8_char_len(const char *s, size_t len)
{
    uint32_t cp;
    return len ? utf8_decode(s, len, &cp) : 0;
}

int utf8_valid(const char *s, size_t len)
{
    size_t i = 0;
    uint32_t cp;

    while (i < len) {
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

/* Converts with a buffer that doubles on E2BIG; invalid or truncated input fails. glibc's
 * UTF-8 decoder lets 5-byte forms and code points above U+10FFFF through, so UTF-8 input is
 * checked here and every result is checked again. */
char *utf8_from_charset(const char *s, size_t len, const char *charset)
{
    iconv_t cd;
    char *out = NULL, *in = (char *)s, *o;
    size_t cap, in_left = len, out_left;

    if (!charset || (!s && len))
        return NULL;
    if (str_ieq(charset, strlen(charset), "UTF-8") || str_ieq(charset, strlen(charset), "UTF8"))
        return utf8_valid(s, len) ? str_ndup(s ? s : "", len) : NULL;
    cd = iconv_open("UTF-8", charset);
    if (cd == (iconv_t)-1)
        return NULL;
    cap = len < 64 ? 64 : len + len / 2 + 16;
    if (cap < len)
        goto fail;
    out = malloc(cap);
    if (!out)
        goto fail;
    o = out;
    out_left = cap - 1;
    for (;;) {
        size_t r = in_left ? iconv(cd, &in, &in_left, &o, &out_left)
                           : iconv(cd, NULL, NULL, &o, &out_left);
        if (r != (size_t)-1 && in_left == 0)
            break;
        if (r != (size_t)-1 || errno == E2BIG) {
            size_t used = (size_t)(o - out);
            char *bigger = cap > SIZE_MAX / 2 ? NULL : realloc(out, cap * 2);
            if (!bigger)
                goto fail;
            out = bigger;
            o = out + used;
            cap *= 2;
            out_left = cap - 1 - used;
            continue;
        }
        goto fail; /* EILSEQ or EINVAL */
    }
    if (!utf8_valid(out, (size_t)(o - out)))
        goto fail;
    *o = '\0';
    iconv_close(cd);
    return out;
fail:
    free(out);
    iconv_close(cd);
    return NULL;
}

static char *latin1_to_utf8(const char *s, size_t len)
{
    char *out = malloc(len * 2 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            *o++ = (char)c;
        } else {
            *o++ = (char)(0xc0 | c >> 6);
            *o++ = (char)(0x80 | (c & 0x3f));
        }
    }
    *o = '\0';
    return out;
}

char *utf8_from_text(const char *s, size_t len, const char *charset)
{
    if (charset && *charset) {
        char *out = utf8_from_charset(s, len, charset);
        if (out)
            return out;
    }
    if (utf8_valid(s, len))
        return str_ndup(s, len);
    return latin1_to_utf8(s, len);
}
