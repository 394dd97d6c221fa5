/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hugeheap: a thread that called hugeheap_thread() and then allocates and touches 96 MB
 * in connection-sized pieces, each passed to hugeheap_note(), gets every heap its pieces landed
 * in (its first and the further ones glibc opens once one is full) marked MADV_HUGEPAGE past
 * its first HUGEHEAP_LEAD bytes (which stay on small pages), opened whole, and mostly backed by
 * huge pages; a thread that never called hugeheap_thread() gets nothing marked by
 * hugeheap_note(). Skipped where the kernel gives no huge pages to marked memory, and in builds
 * that do not mark (AddressSanitizer); under valgrind, whose allocator has no such heaps, it
 * checks nothing and passes.
 */
#include <inttypes.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hugeheap.h"
#include "testlib.h"

#define HEAP ((uintptr_t)2 * 4 * 1024 * 1024 * sizeof(long)) /* glibc's thread heap */
#define PIECE 8192
#define PIECES (96u * 1024 * 1024 / PIECE)

typedef struct {
    uintptr_t base[8];
    int nbase;
} heaps_t;

static void *pieces[PIECES];
/* the marked thread stays until the unmarked one is done, so that this one gets an arena of
 * its own and not the marked thread's, given back at its end */
static sem_t checked, release;

/* The heaps the pieces landed in. */
static void heaps_of_pieces(heaps_t *h)
{
    h->nbase = 0;
    for (unsigned i = 0; i < PIECES; i++) {
        uintptr_t b = (uintptr_t)pieces[i] & ~(HEAP - 1);
        int k = 0;
        while (k < h->nbase && h->base[k] != b)
            k++;
        if (k == h->nbase && h->nbase < 8)
            h->base[h->nbase++] = b;
    }
}

typedef struct {
    int mappings, marked, writable; /* of the mappings inside [base, base + HEAP) */
    int lead_marked; /* of those, marked and starting in the heap's first HUGEHEAP_LEAD */
    long rss_kb, huge_kb;
} heap_state_t;

/* What /proc/self/smaps says of the mappings within [base, base + HEAP). */
static heap_state_t heap_state(uintptr_t base)
{
    heap_state_t s = {0};
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return s;
    char line[512];
    int in = 0, in_lead = 0;
    while (fgets(line, sizeof(line), f)) {
        uintptr_t lo, hi;
        char perms[8];
        long kb;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s", &lo, &hi, perms) == 3 &&
            strchr(line, '-') < strchr(line, ' ')) {
            in = hi > base && lo < base + HEAP;
            in_lead = in && lo < base + HUGEHEAP_LEAD;
            if (in) {
                s.mappings++;
                s.writable += strncmp(perms, "rw", 2) == 0;
            }
        } else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1) {
            s.rss_kb += kb;
        } else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
            s.huge_kb += kb;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            int hg = strstr(line, " hg") != NULL;
            s.marked += hg;
            s.lead_marked += hg && in_lead;
        }
    }
    fclose(f);
    return s;
}

static void allocate_pieces(void)
{
    for (unsigned i = 0; i < PIECES; i++) {
        pieces[i] = malloc(PIECE);
        if (!pieces[i])
            abort();
        hugeheap_note(pieces[i]);
        memset(pieces[i], (int)i, PIECE); /* touched, as a connection's state is */
    }
}

static void free_pieces(void)
{
    for (unsigned i = 0; i < PIECES; i++)
        free(pieces[i]);
}

static void *marked_thread(void *arg)
{
    (void)arg;
    hugeheap_thread();
    allocate_pieces();
    heaps_t h;
    heaps_of_pieces(&h);
    CHECK(h.nbase >= 2); /* 96 MB: past its first heap */
    long rss = 0, huge = 0;
    for (int k = 0; k < h.nbase; k++) {
        heap_state_t s = heap_state(h.base[k]);
        fprintf(stderr, "heap %d: %d mappings, %d marked, %d writable, rss %ld kB, huge %ld kB\n",
                k, s.mappings, s.marked, s.writable, s.rss_kb, s.huge_kb);
        /* every heap marked past its lead, which stays on small pages: a mapping of its own */
        CHECK(s.mappings >= 2 && s.marked == s.mappings - 1 && s.lead_marked == 0);
        CHECK(s.writable == s.mappings);                  /* and opened whole */
        rss += s.rss_kb;
        huge += s.huge_kb;
    }
    /* the heaps' growth faulted in huge pages: most of what the pieces touched */
    CHECK(huge * 2 >= rss);
    free_pieces();
    sem_post(&checked);
    sem_wait(&release);
    return NULL;
}

static void *unmarked_thread(void *arg)
{
    (void)arg;
    allocate_pieces(); /* hugeheap_note() without hugeheap_thread() */
    heaps_t h;
    heaps_of_pieces(&h);
    CHECK(h.nbase >= 1);
    for (int k = 0; k < h.nbase; k++)
        CHECK(heap_state(h.base[k]).marked == 0);
    free_pieces();
    return NULL;
}


int main(void)
{
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) {
        printf("test_hugeheap: under valgrind, whose allocator has no thread heaps: nothing checked\n");
        return 0;
    }
    if (!hugeheap_init()) {
        printf("test_hugeheap: skipped: no transparent huge pages here, or a build that does not mark\n");
        return 77;
    }
    sem_init(&checked, 0, 0);
    sem_init(&release, 0, 0);
    pthread_t marked, unmarked;
    if (pthread_create(&marked, NULL, marked_thread, NULL) != 0)
        abort();
    sem_wait(&checked);
    if (pthread_create(&unmarked, NULL, unmarked_thread, NULL) != 0)
        abort();
    pthread_join(unmarked, NULL);
    sem_post(&release);
    pthread_join(marked, NULL);
    return testlib_done();
}
