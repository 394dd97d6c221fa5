/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * chunked: an incremental decoder for "Transfer-Encoding: chunked" request bodies (a source's
 * PUT). Bytes arrive split anywhere; the decoder keeps its state between calls and decodes in
 * place, so the caller's read buffer holds the plain body afterwards. It understands chunk
 * sizes in hex, chunk extensions (skipped), the last chunk and trailers (skipped), with hard
 * limits on line lengths. It allocates nothing and knows nothing about sockets or sources.
 */
#ifndef RIMECAST_CHUNKED_H
#define RIMECAST_CHUNKED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Longest chunk-size line (size, extensions) and trailer line, without the CRLF. */
#define CHUNKED_MAX_LINE 4096
/* Largest chunk size accepted (bytes). */
#define CHUNKED_MAX_CHUNK ((uint64_t)1 << 40)

enum {
    CHUNKED_ERR_SYNTAX = -1,   /* not a hex size, stray byte, missing CRLF */
    CHUNKED_ERR_TOO_LONG = -2, /* a size or trailer line over CHUNKED_MAX_LINE */
    CHUNKED_ERR_OVERFLOW = -3, /* a chunk size over CHUNKED_MAX_CHUNK */
};

typedef struct chunked {
    int state;
    uint64_t remaining; /* data bytes left in the current chunk, or the size being read */
    size_t line_len;    /* bytes of the current size or trailer line */
    int digits;         /* hex digits of the size read so far */
} chunked_t;

/* Starts a body. */
void chunked_init(chunked_t *d);

/* Decodes buf[0..len) in place: the body bytes it contains are moved to the front of buf.
 * Returns how many body bytes are now at buf[0..n), or a CHUNKED_ERR_* (the decoder then stays
 * in error). Bytes after the end of the body (see chunked_done) are not consumed: *used (if not
 * NULL) says how many input bytes were. */
ssize_t chunked_decode(chunked_t *d, unsigned char *buf, size_t len, size_t *used);

/* 1 once the last chunk and its trailers were read: the body is complete. */
int chunked_done(const chunked_t *d);

/* A short description of an error code, for logs. */
const char *chunked_strerror(int err);

#endif
