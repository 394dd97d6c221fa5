/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_intern: byte strings to small ids (0, 1, 2 ... in the order first seen), each
 * distinct string kept once and compared whole (a hash only finds where to look; it never
 * stands for a string), and the ids' order by bytes as SQLite's BINARY collation sorts text.
 * The SQLite store's figures (audience_sqlite_figures.c) use it for mounts, countries, addresses, user
 * agents and listeners while they read a period's sessions. One thread; no removal: a table
 * lives for one computation and is freed whole.
 */
#ifndef RIMECAST_AUDIENCE_INTERN_H
#define RIMECAST_AUDIENCE_INTERN_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct audience_interned audience_interned_t;

typedef struct audience_intern {
    buf_t text;                /* the strings, back to back */
    audience_interned_t *v;    /* per id: where its bytes are */
    size_t vroom;
    uint32_t n;
    uint32_t *slots;           /* open addressing: id + 1, 0 free; mask + 1 of them */
    uint32_t mask;
    uint64_t key[2];           /* the hash's random key: a client's user agents cannot be
                                * chosen to fall on one slot */
} audience_intern_t;           /* zeroed: empty */

/* The id of the len bytes at s, added when new; -ENOMEM (or -E2BIG past 2^32 - 2 ids). */
int64_t audience_intern(audience_intern_t *t, const void *s, size_t len);
/* The bytes of id (< t->n) and their length. */
const char *audience_intern_bytes(const audience_intern_t *t, uint32_t id, size_t *len);
/* A new array of t->n entries (the caller frees it): rank[id] is the place of id's string
 * among all of t's in byte order (on a common prefix the shorter first); NULL: -ENOMEM. */
uint32_t *audience_intern_ranks(const audience_intern_t *t);
/* Frees everything t holds and empties it. */
void audience_intern_free(audience_intern_t *t);

/* The array v of *room elements of size bytes with room for its element n (doubling, first
 * 64; *room updated): v itself, or moved, or NULL (v left as it was) on ENOMEM. For the
 * figures' other arrays too. */
void *audience_intern_room(void *v, size_t *room, size_t n, size_t size);

#endif
