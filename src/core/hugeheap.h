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
 * glibc grows a thread's heap a few pages at a time, so its faults land at the mapping's end and
 * get small pages. hugeheap_thread() therefore grows the calling thread's heap once by
 * HUGEHEAP_RESERVE bytes (one allocation, freed at once: the pages are not touched, so they
 * cost no memory until used), marks the heap MADV_HUGEPAGE, and glibc then keeps that room
 * (its trim threshold is raised above it) and carves later allocations out of it.
 *
 * Nothing here changes what a program computes: where the kernel has no transparent huge pages
 * (or they are "never"), in a process started with them turned off (prctl PR_SET_THP_DISABLE,
 * which children inherit), under AddressSanitizer, or when a step fails, the heap stays as it
 * was and glibc's thresholds too.
 */
#ifndef RIMECAST_HUGEHEAP_H
#define RIMECAST_HUGEHEAP_H

/* The room each worker's heap is grown by once, then kept. */
#define HUGEHEAP_RESERVE (16u << 20)

/* Once, in the main thread before any other starts: 1 if the kernel gives huge pages to marked
 * memory (then glibc's thresholds are set so that the room stays in the heaps), else 0. */
int hugeheap_init(void);

/* In a long-lived thread (a worker), before its work: its heap is grown and marked. */
void hugeheap_thread(void);

#endif
