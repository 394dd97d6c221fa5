/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bucket: a token bucket of bytes, for a rate enforced on one connection (a source's
 * <limit-rate>). Plain data with no clock of its own: the caller passes the time (the loop's
 * milliseconds). One owner, no lock. Counts in thousandths of a byte, so that a rate of bytes
 * per second times milliseconds adds up exactly.
 */
#ifndef RIMECAST_BUCKET_H
#define RIMECAST_BUCKET_H

#include <stddef.h>
#include <stdint.h>

typedef struct bucket {
    long rate;      /* bytes per second, > 0 */
    int64_t tokens; /* bytes x 1000 that may pass now; below 0: owed */
    int64_t cap;    /* the most it holds: rate x the window */
    uint64_t at_ms; /* when tokens were last counted */
} bucket_t;

/* A bucket of rate bytes/s (> 0) holding at most window_s seconds of it, starting with start_s
 * seconds' worth at now_ms. */
void bucket_init(bucket_t *b, long rate, int window_s, int start_s, uint64_t now_ms);

/* Bytes that may pass at now_ms (what accrued since the last count added first): at least 1
 * when any may, 0 when none. */
size_t bucket_room(bucket_t *b, uint64_t now_ms);

/* n bytes passed (the bucket may go below 0: a read larger than the room). */
void bucket_take(bucket_t *b, size_t n);

/* Milliseconds until bytes may pass again, counted at the last bucket_room; 0 when they may. */
uint64_t bucket_wait_ms(const bucket_t *b);

#endif
