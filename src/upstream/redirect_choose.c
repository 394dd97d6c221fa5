/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect_choose: the admission step that sends a new listener to a sibling (redirect.h
 * redirect_admit): whether this server keeps it (its load against <redirect-share>, its state,
 * the request's mark, a relay user's login), which sibling takes it (the table's last answers,
 * each sibling's counts raised by the redirects sent to it since, so that a burst spreads
 * instead of landing on one sibling), and the 302. Cold path: a server with siblings looks at
 * its own counters for each new listener, and at the table only for one it sends away.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/str.h"
#include "http/client.h"
#include "http/parser.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"
#include "upstream/redirect.h"
#include "upstream/redirect_internal.h"

/* 1 if req's query has the REDIRECT_MARK parameter (a request a sibling sent here). */
static int marked(const http_request_t *req)
{
    const char *q = req->query;
    size_t n = q ? req->query_len : 0, k = strlen(REDIRECT_MARK);
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && q[end] != '&')
            end++;
        if (end - i >= k && memcmp(q + i, REDIRECT_MARK, k) == 0 &&
            (end - i == k || q[i + k] == '='))
            return 1;
        i = end + 1;
    }
    return 0;
}

/* 1 if req logs in as the relay user: a slave relays from its master wherever the master's
 * listeners are sent, or a relay tree would turn into a ring. */
static int relay_login(const http_request_t *req)
{
    const config_t *cfg = server_config();
    char *user = NULL, *pass = NULL;
    int ok = 0;
    if (cfg->relay_password && http_parse_basic_auth(req, &user, &pass) == 0)
        ok = str_equal_ct(user, cfg->relay_user ? cfg->relay_user : "relay") &
             str_equal_ct(pass, cfg->relay_password);
    free(user);
    if (pass) {
        memset(pass, 0, strlen(pass));
        free(pass);
    }
    return ok;
}

/* The sibling with the most room for `mount` among those loaded less than `below` parts per
 * million (LONG_MAX: any with room), https:// ones only when tls_only; its base URL is copied
 * to url and its counts raised by one until its next answer. Its index, or -1 for none. An
 * answer older than three poll intervals is not trusted. */
static int choose(const char *mount, int tls_only, long below, char *url, size_t cap)
{
    uint64_t now = loop_now_ms();
    uint64_t stale = 3ull * (uint64_t)server_config()->sibling_poll_interval * 1000u;
    int best = -1;
    long best_room = 0, best_ppm = 0;
    pthread_mutex_lock(&redirect_lock);
    for (int i = 0; i < redirect_nsiblings; i++) {
        redirect_sibling_t *s = &redirect_siblings[i];
        redirect_load_t l;
        if (!s->room || now - s->answered_ms > stale || (tls_only && !s->tls) ||
            redirect_parse_load(s->room, s->room_len, mount, &l) < 0 || !l.serving)
            continue;
        l.clients += s->sent;
        l.listeners += s->sent;
        l.mount += s->sent;
        long room = redirect_load_room(&l), ppm = redirect_load_ppm(&l);
        if (room <= 0 || ppm >= below)
            continue;
        if (best < 0 || room > best_room || (room == best_room && ppm < best_ppm)) {
            best = i;
            best_room = room;
            best_ppm = ppm;
        }
    }
    if (best >= 0) {
        redirect_siblings[best].sent++;
        snprintf(url, cap, "%s", redirect_siblings[best].url);
    }
    pthread_mutex_unlock(&redirect_lock);
    return best;
}

/* The load this server would refuse or send away a new listener of `name` at: 0 when it keeps
 * it; else the largest load a sibling may have to take it (LONG_MAX: full or stopping, any
 * sibling with room), with *full set when it is full. */
static long send_away_below(const char *name, int modes, int *full)
{
    const config_t *cfg = server_config();
    *full = modes == REDIRECT_FULL;
    if (*full)
        return LONG_MAX;
    int stopping = atomic_load(&server.state) == SERVER_STOPPING;
    if (!(modes & REDIRECT_FULL) && cfg->sibling_share >= 100 && !stopping)
        return 0; /* spreading is off, and full is the caller's to find */
    redirect_load_t here;
    redirect_load_here(name, &here);
    if (here.clients > 0)
        here.clients--; /* the load before this request's own connection */
    *full = redirect_load_room(&here) <= 0;
    if (*full)
        return modes & REDIRECT_FULL ? LONG_MAX : 0; /* else the caller's full path decides */
    if (stopping)
        return LONG_MAX;
    long ppm = redirect_load_ppm(&here);
    return ppm > (long)cfg->sibling_share * 10000 ? ppm : 0;
}

/* The 302 to base + the request target, marked. 1 when sent. */
static int send_redirect(conn_t *c, const http_request_t *req, const char *base)
{
    const char *q = memchr(req->uri, '?', req->uri_len);
    char last = req->uri[req->uri_len - 1];
    const char *sep = !q ? "?" : last == '?' || last == '&' ? "" : "&";
    char extra[3000], head[4096];
    int n = snprintf(extra, sizeof(extra),
                     "Location: %s%.*s%s" REDIRECT_MARK "=1\r\n"
                     "Access-Control-Allow-Origin: *\r\n", base, (int)req->uri_len, req->uri, sep);
    if (n < 0 || (size_t)n >= sizeof(extra))
        return 0;
    size_t hlen = reply_head(head, sizeof(head), 0, 302, "text/plain", 0, extra);
    if (hlen == 0)
        return 0;
    client_of(c)->status = 302;
    c->ops = &conn_writing_ops;
    conn_send(c, head, hlen, conn_linger_close);
    return 1;
}

int redirect_admit(conn_t *c, const http_request_t *req, const char *name, int modes)
{
    if (!server_config()->siblings || req->uri_len == 0 || req->uri[0] != '/')
        return 0;
    int full;
    long below = send_away_below(name, modes, &full);
    if (below == 0 || marked(req) || relay_login(req))
        return 0;
    char base[1024];
    if (choose(name, c->tls, below, base, sizeof(base)) < 0 ||
        !send_redirect(c, req, base))
        return 0;
    char esc[512];
    escape_log_utf8(esc, sizeof(esc), name, strlen(name));
    if (full)
        log_info("listener %s: %s is full here, sent to %s", CIDR_SHOWN(c->ip), esc, base);
    else
        log_debug("listener %s: %s: this server is past its share, sent to %s",
                  CIDR_SHOWN(c->ip), esc, base);
    return 1;
}

int redirect_listener(conn_t *c, const http_request_t *req, const char *name)
{
    return redirect_admit(c, req, name, REDIRECT_FULL);
}
