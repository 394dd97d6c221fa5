/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_request: an HLS request read once into the request value (see hls_route_internal.h):
 * its URL (a playlist, a segment, part or init segment, an intro segment) and mount name from
 * the decoded path, the session token and the blocking reload's _HLS_msn/_HLS_part from the
 * query, the agent and referer as views into the head. And the copy a request keeps while it
 * waits: in the parked state of whoever waits, or held with its connection (a login, an
 * on-demand relay) as the connection's role data; the states of requests being answered, from
 * a free list of the thread's. Looks up no mount, window or config.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/url.h"
#include "http/parser.h"
#include "net/conn.h"
#include "hls/hls_route_internal.h"
#include "hls/hls.h"
#include "hls/hls_intro.h"
#include "hls/hls_token.h"
#include "hls/hls_window_internal.h"

const char *hls_request_number(const char *p, uint64_t *v)
{
    if (*p < '0' || *p > '9')
        return NULL;
    uint64_t n = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (n > (UINT64_MAX - 9) / 10)
            return NULL;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    *v = n;
    return p;
}

/* Copies the first len bytes of path into name as a C string: 1, or 0 when they do not fit. */
static int name_of(char *name, const char *path, size_t len)
{
    if (len >= sizeof(hls_name_t))
        return 0;
    memcpy(name, path, len);
    name[len] = '\0';
    return 1;
}

/* 1 if path is an intro segment's URL, <mount>/hls/intro/<n>.<ext> or
 * <mount>/hls/intro/init.mp4: u->intro_seg its number (HLS_INTRO_INIT for the init segment), its
 * mount copied into name unless name is NULL; else 0. */
static int parse_intro(const char *path, hls_url_t *u, char *name)
{
    static const char dir[] = "/hls/intro/";
    const char *d = strstr(path, dir);
    const char *at = d && d != path ? d + sizeof(dir) - 1 : NULL;
    uint64_t v = 0;
    const char *p = at && strcmp(at, "init.mp4") == 0 ? "" : at ? hls_request_number(at, &v) : NULL;
    if (!p || v >= HLS_INTRO_MAX_SEGS ||
        (*p && strcmp(p, ".mp3") != 0 && strcmp(p, ".aac") != 0 && strcmp(p, ".mp4") != 0))
        return 0;
    u->intro = 1;
    u->intro_seg = *p ? (int)v : HLS_INTRO_INIT;
    return !name || name_of(name, path, (size_t)(d - path));
}

/* 1 if path is an ad's segment or part URL, <mount>/hls/ad/<id>/<n>.<ext> or
 * <mount>/hls/ad/<id>/<n>.<part>.<ext>, or an Opus ad's init segment <mount>/hls/ad/<id>/init.mp4
 * (hls_ads.h): u->ad, u->ad_id, u->seq, u->part, u->init and u->ext set, its mount copied into name unless name is NULL; else 0. */
static int parse_ad(const char *path, hls_url_t *u, char *name)
{
    static const char dir[] = "/hls/ad/";
    const char *d = strstr(path, dir), *id = d && d != path ? d + sizeof(dir) - 1 : NULL;
    size_t n = 0;
    while (id && ((id[n] >= '0' && id[n] <= '9') || (id[n] >= 'a' && id[n] <= 'f')))
        n++;
    if (!id || n != HLS_AD_ID_LEN || id[n] != '/')
        return 0;
    uint64_t part;
    const char *p = hls_request_number(id + n + 1, &u->seq);
    if (!p && strcmp(id + n + 1, "init.mp4") == 0) { /* an Opus ad's init segment */
        u->init = 1;
        p = id + n + 1 + 4;
    }
    if (p && !u->init && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        if (!(p = hls_request_number(p + 1, &part)) || part >= HLS_MAX_PARTS)
            return 0;
        u->part = (int)part;
    }
    static const char *const exts[] = {"mp3", "aac", "mp4"};
    for (size_t i = 0; p && *p == '.' && !u->ext && i < sizeof(exts) / sizeof(exts[0]); i++)
        if (strcmp(p + 1, exts[i]) == 0)
            u->ext = exts[i];
    if (!u->ext)
        return 0;
    u->ad = 1;
    memcpy(u->ad_id, id, HLS_AD_ID_LEN);
    u->ad_id[HLS_AD_ID_LEN] = '\0';
    return !name || name_of(name, path, (size_t)(d - path));
}

/* 1 if path is a playlist, segment, part or init segment URL of a mount (u filled; its mount
 * copied into name unless name is NULL: a question of whether it is one needs no copy),
 * else 0. */
static int parse_url(const char *path, hls_url_t *u, char *name)
{
    static const char playlist[] = "/hls.m3u8";
    size_t len = strlen(path), pl = sizeof(playlist) - 1;
    if (len > pl + 1 && strcmp(path + len - pl, playlist) == 0) {
        u->playlist = 1;
        return !name || name_of(name, path, len - pl);
    }
    const char *dir = NULL;
    for (const char *p = strstr(path, "/hls/"); p; p = strstr(p + 1, "/hls/"))
        dir = p;
    if (!dir || dir == path)
        return 0;
    uint64_t part;
    const char *p = hls_request_number(dir + 5, &u->seq);
    if (p && *p == '.' && p[1] >= '0' && p[1] <= '9') {
        if (!(p = hls_request_number(p + 1, &part)) || part >= HLS_MAX_PARTS)
            return 0;
        u->part = (int)part;
    }
    if (p && u->part < 0 && strcmp(p, ".init.mp4") == 0) {
        u->init = 1;
        p += sizeof(".init") - 1;
    }
    /* a static string: a parked request answers again after the path is gone */
    static const char *const exts[] = {"mp3", "aac", "mp4"};
    for (size_t i = 0; p && *p == '.' && !u->ext && i < sizeof(exts) / sizeof(exts[0]); i++)
        if (strcmp(p + 1, exts[i]) == 0)
            u->ext = exts[i];
    return u->ext && (!name || name_of(name, path, (size_t)(dir - path)));
}

/* Reads path into u (and name, unless NULL): 1 if it is an HLS URL. */
static int parse_path(const char *path, hls_url_t *u, char *name)
{
    memset(u, 0, sizeof(*u));
    u->part = -1;
    if (parse_intro(path, u, name))
        return 1;
    u->intro = u->intro_seg = 0;
    if (parse_ad(path, u, name))
        return 1;
    memset(u, 0, sizeof(*u));
    u->part = -1;
    return parse_url(path, u, name);
}

int hls_request_names(const char *path)
{
    hls_url_t u;
    return parse_path(path, &u, NULL);
}

/* A query parameter of req decoded into a buffer of the thread's (a query is shorter than a
 * head; good until the next call), NULL if absent or not decodable. */
static const char *query_value(const http_request_t *req, const char *name)
{
    static __thread char value[HTTP_MAX_HEAD_BYTES];
    return req->query ? url_query_value(req->query, req->query_len, name, value, sizeof(value))
                      : NULL;
}

int hls_request_query_number(const http_request_t *req, const char *name, uint64_t *v)
{
    const char *s = query_value(req, name);
    if (!s)
        return HLS_ARG_ABSENT;
    const char *end = hls_request_number(s, v);
    return end && *end == '\0' ? HLS_ARG_SET : HLS_ARG_BAD;
}

/* The value of header `name` of req (a view into the head): *len set, or NULL without it. */
static const char *header_view(const http_request_t *req, const char *name, size_t *len)
{
    const http_header_t *h = http_find_header(req, name);
    *len = h ? h->value_len : 0;
    return h ? h->value : NULL;
}

void hls_request_read_head(hls_request_t *r, conn_t *c, const http_request_t *req)
{
    r->c = c;
    r->http = req;
    const char *t = query_value(req, "session");
    r->token_arg = !t ? HLS_ARG_ABSENT : hls_token_form(t) ? HLS_ARG_SET : HLS_ARG_BAD;
    if (r->token_arg == HLS_ARG_SET)
        memcpy(r->token, t, strlen(t) + 1); /* a token's form fits */
    if (r->url.playlist) {
        r->msn_arg = hls_request_query_number(req, "_HLS_msn", &r->msn);
        r->part_arg = hls_request_query_number(req, "_HLS_part", &r->hls_part);
    }
    r->agent = header_view(req, "user-agent", &r->agent_len);
    r->referer = header_view(req, "referer", &r->referer_len);
}

int hls_request_read(hls_request_t *r, conn_t *c, const http_request_t *req, const char *path,
                     char *name)
{
    memset(r, 0, sizeof(*r));
    if (!parse_path(path, &r->url, name))
        return 0;
    r->mount = name;
    hls_request_read_head(r, c, req);
    return 1;
}

/* ---- a request that waits ---- */

void hls_request_keep(hls_request_t *kept, const hls_request_t *r)
{
    *kept = *r;
    kept->mount = r->window ? r->window->name : NULL;
    kept->login_known = 0;
    kept->login = NULL;
    kept->login_conf = NULL;
    kept->login_buf = NULL;
}

void hls_request_resume(hls_request_t *r, char *login_buf)
{
    r->login_known = 0;
    r->login_buf = login_buf;
}

static void held_release(conn_t *c)
{
    free(c->data);
    c->data = NULL;
}

/* The role of a connection holding its HLS request while someone else decides (its ops are
 * the waiter's: auth/park.c's, relay_park.c's): frees the request if it closes meanwhile. */
static const conn_ops_t held_role = {
    .name = "hls request held",
    .on_close = held_release,
};

int hls_request_hold(conn_t *c, const hls_request_t *r)
{
    if (c->role || c->data)
        return -EBUSY; /* cannot happen: a request being routed has no role yet */
    hls_request_t *kept = malloc(sizeof(*kept));
    if (!kept)
        return -ENOMEM;
    hls_request_keep(kept, r);
    c->data = kept;
    c->role = &held_role;
    return 0;
}

int hls_request_take(conn_t *c, hls_request_t *r, char *login_buf)
{
    if (c->role != &held_role || !c->data)
        return 0;
    *r = *(hls_request_t *)c->data;
    held_release(c);
    c->role = NULL;
    hls_request_resume(r, login_buf);
    return 1;
}

/* ---- the states of requests being answered: a free list of the thread's ---- */

#define STATE_FREE_MAX 1024 /* kept at most (512 KB a thread); more go back to malloc */

typedef union state_slot {
    union state_slot *next;
    max_align_t align;
    char bytes[HLS_STATE_BYTES];
} state_slot_t;

static __thread state_slot_t *state_list;
static __thread size_t state_count;
static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

/* The thread ends: what its list holds is freed. */
static void state_list_free(void *unused)
{
    (void)unused;
    while (state_list) {
        state_slot_t *s = state_list;
        state_list = s->next;
        free(s);
    }
    state_count = 0;
}

static void state_key_make(void)
{
    pthread_key_create(&state_key, state_list_free);
}

void *hls_state_new(void)
{
    state_slot_t *s = state_list;
    if (s) {
        state_list = s->next;
        state_count--;
    } else if (!(s = malloc(sizeof(*s)))) {
        return NULL;
    }
    memset(s, 0, sizeof(*s));
    return s;
}

void hls_state_free(void *p)
{
    if (!p)
        return;
    if (state_count >= STATE_FREE_MAX) {
        free(p);
        return;
    }
    if (!state_list && !state_count) { /* the thread's first: its list is freed when it ends */
        pthread_once(&state_once, state_key_make);
        pthread_setspecific(state_key, &state_list);
    }
    state_slot_t *s = p;
    s->next = state_list;
    state_list = s;
    state_count++;
}
