/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bucket: a token bucket of bytes (see bucket.h). Arithmetic only: no clock, no allocation.
 */
#include "core/bucket.h"

void bucket_init(bucket_t *b, long rate, int window_s, int start_s, uint64_t now_ms)
{
    b->rate = rate > 0 ? rate : 1;
    b->cap = (int64_t)b->rate * 1000 * window_s;
    b->tokens = (int64_t)b->rate * 1000 * start_s;
    if (b->tokens > b->cap)
        b->tokens = b->cap;
    b->at_ms = now_ms;
}

size_t bucket_room(bucket_t *b, uint64_t now_ms)
{
    if (now_ms > b->at_ms) {
        uint64_t ms = now_ms - b->at_ms;
        int64_t room = b->cap - b->tokens; /* what it can still take */
        /* bytes/s x ms = bytes x 1000 */
        b->tokens = ms >= (uint64_t)(room / b->rate) + 1 ? b->cap
                                                          : b->tokens + b->rate * (int64_t)ms;
        b->at_ms = now_ms;
    }
    return b->tokens > 0 ? (size_t)(b->tokens / 1000) + 1 : 0;
}

void bucket_take(bucket_t *b, size_t n)
{
    b->tokens -= (int64_t)n * 1000;
}

uint64_t bucket_wait_ms(const bucket_t *b)
{
    return b->tokens > 0 ? 0 : (uint64_t)(-b->tokens / b->rate) + 1;
}
