/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect: the room document, this server's load, and the sibling poller (see redirect.h).
 *
 * The sibling table (redirect_internal.h) is rebuilt by worker 0's timer when the config
 * snapshot changes; polls go through the fetch thread, whose callbacks store the answer under
 * the table's mutex; a sibling that stops or starts taking listeners is logged once.
 * redirect_choose.c reads the table when a listener is sent away.
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
#include "core/escape.h"
#include "stream/mount.h"
#include "upstream/redirect_internal.h"
#include "upstream/relay_park.h"

#define ROOM_MAX_BYTES (256 * 1024)
#define REDIRECT_TICK_MS 1000

pthread_mutex_t redirect_lock = PTHREAD_MUTEX_INITIALIZER;
redirect_sibling_t redirect_siblings[REDIRECT_SIBLINGS_MAX];
int redirect_nsiblings;
static unsigned generation;       /* bumped when the table is rebuilt */
static const config_t *table_cfg; /* the snapshot the table was built from (worker 0) */
static uint64_t next_poll_ms;

/* ---- this server's load ---- */

void redirect_load_here(const char *mount, redirect_load_t *out)
{
    const config_t *cfg = server_config();
    /* an HLS session counts as a client too, once with the connection that carries it */
    int sessions = atomic_load(&server.stats.hls_sessions);
    int carriers = atomic_load(&server.stats.session_carriers);
    *out = (redirect_load_t){
        .clients = atomic_load(&server.stats.clients) + (sessions > carriers ? sessions - carriers : 0),
        .clients_max = cfg->clients,
        .listeners = atomic_load(&server.stats.listeners),
        .listeners_max = cfg->max_listeners > 0 ? cfg->max_listeners : -1,
        .mount_max = -1,
        .serving = atomic_load(&server.state) == SERVER_SERVING,
    };
    mount_t *m = mount ? mount_find(mount) : NULL;
    if (m) {
        out->mount = atomic_load(&m->listeners);
        out->mount_max = atomic_load(&m->max_listeners);
        mount_unref(m);
    } else if (mount) { /* an on-demand relay's, not connected: its block's limit */
        const mount_conf_t *mc = config_find_mount(cfg, mount);
        out->mount_max = mc ? mc->max_listeners : -1;
    }
}

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
    redirect_load_t l;
    redirect_load_here(NULL, &l);
    buf_appendf(&b, "rimecast-room 1\nclients %ld %ld\nlisteners %ld %ld\nstate %s\n",
                l.clients, l.clients_max, l.listeners, l.listeners_max,
                server_state_name(atomic_load(&server.state)));
    mount_foreach(room_live, &b);
    relay_foreach_idle(room_idle, &b);
    return buf_take(&b, len);
}

/* ---- polling ---- */

typedef struct poll_arg {
    unsigned generation;
    int index;
} poll_arg_t;

/* Why a sibling's answer makes it one that takes no listener (NULL: it takes them). */
static const char *refusal(const fetch_result_t *r, char *buf, size_t cap)
{
    if (r->error) {
        char esc[256];
        snprintf(buf, cap, "%s", escape_log_utf8(esc, sizeof(esc), r->error_text,
                                                 strlen(r->error_text)));
        return buf;
    }
    int room = strncmp(r->body, "rimecast-room 1\n", 16) == 0;
    if (room && r->status == 503)
        return "it answers 503: starting or stopping";
    if (!room || r->status != 200) {
        snprintf(buf, cap, "no room document (status %ld)", r->status);
        return buf;
    }
    return NULL;
}

/* A sibling that starts or stops taking listeners is said once (under redirect_lock). */
static void note_up(redirect_sibling_t *s, int up, const char *why)
{
    if (up == s->up)
        return;
    if (up)
        log_info("redirect: sibling %s answers: listeners may be sent to it", s->url);
    else
        log_info("redirect: sibling %s takes no listeners: %s", s->url, why);
    s->up = up;
}

static void poll_done(worker_t *w, const fetch_result_t *r, void *arg)
{
    (void)w;
    poll_arg_t *pa = arg;
    pthread_mutex_lock(&redirect_lock);
    if (pa->generation == generation && pa->index < redirect_nsiblings) {
        redirect_sibling_t *s = &redirect_siblings[pa->index];
        s->polling = 0;
        char why[300], *copy = NULL;
        const char *no = refusal(r, why, sizeof(why));
        if (!no && !(copy = malloc(r->body_len + 1)))
            no = "out of memory";
        free(s->room); /* gone, not serving, or not one of ours: never chosen */
        s->room = NULL;
        if (copy) {
            memcpy(copy, r->body, r->body_len + 1);
            s->room = copy;
            s->room_len = r->body_len;
            s->answered_ms = loop_now_ms();
            s->sent = 0;
        }
        note_up(s, !no, no);
    }
    pthread_mutex_unlock(&redirect_lock);
    free(pa);
}

static void rebuild_table(const config_t *cfg)
{
    pthread_mutex_lock(&redirect_lock);
    for (int i = 0; i < redirect_nsiblings; i++) {
        free(redirect_siblings[i].url);
        free(redirect_siblings[i].room);
    }
    memset(redirect_siblings, 0, sizeof(redirect_siblings));
    redirect_nsiblings = 0;
    generation++;
    for (const sibling_conf_t *sc = cfg->siblings;
         sc && redirect_nsiblings < REDIRECT_SIBLINGS_MAX; sc = sc->next) {
        redirect_sibling_t *s = &redirect_siblings[redirect_nsiblings];
        if (!(s->url = strdup(sc->url)))
            continue;
        s->tls = strncmp(sc->url, "https://", 8) == 0;
        s->up = -1;
        redirect_nsiblings++;
    }
    pthread_mutex_unlock(&redirect_lock);
    table_cfg = cfg;
}

static void poll_siblings(void)
{
    const config_t *cfg = server_config();
    unsigned period = (unsigned)cfg->sibling_poll_interval * 1000u;
    pthread_mutex_lock(&redirect_lock);
    for (int i = 0; i < redirect_nsiblings; i++) {
        redirect_sibling_t *s = &redirect_siblings[i];
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
    pthread_mutex_unlock(&redirect_lock);
}

static void redirect_tick(worker_t *w, void *arg)
{
    (void)w;
    (void)arg;
    const config_t *cfg = server_config();
    if (cfg != table_cfg)
        rebuild_table(cfg);
    uint64_t now = loop_now_ms();
    if (redirect_nsiblings == 0 || now < next_poll_ms)
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
