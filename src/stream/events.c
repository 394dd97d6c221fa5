/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * events: a mutex-protected ring of the last EVENTS_RING events (see events.h). The mutex is
 * taken only on joins, leaves, source changes and title changes, never per block.
 */
#include "stream/events.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/record.h"

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static event_t ring[EVENTS_RING];
static uint64_t ring_next = 1; /* sequence number of the next event */
static atomic_int watchers;
static void (*notify_fn)(void);

const char *events_type_name(event_type_t type)
{
    static const char *const names[] = {"listener_join", "listener_leave", "source_connect",
                                        "source_disconnect", "metadata"};
    return (unsigned)type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

void events_watch(int delta)
{
    atomic_fetch_add(&watchers, delta);
}

void events_set_notify(void (*notify)(void))
{
    notify_fn = notify;
}

static void copy_field(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

void events_emit(event_type_t type, const char *mount, uint64_t conn_id, const char *detail)
{
    if (atomic_load_explicit(&watchers, memory_order_relaxed) == 0)
        return;
    pthread_mutex_lock(&ring_lock);
    event_t *e = &ring[ring_next % EVENTS_RING];
    e->seq = ring_next++;
    e->type = type;
    e->conn_id = conn_id;
    e->time = time(NULL);
    copy_field(e->mount, sizeof(e->mount), mount);
    copy_field(e->detail, sizeof(e->detail), detail);
    pthread_mutex_unlock(&ring_lock);
    if (notify_fn)
        notify_fn();
}

int events_take(uint64_t *next, event_t *out, int max, int *lost)
{
    int n = 0;
    pthread_mutex_lock(&ring_lock);
    if (*next == 0 || *next > ring_next)
        *next = ring_next;
    if (ring_next - *next > EVENTS_RING) {
        *next = ring_next - EVENTS_RING;
        *lost = 1;
    }
    while (*next < ring_next && n < max)
        out[n++] = ring[(*next)++ % EVENTS_RING];
    pthread_mutex_unlock(&ring_lock);
    return n;
}

uint64_t events_resume_point(uint64_t last_id)
{
    pthread_mutex_lock(&ring_lock);
    uint64_t at = last_id && last_id < ring_next ? last_id + 1 : ring_next;
    pthread_mutex_unlock(&ring_lock);
    return at;
}

void events_save(buf_t *out)
{
    pthread_mutex_lock(&ring_lock);
    uint64_t first = ring_next > EVENTS_RING ? ring_next - EVENTS_RING : 1;
    rec_u64(out, ring_next);
    rec_u64(out, first);
    for (uint64_t seq = first; seq < ring_next; seq++) {
        const event_t *e = &ring[seq % EVENTS_RING];
        rec_u32(out, (uint32_t)e->type);
        rec_u64(out, e->conn_id);
        rec_i64(out, (int64_t)e->time);
        rec_str(out, e->mount);
        rec_str(out, e->detail);
    }
    pthread_mutex_unlock(&ring_lock);
}

int events_restore(rec_reader_t *in)
{
    uint64_t next = rec_get_u64(in), first = rec_get_u64(in);
    if (in->error || next < first || next - first > EVENTS_RING)
        return -1;
    pthread_mutex_lock(&ring_lock);
    for (uint64_t seq = first; seq < next && !in->error; seq++) {
        event_t *e = &ring[seq % EVENTS_RING];
        e->seq = seq;
        e->type = (event_type_t)rec_get_u32(in);
        e->conn_id = rec_get_u64(in);
        e->time = (time_t)rec_get_i64(in);
        size_t n;
        const unsigned char *m = rec_get_bytes(in, &n);
        snprintf(e->mount, sizeof(e->mount), "%.*s", m ? (int)n : 0, m ? (const char *)m : "");
        const unsigned char *d = rec_get_bytes(in, &n);
        snprintf(e->detail, sizeof(e->detail), "%.*s", d ? (int)n : 0,
                 d ? (const char *)d : "");
    }
    ring_next = next;
    pthread_mutex_unlock(&ring_lock);
    return in->error ? -1 : 0;
}
