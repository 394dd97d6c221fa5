/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * block: allocation, chain-aware release, the gathering a source's bytes wait in before they make
 * a block, and ICY metadata blocks (see block.h).
 * Freeing a block drops the reference it holds on its successor; the loop below walks the chain
 * instead of recursing, so a long chain released at once cannot overflow the stack.
 */
#include "core/block.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ICY_META_MAX_BODY (255 * 16)

block_t *block_new(size_t cap)
{
    block_t *b = malloc(sizeof(*b) + cap);
    if (!b)
        return NULL;
    atomic_init(&b->refcount, 1);
    b->flags = 0;
    b->len = 0;
    b->cap = (uint32_t)cap;
    b->offset = 0;
    atomic_init(&b->next, NULL);
    b->meta = NULL;
    return b;
}

block_t *block_new_copy(const void *data, size_t len)
{
    block_t *b = block_new(len);
    if (b) {
        memcpy(b->data, data, len);
        b->len = (uint32_t)len;
    }
    return b;
}

#define GATHER_CHUNKS(n) (((n) + BLOCK_GATHER_CHUNK - 1) / BLOCK_GATHER_CHUNK)

int block_gather_append(block_gather_t *g, const void *data, size_t n)
{
    size_t have = GATHER_CHUNKS(g->len), need = GATHER_CHUNKS(g->len + n);
    for (size_t i = have; i < need; i++) {
        if (!(g->chunk[i] = malloc(BLOCK_GATHER_CHUNK))) {
            block_gather_truncate(g, g->len);
            return -ENOMEM;
        }
    }
    const unsigned char *src = data;
    while (n > 0) {
        size_t at = g->len % BLOCK_GATHER_CHUNK, k = BLOCK_GATHER_CHUNK - at;
        if (k > n)
            k = n;
        memcpy(g->chunk[g->len / BLOCK_GATHER_CHUNK] + at, src, k);
        g->len += (uint32_t)k;
        src += k;
        n -= k;
    }
    return 0;
}

void block_gather_copy(const block_gather_t *g, size_t off, void *dst, size_t n)
{
    unsigned char *out = dst;
    while (n > 0) {
        size_t at = off % BLOCK_GATHER_CHUNK, k = BLOCK_GATHER_CHUNK - at;
        if (k > n)
            k = n;
        memcpy(out, g->chunk[off / BLOCK_GATHER_CHUNK] + at, k);
        out += k;
        off += k;
        n -= k;
    }
}

block_t *block_from_gather(const block_gather_t *g, size_t n, size_t cap)
{
    block_t *b = block_new(cap);
    if (b) {
        block_gather_copy(g, 0, b->data, n);
        b->len = (uint32_t)n;
    }
    return b;
}

void block_gather_drop(block_gather_t *g, size_t n)
{
    size_t rest = g->len - n, to = 0, from = n;
    while (to < rest) { /* forward, in pieces that stay within one chunk on each side */
        size_t k = BLOCK_GATHER_CHUNK - from % BLOCK_GATHER_CHUNK;
        if (k > BLOCK_GATHER_CHUNK - to % BLOCK_GATHER_CHUNK)
            k = BLOCK_GATHER_CHUNK - to % BLOCK_GATHER_CHUNK;
        if (k > rest - to)
            k = rest - to;
        memmove(g->chunk[to / BLOCK_GATHER_CHUNK] + to % BLOCK_GATHER_CHUNK,
                g->chunk[from / BLOCK_GATHER_CHUNK] + from % BLOCK_GATHER_CHUNK, k);
        to += k;
        from += k;
    }
    block_gather_truncate(g, rest);
}

void block_gather_truncate(block_gather_t *g, size_t n)
{
    for (size_t i = GATHER_CHUNKS(n); i < BLOCK_GATHER_MAX / BLOCK_GATHER_CHUNK; i++) {
        free(g->chunk[i]);
        g->chunk[i] = NULL;
    }
    g->len = (uint32_t)n;
}

void block_unref(block_t *b)
{
    while (b) {
        if (atomic_fetch_sub_explicit(&b->refcount, 1, memory_order_acq_rel) != 1)
            return;
        block_t *next = atomic_load_explicit(&b->next, memory_order_acquire);
        icy_meta_unref(b->meta);
        free(b);
        b = next;
    }
}

void block_link(block_t *tail, block_t *b)
{
    atomic_store_explicit(&tail->next, b, memory_order_release);
}

/* Largest prefix of s (at most max bytes) that does not end inside a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static size_t icy_append(unsigned char *out, size_t pos, size_t room, const char *key,
                         const char *value)
{
    size_t klen = strlen(key), vlen = strlen(value);
    if (pos + klen + 4 > room)
        return pos;
    vlen = utf8_cut(value, vlen, room - pos - klen - 4); /* key='value'; */
    memcpy(out + pos, key, klen);
    pos += klen;
    out[pos++] = '=';
    out[pos++] = '\'';
    memcpy(out + pos, value, vlen);
    pos += vlen;
    out[pos++] = '\'';
    out[pos++] = ';';
    return pos;
}

icy_meta_t *icy_meta_new(const char *title, const char *url)
{
    unsigned char body[ICY_META_MAX_BODY];
    size_t n = icy_append(body, 0, sizeof(body), "StreamTitle", title ? title : "");
    if (url && *url)
        n = icy_append(body, n, sizeof(body), "StreamUrl", url);
    size_t blocks = (n + 15) / 16;
    icy_meta_t *m = calloc(1, sizeof(*m) + 1 + blocks * 16);
    if (!m)
        return NULL;
    atomic_init(&m->refcount, 1);
    m->len = (uint32_t)(1 + blocks * 16);
    m->data[0] = (unsigned char)blocks;
    memcpy(m->data + 1, body, n);
    m->title = title ? strdup(title) : NULL;
    m->url = url ? strdup(url) : NULL;
    return m;
}

void icy_meta_unref(icy_meta_t *m)
{
    if (!m || atomic_fetch_sub_explicit(&m->refcount, 1, memory_order_acq_rel) != 1)
        return;
    free(m->title);
    free(m->url);
    free(m);
}
