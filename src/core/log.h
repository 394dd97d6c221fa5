/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log: the error log (levels, timestamps), the access log (combined format + duration) and the
 * optional playlist log (one line per title change, Icecast's "time|mount|listeners|title").
 *
 * Both logs are plain files opened in append mode (or stderr for "-"); a line is formatted in a
 * stack buffer and written with one write(), so threads never interleave within a line.
 * log_reopen() swaps the file descriptors in place (dup2), which is how SIGHUP rotates logs;
 * rotation by size (log_set_rotation) renames a full file and swaps in a new one the same way.
 * Every string that came from a client must go through escape_log() (log_access does it), or
 * escape_log_utf8() for text people read (titles, names: UTF-8 kept, controls escaped).
 * A write that fails (disk full, I/O error) drops the line at once and never blocks: the first
 * failure of each log is said once on stderr, and when a write to it succeeds again one line
 * in the error log ("log write failed: ... N lines lost") says what was lost.
 * The last LOG_RECENT_LEN error-log lines are also kept in memory (log_recent) for the admin
 * log view; they are kept whether or not the file write succeeded.
 */
#ifndef RIMECAST_LOG_H
#define RIMECAST_LOG_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

enum { LOG_ERROR = 1, LOG_WARN = 2, LOG_INFO = 3, LOG_DEBUG = 4 };

/* Opens the logs; path "-" or NULL means stderr. A file is opened as core/safefile.h says:
 * never through a symbolic link at its name, and as root only where the user the server drops
 * to cannot (a file created so is given to that user; another user's file is refused). 0, or
 * -errno with msg (cap bytes, may be NULL) saying which log could not be opened and why. */
int log_open(const char *error_path, const char *access_path, int level, char *msg, size_t cap);
/* Reopens the logs at their (maybe new) paths, SIGHUP's reload: the error and access logs, and
 * the playlist log when playlist_path is not NULL (NULL: none from now on). All or nothing:
 * the new files are all opened before any takes the place of one in use, so on failure
 * (-errno, msg as for log_open) every log stays as it was. */
int log_reopen(const char *error_path, const char *access_path, const char *playlist_path,
               int level, char *msg, size_t cap);
void log_set_level(int level);
/* Rotation by size (<logsize>, <logarchive>): a log that grows past max_bytes (0: never) is
 * renamed to "<file>.old" (replacing the previous one), or with archive to
 * "<file>.YYYYMMDD_HHMMSS", and a new file is opened at its path. The size is counted from the
 * bytes written (plus what the file held when opened), never asked of the filesystem. */
void log_set_rotation(unsigned long long max_bytes, int archive);
void log_close(void);

/* printf-style error log line: "[YYYY-MM-DD  HH:MM:SS] LEVEL subsystem/func message".
 * Arguments that carry client text must already be escaped (escape_log, escape_log_utf8). */
void log_msg(int level, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One error-log line kept in memory: when, how severe, and "subsystem/func message" (control
 * characters already replaced; may hold any other bytes, so escape it where it leaves). */
#define LOG_RECENT_LEN 200
#define LOG_RECENT_TEXT 1024
typedef struct log_line {
    time_t time;
    int level;                   /* LOG_ERROR .. LOG_DEBUG */
    char text[LOG_RECENT_TEXT];  /* NUL-terminated, cut at LOG_RECENT_TEXT - 1 bytes */
} log_line_t;

/* Copies the last error-log lines (at most LOG_RECENT_LEN, only those the level let through)
 * into out (room for cap), oldest first; returns how many. Thread-safe. */
int log_recent(log_line_t *out, int cap);
/* "EROR", "WARN", "INFO" or "DBUG" for a level (as in the file), "" if out of range. */
const char *log_level_name(int level);
/* Forgets the lines kept in memory (tests). */
void log_recent_clear(void);

#define log_error(...) log_msg(LOG_ERROR, __func__, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __func__, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __func__, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __func__, __VA_ARGS__)

/* A rate limit for one kind of error-log line (e.g. "accept: Too many open files"): at most
 * one line per interval; the lines in between are only counted, and the next line that goes
 * out says how many were suppressed. Static storage, zero-initialised; thread-safe. */
typedef struct log_ratelimit {
    atomic_ullong next_ms;   /* monotonic time before which lines are suppressed */
    atomic_ullong suppressed;
} log_ratelimit_t;

/* log_msg through rl: logs unless a line went out through rl less than interval_ms ago.
 * Returns 1 if the line was written (or filtered by level), 0 if suppressed. */
int log_msg_limited(log_ratelimit_t *rl, unsigned interval_ms, int level, const char *func,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#define log_warn_limited(rl, ms, ...) log_msg_limited(rl, ms, LOG_WARN, __func__, __VA_ARGS__)
#define log_info_limited(rl, ms, ...) log_msg_limited(rl, ms, LOG_INFO, __func__, __VA_ARGS__)

typedef struct log_access_entry {
    const char *ip;
    const char *user;      /* NULL -> "-" */
    time_t start;          /* connection start (for the duration) */
    time_t end;            /* 0: now; else when it stopped listening (the duration ends there) */
    const char *method;    /* raw client text, escaped here */
    const char *uri;       /* raw client text, escaped here */
    const char *protocol;  /* e.g. "HTTP/1.1" */
    int status;
    uint64_t bytes;
    const char *referer;   /* raw, may be NULL */
    const char *agent;     /* raw, may be NULL */
} log_access_entry_t;

/* Combined log format plus the connection's duration in seconds, written when it closes and
 * stamped with that time (as Icecast does: the session began at date - duration):
 * ip - user [date] "METHOD uri PROTO" status bytes "referer" "agent" duration */
void log_access(const log_access_entry_t *e);

/* Opens (or, when already open, reopens in place) the playlist log; NULL means none: lines are
 * dropped from then on. "-" is stderr. 0 or -errno (then the previous state stays, and msg says
 * why as log_open does). */
int log_playlist_open(const char *path, char *msg, size_t cap);
/* One playlist line: "dd/Mon/yyyy:HH:MM:SS +zzzz|mount|listeners|title" (the access log's time
 * format, as Icecast writes it). mount and title are raw client text, escaped here (control
 * characters and invalid UTF-8 as \xHH; '|' in the mount too, the title is the last field). */
void log_playlist(const char *mount, int listeners, const char *title);

/* The session log: one JSON line per listener session (stream/session.h makes them), rotated
 * with the other logs. Opens it, or reopens it in place, at path; NULL: none from now on. 0 or
 * -errno (the previous state stays; msg says why as log_open does). */
int log_session_open(const char *path, char *msg, size_t cap);
/* Writes one complete line (ending in '\n', already escaped) to the session log, if open. */
void log_session_line(const char *line, size_t len);
/* 1 if the session log is open (its lines are written somewhere). */
int log_session_active(void);

#endif
