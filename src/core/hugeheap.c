/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "core/hugeheap.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core/log.h"

#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__) || !defined(MADV_HUGEPAGE)
#define HUGEHEAP_OFF 1
#endif

#ifndef HUGEHEAP_OFF
static atomic_int usable;
static atomic_int open_whole; /* a heap's reserved rest may be opened: it is not charged */

/* 1 if the kernel's transparent huge pages are "always" or "madvise", and this process may
 * have them (a parent may have turned them off for it: prctl PR_SET_THP_DISABLE, inherited). */
static int thp_enabled(void)
{
#ifdef PR_GET_THP_DISABLE
    if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1)
        return 0;
#endif
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return 0;
    char line[128] = "";
    int ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    return ok && (strstr(line, "[always]") || strstr(line, "[madvise]"));
}

/* 1 unless the kernel charges every writable private page against a commit limit
 * (vm.overcommit_memory 2): then opening a heap's reserved rest would charge it all. */
static int overcommit_lenient(void)
{
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    if (!f)
        return 0;
    int mode = -1;
    if (fscanf(f, "%d", &mode) != 1)
        mode = -1;
    fclose(f);
    return mode == 0 || mode == 1;
}
#endif

int hugeheap_init(void)
{
#ifdef HUGEHEAP_OFF
    return 0;
#else
    if (!thp_enabled())
        return 0;
    /* an allocation up to HUGEHEAP_ROOM comes from the (marked) heap, not a mapping of its own,
     * and a heap keeps twice that free at its top instead of giving it back: the steady state
     * glibc's own sliding thresholds reach once a buffer of that size was freed */
    if (!mallopt(M_MMAP_THRESHOLD, (int)(HUGEHEAP_ROOM + (1u << 20))) ||
        !mallopt(M_TRIM_THRESHOLD, (int)(2 * HUGEHEAP_ROOM)))
        return 0;
    atomic_store(&open_whole, overcommit_lenient());
    atomic_store(&usable, 1);
    return 1;
#endif
}

#ifndef HUGEHEAP_OFF
/* A thread heap of glibc: HUGEHEAP_HEAP bytes at an address aligned to that size, the part in
 * use readable and writable, the rest reserved (no access) until the heap grows into it. */
#define HUGEHEAP_HEAP ((uintptr_t)2 * 4 * 1024 * 1024 * sizeof(long))
/* how many heaps one thread's allocations are followed into */
#define HUGEHEAP_HEAPS 16

static _Thread_local int thread_on;                 /* hugeheap_thread() ran here */
static _Thread_local uintptr_t seen[HUGEHEAP_HEAPS]; /* heaps met, marked or not */
static _Thread_local int nseen;
static _Thread_local uintptr_t last;                /* the heap of the last hugeheap_note() */
static _Thread_local time_t seen_since;             /* when seen[] was last emptied */

/* 1 if the rest of /proc/self/maps' line after its inode is blank: no file, no [name]. */
static int no_path(const char *rest)
{
    return rest[strspn(rest, " \t\n")] == '\0';
}

/* Marks the thread heap at base MADV_HUGEPAGE past its first HUGEHEAP_LEAD bytes, its reserved
 * rest made readable and writable first: a page fault of the heap's growth, always at its end,
 * then finds the whole aligned 2 MB range inside one marked mapping and gets a huge page (the
 * part before HUGEHEAP_LEAD stays on small pages, see hugeheap.h; the rest would otherwise be
 * opened a few pages at a time, each fault at the mapping's end getting a small page). The
 * rest costs no memory until touched, and no commit charge (glibc reserves it MAP_NORESERVE;
 * where the kernel charges that anyway, vm.overcommit_memory 2, it is left reserved: only what
 * the heap has opened, and what it opens later as a whole aligned 2 MB, gets huge pages).
 * Only if [base, base + HUGEHEAP_HEAP) looks like such a heap: anonymous mappings without
 * holes, readable and writable from base on, then reserved to the end. Returns 1 if marked. */
static int mark_heap(uintptr_t base)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    uintptr_t end = base + HUGEHEAP_HEAP, at = base; /* marked up to at */
    uintptr_t closed_lo[4], closed_hi[4];
    int nclosed = 0, ok = 0;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        uintptr_t lo, hi;
        char perms[8];
        unsigned long long inode;
        int n = 0;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %llu%n", &lo, &hi, perms, &inode,
                   &n) != 4)
            continue;
        if (hi <= at)
            continue;
        /* contiguous anonymous mappings (one may run on past either end: the kernel merges
         * like neighbours) */
        if (lo > at || inode != 0 || !no_path(line + n))
            break;
        if (strncmp(perms, "---p", 4) == 0 && at != base) {
            if (nclosed == 4)
                break;
            closed_lo[nclosed] = at;
            closed_hi[nclosed++] = hi < end ? hi : end;
        } else if (strncmp(perms, "rw-p", 4) != 0 || nclosed) {
            break; /* the part in use, then only the reserved rest */
        }
        at = hi;
        if (at >= end) {
            ok = 1;
            break;
        }
    }
    fclose(f);
    if (!ok)
        return 0;
    for (int i = 0; i < nclosed && atomic_load(&open_whole); i++)
        if (mprotect((void *)closed_lo[i], closed_hi[i] - closed_lo[i], PROT_READ | PROT_WRITE) <
            0)
            return 0;
    return madvise((void *)(base + HUGEHEAP_LEAD), HUGEHEAP_HEAP - HUGEHEAP_LEAD,
                   MADV_HUGEPAGE) == 0;
}

/* The heap at base, met for the first time by this thread: marked. The heaps met are
 * forgotten each minute: glibc gives back a heap that empties, and may open a new one, not
 * marked, at the same address (marking a heap again changes nothing). */
static void meet_heap(uintptr_t base)
{
    last = base;
    time_t now = time(NULL);
    if (now - seen_since >= 60) {
        nseen = 0;
        seen_since = now;
    }
    for (int i = 0; i < nseen; i++)
        if (seen[i] == base)
            return;
    if (nseen == HUGEHEAP_HEAPS)
        return;
    seen[nseen++] = base;
    if (!mark_heap(base))
        log_debug("hugeheap: a heap of a thread was not marked for huge pages");
}
#endif

void hugeheap_thread(void)
{
#ifndef HUGEHEAP_OFF
    if (!atomic_load(&usable))
        return;
    void *p = malloc(64); /* the thread's arena and its first heap, made now if not yet */
    if (!p)
        return;
    thread_on = 1;
    meet_heap((uintptr_t)p & ~(HUGEHEAP_HEAP - 1));
    free(p);
#endif
}

void hugeheap_note(const void *p)
{
#ifndef HUGEHEAP_OFF
    uintptr_t base = (uintptr_t)p & ~(HUGEHEAP_HEAP - 1);
    if (!thread_on || base == last)
        return;
    meet_heap(base);
#else
    (void)p;
#endif
}
