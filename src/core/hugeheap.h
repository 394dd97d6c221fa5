/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hugeheap: the workers' malloc heaps on transparent huge pages.
 *
 * A worker touches each of its connections' state (the connection, its request and read
 * buffer, an HLS session, a listener) once every few hundred milliseconds, a few lines each,
 * spread over megabytes. With 4 KB pages nearly every such touch misses the TLB as well as the
 * caches, and in a virtual machine a TLB miss walks two sets of page tables: measured on a
 * 2-core VM, a line last touched 500 ms before cost 7-11 us with 4 KB pages and 0.2-0.4 us
 * with 2 MB pages (docs/PERFORMANCE.md, "The heap on huge pages").
 *
 * The kernel gives huge pages to memory marked MADV_HUGEPAGE (Debian's default THP mode is
 * "madvise"), when a page fault finds a whole aligned 2 MB range inside the marked mapping.
 * glibc gives each thread's arena heaps of 64 MB, reserved at once and opened a few pages at a
 * time as the heap grows, so the faults of its growth land at the end of the open mapping and
 * would get small pages. hugeheap_thread() therefore opens the whole of the calling thread's
 * heap (the pages cost no memory until touched) and marks it MADV_HUGEPAGE past its first
 * HUGEHEAP_LEAD bytes; hugeheap_note(), given each new connection's state, does the same for
 * each further heap glibc opens for the thread once one is full (a worker past a few thousand
 * connections, TLS ones sooner).
 * glibc's thresholds are set so that allocations up to HUGEHEAP_ROOM come from the heaps, and
 * free room at a heap's top is kept, not given back and faulted in again as small pages.
 *
 * Nothing here changes what a program computes: where the kernel has no transparent huge pages
 * (or they are "never"), in a process started with them turned off (prctl PR_SET_THP_DISABLE,
 * which children inherit), under AddressSanitizer, or when a step fails, the heap stays as it
 * was and glibc's thresholds too.
 */
#ifndef RIMECAST_HUGEHEAP_H
#define RIMECAST_HUGEHEAP_H

/* Allocations up to this size come from the (marked) heaps, and twice as much free room at a
 * heap's top is kept. */
#define HUGEHEAP_ROOM (16u << 20)

/* The first HUGEHEAP_LEAD bytes of each heap stay on small pages (not marked): a heap on huge
 * pages is resident by the 2 MB range at its growing end, so a worker holding little (a few
 * hundred sources, a few hundred listeners) would hold 2 MB for it; its state is then on small
 * pages, resident by what it uses, and the huge pages begin where a worker's state grows large,
 * where their fewer misses of the TLB count. */
#define HUGEHEAP_LEAD (2u << 20)

/* Once, in the main thread before any other starts: 1 if the kernel gives huge pages to marked
 * memory (then glibc's thresholds are set so that the room stays in the heaps), else 0. */
int hugeheap_init(void);

/* In a long-lived thread (a worker), before its work: its heap is opened and marked. */
void hugeheap_thread(void);

/* In such a thread, with each new long-lived allocation (a connection's): the heap holding p,
 * if this thread meets it for the first time, is opened and marked too. One comparison when
 * it is the heap of the last call; nothing in other threads. */
void hugeheap_note(const void *p);

#endif
