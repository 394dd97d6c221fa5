/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_history: the listener and bandwidth rings: rates from running byte totals, the hour
 * ring keeping its last 360 samples oldest first, 30 hour samples folding into one day
 * sample (peak listeners, mean rate), the rings keeping every sample in order at each count
 * while their room grows, series aging out, and the cap on series.
 */
#include "stats/history.h"

#include <errno.h>
#include <stdlib.h>

#include "testlib.h"

static void rates_come_from_byte_totals(void)
{
    history_t *h = history_new(4);
    history_point_t p[4];
    CHECK(history_sample(h, "/a", 1000, 2, 5000) == 0);
    CHECK(history_sample(h, "/a", 1010, 3, 15000) == 0);
    CHECK(history_sample(h, "/a", 1020, 1, 14000) == 0);   /* total went down: no rate */
    CHECK(history_get(h, "/a", 0, p, 4) == 3);
    CHECK(p[0].t == 1000 && p[0].listeners == 2 && p[0].bytes_per_s == 0);
    CHECK(p[1].t == 1010 && p[1].listeners == 3 && p[1].bytes_per_s == 1000);
    CHECK(p[2].listeners == 1 && p[2].bytes_per_s == 0);
    CHECK(history_get(h, "/none", 0, p, 4) == -ENOENT);
    history_free(h);
}

static void hour_ring_keeps_the_last_hour_oldest_first(void)
{
    history_t *h = history_new(2);
    static history_point_t p[HISTORY_FINE_LEN];
    for (int i = 0; i < HISTORY_FINE_LEN + 25; i++)
        history_sample(h, "", 10 * i, i, 0);
    CHECK(history_get(h, "", 0, p, HISTORY_FINE_LEN) == HISTORY_FINE_LEN);
    CHECK(p[0].listeners == 25 && p[0].t == 250);
    CHECK(p[HISTORY_FINE_LEN - 1].listeners == HISTORY_FINE_LEN + 24);
    CHECK(history_get(h, "", 0, p, 10) == 10);             /* a short buffer: the newest */
    CHECK(p[9].listeners == HISTORY_FINE_LEN + 24 && p[0].listeners == HISTORY_FINE_LEN + 15);
    history_free(h);
}

/* The room grows from none in steps (32, 128, then the whole ring): at every count on the way
 * each sample is there once, oldest first; a day ring has nothing before its first sample. */
static void rings_keep_every_sample_in_order_while_they_grow(void)
{
    history_t *h = history_new(2);
    static history_point_t p[HISTORY_FINE_LEN];
    CHECK(history_sample(h, "/g", 10, 0, 0) == 0);
    CHECK(history_get(h, "/g", 1, p, HISTORY_FINE_LEN) == 0);
    for (int n = 2; n <= HISTORY_FINE_LEN + 3; n++) {
        CHECK(history_sample(h, "/g", 10 * n, n - 1, 0) == 0);
        int want = n < HISTORY_FINE_LEN ? n : HISTORY_FINE_LEN, got;
        got = history_get(h, "/g", 0, p, HISTORY_FINE_LEN);
        int ok = got == want;
        for (int i = 0; ok && i < want; i++)
            ok = p[i].listeners == (uint32_t)(n - want + i);
        if (!ok)
            CHECK(!"hour ring out of order" && n);
    }
    history_free(h);
}

static void day_ring_folds_thirty_samples(void)
{
    history_t *h = history_new(2);
    history_point_t p[4];
    uint64_t bytes = 0;
    for (int i = 0; i < 60; i++) {
        bytes += (i < 30 ? 100 : 300) * 10;
        history_sample(h, "/m", 10 * (i + 1), i == 7 ? 9 : 1, bytes);
    }
    CHECK(history_get(h, "/m", 1, p, 4) == 2);
    CHECK(p[0].listeners == 9 && p[0].t == 300);
    CHECK(p[0].bytes_per_s == 96);                         /* first sample has no rate: 2900/30 */
    CHECK(p[1].listeners == 1 && p[1].bytes_per_s == 300);
    history_free(h);
}

static void gone_series_age_out_and_the_cap_holds(void)
{
    history_t *h = history_new(2);
    CHECK(history_sample(h, "/a", 100, 1, 0) == 0);
    CHECK(history_sample(h, "/b", 100, 1, 0) == 0);
    CHECK(history_sample(h, "/c", 100, 1, 0) == -ENOSPC);  /* both seen now: no room */
    CHECK(history_count(h) == 2);
    CHECK(history_sample(h, "/b", 110, 1, 0) == 0);
    CHECK(history_sample(h, "/c", 110, 1, 0) == 0);        /* /a (seen longest ago) made room */
    history_point_t p[1];
    CHECK(history_get(h, "/a", 0, p, 1) == -ENOENT);
    history_sweep(h, 110 + HISTORY_COARSE_LEN * HISTORY_COARSE_STEP);
    CHECK(history_count(h) == 2);                          /* a day exactly: still kept */
    history_sample(h, "/c", 120 + HISTORY_COARSE_LEN * HISTORY_COARSE_STEP, 0, 0);
    history_sweep(h, 120 + HISTORY_COARSE_LEN * HISTORY_COARSE_STEP);
    CHECK(history_count(h) == 1);
    CHECK(history_get(h, "/c", 0, p, 1) == 1);
    history_free(h);
}

int main(void)
{
    RUN(rates_come_from_byte_totals);
    RUN(hour_ring_keeps_the_last_hour_oldest_first);
    RUN(rings_keep_every_sample_in_order_while_they_grow);
    RUN(day_ring_folds_thirty_samples);
    RUN(gone_series_age_out_and_the_cap_holds);
    return testlib_done();
}
