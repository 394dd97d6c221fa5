/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * str: escaping for each output language (XML/HTML, JSON, log lines), base64, percent-coding,
 * query parameters, charset conversion and request-path normalisation.
 *
 * Every function takes (pointer, length) input and never reads past it; results are malloc'd
 * and owned by the caller, except str_escape_log which fills a caller buffer. Nothing here
 * keeps state, so all of it is safe to call from any thread.
 */
#include "core/str.h"

#include <errno.h>
#include <iconv.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char hex_upper[] = "0123456789ABCDEF";

/* Length of the valid UTF-8 sequence at s[0..len) and its code point, or 0 if invalid
 * (overlong forms, surrogates, > U+10FFFF and truncated sequences are all invalid). */
static size_t utf8_seq(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char c = s[0];
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
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

size_t str_utf8_char_len(const char *s, size_t len)
{
    uint32_t cp;
    return len ? utf8_seq((const unsigned char *)s, len, &cp) : 0;
}

int str_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;

    while (i < len) {
        size_t n = utf8_seq(p + i, len - i, &cp);
        if (n == 0)
            return 0;
        i += n;
    }
    return 1;
}

/* Worst case output is `factor` bytes per input byte plus the NUL. */
static char *alloc_expanded(size_t len, size_t factor)
{
    if (len > (SIZE_MAX - 1) / factor)
        return NULL;
    return malloc(len * factor + 1);
}

static char *put_str(char *o, const char *lit)
{
    size_t n = strlen(lit);
    memcpy(o, lit, n);
    return o + n;
}

static char *put_replacement(char *o)
{
    return put_str(o, "\xef\xbf\xbd");
}

char *str_escape_xml(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = alloc_expanded(len, 6), *o = out;
    size_t i = 0;
    uint32_t cp;

    if (!out)
        return NULL;
    while (i < len) {
        size_t n = utf8_seq(p + i, len - i, &cp);
        if (n == 0) {
            o = put_replacement(o);
            i++;
            continue;
        }
        if (cp == '&')
            o = put_str(o, "&amp;");
        else if (cp == '<')
            o = put_str(o, "&lt;");
        else if (cp == '>')
            o = put_str(o, "&gt;");
        else if (cp == '"')
            o = put_str(o, "&quot;");
        else if (cp == '\'')
            o = put_str(o, "&#39;");
        else if (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r')
            ; /* not an XML 1.0 character: dropped */
        else if (cp == 0xfffe || cp == 0xffff)
            o = put_replacement(o);
        else
            o = (memcpy(o, p + i, n), o + n);
        i += n;
    }
    *o = '\0';
    return out;
}

static char *put_json_u(char *o, uint32_t cp)
{
    *o++ = '\\';
    *o++ = 'u';
    for (int shift = 12; shift >= 0; shift -= 4)
        *o++ = "0123456789abcdef"[(cp >> shift) & 0xf];
    return o;
}

/* U+2028/U+2029 are valid JSON but end a line in JavaScript; they are escaped too. */
char *str_escape_json(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out = alloc_expanded(len, 6), *o = out;
    size_t i = 0;
    uint32_t cp;

    if (!out)
        return NULL;
    while (i < len) {
        size_t n = utf8_seq(p + i, len - i, &cp);
        if (n == 0) {
            o = put_replacement(o);
            i++;
            continue;
        }
        switch (cp) {
        case '"': o = put_str(o, "\\\""); break;
        case '\\': o = put_str(o, "\\\\"); break;
        case '\b': o = put_str(o, "\\b"); break;
        case '\f': o = put_str(o, "\\f"); break;
        case '\n': o = put_str(o, "\\n"); break;
        case '\r': o = put_str(o, "\\r"); break;
        case '\t': o = put_str(o, "\\t"); break;
        case '/':
            if (i > 0 && p[i - 1] == '<')
                *o++ = '\\';
            *o++ = '/';
            break;
        default:
            if (cp < 0x20 || cp == 0x7f || cp == 0x2028 || cp == 0x2029)
                o = put_json_u(o, cp);
            else
                o = (memcpy(o, p + i, n), o + n);
        }
        i += n;
    }
    *o = '\0';
    return out;
}

char *str_escape_log(char *out, size_t outlen, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;

    if (!out || outlen == 0)
        return out;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        char esc[4];
        size_t n;

        if (c == '\\' || c == '"') {
            esc[0] = '\\', esc[1] = (char)c, n = 2;
        } else if (c >= 0x20 && c < 0x7f) {
            esc[0] = (char)c, n = 1;
        } else {
            esc[0] = '\\', esc[1] = 'x', esc[2] = hex_upper[c >> 4], esc[3] = hex_upper[c & 0xf];
            n = 4;
        }
        if (n > outlen - 1 - o)
            break;
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
    return out;
}

/* Like str_escape_log, but a valid UTF-8 character from U+00A0 up and '"' are kept as is (titles
 * in the playlist log stay readable); C1 controls and invalid sequences become \xHH per byte. */
char *str_escape_log_utf8(char *out, size_t outlen, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;

    if (!out || outlen == 0)
        return out;
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t n = p[i] >= 0x80 ? utf8_seq(p + i, len - i, &cp) : 0;
        if (n > 1 && cp >= 0xA0) {
            if (n > outlen - 1 - o)
                break;
            memcpy(out + o, p + i, n);
            o += n;
            i += n;
            continue;
        }
        char esc[8];
        if (p[i] == '"') /* a separate field format: quotes need no escape */
            esc[0] = '"', esc[1] = '\0';
        else
            str_escape_log(esc, sizeof(esc), (const char *)p + i, 1);
        n = strlen(esc);
        if (n > outlen - 1 - o)
            break;
        memcpy(out + o, esc, n);
        o += n;
        i++;
    }
    out[o] = '\0';
    return out;
}

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Strict: length a multiple of 4, '=' only as the final one or two characters, and the
 * unused bits before the padding must be zero (so every input has one canonical form). */
long str_base64_decode(const char *in, size_t len, unsigned char *out, size_t outlen)
{
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;

    if (len % 4 != 0 || len / 4 * 3 + 1 > outlen || len / 4 * 3 > (size_t)LONG_MAX)
        return -1;
    for (size_t i = 0; i < len; i += 4) {
        int v[4], pad = 0;
        for (int k = 0; k < 4; k++) {
            v[k] = b64_value(p[i + k]);
            if (v[k] < 0) {
                if (p[i + k] != '=' || i + 4 != len || k < 2)
                    return -1;
                v[k] = 0;
                pad++;
            } else if (pad) {
                return -1; /* data after '=' */
            }
        }
        uint32_t q = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        if ((pad == 1 && (q & 0xff)) || (pad == 2 && (q & 0xffff)))
            return -1;
        out[o++] = (unsigned char)(q >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(q >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)q;
    }
    out[o] = '\0';
    return (long)o;
}

char *str_base64_encode(const unsigned char *in, size_t len)
{
    char *out, *o;

    if (len > (SIZE_MAX - 1) / 4 * 3 - 2)
        return NULL;
    out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    o = out;
    for (size_t i = 0; i < len; i += 3) {
        size_t left = len - i;
        uint32_t q = (uint32_t)in[i] << 16;
        if (left > 1)
            q |= (uint32_t)in[i + 1] << 8;
        if (left > 2)
            q |= in[i + 2];
        *o++ = b64_alphabet[(q >> 18) & 0x3f];
        *o++ = b64_alphabet[(q >> 12) & 0x3f];
        *o++ = left > 1 ? b64_alphabet[(q >> 6) & 0x3f] : '=';
        *o++ = left > 2 ? b64_alphabet[q & 0x3f] : '=';
    }
    *o = '\0';
    return out;
}

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

/* A raw NUL in the input is refused like %00: the result is used as a C string. */
char *str_url_decode(const char *s, size_t len, int plus_is_space, size_t *outlen)
{
    const unsigned char *p = (const unsigned char *)s;
    char *out;
    size_t o = 0;

    if (!s && len)
        return NULL;
    out = alloc_expanded(len, 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        int c = p[i];
        if (c == '%') {
            if (len - i < 3 || hex_value(p[i + 1]) < 0 || hex_value(p[i + 2]) < 0)
                goto fail;
            c = hex_value(p[i + 1]) << 4 | hex_value(p[i + 2]);
            i += 2;
        } else if (c == '+' && plus_is_space) {
            c = ' ';
        }
        if (c == 0)
            goto fail;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    if (outlen)
        *outlen = o;
    return out;
fail:
    free(out);
    return NULL;
}

char *str_url_encode(const char *s, size_t len)
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

/* Names are compared after decoding ("mo%75nt" is "mount"); the first match wins. */
char *str_query_param(const char *query, size_t len, const char *name)
{
    size_t pos = 0;

    if (!query || !name)
        return NULL;
    while (pos < len) {
        const char *pair = query + pos;
        const char *amp = memchr(pair, '&', len - pos);
        size_t pair_len = amp ? (size_t)(amp - pair) : len - pos;
        const char *eq = memchr(pair, '=', pair_len);
        size_t key_len = eq ? (size_t)(eq - pair) : pair_len;
        size_t dec_len;
        char *key = str_url_decode(pair, key_len, 1, &dec_len);
        int match = key && strcmp(key, name) == 0;

        free(key);
        if (match) {
            if (!eq)
                return str_dup("");
            return str_url_decode(eq + 1, pair_len - key_len - 1, 1, &dec_len);
        }
        pos += pair_len + 1;
    }
    return NULL;
}

int str_ieq(const char *s, size_t len, const char *lit)
{
    if (!s || !lit)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char a = (unsigned char)s[i], b = (unsigned char)lit[i];
        if (b == '\0')
            return 0;
        if (a >= 'A' && a <= 'Z')
            a = (unsigned char)(a + 32);
        if (b >= 'A' && b <= 'Z')
            b = (unsigned char)(b + 32);
        if (a != b)
            return 0;
    }
    return lit[len] == '\0';
}

/* Converts with a buffer that doubles on E2BIG; invalid or truncated input fails. glibc's
 * UTF-8 decoder lets 5-byte forms and code points above U+10FFFF through, so UTF-8 input is
 * checked here and every result is checked again. */
char *str_to_utf8(const char *s, size_t len, const char *charset)
{
    iconv_t cd;
    char *out = NULL, *in = (char *)s, *o;
    size_t cap, in_left = len, out_left;

    if (!charset || (!s && len))
        return NULL;
    if (str_ieq(charset, strlen(charset), "UTF-8") || str_ieq(charset, strlen(charset), "UTF8"))
        return str_utf8_valid(s, len) ? str_ndup(s ? s : "", len) : NULL;
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
    if (!str_utf8_valid(out, (size_t)(o - out)))
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

char *str_text_to_utf8(const char *s, size_t len, const char *charset)
{
    if (charset && *charset) {
        char *out = str_to_utf8(s, len, charset);
        if (out)
            return out;
    }
    if (str_utf8_valid(s, len))
        return str_ndup(s, len);
    return latin1_to_utf8(s, len);
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
 * trailing '/', "." or ".." leaves the result ending in '/'. */
char *str_normalize_path(const char *path, size_t len)
{
    char *out;
    size_t o = 0, pos = 1;
    int ends_dir = 0;

    if (!path || len == 0 || path[0] != '/' || memchr(path, '\0', len) || memchr(path, '\\', len))
        return NULL;
    out = alloc_expanded(len, 1);
    if (!out)
        return NULL;
    while (pos <= len) {
        const char *seg = path + pos;
        const char *slash = memchr(seg, '/', len - pos);
        size_t n = slash ? (size_t)(slash - seg) : len - pos;
        int kind = path_segment_kind(seg, n);

        if (kind < 0)
            goto fail;
        if (kind == 2) {
            if (o == 0)
                goto fail;
            while (out[--o] != '/')
                ;
        } else if (kind == 0) {
            out[o++] = '/';
            memcpy(out + o, seg, n);
            o += n;
        }
        ends_dir = kind != 0;
        pos += n + 1;
    }
    if (o == 0 || ends_dir)
        out[o++] = '/';
    out[o] = '\0';
    return out;
fail:
    free(out);
    return NULL;
}

char *str_dup(const char *s)
{
    return s ? str_ndup(s, strlen(s)) : NULL;
}

char *str_ndup(const char *s, size_t len)
{
    char *d;

    if (!s || len == SIZE_MAX)
        return NULL;
    d = malloc(len + 1);
    if (!d)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}
