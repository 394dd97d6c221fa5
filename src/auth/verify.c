/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * verify: the verifier threads and their bounded FIFO (see verify.h). One mutex and one
 * condition guard the queue; a job's answer is posted to its worker and freed there.
 */
#include "auth/verify.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/list.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/worker.h"

typedef struct job {
    verify_run_fn run;
    verify_done_fn done;
    void *arg;
    worker_t *reply_to;
    uint64_t deadline_ms; /* not run when taken after this */
    int ran;
    list_t link; /* in verify_state.queue */
} job_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    list_t queue; /* job_t, oldest first */
    unsigned queued, running;
    unsigned long long ran, expired, refused;
    int started, stopping;
    unsigned wait_ms;
    pthread_t threads[VERIFY_THREADS];
    int nthreads;
} verify_state = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .cond = PTHREAD_COND_INITIALIZER,
       .queue = LIST_INIT(verify_state.queue)};

/* On worker w: the job's done, then the job is freed. */
static void deliver(worker_t *w, void *arg)
{
    job_t *j = arg;
    j->done(w, j->arg, j->ran);
    free(j);
}

static void answer(job_t *j)
{
    if (j->reply_to && worker_post(j->reply_to, deliver, j) == 0)
        return;
    j->done(NULL, j->arg, j->ran); /* the worker is gone (or no memory): it only frees */
    free(j);
}

/* The next job, NULL when stopping with nothing queued. Under verify_state.lock. */
static job_t *take_locked(void)
{
    while (list_empty(&verify_state.queue) && !verify_state.stopping)
        pthread_cond_wait(&verify_state.cond, &verify_state.lock);
    if (list_empty(&verify_state.queue))
        return NULL;
    job_t *j = list_first_entry(&verify_state.queue, job_t, link);
    list_remove(&j->link);
    verify_state.queued--;
    return j;
}

static void *verify_main(void *arg)
{
    char name[16];
    snprintf(name, sizeof(name), "verify-%d", (int)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&verify_state.lock);
    job_t *j;
    while ((j = take_locked())) {
        int run = !verify_state.stopping && loop_now_ms() <= j->deadline_ms;
        if (run)
            verify_state.running++;
        else
            verify_state.expired++;
        pthread_mutex_unlock(&verify_state.lock);
        if (run) {
            j->run(j->arg);
            j->ran = 1;
            pthread_mutex_lock(&verify_state.lock);
            verify_state.running--;
            verify_state.ran++; /* counted before its answer goes out */
            pthread_mutex_unlock(&verify_state.lock);
        }
        answer(j);
        pthread_mutex_lock(&verify_state.lock);
    }
    pthread_mutex_unlock(&verify_state.lock);
    return NULL;
}

int verify_start(unsigned wait_ms)
{
    pthread_mutex_lock(&verify_state.lock);
    int already = verify_state.started;
    verify_state.started = 1;
    verify_state.stopping = 0;
    verify_state.wait_ms = wait_ms ? wait_ms : VERIFY_WAIT_MS;
    pthread_mutex_unlock(&verify_state.lock);
    if (already)
        return 0;
    for (int i = 0; i < VERIFY_THREADS; i++) {
        int rc = pthread_create(&verify_state.threads[i], NULL, verify_main, (void *)(intptr_t)i);
        if (rc != 0) {
            log_error("verify: cannot start a verifier thread: %s", strerror(rc));
            verify_stop();
            return -rc;
        }
        verify_state.nthreads++;
    }
    return 0;
}

int verify_submit(worker_t *reply_to, verify_run_fn run, verify_done_fn done, void *arg)
{
    job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->run = run;
    j->done = done;
    j->arg = arg;
    j->reply_to = reply_to;
    pthread_mutex_lock(&verify_state.lock);
    int rc = 0;
    if (!verify_state.started || verify_state.stopping)
        rc = -ESHUTDOWN;
    else if (verify_state.queued >= VERIFY_MAX_QUEUED)
        rc = -EBUSY;
    if (rc < 0) {
        if (rc == -EBUSY)
            verify_state.refused++;
        pthread_mutex_unlock(&verify_state.lock);
        free(j);
        return rc;
    }
    j->deadline_ms = loop_now_ms() + verify_state.wait_ms;
    list_insert_tail(&verify_state.queue, &j->link);
    verify_state.queued++;
    pthread_cond_signal(&verify_state.cond);
    pthread_mutex_unlock(&verify_state.lock);
    return 0;
}

void verify_stop(void)
{
    pthread_mutex_lock(&verify_state.lock);
    if (!verify_state.started) {
        pthread_mutex_unlock(&verify_state.lock);
        return;
    }
    verify_state.stopping = 1;
    pthread_cond_broadcast(&verify_state.cond);
    pthread_mutex_unlock(&verify_state.lock);
    for (int i = 0; i < verify_state.nthreads; i++)
        pthread_join(verify_state.threads[i], NULL);
    pthread_mutex_lock(&verify_state.lock);
    verify_state.nthreads = 0;
    verify_state.started = 0;
    pthread_mutex_unlock(&verify_state.lock);
}

void verify_get_counters(verify_counters_t *out)
{
    pthread_mutex_lock(&verify_state.lock);
    out->queued = verify_state.queued;
    out->running = verify_state.running;
    out->ran = verify_state.ran;
    out->expired = verify_state.expired;
    out->refused = verify_state.refused;
    pthread_mutex_unlock(&verify_state.lock);
}
