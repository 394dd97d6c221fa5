/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * guard: back-off for addresses that keep failing to log in (admin, source, listener
 * credentials).
 *
 * Scheme: failures are counted per address in a window of GUARD_WINDOW seconds. The
 * GUARD_FAILURES-th failure in a window blocks the address for 2 s, the next block 4 s, then
 * 8 s and so on up to GUARD_BLOCK_MAX s; while blocked, any request of that address that
 * carries credentials is answered 429 with Retry-After and its credentials are not even
 * checked. A success clears the address. Requests without credentials (ordinary listeners,
 * public pages) never touch the table.
 *
 * Memory is bounded: GUARD_SHARDS shards of GUARD_SLOTS entries, an address hashed to one
 * shard; a full shard evicts its least recently seen entry. Each shard has its own mutex, so
 * there is no global lock, and only requests with credentials (cold path) take one.
 */
#ifndef RIMECAST_GUARD_H
#define RIMECAST_GUARD_H

#define GUARD_FAILURES 5
#define GUARD_WINDOW 60
#define GUARD_BLOCK_MAX 300
#define GUARD_SHARDS 16
#define GUARD_SLOTS 64

/* Seconds the address is still blocked for (0 = not blocked). */
unsigned guard_blocked(const char *ip);
/* A failed login from ip: logged once (what: "admin", "source /live", ... user may be NULL;
 * both escaped here). Returns the seconds of a block this failure started, else 0. */
unsigned guard_failed(const char *ip, const char *what, const char *user);
/* A successful login from ip: its record is cleared. */
void guard_succeeded(const char *ip);
/* Forgets everything (tests). */
void guard_reset(void);

#endif
