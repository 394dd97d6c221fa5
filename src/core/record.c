/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record: typed, length-prefixed records (see record.h).
 */
#include "core/record.h"

#include <stdlib.h>
#include <string.h>

#define REC_NULL_STR 0x80000000u

static void put_le(buf_t *b, uint64_t v, int n)
{
    unsigned char x[8];
    for (int i = 0; i < n; i++)
        x[i] = (unsigned char)(v >> (8 * i));
    buf_append(b, x, (size_t)n);
}

size_t rec_begin(buf_t *b, uint16_t type)
{
    put_le(b, type, 2);
    size_t at = b->len;
    put_le(b, 0, 4);
    return at;
}

void rec_end(buf_t *b, size_t at)
{
    if (b->error || at + 4 > b->len)
        return;
    uint32_t n = (uint32_t)(b->len - at - 4);
    for (int i = 0; i < 4; i++)
        b->data[at + (size_t)i] = (char)(unsigned char)(n >> (8 * i));
}

void rec_u8(buf_t *b, uint8_t v) { put_le(b, v, 1); }
void rec_u32(buf_t *b, uint32_t v) { put_le(b, v, 4); }
void rec_u64(buf_t *b, uint64_t v) { put_le(b, v, 8); }
void rec_i64(buf_t *b, int64_t v) { put_le(b, (uint64_t)v, 8); }

void rec_bytes(buf_t *b, const void *p, size_t n)
{
    put_le(b, n, 4);
    buf_append(b, p, n);
}

void rec_str(buf_t *b, const char *s)
{
    if (!s)
        put_le(b, REC_NULL_STR, 4);
    else
        rec_bytes(b, s, strlen(s));
}

static const unsigned char *take(rec_reader_t *r, size_t n)
{
    if (r->error || (size_t)(r->end - r->p) < n) {
        r->error = 1;
        return NULL;
    }
    const unsigned char *p = r->p;
    r->p += n;
    return p;
}

static uint64_t get_le(rec_reader_t *r, int n)
{
    const unsigned char *p = take(r, (size_t)n);
    uint64_t v = 0;
    for (int i = 0; p && i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

int rec_next(rec_reader_t *r, uint16_t *type, rec_reader_t *fields)
{
    if (r->error)
        return -1;
    if (r->p == r->end)
        return 0;
    *type = (uint16_t)get_le(r, 2);
    uint32_t n = (uint32_t)get_le(r, 4);
    const unsigned char *p = take(r, n);
    if (!p)
        return -1;
    rec_reader_init(fields, p, n);
    return 1;
}

uint8_t rec_get_u8(rec_reader_t *r) { return (uint8_t)get_le(r, 1); }
uint32_t rec_get_u32(rec_reader_t *r) { return (uint32_t)get_le(r, 4); }
uint64_t rec_get_u64(rec_reader_t *r) { return get_le(r, 8); }
int64_t rec_get_i64(rec_reader_t *r) { return (int64_t)get_le(r, 8); }

const unsigned char *rec_get_bytes(rec_reader_t *r, size_t *n)
{
    uint32_t len = (uint32_t)get_le(r, 4);
    *n = 0;
    if (len & REC_NULL_STR)
        return NULL;
    const unsigned char *p = take(r, len);
    if (p)
        *n = len;
    return p;
}

char *rec_get_str(rec_reader_t *r)
{
    size_t n;
    const unsigned char *p = rec_get_bytes(r, &n);
    if (!p)
        return NULL;
    char *s = malloc(n + 1);
    if (!s) {
        r->error = 1;
        return NULL;
    }
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}
