/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * str: generic string helpers: base64, case-insensitive comparison, duplication (see str.h).
 * Nothing here keeps state, so all of it is safe to call from any thread.
 */
#include "core/str.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

int str_equal_ct(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    size_t la = strlen(a), lb = strlen(b);
    /* walk the longer length so a short guess costs as long as a full one */
    size_t n = la > lb ? la : lb;
    volatile unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < n; i++) {
        unsigned char x = i < la ? (unsigned char)a[i] : 0;
        unsigned char y = i < lb ? (unsigned char)b[i] : 0;
        diff |= (unsigned char)(x ^ y);
    }
    return diff == 0;
}
