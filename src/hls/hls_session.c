/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_session: HLS listeners as listeners. A session is named by the token in its media
 * playlist URL (<mount>/hls.m3u8?session=<token>, issued by the multivariant playlist: see
 * hls_token.h); it begins at its first playlist request with a token issued for its mount,
 * and ends when it stopped polling for four target durations (at least 10 s), with one
 * access-log line. It is pending until it fetches audio (a segment, part or intro segment):
 * only then does it hold a listener slot of the mount (max-listeners, the listener counts),
 * join the audience figures and get a session record. Pending or not, it counts against
 * <clients> and against its address's share of the mount (<hls><sessions-per-address>).
 * Segment URLs of an open mount carry no token (a cache serves them to all), so a segment
 * counts to the session whose playlist came by the same connection, else to one polling from
 * the same address with the same agent. On a mount with listener authentication a session
 * begins only with the login its first request passed (hls_session.h), is bound to the
 * address it logged in from, and its pieces answer only to its token; it ends that login with
 * it. A session whose mount has an intro (or whose login named a preroll) sees the playlist
 * through a view of its own that lists the intro first (hls_intro.h, hls_playlist_view).
 * Sessions are found by token, by connection and by address through a hash index (a poll and
 * a segment cost the same with ten or ten thousand sessions), once a request: its later
 * lookups take the session it found while the index has not changed (hls_sess_hint_t). Under
 * hls_t.lock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "auth/auth.h"
#include "auth/auth_url.h"
#include "conf/config.h"
#include "core/log.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/loop.h"
#include "core/record.h"
#include "core/str.h"
#include "core/url.h"
#include "net/server.h"
#include "net/worker.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_intro.h"
#include "hls/hls_ads.h"
#include "hls/hls_session.h"
#include "hls/hls_token.h"
#include "stream/mount.h"
#include "stream/session.h"

#define SESSION_MIN_TIMEOUT_MS 10000
#define SESSION_TEXT_MAX 512       /* bytes kept of a session's agent, referer and URI */
#define PER_ADDRESS_CAP 100        /* the default share of one address: see docs/HLS.md */
#define EXPIRE_BATCH_MS 20         /* one expiry pass ends sessions for at most this long */

struct hls_session {
    char token[HLS_TOKEN_LEN + 1];
    uint64_t id;
    int active;          /* it fetched audio: a listener (slot, counts, session record) */
    char *login;         /* the mount name whose authentication it passed, NULL: none */
    unsigned char akey[16]; /* its address as <sessions-per-address> counts it (IPv6: /64) */
    int killed;          /* ended by killclient: its polls are refused until they stop */
    int expired;         /* ended at the time limit of its login: refused the same way */
    time_t start;
    uint64_t last_ms;
    uint64_t limit_ms;   /* loop clock: the time limit its login gave, 0 none */
    int64_t limit_s;
    int64_t seen_ms;     /* wall clock of its last request (playlist, segment or part) */
    auth_url_session_t *url_auth; /* its login (hls_login_t), ended with it */
    auth_session_t *user_auth;
    char *user;
    hls_intro_t *intro;  /* its intro until its first playlist fixes its view (a reference) */
    hls_view_t view;     /* view.intro (a reference): its intro comes first, NULL none */
    int intro_heard;     /* it fetched the intro's last segment whole */
    int intro_played;    /* its whole preroll was fetched, intro and ads (an impression) */
    uint64_t ad_seen;    /* the mount's last ad break it took (hls_ads.c) */
    int shown;           /* its first playlist with a segment was answered */
    hls_sess_ads_t *ads; /* its ad breaks, NULL before the first */
    uint64_t bytes;
    uint64_t conn_id;    /* the connection of its last playlist request */
    mount_t *counted;    /* the mount whose listener count holds it (a reference) */
    char ip[64];
    char country[8];     /* ISO code from the GeoIP database, "" unknown */
    char key[SESSION_KEY_LEN + 1]; /* its listener key from a listener id, "": from its address
                                    * and agent (stream/session.h) */
    int64_t start_ms;    /* wall clock: its session record */
    session_live_t *live; /* among the sessions going on (stream/session.h), or NULL */
    char *agent, *referer, *uri;
    hls_session_t *next;
    hls_session_t *token_next, *conn_next, *addr_next; /* chains of the index */
};

/* When a session that ends for `why` stopped listening. One that stopped polling: a player
 * asks at least once a target duration while it plays, so it stopped within one target
 * duration after its last request (playlist, segment or part): it ends there, not when the
 * timeout noticed four target durations later (nor later than now). At its time limit when
 * that was up, else now. */
static int64_t session_end_ms(const hls_t *h, const hls_session_t *s, session_end_t why)
{
    int64_t now = session_now_ms(), end = now;
    if (why == SESSION_END_CLIENT && s->seen_ms + (int64_t)h->target * 1000 < now)
        end = s->seen_ms + (int64_t)h->target * 1000;
    else if (why == SESSION_END_TIME_LIMIT)
        end = s->start_ms + s->limit_s * 1000;
    return end > s->start_ms ? end : s->start_ms;
}

/* Gives back what the session's login holds: listener_remove says how long it lasted and what
 * it was sent. */
static void login_end(hls_session_t *s, int64_t end_ms)
{
    if (s->url_auth)
        auth_url_session_close(s->url_auth, (uint64_t)(end_ms - s->start_ms + 500) / 1000,
                               s->bytes);
    auth_session_end(s->user_auth);
    s->url_auth = NULL;
    s->user_auth = NULL;
}

/* The session's end: its access-log line; and, once it was a listener (it fetched audio), its
 * session record (as a streaming listener's: stream/session.h), both lasting until
 * session_end_ms, and its slot given back. */
static void session_close(hls_t *h, hls_session_t *s, session_end_t why)
{
    int64_t end_ms = session_end_ms(h, s, why);
    login_end(s, end_ms);
    log_access_entry_t e = {
        .ip = CIDR_SHOWN(s->ip), .start = s->start, .method = "GET", .uri = s->uri,
        .protocol = "HTTP/1.1", .status = 200, .bytes = s->bytes, .referer = s->referer,
        .agent = s->agent, .user = s->user, .end = (time_t)(end_ms / 1000),
    };
    log_access(&e);
    atomic_fetch_sub(&server.stats.hls_sessions, 1);
    if (!s->active)
        return;
    session_record_t r = {
        .id = s->id, .mount = h->name, .start_ms = s->start_ms, .end_ms = end_ms,
        .bytes = s->bytes, .address = s->ip, .agent = s->agent, .referer = s->referer,
        .user = s->user, .country = s->country, .end = why, .preroll = s->intro_played,
        .key = s->key[0] ? s->key : NULL, .invalid = session_live_invalid(s->live), .hls = 1,
    };
    session_end(&r);
    session_listener_leave(s->live);
    s->live = NULL;
    if (s->counted) {
        atomic_fetch_sub(&s->counted->listeners, 1);
        mount_unref(s->counted);
    }
    s->counted = NULL;
    atomic_fetch_sub(&server.stats.listeners, 1);
}

static void session_free(hls_t *h, hls_session_t *s)
{
    if (!s->killed && !s->expired)
        session_close(h, s, SESSION_END_CLIENT); /* it stopped polling */
    h->nsessions--;
    hls_intro_unref(s->intro);
    hls_intro_unref((hls_intro_t *)s->view.intro);
    hls_ads_free(h, s->ads);
    free(s->login);
    free(s->user);
    free(s->agent);
    free(s->referer);
    free(s->uri);
    free(s);
}

/* ---- the index: three tables of index_size chains, by token, connection and address ---- */

static size_t token_hash(const hls_t *h, const char *token)
{
    uint64_t x = 1469598103934665603ull; /* FNV-1a */
    for (; *token; token++)
        x = (x ^ (unsigned char)*token) * 1099511628211ull;
    return (size_t)(x % h->index_size);
}

static size_t conn_hash(const hls_t *h, uint64_t conn_id)
{
    return h->index_size + (size_t)((conn_id * 11400714819323198485ull >> 32) % h->index_size);
}

static size_t addr_hash(const hls_t *h, const unsigned char *akey)
{
    uint64_t x = 1469598103934665603ull;
    for (int i = 0; i < 16; i++)
        x = (x ^ akey[i]) * 1099511628211ull;
    return 2 * h->index_size + (size_t)(x % h->index_size);
}

/* The address key of ip: the address, an IPv6 one cut to its /64 (a host has a whole /64);
 * an address that does not parse (none should) is its text's hash. */
static void address_key(const char *ip, unsigned char *akey)
{
    static const unsigned char v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (cidr_addr_parse(ip, strlen(ip), akey) < 0) {
        memset(akey, 0, 16);
        for (size_t i = 0; ip[i]; i++)
            akey[i % 16] = (unsigned char)(akey[i % 16] * 31 + (unsigned char)ip[i]);
        return;
    }
    if (memcmp(akey, v4_mapped, sizeof(v4_mapped)) != 0)
        memset(akey + 8, 0, 8);
}

enum { BY_TOKEN, BY_CONN, BY_ADDR };

static hls_session_t **chain_next(hls_session_t *s, int by)
{
    return by == BY_TOKEN ? &s->token_next : by == BY_CONN ? &s->conn_next : &s->addr_next;
}

static void chain_remove(hls_session_t **pp, hls_session_t *s, int by)
{
    for (; *pp; pp = chain_next(*pp, by))
        if (*pp == s) {
            *pp = *chain_next(s, by);
            return;
        }
}

static void chain_push(hls_session_t **head, hls_session_t *s, int by)
{
    *chain_next(s, by) = *head;
    *head = s;
}

static void index_add(hls_t *h, hls_session_t *s)
{
    h->index_gen++;
    chain_push(&h->session_index[token_hash(h, s->token)], s, BY_TOKEN);
    chain_push(&h->session_index[conn_hash(h, s->conn_id)], s, BY_CONN);
    chain_push(&h->session_index[addr_hash(h, s->akey)], s, BY_ADDR);
}

static void index_remove(hls_t *h, hls_session_t *s)
{
    h->index_gen++; /* s may be freed next: no request's hint may name it */
    if (!h->session_index)
        return;
    chain_remove(&h->session_index[token_hash(h, s->token)], s, BY_TOKEN);
    chain_remove(&h->session_index[conn_hash(h, s->conn_id)], s, BY_CONN);
    chain_remove(&h->session_index[addr_hash(h, s->akey)], s, BY_ADDR);
}

/* Room for one more session: the tables grow to twice the sessions (at least 64 chains). */
static int index_reserve(hls_t *h)
{
    if (h->session_index && (size_t)h->nsessions < h->index_size)
        return 0;
    size_t size = h->index_size ? 2 * h->index_size : 64;
    hls_session_t **index = calloc(3 * size, sizeof(*index));
    if (!index)
        return -ENOMEM;
    free(h->session_index);
    h->session_index = index;
    h->index_size = size;
    for (hls_session_t *s = h->sessions; s; s = s->next)
        index_add(h, s);
    return 0;
}

/* s joins h's sessions and the index (room reserved by index_reserve). */
static void session_link(hls_t *h, hls_session_t *s)
{
    s->next = h->sessions;
    h->sessions = s;
    h->nsessions++;
    index_add(h, s);
}

/* The session now polls over connection conn_id. */
static void session_moved(hls_t *h, hls_session_t *s, uint64_t conn_id)
{
    if (s->conn_id == conn_id)
        return;
    h->index_gen++;
    chain_remove(&h->session_index[conn_hash(h, s->conn_id)], s, BY_CONN);
    s->conn_id = conn_id;
    chain_push(&h->session_index[conn_hash(h, s->conn_id)], s, BY_CONN);
}

static hls_session_t *session_find(hls_t *h, const char *token)
{
    hls_session_t *s = h->session_index ? h->session_index[token_hash(h, token)] : NULL;
    while (s && strcmp(s->token, token) != 0)
        s = s->token_next;
    return s;
}

/* The session an earlier lookup of the same request found (hint), while h's index has not
 * changed since: the pointer is then still one of h's sessions. NULL: look it up. */
static hls_session_t *hint_get(const hls_t *h, const hls_sess_hint_t *hint)
{
    return hint && hint->s && hint->h == h && hint->gen == h->index_gen ? (hls_session_t *)hint->s
                                                                        : NULL;
}

/* s (found in h's index) kept in hint for the request's next lookups: s. */
static hls_session_t *hint_set(const hls_t *h, hls_sess_hint_t *hint, hls_session_t *s)
{
    if (hint && s)
        *hint = (hls_sess_hint_t){s, h, h->index_gen};
    return s;
}

/* session_find for a request that may have found it before. */
static hls_session_t *session_find_hinted(hls_t *h, const char *token, hls_sess_hint_t *hint)
{
    hls_session_t *s = hint_get(h, hint);
    return s ? s : hint_set(h, hint, session_find(h, token));
}

/* Sessions of h from the address with key akey that are not over (pending or listening). */
static int address_sessions(hls_t *h, const unsigned char *akey)
{
    int n = 0;
    for (hls_session_t *s = h->session_index ? h->session_index[addr_hash(h, akey)] : NULL; s;
         s = s->addr_next)
        n += !s->killed && !s->expired && memcmp(s->akey, akey, 16) == 0;
    return n;
}

/* The share of h's mount one address may hold: <hls><sessions-per-address>, else half of the
 * mount's max-listeners but at most PER_ADDRESS_CAP (0: no limit). */
static int address_cap(hls_t *h)
{
    int cap = hls_sessions_per_address(h->name);
    if (cap >= 0)
        return cap;
    int max = h->mount ? atomic_load(&h->mount->max_listeners) : -1;
    if (max < 0)
        return PER_ADDRESS_CAP;
    cap = max / 2 > 0 ? max / 2 : 1;
    return cap < PER_ADDRESS_CAP ? cap : PER_ADDRESS_CAP;
}

/* 1 if one more session would take the server past <clients>: a session counts as a client
 * as a connection does, but a connection that carries a session's requests and the session
 * count as one. */
static int clients_full(void)
{
    int sessions = atomic_load(&server.stats.hls_sessions);
    int carriers = atomic_load(&server.stats.session_carriers);
    int extra = sessions > carriers ? sessions - carriers : 0;
    return atomic_load(&server.stats.clients) + extra + 1 > server_config()->clients;
}

/* The length of text (len bytes) cut to SESSION_TEXT_MAX bytes at a character's start. */
static size_t text_cap(const char *text, size_t len)
{
    if (len > SESSION_TEXT_MAX) {
        len = SESSION_TEXT_MAX;
        while (len > 0 && ((unsigned char)text[len] & 0xc0) == 0x80)
            len--;
    }
    return len;
}

/* A copy of text (len bytes; NULL: NULL) cut to SESSION_TEXT_MAX bytes at a character's
 * start. */
static char *text_capped(const char *text, size_t len)
{
    return text ? strndup(text, text_cap(text, len)) : NULL;
}

/* The session's URI for the access log: the playlist path as sent with its token as the
 * query, cut as text_capped cuts. NULL without memory. */
static char *uri_of(const hls_client_t *who, const char *token)
{
    static const char query[] = "?session=";
    size_t p = who->path ? who->path_len : 0, t = strlen(token);
    char *u = malloc(p + sizeof(query) + t);
    if (!u)
        return NULL;
    if (p)
        memcpy(u, who->path, p);
    memcpy(u + p, query, sizeof(query) - 1);
    memcpy(u + p + sizeof(query) - 1, token, t);
    u[text_cap(u, p + sizeof(query) - 1 + t)] = '\0';
    return u;
}

/* 1 if a session's agent (as kept: cut by text_capped, NULL none) is the one of who's
 * request as strncmp would say over SESSION_TEXT_MAX bytes. */
static int agent_matches(const char *kept, const hls_client_t *who)
{
    if (!kept || !who->agent)
        return !kept && !who->agent;
    size_t k = strlen(kept), n = who->agent_len;
    if (k < SESSION_TEXT_MAX || n < SESSION_TEXT_MAX)
        return k == n && memcmp(kept, who->agent, k) == 0;
    return memcmp(kept, who->agent, SESSION_TEXT_MAX) == 0;
}

/* An id no other session of h has: the connection's (what the auth server was told as the
 * client), else a new one. */
static uint64_t session_id(hls_t *h, uint64_t conn_id)
{
    for (hls_session_t *o = h->sessions; o && conn_id; o = o->next)
        if (o->id == conn_id)
            conn_id = 0;
    return conn_id ? conn_id : worker_next_conn_id();
}

/* Why a session of who may not begin on h now: 0 it may, -ENOSPC the mount is full, -EDQUOT
 * its address holds its share, -EMFILE the server holds <clients>. */
static int begin_refused(hls_t *h, const unsigned char *akey)
{
    int max = h->mount ? atomic_load(&h->mount->max_listeners) : 0;
    if (!h->mount || (max >= 0 && atomic_load(&h->mount->listeners) >= max))
        return -ENOSPC;
    int cap = address_cap(h);
    if (cap > 0 && address_sessions(h, akey) >= cap)
        return -EDQUOT;
    return clients_full() ? -EMFILE : 0;
}

/* The listener key of a session that begins with who's request, when that names a listener id
 * (<audience><listener-id-param>); else key stays "". */
static void key_of(const hls_client_t *who, char *key)
{
    const char *param = server_config()->listener_id_param;
    char id[257];
    if (param && who->query &&
        url_query_value(who->query, who->query_len, param, id, sizeof(id)) && id[0])
        session_listener_key(NULL, NULL, id, key);
}

/* A new session of token, let in by login (NULL: none needed), pending until it fetches
 * audio. NULL with *rc set when it cannot begin. */
static hls_session_t *session_begin(hls_t *h, const char *token, const hls_client_t *who,
                                    hls_login_t *login, hls_intro_t **intro, int *rc)
{
    unsigned char akey[16];
    address_key(who->ip, akey);
    if ((*rc = begin_refused(h, akey)) < 0)
        return NULL;
    hls_session_t *s = NULL;
    if (index_reserve(h) < 0 || !(s = calloc(1, sizeof(*s))) ||
        !(s->uri = uri_of(who, token)) ||
        (who->login && !(s->login = str_dup(who->login))) ||
        (login && login->user_name && !(s->user = str_dup(login->user_name)))) {
        if (s) {
            free(s->uri);
            free(s->login);
            free(s);
        }
        *rc = -ENOMEM;
        return NULL;
    }
    snprintf(s->token, sizeof(s->token), "%s", token);
    memcpy(s->akey, akey, sizeof(akey));
    key_of(who, s->key);
    s->id = session_id(h, login && login->url ? who->conn_id : 0);
    snprintf(s->ip, sizeof(s->ip), "%s", who->ip);
    s->agent = text_capped(who->agent, who->agent_len);
    s->referer = text_capped(who->referer, who->referer_len);
    s->start = time(NULL);
    s->start_ms = session_now_ms();
    if (login) {
        s->url_auth = login->url;
        s->user_auth = login->user;
        login->url = NULL;
        login->user = NULL;
        s->limit_s = login->time_limit_s;
    }
    /* the mount's <max-listener-duration> holds for an HLS listener too: the shorter wins */
    const mount_conf_t *mc = config_find_mount(server_config(), h->name);
    if (mc && mc->max_listener_duration > 0 &&
        (!s->limit_s || mc->max_listener_duration < s->limit_s))
        s->limit_s = mc->max_listener_duration;
    if (s->limit_s)
        s->limit_ms = loop_now_ms() + (uint64_t)s->limit_s * 1000u;
    /* a break signalled before it began is not its own */
    s->ad_seen = h->mount ? atomic_load(&h->mount->adbreak_id) : 0;
    s->intro = *intro; /* its view is fixed with its first playlist */
    *intro = NULL;
    s->conn_id = who->conn_id;
    session_link(h, s);
    atomic_fetch_add(&server.stats.hls_sessions, 1);
    return s;
}

/* The pending session s fetched audio: it becomes a listener of h's mount (a slot taken, the
 * counts and the figures joined). 0, or -ENOSPC when the mount is full. */
static int session_activate(hls_t *h, hls_session_t *s)
{
    if (s->active)
        return 0;
    if (!h->mount || mount_take_listener_slot(h->mount) < 0)
        return -ENOSPC;
    s->active = 1;
    session_locate(s->ip, s->country, sizeof(s->country));
    session_record_t r = {.id = s->id, .mount = h->name, .start_ms = s->start_ms,
                          .address = s->ip, .agent = s->agent, .user = s->user,
                          .country = s->country, .key = s->key[0] ? s->key : NULL};
    s->live = session_listener_join(&r);
    s->counted = mount_ref(h->mount);
    atomic_fetch_add(&server.stats.listeners, 1);
    atomic_fetch_add(&server.stats.listener_connections, 1);
    return 0;
}

/* Ends s at its time limit if that passed: 1 if it did (now or before). */
static int session_over_limit(hls_t *h, hls_session_t *s, uint64_t now)
{
    if (!s->expired && !s->killed && s->limit_ms && now >= s->limit_ms) {
        session_close(h, s, SESSION_END_TIME_LIMIT);
        s->expired = 1;
    }
    return s->expired;
}

/* Ends s at once and forgets it (its token may begin a session again). */
static void session_drop(hls_t *h, hls_session_t *s)
{
    for (hls_session_t **pp = &h->sessions; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    index_remove(h, s);
    session_free(h, s);
}

/* 1 if the login s passed covers what who's request must pass now (who->login: the mount
 * name whose authentication covers the window now, NULL for none). */
static int login_covers(const hls_session_t *s, const hls_client_t *who)
{
    if (!who->login)
        return 1;
    if (!s->login)
        return 0;
    const config_t *cfg = server_config();
    return strcmp(s->login, who->login) == 0 ||
           auth_covers(config_find_mount(cfg, s->login), config_find_mount(cfg, who->login));
}

/* A playlist request of token, whose session is s (NULL: none yet): may_begin 0 when a
 * session must exist (-ENOENT). A session begins only with a token issued for h (-EACCES).
 * On a mount with authentication the session's login must cover the window's now (else it
 * ends: -ENOENT, its request logs in again) and the request come from its address
 * (-EACCES). */
static int poll_locked(hls_t *h, hls_session_t *s, const char *token, const hls_client_t *who,
                       uint64_t bytes, int may_begin, hls_login_t *login, hls_intro_t **intro)
{
    int rc = 0;
    if (s && !s->killed && !s->expired && !login_covers(s, who)) {
        char esc[512];
        log_info("hls: session %llu of %s ends: the mount now serves audio its login does not "
                 "reach", (unsigned long long)s->id,
                 escape_log_utf8(esc, sizeof(esc), h->name, strlen(h->name)));
        session_drop(h, s);
        s = NULL;
    }
    if (s && who->login && strcmp(s->ip, who->ip) != 0)
        return -EACCES;
    if (!s && !may_begin)
        return -ENOENT;
    if (!s && !hls_token_issued(h->name, token))
        return -EACCES;
    if (!s && !(s = session_begin(h, token, who, login, intro, &rc)))
        return rc;
    s->last_ms = loop_now_ms();
    s->seen_ms = session_now_ms();
    s->bytes += bytes;
    session_moved(h, s, who->conn_id);
    if (s->killed)
        return -EPERM;
    if (session_over_limit(h, s, s->last_ms))
        return -ETIME;
    return 0;
}

/* Intro file `file` (a webroot name, "/" optional) cut for h's segments, or NULL. */
static hls_intro_t *intro_named(hls_t *h, const char *file)
{
    if (!file || !*file)
        return NULL;
    char path[1024];
    snprintf(path, sizeof(path), "%s%s", file[0] == '/' ? "" : "/", file);
    return hls_intro_get(path, hls_target_duration(h));
}

/* The intro a new session of h would get: the login's file (a preroll chosen for it), else,
 * or when that cannot be used, its mount's <intro>; NULL for none. Reads the file: not under
 * the window's lock. */
static hls_intro_t *intro_for(hls_t *h, const hls_login_t *login)
{
    hls_intro_t *in = login ? intro_named(h, login->intro) : NULL;
    if (!in) {
        const mount_conf_t *mc = config_find_mount(server_config(), h->name);
        in = intro_named(h, mc ? mc->intro : NULL);
    }
    return in;
}

/* A playlist request of token (see poll_locked): a session about to begin gets its intro. */
static int poll(hls_t *h, const char *token, const hls_client_t *who, uint64_t bytes,
                int may_begin, hls_login_t *login)
{
    hls_intro_t *intro = NULL;
    pthread_mutex_lock(&h->lock);
    /* a request with a token finds the session its token names, whatever the lookup */
    hls_session_t *s = session_find_hinted(h, token, who->hint);
    if (may_begin && !s) {
        pthread_mutex_unlock(&h->lock);
        intro = intro_for(h, login);
        pthread_mutex_lock(&h->lock);
        s = session_find(h, token); /* begun meanwhile by another request of its own? */
    }
    int rc = poll_locked(h, s, token, who, bytes, may_begin, login, &intro);
    pthread_mutex_unlock(&h->lock);
    hls_intro_unref(intro); /* not taken */
    return rc;
}

int hls_session_poll(hls_t *h, const char *token, const hls_client_t *who, uint64_t bytes)
{
    return poll(h, token, who, bytes, 1, NULL);
}

int hls_session_poll_login(hls_t *h, const char *token, const hls_client_t *who,
                           hls_login_t *login)
{
    int rc = poll(h, token, who, 0, login != NULL, login);
    hls_login_drop(login); /* what a session did not take */
    return rc;
}

void hls_login_drop(hls_login_t *login)
{
    if (!login)
        return;
    if (login->url)
        auth_url_session_close(login->url, 0, 0);
    auth_session_end(login->user);
    login->url = NULL;
    login->user = NULL;
}

int hls_session_known(hls_t *h, const char *token)
{
    pthread_mutex_lock(&h->lock);
    int known = session_find(h, token) != NULL;
    pthread_mutex_unlock(&h->lock);
    return known;
}

/* The session a piece request of `who` counts to: the one its token names (who->token), else
 * the one whose playlist came by the same connection, else one polling from the same address
 * with the same agent; NULL none. */
static hls_session_t *session_of_client(hls_t *h, const hls_client_t *who)
{
    if (who->token)
        return session_find(h, who->token);
    hls_session_t *s = h->session_index ? h->session_index[conn_hash(h, who->conn_id)] : NULL;
    while (s && s->conn_id != who->conn_id)
        s = s->conn_next;
    if (s || !h->session_index)
        return s;
    /* else the first polling from the same address with the same agent: a walk of that
     * address's sessions (a piece fetched on a connection that carried no playlist) */
    unsigned char akey[16];
    address_key(who->ip, akey);
    for (hls_session_t *o = h->session_index[addr_hash(h, akey)]; o; o = o->addr_next)
        if (strcmp(o->ip, who->ip) == 0 && agent_matches(o->agent, who))
            return o;
    return NULL;
}

/* session_of_client for a request that may have found it before. */
static hls_session_t *client_session_hinted(hls_t *h, const hls_client_t *who)
{
    hls_session_t *s = hint_get(h, who->hint);
    return s ? s : hint_set(h, who->hint, session_of_client(h, who));
}

int hls_session_add_bytes(hls_t *h, const hls_client_t *who, uint64_t bytes)
{
    pthread_mutex_lock(&h->lock);
    if (h->mount) { /* bytes to the mount's listeners: what feeds the window */
        atomic_fetch_add_explicit(&h->mount->bytes_sent, bytes, memory_order_relaxed);
        atomic_fetch_add_explicit(&h->mount->hls_bytes_sent, bytes, memory_order_relaxed);
    }
    hls_session_t *s = client_session_hinted(h, who);
    if (s && (s->killed || s->expired))
        s = NULL;
    if (s) {
        s->bytes += bytes;
        s->seen_ms = session_now_ms();
    }
    pthread_mutex_unlock(&h->lock);
    return s != NULL;
}

int hls_session_piece(hls_t *h, const hls_client_t *who, int audio)
{
    pthread_mutex_lock(&h->lock);
    /* a protected mount's piece belongs to the session its token names, and to no other */
    hls_session_t *s = !who->login ? client_session_hinted(h, who)
                       : who->token ? session_find_hinted(h, who->token, who->hint) : NULL;
    int rc = 0;
    if (who->login && (!s || s->killed || s->expired || strcmp(s->ip, who->ip) != 0 ||
                       !login_covers(s, who)))
        rc = s && s->killed ? -EPERM : -EACCES; /* a protected mount's pieces: its sessions' */
    else if (s && !s->killed && !s->expired && audio)
        rc = session_activate(h, s);
    pthread_mutex_unlock(&h->lock);
    return rc;
}

int hls_sessions_expire_locked(hls_t *h, uint64_t now, int all)
{
    uint64_t timeout = (uint64_t)h->target * 4000u;
    if (timeout < SESSION_MIN_TIMEOUT_MS)
        timeout = SESSION_MIN_TIMEOUT_MS;
    int more = 0, ended = 0;
    for (hls_session_t **pp = &h->sessions; *pp;) {
        hls_session_t *s = *pp;
        if (all || now - s->last_ms > timeout) {
            /* a batch ends after EXPIRE_BATCH_MS (the clock read every 64 sessions): the rest
             * wait for the next pass, so that no worker turn stalls on a crowd leaving */
            if (!all && ++ended % 64 == 0 && loop_now_ms() - now > EXPIRE_BATCH_MS) {
                more = 1;
                break;
            }
            *pp = s->next;
            index_remove(h, s);
            session_free(h, s);
        } else {
            session_over_limit(h, s, now);
            pp = &s->next;
        }
    }
    if (!h->sessions) { /* the index is made again with the next session */
        free(h->session_index);
        h->session_index = NULL;
        h->index_size = 0;
    }
    return more;
}

void hls_sessions_follow_locked(hls_t *h, mount_t *m)
{
    for (hls_session_t *s = h->sessions; s; s = s->next) {
        if (s->counted == m || s->killed || s->expired || !s->active)
            continue;
        if (s->counted) {
            atomic_fetch_sub(&s->counted->listeners, 1);
            mount_unref(s->counted);
        }
        /* a session keeps its place even past max-listeners: it was let in */
        atomic_fetch_add(&m->listeners, 1);
        s->counted = mount_ref(m);
    }
}

/* Calls fn(h, s, arg) for each listening session counted on the live mount named `name`,
 * under its window's lock, until fn returns nonzero: the sessions of the windows that follow
 * the mount (its own, and those of sourceless mounts it is the fallback of), as its plain
 * listeners are those of its subscriptions. The list is walked as the publish hook walks it
 * (windows are never freed). 1 if fn stopped the walk. */
static int counted_foreach(const char *name, int (*fn)(hls_t *, hls_session_t *, void *),
                           void *arg)
{
    mount_t *m = mount_find(name);
    int stop = 0;
    for (hls_t *h = m ? atomic_load(&m->hls) : NULL; h && !stop;
         h = atomic_load(&h->next_on_mount)) {
        pthread_mutex_lock(&h->lock);
        for (hls_session_t *s = h->sessions; s && !stop; s = s->next)
            if (s->counted == m && s->active && !s->killed && !s->expired)
                stop = fn(h, s, arg);
        pthread_mutex_unlock(&h->lock);
    }
    if (m)
        mount_unref(m);
    return stop;
}

typedef struct {
    void (*fn)(const hls_session_view_t *v, void *arg);
    void *arg;
    time_t now;
} list_walk_t;

static int list_one(hls_t *h, hls_session_t *s, void *arg)
{
    (void)h;
    list_walk_t *w = arg;
    hls_session_view_t v = {s->id, s->ip, s->agent, (long long)(w->now - s->start), s->user};
    w->fn(&v, w->arg);
    return 0;
}

void hls_sessions_foreach(const char *name, void (*fn)(const hls_session_view_t *v, void *arg),
                          void *arg)
{
    list_walk_t w = {fn, arg, time(NULL)};
    counted_foreach(name, list_one, &w);
}

static int count_one(hls_t *h, hls_session_t *s, void *arg)
{
    (void)h;
    (void)s;
    (*(int *)arg)++;
    return 0;
}

int hls_listeners(const char *name)
{
    int n = 0;
    counted_foreach(name, count_one, &n);
    return n;
}

static int kill_one(hls_t *h, hls_session_t *s, void *arg)
{
    if (s->id != *(const uint64_t *)arg)
        return 0;
    session_close(h, s, SESSION_END_KICKED);
    s->killed = 1;
    return 1;
}

int hls_session_kill(const char *name, uint64_t id)
{
    return counted_foreach(name, kill_one, &id);
}

const char *hls_session_login_mount(hls_t *h, char *out, size_t cap)
{
    const config_t *cfg = server_config();
    pthread_mutex_lock(&h->lock);
    const char *serving = h->mount ? h->mount->name : h->name;
    /* a sourceless mount's fallback with authentication of its own is entered by that */
    int own = strcmp(serving, h->name) != 0 &&
              !auth_covers(config_find_mount(cfg, h->name), config_find_mount(cfg, serving));
    const char *name = own ? serving : h->name;
    size_t len = strlen(name);
    if (len < cap)
        memcpy(out, name, len + 1);
    pthread_mutex_unlock(&h->lock);
    return len < cap ? out : NULL;
}

/* What hls_ads.c reads of s (one that is going on): 1 with *ref filled, else 0. */
static int session_ref(hls_session_t *s, hls_sess_ref_t *ref)
{
    if (!s || s->killed || s->expired)
        return 0;
    *ref = (hls_sess_ref_t){.ads = &s->ads, .ad_seen = &s->ad_seen, .id = s->id,
                            .token = s->token, .ip = s->ip, .agent = s->agent,
                            .country = s->country, .view = &s->view, .first = !s->shown};
    return 1;
}

int hls_session_ref_locked(hls_t *h, const char *token, const hls_client_t *who,
                           hls_sess_ref_t *ref)
{
    return session_ref(token ? session_find(h, token) : session_of_client(h, who), ref);
}

int hls_session_playlist(hls_t *h, const char *token, buf_t *out, int ll, worker_t *w,
                         hls_sess_hint_t *hint)
{
    hls_view_t v = {0};
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = session_find_hinted(h, token, hint);
    if (s && s->intro && h->open_seq > h->first_seq) {
        /* its first playlist: the intro first when it is the stream's format */
        if (hls_intro_fits(s->intro, h->name, h->is_opus, h->adts, h->rate))
            hls_view_begin_locked(h, s->intro, &s->view);
        else
            hls_intro_unref(s->intro);
        s->intro = NULL;
    }
    hls_sess_ref_t ref;
    if (s && w && h->mount && atomic_load(&h->mount->adbreak_id) != s->ad_seen &&
        session_ref(s, &ref))
        hls_ads_poll_locked(h, &ref, w); /* an ad break signalled since it last looked */
    if (s && w && !s->shown && !s->ads && session_ref(s, &ref))
        hls_ads_first_locked(h, &ref, w); /* its preroll, if the mount has one */
    if (s && w && s->ads && s->ads->carried && session_ref(s, &ref))
        hls_ads_resume_locked(h, &ref, w); /* a break carried by an upgrade: its ads again */
    if (s && s->ads && hls_ads_waiting(s->ads)) {
        pthread_mutex_unlock(&h->lock);
        return -EINPROGRESS;
    }
    if (s && h->open_seq > h->first_seq)
        s->shown = 1; /* before a first segment nothing was shown: its preroll is still to come */
    if (s && s->ads && hls_ads_own(s->ads)) { /* it had a break: its own numbering */
        int rc = hls_ads_playlist_locked(h, s->ads, s->view.intro ? &s->view : NULL, out, ll);
        pthread_mutex_unlock(&h->lock);
        return rc;
    }
    if (s && s->view.intro) {
        v = s->view;
        hls_intro_ref(v.intro);
    }
    pthread_mutex_unlock(&h->lock);
    int rc = hls_playlist_view(h, out, ll, v.intro ? &v : NULL);
    hls_intro_unref((hls_intro_t *)v.intro);
    return rc;
}

int hls_session_intro_known(hls_t *h, const char *file)
{
    const mount_conf_t *mc = config_find_mount(server_config(), h->name);
    int known = file[0] == '/' && mc && mc->intro &&
                strcmp(mc->intro + (mc->intro[0] == '/'), file + 1) == 0;
    pthread_mutex_lock(&h->lock);
    for (hls_session_t *s = h->sessions; s && !known; s = s->next)
        known = s->view.intro && strcmp(s->view.intro->name, file) == 0;
    pthread_mutex_unlock(&h->lock);
    return known;
}

/* Its preroll counts as played once all of it was fetched: its intro, then its preroll ads. */
static void preroll_check_locked(hls_session_t *s)
{
    int ads = hls_ads_preroll(s->ads);
    if (s->intro_played || ads == HLS_PREROLL_LEFT || (s->view.intro && !s->intro_heard) ||
        (!s->view.intro && ads == HLS_PREROLL_NONE))
        return;
    s->intro_played = 1;
    session_live_preroll(s->live);
}

void hls_session_preroll_check_locked(hls_t *h, const char *token)
{
    hls_session_t *s = session_find(h, token);
    if (s)
        preroll_check_locked(s);
}

void hls_session_intro_fetched(hls_t *h, const hls_client_t *who, const char *file, int n)
{
    pthread_mutex_lock(&h->lock);
    hls_session_t *s = session_of_client(h, who);
    if (s && s->view.intro && !s->intro_heard && n == s->view.nsegs - 1 &&
        strcmp(s->view.intro->name, file) == 0) {
        s->intro_heard = 1;
        log_debug("hls: session %llu played its intro", (unsigned long long)s->id);
        preroll_check_locked(s);
    }
    pthread_mutex_unlock(&h->lock);
}

/* ---- an upgrade: the sessions go on in the new process ---- */

void hls_sessions_save(const char *name, buf_t *out)
{
    hls_t *h = hls_find(name);
    uint32_t n = 0;
    if (h)
        pthread_mutex_lock(&h->lock);
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next)
        n += !s->killed;
    rec_u64(out, h ? h->open_seq : 0);
    rec_u32(out, n);
    uint64_t now = loop_now_ms();
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next) {
        if (s->killed)
            continue;
        rec_str(out, s->token);
        rec_u64(out, s->id);
        rec_i64(out, (int64_t)s->start);
        rec_u64(out, now - s->last_ms);
        rec_u64(out, s->bytes);
        rec_str(out, s->ip);
        rec_str(out, s->country);
        rec_i64(out, s->start_ms);
        rec_str(out, s->agent);
        rec_str(out, s->referer);
        rec_str(out, s->uri);
        rec_str(out, s->user);
        /* its login: listener_remove is sent by the new process when it ends, at its limit */
        rec_i64(out, s->seen_ms);
        rec_i64(out, s->limit_s);
        rec_u64(out, s->limit_ms ? (s->limit_ms > now ? s->limit_ms - now : 1) : 0);
        rec_u8(out, s->url_auth != NULL);
        if (s->url_auth)
            auth_url_session_save(s->url_auth, out);
        auth_user_session_save(s->user_auth, out); /* a user file's login */
        rec_u8(out, (uint8_t)s->active);
        rec_str(out, s->login);
        rec_str(out, s->key);
    }
    /* then the numbering ad breaks left sessions: after the sessions, so that a binary that
     * knows nothing of it reads the record as before, and one that does reads it when there */
    uint32_t numbered = 0;
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next)
        numbered += !s->killed && s->ads && hls_ads_own(s->ads);
    rec_u32(out, numbered);
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next) {
        if (s->killed || !s->ads || !hls_ads_own(s->ads))
            continue;
        int64_t delta, ddisc;
        hls_ads_numbering_locked(h, s->ads, s->view.intro ? &s->view : NULL, &delta, &ddisc);
        rec_str(out, s->token);
        rec_i64(out, delta);
        rec_i64(out, ddisc);
    }
    /* then the breaks in progress that can go on in the new process (hls_adcarry.c) */
    size_t at = out->len;
    uint32_t breaks = 0;
    rec_u32(out, 0); /* their number, written once known */
    for (hls_session_t *s = h ? h->sessions : NULL; s; s = s->next)
        if (!s->killed && s->ads)
            breaks += (uint32_t)hls_ads_carry_save_locked(h, s->ads, s->token, out);
    if (!out->error)
        for (int i = 0; i < 4; i++)
            out->data[at + (size_t)i] = (char)(breaks >> (8 * i));
    if (h)
        pthread_mutex_unlock(&h->lock);
}

/* The numbering ad breaks left the carried sessions (hls_sessions_save). */
static void restore_numbering_locked(hls_t *h, rec_reader_t *in)
{
    uint32_t n = rec_get_u32(in);
    for (uint32_t i = 0; i < n && !in->error; i++) {
        char *token = rec_get_str(in);
        int64_t delta = rec_get_i64(in), ddisc = rec_get_i64(in);
        hls_session_t *s = token && !in->error ? session_find(h, token) : NULL;
        if (s && !s->ads)
            s->ads = hls_ads_numbered(h, delta, ddisc);
        free(token);
    }
}

int hls_sessions_restore(mount_t *m, rec_reader_t *in, uint64_t *max_id)
{
    uint64_t seq = rec_get_u64(in);
    uint32_t n = rec_get_u32(in);
    hls_number_after(seq);
    hls_t *h = n && !in->error ? hls_touch(m) : NULL;
    if (!n || in->error)
        return in->error ? -EINVAL : 0;
    if (!h)
        return -ENOMEM;
    pthread_mutex_lock(&h->lock);
    h->ever = 1; /* its first segment says the stream broke: players reset their clocks */
    for (uint32_t i = 0; i < n && !in->error; i++) {
        hls_session_t *s = calloc(1, sizeof(*s));
        char *token = rec_get_str(in), *ip, *country;
        if (!s) {
            free(token);
            break;
        }
        snprintf(s->token, sizeof(s->token), "%s", token ? token : "");
        free(token);
        s->id = rec_get_u64(in);
        s->start = (time_t)rec_get_i64(in);
        s->last_ms = loop_now_ms() - rec_get_u64(in);
        s->bytes = rec_get_u64(in);
        ip = rec_get_str(in);
        country = rec_get_str(in);
        snprintf(s->ip, sizeof(s->ip), "%s", ip ? ip : "");
        snprintf(s->country, sizeof(s->country), "%s", country ? country : "");
        free(ip);
        free(country);
        s->start_ms = rec_get_i64(in);
        s->agent = rec_get_str(in);
        s->referer = rec_get_str(in);
        s->uri = rec_get_str(in);
        if (!s->uri)
            s->uri = str_dup("-");
        s->user = rec_get_str(in);
        s->seen_ms = rec_get_i64(in);
        s->limit_s = rec_get_i64(in);
        uint64_t left = rec_get_u64(in);
        s->limit_ms = left ? loop_now_ms() + left : 0;
        if (rec_get_u8(in) && !(s->url_auth = auth_url_session_restore(in)))
            in->error = 1;
        if (!in->error && auth_user_session_restore(in, &s->user_auth) < 0)
            in->error = 1;
        s->active = rec_get_u8(in) != 0;
        s->login = rec_get_str(in);
        char *key = rec_get_str(in);
        if (key && strlen(key) == SESSION_KEY_LEN)
            memcpy(s->key, key, SESSION_KEY_LEN + 1);
        free(key);
        if (s->id > *max_id)
            *max_id = s->id;
        if (in->error || index_reserve(h) < 0) {
            auth_url_session_free(s->url_auth);
            auth_session_end(s->user_auth);
            free(s->uri);
            free(s->agent);
            free(s->referer);
            free(s->user);
            free(s->login);
            free(s);
            in->error = 1;
            break;
        }
        address_key(s->ip, s->akey);
        if (s->active) {
            session_record_t r = {.id = s->id, .mount = h->name, .start_ms = s->start_ms,
                                  .address = s->ip, .agent = s->agent, .user = s->user,
                                  .country = s->country, .key = s->key[0] ? s->key : NULL};
            s->live = session_listener_join(&r);
            atomic_fetch_add(&m->listeners, 1);
            s->counted = mount_ref(m);
            atomic_fetch_add(&server.stats.listeners, 1);
        }
        session_link(h, s);
        atomic_fetch_add(&server.stats.hls_sessions, 1);
    }
    if (!in->error && in->p < in->end)
        restore_numbering_locked(h, in);
    if (!in->error && in->p < in->end)
        hls_ads_carry_restore_locked(h, in, seq);
    pthread_mutex_unlock(&h->lock);
    return in->error ? -EINVAL : 0;
}
