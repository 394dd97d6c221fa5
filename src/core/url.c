/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * url: percent-coding, query parameters and request-path normalisation (see url.h).
 */
#include "core/url.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/str.h"

static const char hex_upper[] = "0123456789ABCDEF";

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Room for `factor` output bytes per input byte plus the NUL, or NULL if that overflows. */
static char *alloc_expanded(size_t len, size_t factor)
{
    if (len > (SIZE_MAX - 1) / factor)
        return NULL;
    return malloc(len * factor + 1);
}

/* Decodes s into out (room for len + 1 bytes): the decoded length, or -1 when malformed. */
static long decode_to(const char *s, size_t len, int plus_is_space, char *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int c = p[i];
        if (c == '%') {
            if (len - i < 3 || hex_value(p[i + 1]) < 0 || hex_value(p[i + 2]) < 0)
                return -1;
            c = hex_value(p[i + 1]) << 4 | hex_value(p[i + 2]);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        if (c == 0)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return (long)o;
}

char *url_decode(const char *s, size_t len, int plus_is_space, size_t *outlen)
{
    if (!s && len)
        return NULL;
    char *out = alloc_expanded(len, 1);
    long n = out ? decode_to(s ? s : "", len, plus_is_space, out) : -1;
    if (n < 0) {
        free(out);
        return NULL;
    }
    if (outlen)
        *outlen = (size_t)n;
    return out;
}

char *url_encode(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = alloc_expanded(len, 3), *o = out;

    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex_upper[c >> 4];
            *o++ = hex_upper[c & 0xf];
        }
    }
    *o = '\0';
    return out;
}

int url_form_append(buf_t *b, const char *name, const char *value)
{
    static const char hex_lower[] = "0123456789abcdef";
    if ((b->len && buf_append_char(b, '&') < 0) || buf_append_str(b, name) < 0 ||
        buf_append_char(b, '=') < 0)
        return -ENOMEM;
    for (const unsigned char *p = (const unsigned char *)(value ? value : ""); *p; p++) {
        char esc[3] = {'%', hex_lower[*p >> 4], hex_lower[*p & 0xf]};
        int alnum = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9');
        if ((alnum ? buf_append_char(b, (char)*p) : buf_append(b, esc, 3)) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* Whether the encoded key (len bytes) decodes to name; a malformed one matches nothing. */
static int key_is(const char *key, size_t len, const char *name)
{
    const unsigned char *p = (const unsigned char *)key;
    size_t n = 0;
    for (size_t i = 0; i < len; i++, n++) {
        int c = p[i];
        if (c == '%') {
            if (len - i < 3 || hex_value(p[i + 1]) < 0 || hex_value(p[i + 2]) < 0)
                return 0;
            c = hex_value(p[i + 1]) << 4 | hex_value(p[i + 2]);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (c == 0 || (unsigned char)name[n] != c)
            return 0;
    }
    return name[n] == '\0';
}

/* The first pair of query whose name is `name`: its value (NULL for "name" without '=') and
 * length; 0 when there is none. */
static int find_param(const char *query, size_t len, const char *name, const char **value,
                      size_t *vlen)
{
    size_t pos = 0;
    if (!query || !name)
        return 0;
    while (pos < len) {
        const char *pair = query + pos;
        const char *amp = memchr(pair, '&', len - pos);
        size_t pair_len = amp ? (size_t)(amp - pair) : len - pos;
        const char *eq = memchr(pair, '=', pair_len);
        size_t key_len = eq ? (size_t)(eq - pair) : pair_len;
        if (key_is(pair, key_len, name)) {
            *value = eq ? eq + 1 : NULL;
            *vlen = eq ? pair_len - key_len - 1 : 0;
            return 1;
        }
        pos += pair_len + 1;
    }
    return 0;
}

char *url_query_param(const char *query, size_t len, const char *name)
{
    const char *value;
    size_t vlen, dec_len;
    if (!find_param(query, len, name, &value, &vlen))
        return NULL;
    return value ? url_decode(value, vlen, 1, &dec_len) : str_dup("");
}

const char *url_query_value(const char *query, size_t len, const char *name, char *out,
                            size_t cap)
{
    const char *value;
    size_t vlen;
    if (!find_param(query, len, name, &value, &vlen) || vlen >= cap)
        return NULL;
    return decode_to(value ? value : "", vlen, 1, out) < 0 ? NULL : out;
}

/* Decides what one segment does: 0 keep, 1 skip ("" and "."), 2 pop (".."), -1 reject. */
static int path_segment_kind(const char *seg, size_t n)
{
    if (n == 0 || (n == 1 && seg[0] == '.'))
        return 1;
    if (n == 2 && seg[0] == '.' && seg[1] == '.')
        return 2;
    if (seg[n - 1] == '.')
        return -1; /* "status.xsl." would be served as "status.xsl" by some filesystems */
    return 0;
}

/* Like RFC 3986 remove_dot_segments, but ".." above the root is an error, not ignored. A
 * trailing '/', "." or ".." leaves the result ending in '/'. out has room for len + 1 bytes
 * and may be path itself: what is written never passes what was read. The length, or -1. */
static long normalize_to(const char *path, size_t len, char *out)
{
    size_t o = 0, pos = 1;
    int ends_dir = 0;

    if (!path || len == 0 || path[0] != '/' || memchr(path, '\0', len) || memchr(path, '\\', len))
        return -1;
    while (pos <= len) {
        const char *seg = path + pos;
        const char *slash = memchr(seg, '/', len - pos);
        size_t n = slash ? (size_t)(slash - seg) : len - pos;
        int kind = path_segment_kind(seg, n);

        if (kind < 0)
            return -1;
        if (kind == 2) {
            if (o == 0)
                return -1;
            while (out[--o] != '/')
                ;
        } else if (kind == 0) {
            out[o++] = '/';
            memmove(out + o, seg, n);
            o += n;
        }
        ends_dir = kind != 0;
        pos += n + 1;
    }
    if (o == 0 || ends_dir)
        out[o++] = '/';
    out[o] = '\0';
    return (long)o;
}

char *url_normalize_path(const char *path, size_t len)
{
    char *out = path && len ? alloc_expanded(len, 1) : NULL;
    if (out && normalize_to(path, len, out) < 0) {
        free(out);
        return NULL;
    }
    return out;
}

const char *url_request_path(const char *raw, size_t len, char *out, size_t cap)
{
    if (!raw || len >= cap)
        return NULL;
    long n = decode_to(raw, len, 0, out);
    return n > 0 && normalize_to(out, (size_t)n, out) >= 0 ? out : NULL;
}
