/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_intern: byte strings to small ids (see audience_intern.h).
 */
#include "audience/audience_intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct audience_interned {
    uint64_t at;               /* offset in text */
    uint32_t len, hash;
};

/* ---- the hash: SipHash-1-3, keyed at random per table ---- */

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

#define SIPROUND(v)                                                                            \
    do {                                                                                       \
        v[0] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[0]; v[0] = rotl(v[0], 32);             \
        v[2] += v[3]; v[3] = rotl(v[3], 16); v[3] ^= v[2];                                    \
        v[0] += v[3]; v[3] = rotl(v[3], 21); v[3] ^= v[0];                                    \
        v[2] += v[1]; v[1] = rotl(v[1], 17); v[1] ^= v[2]; v[2] = rotl(v[2], 32);             \
    } while (0)

static uint64_t word_le(const unsigned char *p, size_t n)
{
    uint64_t w = 0;
    for (size_t i = 0; i < n; i++)
        w |= (uint64_t)p[i] << (8 * i);
    return w;
}

static uint64_t siphash(const uint64_t key[2], const unsigned char *p, size_t len)
{
    uint64_t v[4] = {key[0] ^ 0x736f6d6570736575ull, key[1] ^ 0x646f72616e646f6dull,
                     key[0] ^ 0x6c7967656e657261ull, key[1] ^ 0x7465646279746573ull};
    size_t whole = len & ~(size_t)7;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = word_le(p + i, 8);
        v[3] ^= m;
        SIPROUND(v);
        v[0] ^= m;
    }
    uint64_t last = word_le(p + whole, len - whole) | (uint64_t)len << 56;
    v[3] ^= last;
    SIPROUND(v);
    v[0] ^= last;
    v[2] ^= 0xff;
    for (int i = 0; i < 3; i++)
        SIPROUND(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

/* ---- the table ---- */

static int grow_slots(audience_intern_t *t)
{
    uint32_t nmask = t->mask ? t->mask * 2 + 1 : 63;
    uint32_t *slots = calloc((size_t)nmask + 1, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (uint32_t id = 0; id < t->n; id++) {
        uint32_t i = t->v[id].hash & nmask;
        while (slots[i])
            i = (i + 1) & nmask;
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = nmask;
    return 0;
}

void *audience_intern_room(void *v, size_t *room, size_t n, size_t size)
{
    if (n < *room)
        return v;
    size_t nroom = *room ? *room * 2 : 64;
    void *nv = nroom > n && nroom <= SIZE_MAX / size ? realloc(v, nroom * size) : NULL;
    if (nv)
        *room = nroom;
    return nv;
}

/* Room for one more id and len more bytes of text. */
static int make_room(audience_intern_t *t, size_t len)
{
    if (t->n >= UINT32_MAX / 2 - 1)
        return -E2BIG;
    audience_interned_t *v = audience_intern_room(t->v, &t->vroom, t->n, sizeof(*v));
    if (!v)
        return -ENOMEM;
    t->v = v;
    if (buf_reserve(&t->text, len) < 0)
        return -ENOMEM;
    /* at most half the slots taken: probes stay short */
    if ((t->n + 1) * 2 > t->mask)
        return grow_slots(t);
    return 0;
}

int64_t audience_intern(audience_intern_t *t, const void *s, size_t len)
{
    if (len > UINT32_MAX)
        return -E2BIG;
    if (!t->key[0] && !t->key[1] &&
        getrandom(t->key, sizeof(t->key), GRND_NONBLOCK) != (ssize_t)sizeof(t->key)) {
        t->key[0] = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)t;
        t->key[1] = ~t->key[0];
    }
    uint32_t hash = (uint32_t)siphash(t->key, s, len);
    for (uint32_t i = t->mask ? hash & t->mask : 0; t->slots && t->slots[i];
         i = (i + 1) & t->mask) {
        const audience_interned_t *e = &t->v[t->slots[i] - 1];
        if (e->hash == hash && e->len == len && memcmp(t->text.data + e->at, s, len) == 0)
            return t->slots[i] - 1;
    }
    int err = make_room(t, len);
    if (err < 0)
        return err;
    uint32_t id = t->n++;
    t->v[id] = (audience_interned_t){.at = t->text.len, .len = (uint32_t)len, .hash = hash};
    buf_append(&t->text, s, len); /* room made above */
    uint32_t i = hash & t->mask;
    while (t->slots[i])
        i = (i + 1) & t->mask;
    t->slots[i] = id + 1;
    return id;
}

const char *audience_intern_bytes(const audience_intern_t *t, uint32_t id, size_t *len)
{
    *len = t->v[id].len;
    return t->text.data ? t->text.data + t->v[id].at : "";
}

static int by_bytes(const void *a, const void *b, void *arg)
{
    const audience_intern_t *t = arg;
    size_t la, lb;
    const char *sa = audience_intern_bytes(t, *(const uint32_t *)a, &la);
    const char *sb = audience_intern_bytes(t, *(const uint32_t *)b, &lb);
    int c = memcmp(sa, sb, la < lb ? la : lb);
    return c ? c : (la > lb) - (la < lb);
}

uint32_t *audience_intern_ranks(const audience_intern_t *t)
{
    uint32_t *order = malloc(((size_t)t->n + 1) * sizeof(*order));
    uint32_t *rank = malloc(((size_t)t->n + 1) * sizeof(*rank));
    if (order && rank) {
        for (uint32_t id = 0; id < t->n; id++)
            order[id] = id;
        qsort_r(order, t->n, sizeof(*order), by_bytes, (void *)t);
        for (uint32_t i = 0; i < t->n; i++)
            rank[order[i]] = i;
    } else {
        free(rank);
        rank = NULL;
    }
    free(order);
    return rank;
}

void audience_intern_free(audience_intern_t *t)
{
    buf_free(&t->text);
    free(t->v);
    free(t->slots);
    *t = (audience_intern_t){0};
}
