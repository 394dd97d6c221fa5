/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_spool: the file where session records wait while the shared database is away
 * (audience.spool in <logdir>), oldest first, at most <spool-size> bytes. One record a line,
 * its fields separated by tabs (text with \\, \t, \n, \r escaped, \N for none; "R3" lines of
 * sessions, "R2" and "R1" lines an earlier version wrote read too; "A1" lines of ad decisions,
 * audience_ads.h, with their ads); records are
 * appended in the order they ended and read back in that order; once all were written the
 * file is emptied. A record read back may be written twice (a stop between the write and the
 * emptying): its id makes the second write do nothing. The file is the server's user's, mode
 * 0600 (it holds listeners' addresses), never reached through a symbolic link, and held by
 * one process at a time (an exclusive flock: during an upgrade the process before keeps it
 * until it has put what it held in it and exits). Store thread only.
 */
#ifndef RIMECAST_AUDIENCE_SPOOL_H
#define RIMECAST_AUDIENCE_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "audience/audience_record.h"
#include "core/buf.h"

typedef struct audience_spool {
    char *path;
    int fd;                    /* -1: not open */
    off_t size;                /* bytes in the file */
    off_t read_at;             /* where the first record not yet written begins */
    uint64_t records;          /* records from read_at on */
} audience_spool_t;

/* Opens (creating) path; the records an earlier run left are counted (a last line cut short
 * by a crash is cut off). 0 or -errno (*why: a sentence fragment); -EAGAIN when another
 * process holds it. */
int audience_spool_open(audience_spool_t *s, const char *path, const char **why);
void audience_spool_close(audience_spool_t *s);

/* Appends v[0..n) in order while the file stays within max bytes; how many were appended
 * (those that did not fit, or all on a write error, are not: the caller counts them lost). */
size_t audience_spool_append(audience_spool_t *s, audience_record_t *const *v, size_t n,
                             long max);
/* Reads up to max records from read_at on, in order: a list of new records (NULL when none
 * or on ENOMEM), their number in *n, the offset after them in *next, malformed lines
 * skipped (counted in *bad). */
audience_record_t *audience_spool_read(audience_spool_t *s, size_t max, size_t *n, off_t *next,
                                       size_t *bad);
/* The n records read up to next were written (or lost): read_at moves on, and the file is
 * emptied when nothing is left in it. */
void audience_spool_done(audience_spool_t *s, off_t next, size_t n);

/* A record as a line (newline included) appended to b; 0 or -ENOMEM. */
int audience_spool_encode(buf_t *b, const audience_record_t *e);
/* The record a line (len bytes, no newline) holds, or NULL when it is malformed (or ENOMEM). */
audience_record_t *audience_spool_decode(const char *line, size_t len);

#endif
