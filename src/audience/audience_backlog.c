/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_backlog: the records waiting for the database, in memory then in the spool (see
 * audience_backlog.h).
 */
#include "audience/audience_backlog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/log.h"
#include "core/loop.h"

#define SPOOL_NAME "audience.spool"
#define SPOOL_WAIT_MS 5000     /* a stopping server waits this long for the spool */

/* The spool is held (open, locked) only while records are in it or go to it: during an
 * upgrade the process before and the one after each take it in turn. */

/* Opens a spool with records found in the log directory: an earlier run's, or that of the
 * process before an upgrade, which holds it until it exits (looked for each turn the spool
 * is not open; an empty one is let go at once). */
static void take_left_spool(audience_backlog_t *b)
{
    if (b->spool.fd >= 0)
        return;
    char *path = config_path(b->logdir, SPOOL_NAME);
    const char *why = "out of memory";
    int rc = !path ? -ENOMEM
             : access(path, F_OK) == 0 ? audience_spool_open(&b->spool, path, &why) : 0;
    if (rc == -EAGAIN && !b->left_held)
        log_info("audience store: the spool %s is the process before's until it exits: its "
                 "records are written then", path);
    else if (rc < 0 && rc != -EAGAIN)
        log_error("audience store: cannot read the spool %s: %s; the records in it are not "
                  "written", path ? path : SPOOL_NAME, why);
    else if (b->spool.records)
        log_info("audience store: the spool %s holds %llu records from before: they are "
                 "written once the database answers", path,
                 (unsigned long long)b->spool.records);
    b->left_held = rc == -EAGAIN;
    if (rc == 0 && b->spool.fd >= 0 && !b->spool.records)
        audience_spool_close(&b->spool);
    free(path);
}

void audience_backlog_init(audience_backlog_t *b, const char *logdir)
{
    *b = (audience_backlog_t){.tail = &b->head, .spool = {.fd = -1}};
    if (getrandom(b->prefix, sizeof(b->prefix), 0) != (ssize_t)sizeof(b->prefix)) {
        /* no entropy source: the time and the pid still tell two servers' ids apart */
        uint64_t t = (uint64_t)session_now_ms() ^ ((uint64_t)getpid() << 40);
        memcpy(b->prefix, &t, sizeof(t));
    }
    b->logdir = logdir ? strdup(logdir) : NULL;
    take_left_spool(b);
}

void audience_backlog_fini(audience_backlog_t *b)
{
    audience_record_free_list(b->head);
    audience_spool_close(&b->spool);
    free(b->logdir);
    *b = (audience_backlog_t){.tail = &b->head, .spool = {.fd = -1}};
}

void audience_backlog_add(audience_backlog_t *b, audience_record_t *list)
{
    for (audience_record_t *e = list; e; e = e->next) {
        memcpy(e->uid, b->prefix, sizeof(b->prefix));
        uint64_t seq = ++b->seq;
        for (int i = 15; i >= 8; i--, seq >>= 8)
            e->uid[i] = (uint8_t)seq;
        *b->tail = e;
        b->tail = &e->next;
        b->n++;
    }
}

size_t audience_backlog_held(const audience_backlog_t *b)
{
    return b->n;
}

uint64_t audience_backlog_spooled(const audience_backlog_t *b)
{
    return b->spool.records;
}

static void lose(audience_tally_t *t, uint64_t n, const char *why)
{
    t->lost += n;
    if (n)
        snprintf(t->why, sizeof(t->why), "%s", why);
}

/* Gives the n records of list to db; frees them unless it is away (then 0 and list kept). */
static int write_list(audience_db_t *db, audience_record_t *list, size_t n, audience_tally_t *t)
{
    audience_record_t **v = malloc((n ? n : 1) * sizeof(*v));
    if (!v) {
        lose(t, n, "out of memory");
        audience_record_free_list(list);
        return 1;
    }
    size_t i = 0, written = 0;
    for (audience_record_t *e = list; e; e = e->next)
        v[i++] = e;
    char why[200] = "";
    audience_write_t w = db->be->write(db, v, n, &written, why, sizeof(why));
    free(v);
    if (w == AUDIENCE_WRITE_AWAY)
        return 0;
    t->written += written;
    lose(t, n - written, why);
    audience_record_free_list(list);
    return 1;
}

/* The first n records in memory, cut off as a list of their own. */
static audience_record_t *take(audience_backlog_t *b, size_t n)
{
    audience_record_t *head = b->head, **cut = &b->head;
    for (size_t i = 0; i < n && *cut; i++)
        cut = &(*cut)->next;
    b->head = *cut;
    *cut = NULL;
    b->n -= n;
    if (!b->head)
        b->tail = &b->head;
    return head;
}

/* Puts a list of n records back in front of those in memory. */
static void put_back(audience_backlog_t *b, audience_record_t *list, size_t n)
{
    audience_record_t **end = &list;
    while (*end)
        end = &(*end)->next;
    *end = b->head;
    if (!b->head)
        b->tail = end;
    b->head = list;
    b->n += n;
}

/* One batch of the spool to db: 1 when written (or lost), 0 when db is away. */
static int write_spooled(audience_backlog_t *b, audience_db_t *db, size_t batch,
                         audience_tally_t *t)
{
    if (!b->replaying) {
        b->replaying = 1;
        log_info("audience store: writing the %llu records of the spool %s to %s",
                 (unsigned long long)b->spool.records, b->spool.path, db->shown);
    }
    size_t n, bad;
    off_t next;
    audience_record_t *list = audience_spool_read(&b->spool, batch, &n, &next, &bad);
    if (bad) {
        static log_ratelimit_t rl;
        log_warn_limited(&rl, 60000, "audience store: %zu malformed lines of the spool %s "
                         "skipped", bad, b->spool.path);
        lose(t, bad, "malformed in the spool");
    }
    if (!n && !bad) { /* cannot be read any more: what is left of it is given up */
        lose(t, b->spool.records, "the spool cannot be read");
        audience_spool_done(&b->spool, b->spool.size, b->spool.records);
    } else if (n && !write_list(db, list, n, t)) {
        audience_record_free_list(list);
        return 0;
    } else {
        audience_spool_done(&b->spool, next, n + bad);
    }
    if (!b->spool.records) {
        log_info("audience store: the spool %s is written out", b->spool.path);
        b->replaying = b->spooling = b->full = 0;
        audience_spool_close(&b->spool); /* another process may take it now */
    }
    return 1;
}

int audience_backlog_write(audience_backlog_t *b, audience_db_t *db, size_t batch,
                           int batches, long spool_max, audience_tally_t *t)
{
    (void)spool_max;
    if (!db) { /* no store: what is in memory is lost; a spool waits for one */
        lose(t, b->n, "no database");
        audience_record_free_list(take(b, b->n));
        return 0;
    }
    take_left_spool(b);
    int ready = !db->be->ready || db->be->ready(db);
    if (ready)
        b->away_since = 0;
    for (; ready && batches > 0; batches--) {
        if (b->spool.records) {
            ready = write_spooled(b, db, batch, t);
            continue;
        }
        if (!b->n)
            break;
        size_t n = b->n < batch ? b->n : batch;
        audience_record_t *list = take(b, n);
        if (!write_list(db, list, n, t)) {
            put_back(b, list, n);
            ready = 0;
        }
    }
    if (!ready && !b->away_since)
        b->away_since = loop_now_ms();
    return ready && (b->n || b->spool.records);
}

/* Opens the spool when it is not open yet; held by another process (the one before or after
 * an upgrade), waited for up to wait_ms. 0 or -1 (said once). */
static int open_spool(audience_backlog_t *b, int wait_ms)
{
    static int said;
    if (b->spool.fd >= 0)
        return 0;
    char *path = config_path(b->logdir, SPOOL_NAME);
    const char *why = "out of memory";
    uint64_t until = loop_now_ms() + (uint64_t)wait_ms;
    int rc = -ENOMEM;
    while (path && (rc = audience_spool_open(&b->spool, path, &why)) == -EAGAIN &&
           loop_now_ms() < until)
        usleep(20000);
    if (rc == 0) {
        free(path);
        said = 0;
        return 0;
    }
    if (!said)
        log_error("audience store: cannot open the spool %s: %s; records past %d in memory "
                  "are lost while the database is away", path ? path : SPOOL_NAME, why,
                  AUDIENCE_HOLD_MAX);
    said = 1;
    free(path);
    return -1;
}

void audience_backlog_spill(audience_backlog_t *b, audience_db_t *db, int all, long spool_max,
                            audience_tally_t *t)
{
    int held_long = b->away_since && loop_now_ms() - b->away_since >= AUDIENCE_HOLD_MS;
    if (!b->n || (!all && !b->spooling && b->n <= AUDIENCE_HOLD_MAX && !held_long))
        return;
    if (open_spool(b, all ? SPOOL_WAIT_MS : 0) < 0) {
        if (b->n > AUDIENCE_HOLD_MAX) { /* the newest beyond the bound */
            audience_record_t *keep = take(b, AUDIENCE_HOLD_MAX);
            size_t over = b->n;
            lose(t, over, "the database is away and there is no spool");
            audience_record_free_list(take(b, over));
            put_back(b, keep, AUDIENCE_HOLD_MAX);
        }
        return;
    }
    if (!b->spooling) {
        b->spooling = 1;
        log_warn("audience store: %s is still away: the records go to the spool %s (%ld bytes "
                 "at most)", db ? db->shown : "the database", b->spool.path, spool_max);
    }
    size_t n = b->n;
    audience_record_t **v = malloc(n * sizeof(*v));
    if (!v)
        return; /* tried again next turn */
    size_t i = 0;
    for (audience_record_t *e = b->head; e; e = e->next)
        v[i++] = e;
    size_t kept = audience_spool_append(&b->spool, v, n, spool_max);
    free(v);
    t->spooled += kept;
    if (kept < n && !b->full) {
        b->full = 1;
        log_error("audience store: the spool %s is full (%ld bytes): records are lost until the "
                  "database answers", b->spool.path, spool_max);
    }
    lose(t, n - kept, "the spool is full");
    audience_record_free_list(take(b, n));
}
