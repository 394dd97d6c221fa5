/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect: the room document, the sibling poller and the 302 to a sibling (see redirect.h).
 *
 * The sibling table is rebuilt by worker 0's timer when the config snapshot changes; polls go
 * through the fetch thread, whose callbacks store the answer under the table's mutex. Lookups
 * (only for listeners a full server turns away) parse the stored text under the same mutex:
 * this is the cold path. A sibling's room is lowered by the redirects sent to it since its
 * last answer, so a burst of refused listeners spreads instead of landing on one sibling.
 */
#include "upstream/redirect.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/buf.h"
#include "core/cidr.h"
#include "core/log.h"
#include "core/loop.h"
#include "http/client.h"
#include "http/fetch.h"
#include "http/parser.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/mount.h"
#include "upstream/relay_park.h"

#define ROOM_MAX_BYTES (256 * 1024)
#define REDIRECT_TICK_MS 1000
#define SIBLINGS_MAX 64

typedef struct sibling {
    char *url;
    char *room;           /* the last answer (a room document), or NULL */
    size_t room_len;
    uint64_t answered_ms; /* when it came */
    long sent;            /* redirects sent to it since */
    int polling;
} sibling_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sibling_t siblings[SIBLINGS_MAX];
static int nsiblings;
static unsigned generation;       /* bumped when the table is rebuilt */
static const config_t *table_cfg; /* the snapshot the table was built from (worker 0) */
static uint64_t next_poll_ms;

/* ---- the room document ---- */

static void room_mount_line(buf_t *b, const char *name, int listeners, int max)
{
    const mount_conf_t *mc = config_find_mount(server_config(), name);
    if (mc && mc->hidden)
        return;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p <= 0x20 || *p == 0x7f)
            return; /* not a name a Location can carry as is */
    buf_appendf(b, "mount %s %d %d\n", name, listeners, max);
}

static void room_live(mount_t *m, void *arg)
{
    room_mount_line(arg, m->name, atomic_load(&m->listeners), atomic_load(&m->max_listeners));
}

static void room_idle(const char *name, void *arg)
{
    const mount_conf_t *mc = config_find_mount(server_config(), name);
    room_mount_line(arg, name, 0, mc ? mc->max_listeners : -1);
}

char *redirect_room_text(size_t *len)
{
    buf_t b = BUF_INIT;
    buf_appendf(&b, "rimecast-room 1\nclients %d %d\n", atomic_load(&server.stats.clients),
               server_config()->clients);
    mount_foreach(room_live, &b);
    relay_foreach_idle(room_idle, &b);
    return buf_take(&b, len);
}

/* ---- polling ---- */

typedef struct poll_arg {
    unsigned generation;
    int index;
} poll_arg_t;

static void poll_done(worker_t *w, const fetch_result_t *r, void *arg)
{
    (void)w;
    poll_arg_t *pa = arg;
    pthread_mutex_lock(&lock);
    if (pa->generation == generation && pa->index < nsiblings) {
        sibling_t *s = &siblings[pa->index];
        s->polling = 0;
        char *copy = NULL;
        if (r->error == 0 && r->status == 200 &&
            strncmp(r->body, "rimecast-room 1\n", 16) == 0 &&
            (copy = malloc(r->body_len + 1))) {
            memcpy(copy, r->body, r->body_len + 1);
            free(s->room);
            s->room = copy;
            s->room_len = r->body_len;
            s->answered_ms = loop_now_ms();
            s->sent = 0;
        } else {
            free(s->room); /* gone, or not one of ours: never chosen */
            s->room = NULL;
            log_debug("redirect: sibling %s: %s (status %ld)", s->url,
                      r->error ? r->error_text : "no room document", r->status);
        }
    }
    pthread_mutex_unlock(&lock);
    free(pa);
}

static void rebuild_table(const config_t *cfg)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nsiblings; i++) {
        free(siblings[i].url);
        free(siblings[i].room);
    }
    memset(siblings, 0, sizeof(siblings));
    nsiblings = 0;
    generation++;
    for (const sibling_conf_t *sc = cfg->siblings; sc && nsiblings < SIBLINGS_MAX; sc = sc->next)
        if ((siblings[nsiblings].url = strdup(sc->url)))
            nsiblings++;
    pthread_mutex_unlock(&lock);
    table_cfg = cfg;
}

static void poll_siblings(void)
{
    const config_t *cfg = server_config();
    unsigned period = (unsigned)cfg->sibling_poll_interval * 1000u;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nsiblings; i++) {
        sibling_t *s = &siblings[i];
        if (s->polling)
            continue;
        char url[1100];
        poll_arg_t *pa = malloc(sizeof(*pa));
        if (!pa)
            break;
        pa->generation = generation;
        pa->index = i;
        snprintf(url, sizeof(url), "%s/room.txt", s->url);
        fetch_request_t req = {
            .url = url, .max_body = ROOM_MAX_BYTES, .timeout_ms = period,
            .done = poll_done, .arg = pa,
        };
        s->polling = 1;
        if (fetch_submit(&req) < 0) {
            s->polling = 0;
            free(pa);
        }
    }
    pthread_mutex_unlock(&lock);
}

static void redirect_tick(worker_t *w, void *arg)
{
    (void)w;
    (void)arg;
    const config_t *cfg = server_config();
    if (cfg != table_cfg)
        rebuild_table(cfg);
    uint64_t now = loop_now_ms();
    if (nsiblings == 0 || now < next_poll_ms)
        return;
    next_poll_ms = now + (uint64_t)cfg->sibling_poll_interval * 1000u;
    poll_siblings();
}

static int redirect_module_init(worker_t *w)
{
    if (w->id != 0)
        return 0;
    return worker_timer_add(w, REDIRECT_TICK_MS, redirect_tick, NULL);
}

static const worker_module_t redirect_module = {
    .name = "redirect",
    .init = redirect_module_init,
};

void redirect_register(void)
{
    worker_register(&redirect_module);
}

/* ---- the 302 ---- */

/* The sibling with the most room for mount now, its room lowered by one; -1 if none. An
 * answer older than three poll intervals is not trusted. */
static int choose_sibling(const char *mount, char *url, size_t cap)
{
    uint64_t now = loop_now_ms();
    uint64_t stale = 3ull * (uint64_t)server_config()->sibling_poll_interval * 1000u;
    int best = -1;
    long best_room = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nsiblings; i++) {
        sibling_t *s = &siblings[i];
        if (!s->room || now - s->answered_ms > stale)
            continue;
        long room = redirect_parse_room(s->room, s->room_len, mount);
        if (room > 0 && room != LONG_MAX)
            room -= s->sent;
        if (room > best_room) {
            best_room = room;
            best = i;
        }
    }
    if (best >= 0) {
        siblings[best].sent++;
        snprintf(url, cap, "%s", siblings[best].url);
    }
    pthread_mutex_unlock(&lock);
    return best;
}

int redirect_listener(conn_t *c, const http_request_t *req, const char *name)
{
    if (!server_config()->siblings || req->uri_len == 0 || req->uri[0] != '/')
        return 0;
    char base[1024];
    if (choose_sibling(name, base, sizeof(base)) < 0)
        return 0;
    char extra[3000], head[4096];
    int n = snprintf(extra, sizeof(extra), "Location: %s%.*s\r\n", base, (int)req->uri_len,
                     req->uri);
    if (n < 0 || (size_t)n >= sizeof(extra))
        return 0;
    size_t hlen = reply_head(head, sizeof(head), 0, 302, "text/plain", 0, extra);
    if (hlen == 0)
        return 0;
    log_info("listener %s: %s is full here, sent to %s", CIDR_SHOWN(c->ip), name, base);
    client_of(c)->status = 302;
    c->ops = &conn_writing_ops;
    conn_send(c, head, hlen, conn_linger_close);
    return 1;
}
