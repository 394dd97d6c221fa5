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
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core/log.h"

#if defined(__SANITIZE_ADDRESS__) || !defined(__GLIBC__) || !defined(MADV_HUGEPAGE)
#define HUGEHEAP_OFF 1
#endif

#ifndef HUGEHEAP_OFF
static atomic_int usable;

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
#endif

int hugeheap_init(void)
{
#ifdef HUGEHEAP_OFF
    return 0;
#else
    if (!thp_enabled())
        return 0;
    /* an allocation of the reserve's size comes from the heap, not its own mapping, and a heap
     * keeps that much free room at its top instead of giving it back: the steady state glibc's
     * own sliding thresholds reach once a buffer of that size was freed */
    if (!mallopt(M_MMAP_THRESHOLD, (int)(HUGEHEAP_RESERVE + (1u << 20))) ||
        !mallopt(M_TRIM_THRESHOLD, (int)(2 * HUGEHEAP_RESERVE)))
        return 0;
    atomic_store(&usable, 1);
    return 1;
#endif
}

#ifndef HUGEHEAP_OFF
/* Marks the mapping of this process that holds p MADV_HUGEPAGE, and the reserved, not yet
 * usable mapping right after it (a thread heap's rest, which glibc opens as the heap grows).
 * Returns the bytes marked. */
static size_t mark_mapping_of(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    uintptr_t at = (uintptr_t)p, end = 0;
    size_t marked = 0;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        uintptr_t lo, hi;
        char perms[8];
        unsigned long long inode;
        if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %llu", &lo, &hi, perms, &inode) !=
            4)
            continue;
        if (!end) {
            if (at < lo || at >= hi)
                continue;
            if (inode != 0 || perms[0] != 'r' || perms[1] != 'w')
                break; /* not an anonymous heap: leave it */
        } else if (lo != end || inode != 0 || strncmp(perms, "---p", 4) != 0) {
            break;
        }
        if (madvise((void *)lo, hi - lo, MADV_HUGEPAGE) < 0)
            break;
        marked += hi - lo;
        if (end)
            break; /* the reserved rest: done */
        end = hi;
    }
    fclose(f);
    return marked;
}
#endif

void hugeheap_thread(void)
{
#ifndef HUGEHEAP_OFF
    if (!atomic_load(&usable))
        return;
    /* one allocation grows the heap by the reserve; glibc writes only its two ends */
    void *room = malloc(HUGEHEAP_RESERVE);
    if (!room)
        return;
    if (!mark_mapping_of(room))
        log_debug("hugeheap: a thread's heap was not marked for huge pages");
    free(room);
#endif
}
