/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * block: allocation (from the heap, or from the pools of blocks of one room), chain-aware
 * release, the gathering a source's bytes wait in before they make a block, and ICY metadata
 * blocks (see block.h).
 * Freeing a block drops the reference it holds on its successor; the loop below walks the chain
 * instead of recursing, so a long chain released at once cannot overflow the stack.
 * A pool hands out units of one size from regions mapped for it, under its own lock (taken
 * by whoever frees the block: the heap's free takes its arena's lock the same way), from the
 * region of the lowest number with a free unit; a region that empties out stays mapped until
 * block_pools_trim, so that no free makes a system call.
 */
#include "core/block.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A unit handed out is a heap block to valgrind (massif counts it where it was taken, memcheck
 * checks its use) and to AddressSanitizer (a unit given back is poisoned until taken again). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define UNIT_TAKEN(u, n) VALGRIND_MALLOCLIKE_BLOCK(u, n, 0, 0)
#define UNIT_GIVEN(u) VALGRIND_FREELIKE_BLOCK(u, 0)
#define UNIT_LINK_OPEN(u) VALGRIND_MAKE_MEM_DEFINED(u, sizeof(void *))
#endif
#endif
#ifndef UNIT_TAKEN
#define UNIT_TAKEN(u, n) ((void)0)
#define UNIT_GIVEN(u) ((void)0)
#define UNIT_LINK_OPEN(u) ((void)0)
#endif
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define UNIT_POISON(u, n) ASAN_POISON_MEMORY_REGION(u, n)
#define UNIT_UNPOISON(u, n) ASAN_UNPOISON_MEMORY_REGION(u, n)
#else
#define UNIT_POISON(u, n) ((void)0)
#define UNIT_UNPOISON(u, n) ((void)0)
#endif

#define ICY_META_MAX_BODY (255 * 16)

/* ---- pools ---- */

#define REGION_SIZE ((size_t)256 * 1024)
#define POOL_REGIONS 8192 /* 2 GB of blocks of one room; past it, blocks come from the heap */

typedef struct pool pool_t;
typedef struct region region_t;
struct region {
    pool_t *pool;
    void *free;            /* units given back, linked through their first word */
    uint32_t used, fresh;  /* units handed out; those from `fresh` on were never touched */
    uint32_t id;           /* its place in its pool's table */
};
#define REGION_HEAD ((sizeof(region_t) + 15) & ~(size_t)15)

/* A unit is taken from the region of the lowest id that has a free one: a queue frees its
 * blocks within seconds, so the units in use gather in the first regions and the last ones
 * empty out (and go back to the system), as they would not if units were taken anywhere. */
struct pool {
    _Atomic size_t unit; /* bytes per unit; 0: not in use yet (set once, under pools_lock) */
    uint32_t per_region;
    uint32_t nids;       /* the ids in use are below it */
    pthread_mutex_t lock;
    uint64_t room[POOL_REGIONS / 64]; /* bit id: region id has a free unit */
    region_t *regions[POOL_REGIONS];  /* by id, NULL when not mapped */
};

static pool_t pools[BLOCK_POOLS];
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;

/* The pool of units of `unit` bytes, made on first use; NULL when every pool has a size. */
static pool_t *pool_for(size_t unit)
{
    for (int i = 0; i < BLOCK_POOLS; i++) {
        size_t u = atomic_load_explicit(&pools[i].unit, memory_order_acquire);
        if (u == unit)
            return &pools[i];
        if (u)
            continue;
        pthread_mutex_lock(&pools_lock);
        if (!atomic_load_explicit(&pools[i].unit, memory_order_relaxed)) {
            pthread_mutex_init(&pools[i].lock, NULL);
            pools[i].per_region = (uint32_t)((REGION_SIZE - REGION_HEAD) / unit);
            atomic_store_explicit(&pools[i].unit, unit, memory_order_release);
        }
        pthread_mutex_unlock(&pools_lock);
        i--; /* look at it again: ours, or another size taken meanwhile */
    }
    return NULL;
}

static void room_set(pool_t *p, uint32_t id, int has)
{
    if (has)
        p->room[id / 64] |= (uint64_t)1 << (id % 64);
    else
        p->room[id / 64] &= ~((uint64_t)1 << (id % 64));
}

static region_t *lowest_with_room(pool_t *p)
{
    for (uint32_t w = 0; w * 64 < p->nids; w++)
        if (p->room[w])
            return p->regions[w * 64 + (uint32_t)__builtin_ctzll(p->room[w])];
    return NULL;
}

/* A region aligned to its size (a unit finds its region by rounding its address down), at the
 * lowest free id. NULL when the table is full or the system has no memory. */
static region_t *region_new(pool_t *p)
{
    uint32_t id = 0;
    while (id < p->nids && p->regions[id])
        id++;
    if (id == POOL_REGIONS)
        return NULL;
    unsigned char *m = mmap(NULL, 2 * REGION_SIZE, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    uintptr_t at = ((uintptr_t)m + REGION_SIZE - 1) & ~(uintptr_t)(REGION_SIZE - 1);
    if (at > (uintptr_t)m)
        munmap(m, at - (uintptr_t)m);
    if ((uintptr_t)m + 2 * REGION_SIZE > at + REGION_SIZE)
        munmap((void *)(at + REGION_SIZE), (uintptr_t)m + 2 * REGION_SIZE - at - REGION_SIZE);
    region_t *r = (region_t *)at;
    r->pool = p;
    r->free = NULL;
    r->used = r->fresh = 0;
    r->id = id;
    p->regions[id] = r;
    if (id == p->nids)
        p->nids++;
    room_set(p, id, 1);
    return r;
}

static void *unit_take(pool_t *p)
{
    void *u = NULL;
    pthread_mutex_lock(&p->lock);
    region_t *r = lowest_with_room(p);
    if (!r)
        r = region_new(p);
    if (r) {
        if (r->free) {
            u = r->free;
            UNIT_LINK_OPEN(u);
            r->free = *(void **)u;
        } else {
            u = (unsigned char *)r + REGION_HEAD + (size_t)r->fresh++ * p->unit;
        }
        if (++r->used == p->per_region)
            room_set(p, r->id, 0);
    }
    pthread_mutex_unlock(&p->lock);
    if (u) {
        UNIT_UNPOISON(u, p->unit);
        UNIT_TAKEN(u, p->unit);
    }
    return u;
}

static void unit_give(void *u)
{
    region_t *r = (region_t *)((uintptr_t)u & ~(uintptr_t)(REGION_SIZE - 1));
    pool_t *p = r->pool;
    UNIT_GIVEN(u);
    pthread_mutex_lock(&p->lock);
    UNIT_LINK_OPEN(u);
    *(void **)u = r->free; /* the link stays readable; the rest is poisoned while free */
    UNIT_POISON((unsigned char *)u + sizeof(void *), p->unit - sizeof(void *));
    r->free = u;
    if (r->used-- == p->per_region)
        room_set(p, r->id, 1);
    pthread_mutex_unlock(&p->lock);
}

void block_pools_trim(void)
{
    for (int i = 0; i < BLOCK_POOLS; i++) {
        pool_t *p = &pools[i];
        if (!atomic_load_explicit(&p->unit, memory_order_acquire))
            break;
        region_t *gone[64];
        int n = 0, spare = 1;
        pthread_mutex_lock(&p->lock);
        for (uint32_t id = 0; id < p->nids && n < 64; id++) {
            region_t *r = p->regions[id];
            if (!r || r->used)
                continue;
            if (spare) { /* the lowest empty one stays, for the next unit */
                spare = 0;
                continue;
            }
            p->regions[id] = NULL;
            room_set(p, id, 0);
            gone[n++] = r;
        }
        while (p->nids && !p->regions[p->nids - 1])
            p->nids--;
        pthread_mutex_unlock(&p->lock);
        for (int k = 0; k < n; k++) {
            UNIT_UNPOISON(gone[k], REGION_SIZE); /* the addresses may be mapped again */
            munmap(gone[k], REGION_SIZE);
        }
    }
}

static size_t unit_of(size_t cap)
{
    return (sizeof(block_t) + cap + 7) & ~(size_t)7;
}

static block_t *block_init(block_t *b, uint32_t cap)
{
    atomic_init(&b->refcount, 1);
    b->flags = 0;
    b->len = 0;
    b->cap = cap;
    b->offset = 0;
    atomic_init(&b->next, NULL);
    b->meta = NULL;
    return b;
}

block_t *block_new_pooled(size_t cap)
{
    pool_t *p = cap >= BLOCK_POOL_MIN && cap <= BLOCK_GATHER_MAX ? pool_for(unit_of(cap)) : NULL;
    if (!p)
        return block_new(cap);
    block_t *b = unit_take(p);
    return b ? block_init(b, (uint32_t)cap | BLOCK_POOLED) : block_new(cap);
}

block_t *block_new(size_t cap)
{
    block_t *b = malloc(sizeof(*b) + cap);
    return b ? block_init(b, (uint32_t)cap) : NULL;
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

/* ---- gathering slabs ---- */

#define SLAB_CHUNKS 8
#define SLAB_FULL ((1u << SLAB_CHUNKS) - 1)

typedef struct gather_pool gather_pool_t;
typedef struct gather_slab gather_slab_t;
struct gather_slab {
    gather_pool_t *owner;
    gather_slab_t *prev, *next; /* in its owner's list of slabs with a free chunk */
    uint16_t used;              /* one bit per chunk taken */
    uint16_t heap;              /* from the heap: the pool of 4096-byte rooms had no room */
    _Alignas(8) unsigned char data[][BLOCK_GATHER_CHUNK];
};
_Static_assert(sizeof(gather_slab_t) + SLAB_CHUNKS * BLOCK_GATHER_CHUNK <=
                   sizeof(block_t) + BLOCK_GATHER_MAX,
               "a slab is a unit of the pool of 4096-byte rooms");
_Static_assert(SLAB_CHUNKS * BLOCK_GATHER_CHUNK == BLOCK_GATHER_MAX, "a gathering fills a slab");

/* A thread's slabs with a free chunk, most recently given back to first (chunks are taken
 * from few slabs, so that the others empty out). Allocated once per thread and never freed: a
 * gathering may be emptied after its thread stopped. */
struct gather_pool {
    gather_slab_t *with_room;
    gather_pool_t *all_next; /* in all_gather_pools */
};
static __thread gather_pool_t *gather_pool;
/* every thread's, so that they stay reachable (a leak checker's view) after their thread ends */
static gather_pool_t *_Atomic all_gather_pools;

static gather_pool_t *gather_pool_new(void)
{
    gather_pool_t *g = calloc(1, sizeof(*g));
    if (g) {
        g->all_next = atomic_load_explicit(&all_gather_pools, memory_order_relaxed);
        while (!atomic_compare_exchange_weak(&all_gather_pools, &g->all_next, g))
            ;
    }
    return g;
}

static void slab_unlink(gather_slab_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        s->owner->with_room = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static void slab_push(gather_slab_t *s)
{
    s->prev = NULL;
    s->next = s->owner->with_room;
    if (s->next)
        s->next->prev = s;
    s->owner->with_room = s;
}

static gather_slab_t *slab_new(void)
{
    pool_t *p = pool_for(unit_of(BLOCK_GATHER_MAX));
    gather_slab_t *s = p ? unit_take(p) : NULL;
    if (s) {
        s->heap = 0;
    } else if ((s = malloc(sizeof(*s) + SLAB_CHUNKS * BLOCK_GATHER_CHUNK))) {
        s->heap = 1;
    } else {
        return NULL;
    }
    s->owner = gather_pool;
    s->used = 0;
    slab_push(s);
    return s;
}

/* A free chunk of this thread's slabs; its place in its slab in *slot. NULL on ENOMEM. */
static unsigned char *chunk_take(uint8_t *slot)
{
    if (!gather_pool && !(gather_pool = gather_pool_new()))
        return NULL;
    gather_slab_t *s = gather_pool->with_room ? gather_pool->with_room : slab_new();
    if (!s)
        return NULL;
    int i = __builtin_ctz(~(unsigned)s->used);
    s->used |= (uint16_t)(1u << i);
    if (s->used == SLAB_FULL)
        slab_unlink(s);
    *slot = (uint8_t)i;
    return s->data[i];
}

static void chunk_give(unsigned char *chunk, uint8_t slot)
{
    gather_slab_t *s = (gather_slab_t *)(chunk - offsetof(gather_slab_t, data) -
                                         (size_t)slot * BLOCK_GATHER_CHUNK);
    int was_full = s->used == SLAB_FULL;
    s->used &= (uint16_t)~(1u << slot);
    if (s->used == 0) {
        if (!was_full)
            slab_unlink(s);
        if (s->heap)
            free(s);
        else
            unit_give(s);
    } else if (was_full) {
        slab_push(s);
    }
}

/* ---- gathering ---- */

int block_gather_append(block_gather_t *g, const void *data, size_t n)
{
    size_t have = GATHER_CHUNKS(g->len), need = GATHER_CHUNKS(g->len + n);
    for (size_t i = have; i < need; i++) {
        if (!(g->chunk[i] = chunk_take(&g->slot[i]))) {
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
        if (g->chunk[i])
            chunk_give(g->chunk[i], g->slot[i]);
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
        if (b->cap & BLOCK_POOLED)
            unit_give(b);
        else
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
