/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * block: allocation, chain-aware release and ICY metadata blocks (see block.h).
 * Freeing a block drops the reference it holds on its successor; the loop below walks the chain
 * instead of recursing, so a long chain released at once cannot overflow the stack.
 */
#include "core/block.h"

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
