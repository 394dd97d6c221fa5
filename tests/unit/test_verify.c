/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_verify: the verifier threads: jobs run on all of them at once, every job's done runs
 * exactly once (ran or not), the queue bound refuses with -EBUSY, a job that waited too long is
 * not run, and shutdown completes what is still queued without running it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "auth/verify.h"
#include "testlib.h"

/* Jobs held at a gate until it opens: they keep the verifier threads busy. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open;

typedef struct {
    int gated;
    atomic_int runs, dones, ran;
} job_t;

static void job_run(void *arg)
{
    job_t *j = arg;
    atomic_fetch_add(&j->runs, 1);
    if (!j->gated)
        return;
    pthread_mutex_lock(&gate_lock);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static void job_done(worker_t *w, void *arg, int ran)
{
    job_t *j = arg;
    (void)w;
    atomic_store(&j->ran, ran);
    atomic_fetch_add(&j->dones, 1);
}

static void set_gate(int open)
{
    pthread_mutex_lock(&gate_lock);
    gate_open = open;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
}

static unsigned long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000 + (unsigned long long)ts.tv_nsec / 1000000;
}

/* Polls until every job of v has its done (or timeout_ms pass). */
static int all_done(job_t *v, int n, unsigned timeout_ms)
{
    unsigned long long end = now_ms() + timeout_ms;
    for (;;) {
        int k = 0;
        while (k < n && atomic_load(&v[k].dones) > 0)
            k++;
        if (k == n)
            return 1;
        if (now_ms() > end)
            return 0;
        usleep(1000);
    }
}

static int running_reaches(unsigned want, unsigned timeout_ms)
{
    unsigned long long end = now_ms() + timeout_ms;
    verify_counters_t vc;
    for (;;) {
        verify_get_counters(&vc);
        if (vc.running == want)
            return 1;
        if (now_ms() > end)
            return 0;
        usleep(1000);
    }
}

static job_t gated[VERIFY_THREADS];

/* Occupies every verifier thread with a gated job. */
static void block_threads(void)
{
    set_gate(0);
    for (int i = 0; i < VERIFY_THREADS; i++) {
        atomic_store(&gated[i].runs, 0);
        atomic_store(&gated[i].dones, 0);
        gated[i].gated = 1;
        CHECK(verify_submit(NULL, job_run, job_done, &gated[i]) == 0);
    }
    CHECK(running_reaches(VERIFY_THREADS, 5000)); /* all threads at work at once */
}

static void test_not_running_refuses(void)
{
    job_t j = {0};
    CHECK(verify_submit(NULL, job_run, job_done, &j) == -ESHUTDOWN);
    verify_stop(); /* harmless when not started */
    CHECK(atomic_load(&j.dones) == 0);
}

static void test_bound_and_every_done_once(void)
{
    static job_t quick[VERIFY_MAX_QUEUED];
    job_t extra = {0};
    verify_counters_t vc;
    CHECK(verify_start(0) == 0);
    block_threads();
    int ok = 0;
    for (int i = 0; i < VERIFY_MAX_QUEUED; i++)
        ok += verify_submit(NULL, job_run, job_done, &quick[i]) == 0;
    CHECK(ok == VERIFY_MAX_QUEUED);
    CHECK(verify_submit(NULL, job_run, job_done, &extra) == -EBUSY);
    verify_get_counters(&vc);
    CHECK(vc.queued == VERIFY_MAX_QUEUED && vc.refused == 1);
    set_gate(1);
    CHECK(all_done(quick, VERIFY_MAX_QUEUED, 10000));
    CHECK(all_done(gated, VERIFY_THREADS, 1000));
    int once = 1;
    for (int i = 0; i < VERIFY_MAX_QUEUED; i++)
        once &= atomic_load(&quick[i].runs) == 1 && atomic_load(&quick[i].dones) == 1 &&
                atomic_load(&quick[i].ran) == 1;
    CHECK(once);
    CHECK(atomic_load(&extra.runs) == 0 && atomic_load(&extra.dones) == 0);
    verify_stop();
    verify_get_counters(&vc);
    CHECK(vc.queued == 0 && vc.running == 0 && vc.ran == VERIFY_MAX_QUEUED + VERIFY_THREADS);
}

static void test_a_job_that_waited_too_long_is_not_run(void)
{
    job_t late = {0};
    verify_counters_t before, after;
    verify_get_counters(&before);
    CHECK(verify_start(50) == 0);
    block_threads();
    CHECK(verify_submit(NULL, job_run, job_done, &late) == 0);
    unsigned long long end = now_ms() + 100; /* past the job's 50 ms */
    while (now_ms() <= end)
        usleep(5000);
    set_gate(1);
    CHECK(all_done(&late, 1, 5000));
    CHECK(atomic_load(&late.runs) == 0 && atomic_load(&late.ran) == 0);
    verify_get_counters(&after);
    CHECK(after.expired == before.expired + 1);
    verify_stop();
}

static void *stopper(void *arg)
{
    (void)arg;
    verify_stop();
    return NULL;
}

static void test_stop_completes_queued_jobs_without_running_them(void)
{
    job_t queued[5] = {{0}};
    job_t probe = {0};
    pthread_t t;
    CHECK(verify_start(0) == 0);
    block_threads();
    for (int i = 0; i < 5; i++)
        CHECK(verify_submit(NULL, job_run, job_done, &queued[i]) == 0);
    pthread_create(&t, NULL, stopper, NULL);
    /* once stopping, nothing more is taken */
    unsigned long long end = now_ms() + 5000;
    int rc;
    while ((rc = verify_submit(NULL, job_run, job_done, &probe)) == 0 && now_ms() < end)
        usleep(1000); /* a probe taken before the stop is one more queued job: it completes */
    CHECK(rc == -ESHUTDOWN);
    set_gate(1);
    pthread_join(t, NULL);
    CHECK(all_done(queued, 5, 1000) && all_done(gated, VERIFY_THREADS, 1000));
    int none_ran = 1;
    for (int i = 0; i < 5; i++)
        none_ran &= atomic_load(&queued[i].runs) == 0 && atomic_load(&queued[i].ran) == 0;
    CHECK(none_ran);
    int gated_ran = 1;
    for (int i = 0; i < VERIFY_THREADS; i++)
        gated_ran &= atomic_load(&gated[i].ran) == 1;
    CHECK(gated_ran); /* what was running finished */
}

int main(void)
{
    RUN(test_not_running_refuses);
    RUN(test_bound_and_every_done_once);
    RUN(test_a_job_that_waited_too_long_is_not_run);
    RUN(test_stop_completes_queued_jobs_without_running_them);
    return testlib_done();
}
