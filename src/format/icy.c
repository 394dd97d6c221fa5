/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icy: parsing of inbound ICY metadata text and its conversion to UTF-8 (see icy.h).
 * Source text is untrusted: every scan is bounded by the given length, quotes inside titles
 * are tolerated, and a missing terminator is not an error. Conversion uses iconv directly.
 */
#include "format/icy.h"

#include <ctype.h>
#include <errno.h>
#include <iconv.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* 1 if m[0..len) starts with optional blanks then an identifier followed by "='". */
static int icy_key_starts(const char *m, size_t len)
{
    size_t i = 0;
    while (i < len && (m[i] == ' ' || m[i] == '\t' || m[i] == '\r' || m[i] == '\n'))
        i++;
    size_t k = i;
    while (i < len && (isalnum((unsigned char)m[i]) || m[i] == '_' || m[i] == '-'))
        i++;
    return i > k && len - i >= 2 && m[i] == '=' && m[i + 1] == '\'';
}

/* Finds "key='" (case-insensitive) and returns its value's start and length. */
static int icy_find_value(const char *m, size_t len, const char *key, size_t *start,
                          size_t *vlen)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen + 2 <= len; i++) {
        if (strncasecmp(m + i, key, klen) != 0 || m[i + klen] != '=' || m[i + klen + 1] != '\'')
            continue;
        if (i > 0 && (isalnum((unsigned char)m[i - 1]) || m[i - 1] == '_'))
            continue; /* "XStreamTitle" is another key */
        size_t v = i + klen + 2;
        for (size_t j = v; j < len; j++) {
            if (m[j] != '\'')
                continue;
            int ends = j + 1 == len; /* a closing quote without ';' at the very end */
            if (!ends && m[j + 1] == ';')
                ends = j + 2 >= len || icy_key_starts(m + j + 2, len - j - 2);
            if (ends) {
                *start = v;
                *vlen = j - v;
                return 1;
            }
        }
        *start = v; /* no terminator: everything left */
        *vlen = len - v;
        return 1;
    }
    return 0;
}

static char *icy_copy_value(const char *m, size_t len, const char *key, int *err)
{
    size_t start, vlen;
    if (!icy_find_value(m, len, key, &start, &vlen))
        return NULL;
    char *v = malloc(vlen + 1);
    if (!v) {
        *err = 1;
        return NULL;
    }
    memcpy(v, m + start, vlen);
    v[vlen] = '\0';
    return v;
}

int icy_parse(const char *meta, size_t len, char **title, char **url)
{
    const char *nul = memchr(meta, '\0', len);
    if (nul)
        len = (size_t)(nul - meta);
    while (len > 0 && (meta[len - 1] == ' ' || meta[len - 1] == '\r' || meta[len - 1] == '\n'))
        len--;
    int err = 0;
    *title = icy_copy_value(meta, len, "StreamTitle", &err);
    *url = icy_copy_value(meta, len, "StreamUrl", &err);
    if (err) {
        free(*title);
        free(*url);
        *title = *url = NULL;
        return -ENOMEM;
    }
    return 0;
}

int icy_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            n = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 4, cp = c & 0x07;
        else
            return 0;
        if (n > len - i)
            return 0;
        for (size_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += n;
    }
    return 1;
}

static char *icy_latin1_to_utf8(const char *s, size_t len)
{
    char *out = malloc(len * 2 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x80) {
            out[o++] = (char)c;
        } else {
            out[o++] = (char)(0xC0 | c >> 6);
            out[o++] = (char)(0x80 | (c & 0x3F));
        }
    }
    out[o] = '\0';
    return out;
}

/* iconv conversion; NULL if the charset is unknown or the text invalid in it (errno ENOMEM
 * when memory ran out). */
static char *icy_iconv(const char *s, size_t len, const char *charset)
{
    iconv_t cd = iconv_open("UTF-8", charset);
    if (cd == (iconv_t)-1)
        return NULL;
    size_t cap = len * 4 + 1;
    char *out = malloc(cap);
    if (!out)
        goto fail;
    char *in = (char *)s, *op = out;
    size_t inleft = len, outleft = cap - 1;
    if (iconv(cd, &in, &inleft, &op, &outleft) == (size_t)-1 ||
        iconv(cd, NULL, NULL, &op, &outleft) == (size_t)-1)
        goto fail;
    *op = '\0';
    iconv_close(cd);
    return out;
fail:
    free(out);
    iconv_close(cd);
    return NULL;
}

char *icy_to_utf8(const char *s, size_t len, const char *charset)
{
    if (charset && *charset) {
        if (strcasecmp(charset, "UTF-8") == 0 || strcasecmp(charset, "UTF8") == 0) {
            if (icy_utf8_valid(s, len))
                return strndup(s, len);
        } else {
            char *out = icy_iconv(s, len, charset);
            if (out)
                return out;
        }
    }
    if (icy_utf8_valid(s, len))
        return strndup(s, len);
    return icy_latin1_to_utf8(s, len);
}
