/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests for blocks, ICY metadata blocks and a mount's block queue, including one producer
 * and several consumer threads following the queue concurrently while it is trimmed.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/block.h"
#include "net/server.h"
#include "stream/mount.h"
#include "testlib.h"

static unsigned char pattern(uint64_t offset)
{
    return (unsigned char)((offset * 2654435761u) >> 13);
}

static void test_long_chain_release(void)
{
    /* a million linked blocks released by one unref must not recurse */
    block_t *head = block_new(1), *tail = head;
    for (int i = 0; i < 1000000; i++) {
        block_t *b = block_new(1);
        block_link(tail, b);
        tail = b;
    }
    CHECK(block_next(head) != NULL);
    block_unref(head);
    CHECK(1);
}

/* Pooled blocks: a freed one is the next one's place, the regions that empty out go back to
 * the system (all but one) when trimmed, and a room outside the pools' range, or past the
 * number of pools, comes from the heap. */
static int mapped(const void *p)
{
    unsigned char v;
    uintptr_t page = (uintptr_t)p & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    return mincore((void *)page, 1, &v) == 0;
}

static void test_pooled_blocks(void)
{
    enum { N = 200 };
    static block_t *b[N];
    static void *was[N];
    for (int i = 0; i < N; i++) {
        b[i] = block_new_pooled(4096);
        CHECK(b[i] && (b[i]->cap & BLOCK_POOLED) && block_cap(b[i]) == 4096 && b[i]->len == 0);
        memset(b[i]->data, i, 4096);
        was[i] = b[i];
    }
    for (int i = 0; i < N; i++) {
        CHECK(b[i]->data[0] == (unsigned char)i && b[i]->data[4095] == (unsigned char)i);
        block_unref(b[i]);
    }
    for (int i = 0; i < N; i++) { /* the same places again */
        b[i] = block_new_pooled(4096);
        int found = 0;
        for (int k = 0; k < N && !found; k++)
            found = was[k] == (void *)b[i];
        CHECK(found);
    }
    for (int i = 0; i < N; i++)
        block_unref(b[i]);
    block_pools_trim();
    int unmapped = 0;
    for (int i = 0; i < N; i++)
        unmapped += !mapped(was[i]);
    CHECK(unmapped >= N - 64); /* 63 blocks a region: one region kept */
    block_t *small = block_new_pooled(BLOCK_POOL_MIN - 1), *big = block_new_pooled(5000);
    CHECK(small && !(small->cap & BLOCK_POOLED) && big && !(big->cap & BLOCK_POOLED));
    block_unref(small);
    block_unref(big);
    int pooled = 0;
    for (int i = 0; i < BLOCK_POOLS + 4; i++) {
        b[i] = block_new_pooled(2000 + 64 * (size_t)i);
        CHECK(b[i] && block_cap(b[i]) == 2000 + 64 * (size_t)i);
        pooled += !!(b[i]->cap & BLOCK_POOLED);
    }
    CHECK(pooled <= BLOCK_POOLS - 1); /* the pool of 4096 took one */
    for (int i = 0; i < BLOCK_POOLS + 4; i++)
        block_unref(b[i]);
}

/* Gathered bytes come out as they went in, across any split and any drop from the front, and
 * only the chunks the bytes fill stay allocated. */
static int gather_chunks_held(const block_gather_t *g)
{
    int n = 0;
    for (size_t i = 0; i < sizeof(g->chunk) / sizeof(g->chunk[0]); i++)
        n += g->chunk[i] != NULL;
    return n;
}

static void test_gather_keeps_bytes_in_order_and_only_filled_chunks(void)
{
    static const size_t pieces[] = {1, 7, 511, 512, 513, 1600, 4096};
    static const size_t drops[] = {0, 1, 418, 512, 1000, 3000};
    unsigned char in[BLOCK_GATHER_MAX], out[BLOCK_GATHER_MAX];
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 7 + i / 251);
    for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
        for (size_t d = 0; d < sizeof(drops) / sizeof(drops[0]); d++) {
            block_gather_t g = {0};
            for (size_t at = 0; at < sizeof(in); at += pieces[p]) {
                size_t n = sizeof(in) - at < pieces[p] ? sizeof(in) - at : pieces[p];
                CHECK(block_gather_append(&g, in + at, n) == 0);
                CHECK(gather_chunks_held(&g) ==
                      (int)((g.len + BLOCK_GATHER_CHUNK - 1) / BLOCK_GATHER_CHUNK));
            }
            CHECK(g.len == sizeof(in));
            unsigned char first[3904];
            block_gather_copy(&g, 0, first, sizeof(first));
            CHECK(memcmp(first, in, sizeof(first)) == 0);
            block_gather_drop(&g, drops[d]);
            size_t rest = sizeof(in) - drops[d];
            CHECK(g.len == rest);
            block_gather_copy(&g, 0, out, rest);
            CHECK(memcmp(out, in + drops[d], rest) == 0);
            CHECK(gather_chunks_held(&g) ==
                  (int)((rest + BLOCK_GATHER_CHUNK - 1) / BLOCK_GATHER_CHUNK));
            CHECK(block_gather_append(&g, in, drops[d]) == 0); /* fills up again after a drop */
            block_gather_copy(&g, rest, out, drops[d]);
            CHECK(memcmp(out, in, drops[d]) == 0);
            block_gather_truncate(&g, 100);
            CHECK(g.len == 100 && gather_chunks_held(&g) == 1);
            block_gather_truncate(&g, 0);
            CHECK(g.len == 0 && gather_chunks_held(&g) == 0);
        }
    }
}

static void test_icy_meta(void)
{
    icy_meta_t *m = icy_meta_new("Artist - Song", NULL);
    const char *want = "StreamTitle='Artist - Song';";
    CHECK(m->data[0] == (strlen(want) + 15) / 16);
    CHECK(m->len == 1u + m->data[0] * 16u);
    CHECK(memcmp(m->data + 1, want, strlen(want)) == 0);
    for (uint32_t i = 1 + (uint32_t)strlen(want); i < m->len; i++)
        CHECK(m->data[i] == 0);
    icy_meta_unref(m);

    m = icy_meta_new("t", "http://x/");
    CHECK(memcmp(m->data + 1, "StreamTitle='t';StreamUrl='http://x/';", 38) == 0);
    icy_meta_unref(m);

    /* overlong text: capped at 255*16 bytes, cut on a UTF-8 boundary, still terminated */
    size_t n = 10000;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i += 2)
        memcpy(big + i, "\xc3\xa9", 2);
    big[n] = 0;
    m = icy_meta_new(big, NULL);
    CHECK(m->data[0] == 255);
    const char *body = (const char *)m->data + 1;
    size_t blen = strnlen(body, 255 * 16);
    CHECK(blen <= 255 * 16);
    CHECK(memcmp(body + blen - 2, "';", 2) == 0);
    CHECK((blen - 2 - strlen("StreamTitle='")) % 2 == 0); /* whole two-byte characters */
    icy_meta_unref(m);
    free(big);

    m = icy_meta_new(NULL, NULL);
    CHECK(memcmp(m->data + 1, "StreamTitle='';", 15) == 0);
    icy_meta_unref(m);
}

#define PRODUCE_BYTES (8u << 20)
#define CONSUMERS 4

typedef struct consumer {
    mount_t *mount;
    uint64_t received;
    int errors;
    int slow;
} consumer_t;

static void *consume(void *arg)
{
    consumer_t *c = arg;
    uint32_t pos;
    block_t *hdr;
    block_t *b = mount_attach(c->mount, &pos, &hdr);
    uint64_t expect = b->offset + pos;
    unsigned spin = 0;
    for (;;) {
        for (; pos < b->len; pos++, expect++, c->received++)
            if (b->data[pos] != pattern(expect))
                c->errors++;
        block_t *n = block_next(b);
        if (!n) {
            if (atomic_load(&c->mount->ended) && !block_next(b))
                break;
            if (++spin % 64 == 0)
                sched_yield();
            continue;
        }
        if (n->offset != expect)
            c->errors++;
        block_ref(n);
        block_unref(b);
        b = n;
        pos = 0;
        if (c->slow)
            sched_yield();
    }
    block_unref(b);
    return NULL;
}

static const mount_feed_t feed = {0}; /* not Ogg, no source connection */

static void test_queue_concurrent(void)
{
    mount_info_t info = {0};
    int err = 0;
    mount_t *m = mount_create("/q", &info, &feed, &err);
    CHECK(m != NULL);
    CHECK(mount_find("/q") == m);
    mount_unref(m);
    mount_info_t info2 = {0};
    CHECK(mount_create("/q", &info2, &feed, &err) == NULL && err == -EEXIST);

    pthread_t th[CONSUMERS];
    consumer_t cons[CONSUMERS];
    for (int i = 0; i < CONSUMERS; i++) {
        cons[i] = (consumer_t){.mount = m, .slow = i % 2};
        pthread_create(&th[i], NULL, consume, &cons[i]);
    }
    uint64_t off = 0;
    unsigned seed = 1;
    while (off < PRODUCE_BYTES) {
        size_t len = 1 + (size_t)(rand_r(&seed) % 6000);
        /* consumers free pooled blocks from their threads too */
        block_t *b = len % 2 ? block_new(len) : block_new_pooled(len);
        for (size_t i = 0; i < len; i++)
            b->data[i] = pattern(off + i);
        b->len = (uint32_t)len;
        b->flags = BLOCK_SYNC;
        mount_publish(m, b);
        off += len;
    }
    CHECK(mount_head_end(m) == off);
    mount_end(m);
    for (int i = 0; i < CONSUMERS; i++) {
        pthread_join(th[i], NULL);
        CHECK(cons[i].errors == 0);
        CHECK(cons[i].received > 0);
    }
    CHECK(mount_find("/q") == NULL);
    /* retained memory is bounded by the burst window */
    uint64_t retained = 0;
    for (block_t *b = m->oldest; b; b = block_next(b))
        retained += b->len;
    CHECK(retained <= 65536 + 6000);
    mount_unref(m);
}

/* 100 blocks of 1000 bytes, a sync point every `every` blocks, on a new mount. */
static mount_t *queue_of_100(const char *name, int every)
{
    mount_info_t info = {0};
    int err;
    mount_t *m = mount_create(name, &info, &feed, &err);
    for (int i = 0; i < 100; i++) {
        block_t *b = block_new(1000);
        memset(b->data, i, 1000);
        b->len = 1000;
        b->flags = (i % every == 0) ? BLOCK_SYNC : 0;
        mount_publish(m, b);
    }
    return m;
}

static void test_burst_start(void)
{
    mount_t *m = queue_of_100("/b", 10);
    uint32_t pos;
    block_t *hdr;
    block_t *b = mount_attach(m, &pos, &hdr);
    /* burst 65536 from head 100000: the oldest sync block at or after offset 34464 is 40000
     * (at most burst-size bytes), and the queue was trimmed to it */
    CHECK(b->offset == 40000 && pos == 0 && (b->flags & BLOCK_SYNC));
    CHECK(m->oldest->offset == 40000);
    block_unref(b);
    atomic_store(&m->burst_size, 0);
    b = mount_attach(m, &pos, &hdr);
    CHECK(b->offset == 99000 && pos == 1000); /* live edge */
    block_unref(b);
    mount_end(m);
    mount_unref(m);
    /* every block a sync point: less than a block short of burst-size, and the queue holds
     * no block before it */
    m = queue_of_100("/every", 1);
    b = mount_attach(m, &pos, &hdr);
    CHECK(b->offset == 35000 && pos == 0 && m->oldest == b);
    block_unref(b);
    mount_end(m);
    mount_unref(m);
}

/* Bytes the source gathered count in the burst: the queue keeps the blocks a new listener
 * starts at for a burst point of (newest byte read - burst-size), and starts it there. */
static void test_gathered_bytes_count_in_the_burst(void)
{
    mount_t *m = queue_of_100("/g", 1);
    uint32_t pos;
    block_t *hdr;
    mount_set_gathered(m, 2500); /* read up to 102500: burst point 36964 */
    CHECK(m->oldest->offset == 37000);
    block_t *b = mount_attach(m, &pos, &hdr);
    CHECK(b->offset == 37000 && pos == 0);
    block_unref(b);
    block_t *more = block_new(1000); /* 1000 of the 2500 become a block */
    memset(more->data, 0, 1000);
    more->len = 1000;
    more->flags = BLOCK_SYNC;
    mount_publish(m, more);
    CHECK(m->gathered == 1500 && m->oldest->offset == 37000);
    mount_set_gathered(m, 0); /* the queue does not grow back: the listener starts after */
    b = mount_attach(m, &pos, &hdr);
    CHECK(b->offset == 37000 && pos == 0);
    block_unref(b);
    mount_end(m);
    mount_unref(m);
}

int main(void)
{
    static const char xml[] = "<icecast><limits><burst-size>65536</burst-size>"
                              "<write-window>100</write-window></limits></icecast>";
    config_t *cfg;
    char err[512];
    if (config_load_buffer(xml, sizeof(xml) - 1, "test", &cfg, err, sizeof(err), NULL) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    server_set_config(cfg);
    RUN(test_long_chain_release);
    RUN(test_pooled_blocks);
    RUN(test_gather_keeps_bytes_in_order_and_only_filled_chunks);
    RUN(test_icy_meta);
    RUN(test_queue_concurrent);
    RUN(test_burst_start);
    RUN(test_gathered_bytes_count_in_the_burst);
    server_free_configs();
    return testlib_done();
}
