/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * buf: the growable byte buffer (see buf.h). Capacity doubles from 256 bytes, so appending n
 * bytes one by one costs O(n); a failed allocation leaves the bytes already there untouched.
 */
#include "core/buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 256

int buf_reserve(buf_t *b, size_t more)
{
    size_t need, ncap;
    char *nd;

    if (b->error)
        return b->error;
    if (more > SIZE_MAX - 1 - b->len)
        goto fail;
    need = b->len + more + 1;
    if (need <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : BUF_MIN_CAP;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) {
            ncap = need;
            break;
        }
        ncap *= 2;
    }
    nd = realloc(b->data, ncap);
    if (!nd)
        goto fail;
    if (!b->data)
        nd[0] = '\0';
    b->data = nd;
    b->cap = ncap;
    return 0;
fail:
    b->error = -ENOMEM;
    return b->error;
}

int buf_append(buf_t *b, const void *s, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return b->error;
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int buf_append_str(buf_t *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_append_char(buf_t *b, char c)
{
    return buf_append(b, &c, 1);
}

/* Formats straight into the spare room; when that is too small, grows once to the exact size
 * vsnprintf asked for and formats again. */
int buf_appendf(buf_t *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (buf_reserve(b, 0) < 0)
        return b->error;
    va_start(ap, fmt);
    n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->data[b->len] = '\0';
        b->error = -ENOMEM;
        return b->error;
    }
    if ((size_t)n >= b->cap - b->len) {
        if (buf_reserve(b, (size_t)n) < 0) {
            b->data[b->len] = '\0';
            return b->error;
        }
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
    return 0;
}

char *buf_take(buf_t *b, size_t *len)
{
    char *d;

    if (buf_reserve(b, 0) < 0) {
        buf_free(b);
        return NULL;
    }
    d = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void buf_free(buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->error = 0;
}
