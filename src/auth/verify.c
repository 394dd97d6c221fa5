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
    list_t link; /* in V.queue */
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
} V = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .cond = PTHREAD_COND_INITIALIZER,
       .queue = LIST_INIT(V.queue)};

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

/* The next job, NULL when stopping with nothing queued. Under V.lock. */
static job_t *take_locked(void)
{
    while (list_empty(&V.queue) && !V.stopping)
        pthread_cond_wait(&V.cond, &V.lock);
    if (list_empty(&V.queue))
        return NULL;
    job_t *j = list_first_entry(&V.queue, job_t, link);
    list_remove(&j->link);
    V.queued--;
    return j;
}

static void *verify_main(void *arg)
{
    char name[16];
    snprintf(name, sizeof(name), "verify-%d", (int)(intptr_t)arg);
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&V.lock);
    job_t *j;
    while ((j = take_locked())) {
        int run = !V.stopping && loop_now_ms() <= j->deadline_ms;
        if (run)
            V.running++;
        else
            V.expired++;
        pthread_mutex_unlock(&V.lock);
        if (run) {
            j->run(j->arg);
            j->ran = 1;
            pthread_mutex_lock(&V.lock);
            V.running--;
            V.ran++; /* counted before its answer goes out */
            pthread_mutex_unlock(&V.lock);
        }
        answer(j);
        pthread_mutex_lock(&V.lock);
    }
    pthread_mutex_unlock(&V.lock);
    return NULL;
}

int verify_start(unsigned wait_ms)
{
    pthread_mutex_lock(&V.lock);
    int already = V.started;
    V.started = 1;
    V.stopping = 0;
    V.wait_ms = wait_ms ? wait_ms : VERIFY_WAIT_MS;
    pthread_mutex_unlock(&V.lock);
    if (already)
        return 0;
    for (int i = 0; i < VERIFY_THREADS; i++) {
        int rc = pthread_create(&V.threads[i], NULL, verify_main, (void *)(intptr_t)i);
        if (rc != 0) {
            log_error("verify: cannot start a verifier thread: %s", strerror(rc));
            verify_stop();
            return -rc;
        }
        V.nthreads++;
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
    pthread_mutex_lock(&V.lock);
    int rc = 0;
    if (!V.started || V.stopping)
        rc = -ESHUTDOWN;
    else if (V.queued >= VERIFY_MAX_QUEUED)
        rc = -EBUSY;
    if (rc < 0) {
        if (rc == -EBUSY)
            V.refused++;
        pthread_mutex_unlock(&V.lock);
        free(j);
        return rc;
    }
    j->deadline_ms = loop_now_ms() + V.wait_ms;
    list_insert_tail(&V.queue, &j->link);
    V.queued++;
    pthread_cond_signal(&V.cond);
    pthread_mutex_unlock(&V.lock);
    return 0;
}

void verify_stop(void)
{
    pthread_mutex_lock(&V.lock);
    if (!V.started) {
        pthread_mutex_unlock(&V.lock);
        return;
    }
    V.stopping = 1;
    pthread_cond_broadcast(&V.cond);
    pthread_mutex_unlock(&V.lock);
    for (int i = 0; i < V.nthreads; i++)
        pthread_join(V.threads[i], NULL);
    pthread_mutex_lock(&V.lock);
    V.nthreads = 0;
    V.started = 0;
    pthread_mutex_unlock(&V.lock);
}

void verify_get_counters(verify_counters_t *out)
{
    pthread_mutex_lock(&V.lock);
    out->queued = V.queued;
    out->running = V.running;
    out->ran = V.ran;
    out->expired = V.expired;
    out->refused = V.refused;
    pthread_mutex_unlock(&V.lock);
}
