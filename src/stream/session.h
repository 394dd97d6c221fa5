/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * session: the record of one listener session, made when it ends: which mount, when it began
 * and ended, the bytes sent, who listened (address, or only its network with
 * <anonymize-ip>; user agent, referer, user, country) and how it ended. session_end()
 * writes it as one JSON line to the session log (core/log.h) and hands it to the sink the
 * layer above registered (the audience store, audience/audience_store.h).
 *
 * A streaming listener ends its record when it is released (stream/listener.c); any other
 * kind of session (segments over HTTP, say) fills a session_record_t and calls session_end()
 * the same way. Cold path: once per session, on the worker that served it. Nothing here keeps
 * state across sessions but the sink and the shutdown flag.
 */
#ifndef RIMECAST_SESSION_H
#define RIMECAST_SESSION_H

#include <stddef.h>
#include <stdint.h>

/* How a session ended. */
typedef enum session_end {
    SESSION_END_CLIENT = 0,   /* the client left (closed, reset, a write failed) */
    SESSION_END_KICKED,       /* an admin's killclient */
    SESSION_END_SOURCE_GONE,  /* the mount ended and there was no fallback to follow */
    SESSION_END_TOO_SLOW,     /* cut off: it fell more than queue-size behind */
    SESSION_END_TIME_LIMIT,   /* <max-listener-duration>, or the time its authentication gave */
    SESSION_END_SHUTDOWN,     /* the server stopped */
} session_end_t;

typedef struct session_record {
    uint64_t id;              /* the connection's id (as in the admin listener lists) */
    const char *mount;        /* the mount asked for */
    const char *served;       /* the mount it was on at the end (a fallback); NULL: mount */
    int64_t start_ms, end_ms; /* wall clock, milliseconds since the epoch */
    uint64_t bytes;           /* bytes sent */
    const char *address;      /* the listener's address (a trusted proxy's forwarded one) */
    const char *agent, *referer, *user, *country; /* raw text or NULL */
    const char *key;          /* the listener key (session_listener_key); NULL: session_end
                               * makes it from address and agent */
    session_end_t end;
    int preroll;              /* 1: its preroll (or the mount's intro) was played to its end */
    const char *invalid;      /* why it is invalid traffic ("bot", "concurrent"), "" valid;
                               * NULL: session_end asks the classifier (its agent) */
    int hls;                  /* 1: an HLS session (playlists and segments), 0: a stream */
} session_record_t;

/* "client_left", "kicked", "source_gone", "too_slow", "time_limit", "shutdown". */
const char *session_end_name(session_end_t end);

/* The address as it may be stored: with truncate, an IPv4 address's /24 ("192.0.2.0") and
 * an IPv6 address's /48 ("2001:db8:1::"), IPv4-mapped IPv6 as IPv4; else a copy. Something
 * that is not an address becomes "-" when truncating (nothing of it may be kept). */
void session_address(const char *ip, int truncate, char *out, size_t cap);

/* The listener key: the figures' listener (CUME, pauses), SESSION_KEY_LEN hex digits into out
 * (SESSION_KEY_LEN + 1 bytes): the first 128 bits of SHA-256 over a label and either id (the
 * listener id a player sent, when not NULL) or the address, IPv6 cut to its /64 (IPv4 and
 * IPv4-mapped whole), and the agent. Made from the whole address (before <anonymize-ip>
 * cuts it); the same on every server. */
#define SESSION_KEY_LEN 32
void session_listener_key(const char *ip, const char *agent, const char *id, char *out);

/* Invalid traffic. The classifier (the bots lists, audience/bots.h; NULL: none) returns
 * SESSION_INVALID_BOT for an agent that declares itself a robot, else "". Set at start-up
 * before the workers run. */
#define SESSION_INVALID_BOT "bot"
#define SESSION_INVALID_CONCURRENT "concurrent"
#define SESSION_INVALID_PROBE "probe" /* a range probe that ended at once (listener.c) */
void session_set_classifier(const char *(*classify)(const char *agent));
/* The classifier's answer for agent ("" without one). Any thread. */
const char *session_classify(const char *agent);

/* Ends a session: truncates the address when <anonymize-ip> is on, writes the JSON line
 * to the session log and passes the record (with the stored address) to the sink. r and its
 * strings are only borrowed. Any thread. */
void session_end(const session_record_t *r);

/* The sink every ended session goes to (the store; NULL: none). It must copy what it keeps and
 * never block. Set at start-up before the workers run, or NULL after they stopped. */
void session_set_sink(void (*sink)(const session_record_t *r));

/* Countries. The locator (the GeoIP database, audience/geoip.h; NULL: none) writes the ISO code
 * of an address's country into cc (cap bytes) and returns 0, or returns -1 when unknown. Set
 * at start-up before the workers run. */
void session_set_locator(int (*locate)(const char *ip, char *cc, size_t cap));
/* The country of ip into cc ("" when unknown or there is no locator). Any thread. */
void session_locate(const char *ip, char *cc, size_t cap);
/* Sessions going on. A session that begins joins (counted in the listeners per country of
 * the mount it asked for, r->mount, and among the sessions going on that the figures count:
 * r's id, mount, start, address, agent and country are copied) and leaves when it ends
 * (before or after session_end). A session joining is classified (session_classify), and
 * when its listener key then holds more than <max-concurrent-per-listener> sessions going on
 * on its mount, each of them is marked SESSION_INVALID_CONCURRENT (a bot stays a bot). join returns NULL without memory (then it is not counted
 * anywhere); leave(NULL) does nothing. Cold path: a mutex. */
typedef struct session_live session_live_t;
session_live_t *session_listener_join(const session_record_t *r);
void session_listener_leave(session_live_t *s);
/* Why the session is invalid ("" valid; NULL when s is NULL): for its record, read before
 * it leaves. Any thread. */
const char *session_live_invalid(session_live_t *s);
/* Its preroll (or intro) was played to its end (any thread; s may be NULL). */
void session_live_preroll(session_live_t *s);
/* Calls fn(r, arg) for each session going on (end_ms: now), under the list's lock (fn must
 * not call back here, and copies what it keeps). */
void session_live_each(void (*fn)(const session_record_t *r, void *arg), void *arg);
/* Calls fn(cc, listeners, arg) for each country with listeners on mount, under the table's
 * lock (fn must not call back here). */
void session_countries(const char *mount, void (*fn)(const char *cc, long n, void *arg),
                       void *arg);

/* From now on sessions that end say SESSION_END_SHUTDOWN (called when the server stops). */
void session_server_stopping(void);

/* The wall clock in milliseconds since the epoch. */
int64_t session_now_ms(void);

#endif
