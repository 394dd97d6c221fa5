/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * yp: YP directory listings (see yp.h). One entry per (directory, mount, source start): the
 * directory thread creates, schedules and drops entries; answers arrive on the fetch thread
 * and update their entry by id. Both take yp_state.lock briefly; nothing else waits for it.
 */
#include "yp/yp.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/config.h"
#include "core/buf.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/record.h"
#include "core/str.h"
#include "core/url.h"
#include "http/fetch.h"
#include "net/server.h"
#include "stats/stats.h"
#include "stream/mount.h"

#define YP_MAX_BACKOFF_S 3600
#define YP_SID_MAX 128

typedef struct yp_entry yp_entry_t;
struct yp_entry {
    uint64_t id;
    char *dir_url;
    char *mount;
    time_t source_start; /* a new source on the same mount is a new listing */
    char sid[YP_SID_MAX];
    int in_flight;
    int seen;            /* still public in this tick */
    int gone;            /* drop when its answer comes */
    uint64_t next_ms;    /* next add or touch */
    unsigned touch_s;    /* TouchFreq, else touch-interval */
    unsigned backoff_s;
    yp_entry_t *next;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    int running, stopping;
    int held; /* an upgrade saved the entries: nothing is sent until it ends one way or other */
    yp_entry_t *entries;
    uint64_t next_id;
} yp_state = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void entry_free(yp_entry_t *e)
{
    free(e->dir_url);
    free(e->mount);
    free(e);
}

static yp_entry_t *entry_by_id(uint64_t id)
{
    for (yp_entry_t *e = yp_state.entries; e; e = e->next)
        if (e->id == id)
            return e;
    return NULL;
}

static void entry_unlink(yp_entry_t *e)
{
    for (yp_entry_t **pp = &yp_state.entries; *pp; pp = &(*pp)->next)
        if (*pp == e) {
            *pp = e->next;
            return;
        }
}

/* ---- answers (fetch thread) ---- */

typedef struct {
    uint64_t id;
    int touch; /* 0 = add */
} yp_call_t;

static void backoff(yp_entry_t *e, unsigned base_s)
{
    e->backoff_s = e->backoff_s ? e->backoff_s * 2 : (base_s ? base_s : 1);
    if (e->backoff_s > YP_MAX_BACKOFF_S)
        e->backoff_s = YP_MAX_BACKOFF_S;
    e->next_ms = loop_now_ms() + (uint64_t)e->backoff_s * 1000u;
}

static void clean_copy(char *out, size_t cap, const char *in)
{
    size_t n = 0;
    for (; *in && n + 1 < cap; in++)
        if ((unsigned char)*in > 0x20 && *in != 0x7f)
            out[n++] = *in;
    out[n] = '\0';
}

static void answered(worker_t *w, const fetch_result_t *r, void *arg)
{
    yp_call_t *call = arg;
    char msg[512], esc[1100], mesc[600], sid[YP_SID_MAX], freq[32], ok[8];
    const config_t *cfg = server_config();
    pthread_mutex_lock(&yp_state.lock);
    yp_entry_t *e = entry_by_id(call->id);
    if (!e || e->gone) {
        if (e) {
            entry_unlink(e);
            entry_free(e);
        }
        goto out;
    }
    e->in_flight = 0;
    unsigned base = 60;
    for (const directory_conf_t *d = cfg->directories; d; d = d->next)
        if (strcmp(d->yp_url, e->dir_url) == 0)
            base = (unsigned)d->touch_interval;
    escape_log(mesc, sizeof(mesc), e->mount, strlen(e->mount));
    const char *what = call->touch ? "touch" : "add";
    if (r->error) {
        log_warn("yp: %s of %s at %s failed: %s", what, mesc, e->dir_url,
                 escape_log(esc, sizeof(esc), r->error_text, strlen(r->error_text)));
        backoff(e, base);
        goto out;
    }
    if (!fetch_header(r, "YPMessage", msg, sizeof(msg)))
        msg[0] = '\0';
    escape_log(esc, sizeof(esc), msg, strlen(msg));
    if (!fetch_header(r, "YPResponse", ok, sizeof(ok)) || strcmp(ok, "1") != 0) {
        log_warn("yp: %s of %s at %s refused (HTTP %ld): %s", what, mesc, e->dir_url,
                 r->status, msg[0] ? esc : "no message");
        if (call->touch)
            e->sid[0] = '\0'; /* the directory no longer knows it: add again */
        backoff(e, base);
        goto out;
    }
    e->backoff_s = 0;
    if (!call->touch) {
        if (fetch_header(r, "SID", sid, sizeof(sid)))
            clean_copy(e->sid, sizeof(e->sid), sid);
        if (!e->sid[0]) {
            log_warn("yp: add of %s at %s: no SID in the answer", mesc, e->dir_url);
            backoff(e, base);
            goto out;
        }
        log_info("yp: %s listed at %s%s%s", mesc, e->dir_url, msg[0] ? ": " : "",
                 msg[0] ? esc : "");
    }
    if (!e->touch_s)
        e->touch_s = base; /* until the directory says otherwise (it may, on any answer) */
    if (fetch_header(r, "TouchFreq", freq, sizeof(freq))) {
        long f = strtol(freq, NULL, 10);
        if (f > 0)
            e->touch_s = f > YP_MAX_BACKOFF_S ? YP_MAX_BACKOFF_S : (unsigned)f;
    }
    e->next_ms = loop_now_ms() + (uint64_t)e->touch_s * 1000u;
out:
    pthread_mutex_unlock(&yp_state.lock);
    free(call);
}

/* ---- requests (directory thread, under yp_state.lock) ---- */

static void submit(yp_entry_t *e, buf_t *body, int timeout_s, int touch)
{
    yp_call_t *call = touch >= 0 ? malloc(sizeof(*call)) : NULL;
    if (call)
        *call = (yp_call_t){e->id, touch};
    fetch_request_t rq = {.url = e->dir_url, .body = body->data ? body->data : "",
                          .timeout_ms = (unsigned)timeout_s * 1000u,
                          .done = call ? answered : NULL, .arg = call};
    int rc = touch >= 0 && !call ? -ENOMEM : fetch_submit(&rq);
    if (rc < 0) {
        free(call);
        if (touch >= 0)
            backoff(e, 60);
        return;
    }
    if (touch >= 0)
        e->in_flight = 1;
}

/* ice-audio-info "samplerate=44100;channels=2" as form fields of their own. */
static void append_audio_info(buf_t *b, const char *info)
{
    char *copy = str_dup(info ? info : ""), *save = NULL;
    for (char *kv = copy ? strtok_r(copy, ";", &save) : NULL; kv;
         kv = strtok_r(NULL, ";", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq || eq == kv)
            continue;
        *eq = '\0';
        int plain = 1;
        for (const char *p = kv; *p; p++)
            plain &= (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                     (*p >= '0' && *p <= '9') || *p == '_' || *p == '-' || *p == '.';
        if (plain)
            url_form_append(b, kv, eq + 1);
    }
    free(copy);
}

static char *title_of(mount_t *m)
{
    char *artist = mount_get_tag(m, "artist"), *title = mount_get_tag(m, "title");
    buf_t b = {0};
    if (artist && *artist && title && *title)
        buf_appendf(&b, "%s - %s", artist, title);
    else if (title && *title)
        buf_append_str(&b, title);
    else if (artist && *artist)
        buf_append_str(&b, artist);
    free(artist);
    free(title);
    char *out = buf_take(&b, NULL);
    return out ? out : str_dup("");
}

static void send_add(yp_entry_t *e, mount_t *m, const directory_conf_t *d, const config_t *cfg)
{
    const mount_info_t *i = mount_info(m);
    const mount_conf_t *mc = config_find_mount(cfg, m->name);
    char listen[600];
    stats_listenurl(listen, sizeof(listen), m->name, NULL);
    buf_t b = {0};
    buf_append_str(&b, "action=add");
    url_form_append(&b, "sn", i->name && *i->name ? i->name : "Unspecified name");
    url_form_append(&b, "genre", i->genre);
    url_form_append(&b, "cpswd", mc ? mc->cluster_password : NULL);
    url_form_append(&b, "desc", i->description && *i->description ? i->description
                                                                   : "Unspecified description");
    url_form_append(&b, "url", i->url);
    url_form_append(&b, "listenurl", listen);
    url_form_append(&b, "type", i->content_type);
    url_form_append(&b, "stype", i->subtype);
    char kbps[24];
    url_form_append(&b, "b", stats_bitrate(m, kbps, sizeof(kbps)));
    append_audio_info(&b, i->audio_info);
    submit(e, &b, d->yp_url_timeout, 0);
    buf_free(&b);
}

static void send_touch(yp_entry_t *e, mount_t *m, const directory_conf_t *d)
{
    char num[32];
    char *title = title_of(m);
    int max = atomic_load(&m->max_listeners);
    buf_t b = {0};
    buf_append_str(&b, "action=touch");
    url_form_append(&b, "sid", e->sid);
    url_form_append(&b, "st", title);
    snprintf(num, sizeof(num), "%d", atomic_load(&m->listeners));
    url_form_append(&b, "listeners", num);
    snprintf(num, sizeof(num), "%d", max);
    url_form_append(&b, "max_listeners", max < 0 ? "unlimited" : num);
    url_form_append(&b, "stype", mount_info(m)->subtype);
    submit(e, &b, d->yp_url_timeout, 1);
    buf_free(&b);
    free(title);
}

static void send_remove(yp_entry_t *e, int timeout_s)
{
    buf_t b = {0};
    buf_append_str(&b, "action=remove");
    url_form_append(&b, "sid", e->sid);
    submit(e, &b, timeout_s, -1);
    buf_free(&b);
}

/* ---- the tick ---- */

typedef struct {
    const config_t *cfg;
    uint64_t now;
} tick_t;

static int is_public(mount_t *m)
{
    return !atomic_load(&m->ended) && mount_info(m)->public == 1;
}

static void visit_mount(mount_t *m, void *arg)
{
    tick_t *t = arg;
    if (!is_public(m))
        return;
    for (const directory_conf_t *d = t->cfg->directories; d; d = d->next) {
        yp_entry_t *e;
        for (e = yp_state.entries; e; e = e->next)
            if (!e->gone && e->source_start == m->start && strcmp(e->mount, m->name) == 0 &&
                strcmp(e->dir_url, d->yp_url) == 0)
                break;
        if (!e) {
            if (!(e = calloc(1, sizeof(*e))))
                continue;
            e->id = ++yp_state.next_id;
            e->dir_url = str_dup(d->yp_url);
            e->mount = str_dup(m->name);
            e->source_start = m->start;
            e->next_ms = t->now + (uint64_t)d->add_delay * 1000u;
            if (!e->dir_url || !e->mount) {
                entry_free(e);
                continue;
            }
            e->next = yp_state.entries;
            yp_state.entries = e;
        }
        e->seen = 1;
        if (e->in_flight || t->now < e->next_ms)
            continue;
        if (e->sid[0])
            send_touch(e, m, d);
        else
            send_add(e, m, d, t->cfg);
    }
}

/* Entries whose mount ended, turned private or lost its directory: removed (listed ones get a
 * "remove"; one waiting for an answer is dropped when it comes). */
static void drop_unseen(const config_t *cfg, int all)
{
    for (yp_entry_t **pp = &yp_state.entries; *pp;) {
        yp_entry_t *e = *pp;
        if (e->seen && !all) {
            e->seen = 0;
            pp = &e->next;
            continue;
        }
        if (e->sid[0]) {
            int timeout = 10;
            for (const directory_conf_t *d = cfg->directories; d; d = d->next)
                if (strcmp(d->yp_url, e->dir_url) == 0)
                    timeout = d->yp_url_timeout;
            send_remove(e, timeout);
            e->sid[0] = '\0';
        }
        if (e->in_flight) {
            e->gone = 1;
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        entry_free(e);
    }
}

/* mount_foreach calls this without the registry lock held: ours is taken inside */
static void visit_mount_locked(mount_t *m, void *arg)
{
    pthread_mutex_lock(&yp_state.lock);
    if (!yp_state.held) /* an upgrade saved the listings while this tick ran: it sends nothing */
        visit_mount(m, arg);
    pthread_mutex_unlock(&yp_state.lock);
}

static void tick(void)
{
    tick_t t = {server_config(), loop_now_ms()};
    mount_foreach(visit_mount_locked, &t);
    pthread_mutex_lock(&yp_state.lock);
    if (!yp_state.held)
        drop_unseen(t.cfg, 0);
    pthread_mutex_unlock(&yp_state.lock);
}

static void *yp_main(void *arg)
{
    pthread_mutex_lock(&yp_state.lock);
    while (!yp_state.stopping) {
        /* with no directory left (a reload, or a new process's config): listings carried or
         * made before are removed */
        int work = !yp_state.held && (yp_state.entries || server_config()->directories);
        pthread_mutex_unlock(&yp_state.lock);
        if (work)
            tick();
        pthread_mutex_lock(&yp_state.lock);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        if (!yp_state.stopping)
            pthread_cond_timedwait(&yp_state.wake, &yp_state.lock, &ts);
    }
    pthread_mutex_unlock(&yp_state.lock);
    return NULL;
}

int yp_start(void)
{
    int rc = pthread_create(&yp_state.thread, NULL, yp_main, NULL);
    if (rc)
        return -rc;
    yp_state.running = 1;
    return 0;
}

/* The thread stopped (if it runs) and every entry dropped: with a "remove" for those listed
 * (yp_stop), or forgotten (yp_abandon: an answer still to come finds no entry). */
static void stop_thread(int remove)
{
    if (yp_state.running) {
        pthread_mutex_lock(&yp_state.lock);
        yp_state.stopping = 1;
        pthread_cond_signal(&yp_state.wake);
        pthread_mutex_unlock(&yp_state.lock);
        pthread_join(yp_state.thread, NULL);
        yp_state.running = 0;
    } else if (remove) {
        return;
    }
    pthread_mutex_lock(&yp_state.lock);
    if (remove)
        drop_unseen(server_config(), 1);
    while (yp_state.entries) {
        yp_entry_t *e = yp_state.entries;
        yp_state.entries = e->next;
        entry_free(e);
    }
    pthread_mutex_unlock(&yp_state.lock);
}

void yp_stop(void)
{
    stop_thread(1);
}

/* ---- upgrade ---- */

void yp_save(buf_t *out, uint16_t type)
{
    pthread_mutex_lock(&yp_state.lock);
    yp_state.held = 1;
    uint64_t now = loop_now_ms();
    for (yp_entry_t *e = yp_state.entries; e; e = e->next) {
        if (e->gone)
            continue;
        /* one waiting for its answer: due a whole interval on (the answer sets that here) */
        uint64_t due = e->in_flight ? (uint64_t)(e->touch_s ? e->touch_s : 1) * 1000u
                       : e->next_ms > now ? e->next_ms - now : 0;
        size_t at = rec_begin(out, type);
        rec_str(out, e->dir_url);
        rec_str(out, e->mount);
        rec_i64(out, (int64_t)e->source_start);
        rec_str(out, e->sid);
        rec_u32(out, e->touch_s);
        rec_u64(out, due);
        rec_u32(out, e->backoff_s);
        rec_end(out, at);
    }
    pthread_mutex_unlock(&yp_state.lock);
}

void yp_resume(void)
{
    pthread_mutex_lock(&yp_state.lock);
    yp_state.held = 0;
    pthread_mutex_unlock(&yp_state.lock);
}

void yp_abandon(void)
{
    stop_thread(0);
}

int yp_restore(rec_reader_t *in)
{
    char *dir_url = rec_get_str(in), *mount = rec_get_str(in), *sid = NULL;
    time_t start = (time_t)rec_get_i64(in);
    sid = rec_get_str(in);
    uint32_t touch_s = rec_get_u32(in);
    uint64_t due = rec_get_u64(in);
    uint32_t backoff_s = rec_get_u32(in);
    yp_entry_t *e = NULL;
    int ok = dir_url && mount && sid && !in->error && touch_s <= YP_MAX_BACKOFF_S &&
             backoff_s <= YP_MAX_BACKOFF_S && due <= YP_MAX_BACKOFF_S * 1000u &&
             (e = calloc(1, sizeof(*e)));
    if (ok) {
        e->dir_url = dir_url;
        e->mount = mount;
        dir_url = mount = NULL;
        e->source_start = start; /* matched against the carried mount's on each tick */
        clean_copy(e->sid, sizeof(e->sid), sid);
        e->touch_s = touch_s;
        e->backoff_s = backoff_s;
        e->next_ms = loop_now_ms() + due;
        pthread_mutex_lock(&yp_state.lock);
        e->id = ++yp_state.next_id;
        e->next = yp_state.entries;
        yp_state.entries = e;
        pthread_mutex_unlock(&yp_state.lock);
    }
    free(dir_url);
    free(mount);
    free(sid);
    return ok ? 0 : -1;
}
