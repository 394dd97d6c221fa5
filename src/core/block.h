/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * block: immutable, refcounted chunks of stream data shared by every listener.
 *
 * A block is filled once by its producer (a source's format handler), then published and never
 * written again. Blocks of one mount form a singly linked chain in stream order; each block holds
 * one reference on its successor, so a cursor (one reference on one block) keeps everything after
 * it alive. Freeing walks the chain iteratively. The only cross-thread operations are the
 * refcount and the `next` link (release on publish, acquire on read).
 * ICY metadata hangs off blocks as a refcounted icy_meta_t; blocks do not parse anything.
 */
#ifndef RIMECAST_BLOCK_H
#define RIMECAST_BLOCK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum {
    BLOCK_SYNC = 1u << 0,   /* a listener may start at the first byte of this block */
    BLOCK_HEADER = 1u << 1, /* codec header data (Ogg BOS/comment/setup pages) */
};

/* Pre-encoded ICY metadata: data[0] is the length byte L, then L*16 bytes, NUL padded. */
typedef struct icy_meta {
    atomic_int refcount;
    uint32_t len; /* 1 + L*16 */
    char *title;  /* plain UTF-8 title (for stats); may be NULL */
    char *url;    /* StreamUrl; may be NULL */
    unsigned char data[];
} icy_meta_t;

typedef struct block block_t;
struct block {
    atomic_int refcount;
    uint32_t flags;
    uint32_t len;                /* bytes used in data[] */
    uint32_t cap;                /* bytes allocated for data[]; BLOCK_POOLED: from a pool */
    uint64_t offset;             /* absolute stream offset of data[0] */
    _Atomic(block_t *) next;     /* successor, NULL at the live edge; owns one reference */
    icy_meta_t *meta;            /* metadata current at this block (owned reference) or NULL */
    unsigned char data[];
};

/* Allocates a block with room for cap bytes, refcount 1, len 0. NULL on ENOMEM. */
block_t *block_new(size_t cap);
/* The same from the pool of blocks of that room, for the blocks a source makes again and again
 * at one size (the generic format's room). The blocks of one room live in regions of their own
 * (256 KB, mapped apart from the heap) and a freed one is the next one's place: the heap's
 * small, long-lived allocations (a new source's structures, strings) never land in the middle
 * of a source's queue, where they split the room of a block that is freed into pieces no
 * later block fits. A room outside [BLOCK_POOL_MIN, BLOCK_GATHER_MAX], a new room when
 * BLOCK_POOLS rooms have pools, or a unit past a pool's 2 GB, comes from the heap (block_new). Freed by block_unref like
 * any block, from any thread. */
#define BLOCK_POOLED (1u << 31)
#define BLOCK_POOL_MIN 1024
#define BLOCK_POOLS 16
block_t *block_new_pooled(size_t cap);
/* Gives the pools' empty regions back to the system but one per pool. Any thread; called
 * every second by every worker, so that freeing a block never makes a system call. */
void block_pools_trim(void);
/* Allocates a block holding a copy of len bytes. */
block_t *block_new_copy(const void *data, size_t len);

/* The bytes allocated for b->data. */
static inline size_t block_cap(const block_t *b) { return b->cap & ~BLOCK_POOLED; }

static inline block_t *block_ref(block_t *b)
{
    atomic_fetch_add_explicit(&b->refcount, 1, memory_order_relaxed);
    return b;
}

/* Drops one reference; frees the block (and, iteratively, successors that drop to 0). */
void block_unref(block_t *b);

static inline block_t *block_next(const block_t *b)
{
    return atomic_load_explicit(&((block_t *)b)->next, memory_order_acquire);
}

static inline uint64_t block_end(const block_t *b) { return b->offset + b->len; }

/* Links `b` after `tail` (tail->next must be NULL) and publishes it to readers.
 * Consumes the caller's reference on b (it becomes tail's link reference). */
void block_link(block_t *tail, block_t *b);

/* A source's bytes gathered until they make a block, in chunks of BLOCK_GATHER_CHUNK bytes
 * taken as the bytes fill them and given back as they are emptied: between blocks a source
 * holds what it gathered, rounded up to a chunk, not a whole block's room. Chunks [0, len
 * rounded up) are taken, the others NULL. At most BLOCK_GATHER_MAX bytes. Zeroed: empty.
 * The chunks come from slabs of eight, a slab being a block of the pool of 4096-byte rooms:
 * what a source gathers between two blocks and what its queue keeps are the same memory, so
 * one can take the place the other gave back (the queue lets a block go as the gathering
 * grows: format_sink_t.gathered). A thread's gatherings share its slabs, and a slab goes back
 * when all eight chunks are back. A gathering is used by one thread, the one that appends to
 * it, and emptied by it or after that thread has stopped; nothing here is shared with
 * listeners (blocks are made by copying out). */
#define BLOCK_GATHER_CHUNK 512
#define BLOCK_GATHER_MAX 4096
typedef struct block_gather {
    unsigned char *chunk[BLOCK_GATHER_MAX / BLOCK_GATHER_CHUNK];
    uint8_t slot[BLOCK_GATHER_MAX / BLOCK_GATHER_CHUNK]; /* each chunk's place in its slab */
    uint32_t len;
} block_gather_t;

/* Appends n bytes (len + n <= BLOCK_GATHER_MAX). 0, or -ENOMEM with nothing appended. */
int block_gather_append(block_gather_t *g, const void *data, size_t n);
/* Copies n gathered bytes from offset off (off + n <= len) into dst (a block is made by
 * copying its bytes out). */
void block_gather_copy(const block_gather_t *g, size_t off, void *dst, size_t n);
/* Drops the first n bytes (n <= len): the rest moves to the front, emptied chunks are freed. */
void block_gather_drop(block_gather_t *g, size_t n);
/* Keeps the first n bytes (n <= len) and frees the chunks past them; 0 empties it. */
void block_gather_truncate(block_gather_t *g, size_t n);

/* ICY metadata. icy_meta_new builds "StreamTitle='title';[StreamUrl='url';]" padded; title/url
 * may be NULL. Text longer than the ICY maximum (4080 bytes) is truncated on a UTF-8 boundary.
 * A single quote inside the title is kept as is (players read up to "';"). */
icy_meta_t *icy_meta_new(const char *title, const char *url);
static inline icy_meta_t *icy_meta_ref(icy_meta_t *m)
{
    if (m)
        atomic_fetch_add_explicit(&m->refcount, 1, memory_order_relaxed);
    return m;
}
void icy_meta_unref(icy_meta_t *m);

#endif
