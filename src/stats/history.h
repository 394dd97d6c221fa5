/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * history: listener and bandwidth history per mount and for the server (series name ""),
 * in fixed-size rings: the last hour at 10 s and the last day at 5 min. Sampled by a timer on
 * worker 0 (never on a listener's path); read by the admin history command from any thread
 * (one mutex, held only to copy samples). Memory is bounded: at most HISTORY_MAX_SERIES
 * series; a mount that goes away is dropped once its day ring has aged out, or earlier to
 * make room. Does not render XML or JSON (see admin/).
 */
#ifndef RIMECAST_HISTORY_H
#define RIMECAST_HISTORY_H

#include <stdint.h>

#define HISTORY_FINE_STEP 10     /* seconds between samples of the hour ring */
#define HISTORY_FINE_LEN 360     /* one hour */
#define HISTORY_COARSE_STEP 300  /* seconds between samples of the day ring */
#define HISTORY_COARSE_LEN 288   /* one day */
#define HISTORY_MAX_SERIES 512

/* 12 bytes: a series keeps 648 of them (7.6 KB), one series per mount, once its rings are
 * full (their room grows with their samples: a new mount's first hour costs less). */
typedef struct history_point {
    uint32_t t;            /* unix time of the sample (unsigned 32 bits: until 2106) */
    uint32_t listeners;    /* listeners then (day ring: the most during its 5 min) */
    uint32_t bytes_per_s;  /* bytes sent per second since the previous sample (day: mean),
                            * at most 4 GB/s */
} history_point_t;

typedef struct history history_t;

/* A history with room for max_series series, or NULL on ENOMEM. Freed by history_free. */
history_t *history_new(int max_series);
void history_free(history_t *h);

/* Records one sample of series name at now (seconds): listeners and the running total of
 * bytes sent (the rate comes from the previous sample). Marks the series seen at now.
 * 0, -ENOSPC when the series is new and no room can be made, -ENOMEM. */
int history_sample(history_t *h, const char *name, int64_t now, long long listeners,
                   uint64_t bytes_sent);

/* Drops the series not sampled for a whole day ring (HISTORY_COARSE_LEN * HISTORY_COARSE_STEP). */
void history_sweep(history_t *h, int64_t now);

/* Number of series kept. */
int history_count(history_t *h);

/* Copies the samples of series name, oldest first, from the hour ring (coarse = 0) or the
 * day ring (coarse = 1) into out (room for cap). Returns how many, or -ENOENT. */
int history_get(history_t *h, const char *name, int coarse, history_point_t *out, int cap);

/* An upgrade: every series as record fields, and read back into h (a series h has already,
 * or one there is no room for, is skipped). 0, or -EINVAL / -ENOMEM. */
struct buf;
struct rec_reader;
void history_save(history_t *h, struct buf *out);
int history_restore(history_t *h, struct rec_reader *in);

/* The server's history (sampled every HISTORY_FINE_STEP s once history_register ran). */
history_t *history_global(void);

/* Registers the sampling timer (on worker 0) before the workers start. */
void history_register(void);

#endif
