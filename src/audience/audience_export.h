/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_export: the session records of a period as a log other software reads: the W3C
 * Extended Log File Format (W3C Working Draft WD-logfile-960323: #Version, #Date and #Fields
 * directives, fields separated by spaces, text quoted) or TSV (a header line, a tab between
 * fields). A session is in the period it ended in; its line says when it began and ended, how
 * long it was, its bytes, mount, server, listener (its key, or its address cut to its network
 * for a record without one), user agent, country, how it ended, why it is invalid ("" valid)
 * and whether it was HLS. Read from the store a chunk at a time (AUDIENCE_EXPORT_CHUNK rows,
 * by start, after a cursor), so that any period is written in bounded memory: by
 * /admin/audience/sessions (admin/audience_sessions.c) and into <export-dir>, one file per UTC
 * day (audience_export_days, on the store's thread).
 */
#ifndef RIMECAST_AUDIENCE_EXPORT_H
#define RIMECAST_AUDIENCE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define AUDIENCE_EXPORT_CHUNK 2000

typedef enum audience_format {
    AUDIENCE_FORMAT_W3C,
    AUDIENCE_FORMAT_TSV,
} audience_format_t;

/* One session as exported (texts NULL when none). */
typedef struct audience_session_row {
    int64_t start_ms, end_ms;
    uint64_t bytes;
    const char *mount, *server, *key, *ip, *agent, *country, *ended, *invalid;
    int hls;
} audience_session_row_t;

typedef struct audience_export {
    /* asked */
    int64_t from_ms, to_ms;    /* sessions that ended in [from, to) */
    char *mount;               /* NULL: every mount */
    char *server;              /* NULL: every server sharing the store */
    audience_format_t format;
    /* the cursor: the last row given (by start, then the store's id); set by the backend */
    int64_t after_start_ms;
    char after_id[48];         /* "" before the first chunk */
    int64_t longest_ms;        /* the longest session (the first chunk finds it; -1 until) */
    /* answered, a chunk at a time */
    buf_t out;                 /* the chunk's lines */
    size_t rows;               /* rows in this chunk */
    int more;                  /* 1: a full chunk, there may be more */
    int err;                   /* 0, -ENODEV (no database), -EAGAIN (away), -EIO, -ENOMEM */
} audience_export_t;

/* Sets x up for its first chunk (copies mount and server). 0 or -ENOMEM. */
int audience_export_init(audience_export_t *x, int64_t from_ms, int64_t to_ms,
                         const char *mount, const char *srv, audience_format_t format);
void audience_export_clear(audience_export_t *x);

/* The lines before the rows: W3C's directives (#Version, #Date: now, #Fields), or TSV's
 * header line. */
void audience_export_head(buf_t *b, audience_format_t format, int64_t now_ms);
/* One row's line, appended to b. */
void audience_export_line(buf_t *b, audience_format_t format, const audience_session_row_t *r);
/* The field names, in order (W3C's identifiers or TSV's column names), n of them. */
const char *const *audience_export_fields(audience_format_t format, size_t *n);

/* Text as a W3C field: "quoted", a quote doubled, a backslash doubled, a control character
 * as \xHH; "-" for none. And as a TSV field: \t, \n, \r and \\ escaped; \N for none. */
void audience_export_w3c_text(buf_t *b, const char *s);
void audience_export_tsv_text(buf_t *b, const char *s);

/* On the store's thread: the next chunk of x into x->out (emptied first), by the backend of
 * db (NULL: -ENODEV). */
struct audience_db;
void audience_export_chunk(struct audience_db *db, audience_export_t *x);

/* On the store's thread: writes into <export-dir> the file of the oldest of the last
 * AUDIENCE_EXPORT_DAYS whole UTC days (those that ended a minute ago or more) that has none
 * yet, sessions-YYYY-MM-DD.log (W3C; the sessions of the server of that name), under a
 * temporary name renamed into place once complete. Returns the monotonic time it wants to be
 * called again. */
#define AUDIENCE_EXPORT_DAYS 7
uint64_t audience_export_days(struct audience_db *db, const char *own);

#endif
