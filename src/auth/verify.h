/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * verify: the verifier threads, where the slow parts of authentication run instead of on a
 * worker: checking a password against its hash (a "$6$" crypt costs milliseconds, more with
 * rounds=, yescrypt more still) and rewriting a user file (hash, write, fsync, rename). A
 * worker running them would hold up every listener and source it serves meanwhile.
 *
 * A job is two functions: run(arg) on a verifier thread, then done(w, arg, ran) back on the
 * worker that submitted it, through worker_post. VERIFY_THREADS threads take jobs in order
 * from one queue of at most VERIFY_MAX_QUEUED; beyond that verify_submit refuses (-EBUSY).
 * A job that waited longer than VERIFY_WAIT_MS (by default) is not run (its client is not waiting for it
 * any more): done gets ran 0.
 *
 * Lifecycle: verify_start() once at start-up, verify_submit() from workers, verify_stop() at
 * shutdown, before the workers stop: jobs still queued complete with ran 0, running ones
 * finish, and their done runs on their workers.
 */
#ifndef RIMECAST_VERIFY_H
#define RIMECAST_VERIFY_H

typedef struct worker worker_t;

#define VERIFY_THREADS 2
/* A flash crowd of a few thousand listeners at the default "$6$" cost is a few seconds of
 * work: it waits; a bigger one is refused busy rather than kept waiting past any client's
 * patience. */
#define VERIFY_MAX_QUEUED 4096
#define VERIFY_WAIT_MS 15000

/* Runs on a verifier thread. Must not touch worker state (connections, mounts' listeners). */
typedef void (*verify_run_fn)(void *arg);
/* Runs on worker w after run (ran 1) or instead of it (ran 0: waited too long, or shutdown).
 * When the answer cannot be posted (w ended, out of memory) it runs on the verifier thread
 * with w NULL and must then only free arg. */
typedef void (*verify_done_fn)(worker_t *w, void *arg, int ran);

/* Starts the threads; jobs that wait longer than wait_ms are not run (0: VERIFY_WAIT_MS).
 * 0 or -errno (none left running). */
int verify_start(unsigned wait_ms);
/* Queues a job for worker reply_to (the caller's; NULL: done runs on the verifier thread, for
 * tests). 0, or -EBUSY (queue full), -ESHUTDOWN (not running), -ENOMEM: then neither function
 * ever runs and arg is still the caller's. Thread-safe. */
int verify_submit(worker_t *reply_to, verify_run_fn run, verify_done_fn done, void *arg);
/* Stops the threads (see above). Safe to call when not started. */
void verify_stop(void);

/* Counters (tests, stats). */
typedef struct verify_counters {
    unsigned queued, running;
    unsigned long long ran, expired, refused;
} verify_counters_t;
void verify_get_counters(verify_counters_t *out);

#endif
