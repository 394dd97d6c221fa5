/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * buf: a growable byte buffer for building output text (JSON, metrics, pages).
 * Start from BUF_INIT (or a zeroed buf_t), append, then either buf_take the bytes or buf_free.
 * A failed allocation sets a sticky error: later appends do nothing, so a caller appends
 * freely and checks buf.error once at the end. While data is non-NULL it is NUL-terminated.
 * Not thread-safe; a buffer belongs to one caller.
 */
#ifndef RIMECAST_BUF_H
#define RIMECAST_BUF_H

#include <stddef.h>

typedef struct buf {
    char *data;  /* malloc'd, NUL-terminated at len; NULL until the first append */
    size_t len;  /* bytes used, not counting the NUL */
    size_t cap;  /* bytes allocated */
    int error;   /* 0, or -ENOMEM (sticky) once an allocation or format failed */
} buf_t;

#define BUF_INIT { NULL, 0, 0, 0 }

/* Makes room for at least `more` bytes after len (plus the NUL). 0, or the sticky error. */
int buf_reserve(buf_t *b, size_t more);

/* Appends n bytes of s (s may be NULL when n is 0). 0, or the sticky error. */
int buf_append(buf_t *b, const void *s, size_t n);

/* Appends a NUL-terminated string. 0, or the sticky error. */
int buf_append_str(buf_t *b, const char *s);

/* Appends one byte. 0, or the sticky error. */
int buf_append_char(buf_t *b, char c);

/* Appends printf-style formatted text. 0, or the sticky error (-ENOMEM; an encoding error of
 * vsnprintf counts as one too). */
int buf_appendf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hands the bytes to the caller: returns the malloc'd NUL-terminated data (an empty string when
 * nothing was appended) and its length in *len (if len is not NULL), and leaves b empty.
 * Returns NULL, freeing everything, when the buffer is in error or on ENOMEM. */
char *buf_take(buf_t *b, size_t *len);

/* Frees the bytes and resets b to BUF_INIT (error cleared). */
void buf_free(buf_t *b);

#endif
