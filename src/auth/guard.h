/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guard: back-off for addresses that keep failing to log in (admin, source, listener
 * credentials), set by <security><login-backoff> (conf/config.h; defaults in brackets).
 *
 * Only a wrong user or password is a failure: a request without credentials that is answered
 * 401 (libshout asks that way before it sends its password) is neither logged nor counted.
 * An address is a prefix: IPv4 /32 and IPv6 /64 [ipv4-prefix, ipv6-prefix], so one host's
 * IPv6 privacy addresses count as one. The failures-th [5] failure within window [60 s]
 * blocks the address for block [2 s]; each later block lasts twice the one before, up to
 * block-max [300 s]; every forget [600 s] without a failure takes one earlier block off that
 * count. While blocked, a request of the address that carries credentials is answered 429
 * with Retry-After, its credentials not even checked. A success clears the address
 * completely. Loopback and the trusted proxies [exempt-local 1] and the <exempt> ranges are
 * never blocked (their failures are logged all the same), so a station's own encoder, scripts
 * and admin on the same host, or a proxy whose clients are not yet named, cannot be locked
 * out by anyone's wrong passwords. A block and its end are logged once each.
 *
 * Memory is bounded: GUARD_SHARDS shards of GUARD_SLOTS entries, an address hashed to one
 * shard; a full shard evicts its least recently seen entry. Each shard has its own mutex, so
 * there is no global lock, and only requests with credentials (cold path) take one.
 */
#ifndef RIMECAST_GUARD_H
#define RIMECAST_GUARD_H

#define GUARD_SHARDS 16
#define GUARD_SLOTS 64

/* Seconds the address is still blocked for (0 = not blocked, always 0 when exempt). */
unsigned guard_blocked(const char *ip);
/* A wrong user or password from ip (call it only when credentials were given): logged once
 * (what: "admin", "source /live", ...; user may be NULL; both escaped here). Returns the
 * seconds of a block this failure started, else 0. */
unsigned guard_failed(const char *ip, const char *what, const char *user);
/* A successful login from ip: its record is cleared (a block it was under is logged as
 * ended). */
void guard_succeeded(const char *ip);
/* Adds the once-a-second sweep that logs the end of blocks (worker 0). Before the workers. */
void guard_register(void);
/* Forgets everything (tests). */
void guard_reset(void);

#endif
