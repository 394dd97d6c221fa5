/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * record: typed, length-prefixed records in a byte string, for the state one process hands
 * to the next on an upgrade (upgrade/). A record is a 16-bit type, a 32-bit length and that
 * many bytes of fields; a field is a fixed-size integer (little-endian) or a byte string
 * (32-bit length, then the bytes). Writing appends to a buf_t (its sticky error says if
 * memory ran out); reading never goes past the end: a short or malformed record sets the
 * reader's error and every later read returns zero / NULL, so a caller reads all its fields
 * and checks the error once.
 */
#ifndef RIMECAST_RECORD_H
#define RIMECAST_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Writing. rec_begin starts a record of `type` and returns where its length goes, which
 * rec_end fills in. */
size_t rec_begin(buf_t *b, uint16_t type);
void rec_end(buf_t *b, size_t at);
void rec_u8(buf_t *b, uint8_t v);
void rec_u32(buf_t *b, uint32_t v);
void rec_u64(buf_t *b, uint64_t v);
void rec_i64(buf_t *b, int64_t v);
void rec_bytes(buf_t *b, const void *p, size_t n);
/* A string, NULL kept apart from "" (a string's length then has its top bit set). */
void rec_str(buf_t *b, const char *s);

typedef struct rec_reader {
    const unsigned char *p, *end;
    int error; /* set once anything read did not fit */
} rec_reader_t;

static inline void rec_reader_init(rec_reader_t *r, const void *p, size_t n)
{
    r->p = p;
    r->end = r->p + n;
    r->error = 0;
}

/* The next record: its type, and a reader over its fields in *fields. 1, 0 at the end of the
 * input, -1 when what is left is not a whole record (error set). */
int rec_next(rec_reader_t *r, uint16_t *type, rec_reader_t *fields);
uint8_t rec_get_u8(rec_reader_t *r);
uint32_t rec_get_u32(rec_reader_t *r);
uint64_t rec_get_u64(rec_reader_t *r);
int64_t rec_get_i64(rec_reader_t *r);
/* A byte string: a pointer into the input (not NUL-terminated) and its length in *n. */
const unsigned char *rec_get_bytes(rec_reader_t *r, size_t *n);
/* A string as a malloc'd copy (NULL when it was NULL, or on error: then r->error is set
 * unless it was NULL). */
char *rec_get_str(rec_reader_t *r);

#endif
