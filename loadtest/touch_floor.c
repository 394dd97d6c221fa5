/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * touch_floor: what it costs to touch memory that was left alone for a while, as a server's
 * worker touches each connection's state once every few hundred milliseconds. Maps --mb MB of
 * anonymous memory (2 MB-aligned; with --huge marked MADV_HUGEPAGE, so the kernel backs it with
 * transparent huge pages where it can), touches all of it, then each round: picks --touches
 * lines on as many random pages, sleeps --sleep-ms, and times one read of each (cold), then
 * the same reads again at once (warm). Prints ns a touch per round, and the memory's share on
 * huge pages. Nothing else runs in the process: the cost is the caches', the TLB's and (in a
 * virtual machine) the host's.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static long huge_kb(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "AnonHugePages: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {{"mb", 1, 0, 'm'},     {"huge", 0, 0, 'h'},
                                       {"sleep-ms", 1, 0, 's'}, {"touches", 1, 0, 't'},
                                       {"rounds", 1, 0, 'r'},   {0, 0, 0, 0}};
    size_t mb = 64;
    int huge = 0, sleep_ms = 500, touches = 4000, rounds = 6;
    for (int c; (c = getopt_long(argc, argv, "", lo, NULL)) != -1;) {
        switch (c) {
        case 'm': mb = (size_t)atol(optarg); break;
        case 'h': huge = 1; break;
        case 's': sleep_ms = atoi(optarg); break;
        case 't': touches = atoi(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: touch_floor [--mb 64] [--huge] [--sleep-ms 500] "
                            "[--touches 4000] [--rounds 6]\n");
            return 2;
        }
    }
    if (mb < 2 || touches < 1 || rounds < 1 || sleep_ms < 0) {
        fprintf(stderr, "touch_floor: bad option\n");
        return 2;
    }
    size_t size = mb << 20, align = 2u << 20;
    char *raw = mmap(NULL, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    size_t *at = calloc((size_t)touches, sizeof(*at));
    if (raw == MAP_FAILED || !at) {
        perror("touch_floor");
        return 1;
    }
    char *mem = (char *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (huge && madvise(mem, size, MADV_HUGEPAGE) < 0)
        perror("madvise(MADV_HUGEPAGE)");
    for (size_t i = 0; i < size; i += 4096)
        mem[i] = 1;
    srand(1);
    volatile char sink = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < touches; i++)
            at[i] = ((size_t)rand() % (size / 4096)) * 4096 + (size_t)(rand() % 64) * 64;
        if (sleep_ms)
            usleep((useconds_t)sleep_ms * 1000);
        double t0 = now_ns();
        for (int i = 0; i < touches; i++)
            sink += mem[at[i]];
        double t1 = now_ns();
        for (int i = 0; i < touches; i++)
            sink += mem[at[i]];
        double t2 = now_ns();
        printf("round=%d sleep_ms=%d huge=%d cold_ns=%.0f warm_ns=%.0f\n", r, sleep_ms, huge,
               (t1 - t0) / touches, (t2 - t1) / touches);
    }
    printf("huge_pages_kb=%ld of %zu\n", huge_kb(), size >> 10);
    (void)sink;
    return 0;
}
