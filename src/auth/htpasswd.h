/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * htpasswd: user files of <authentication type="htpasswd">, one "user:hash" per line.
 *
 * Hashes read: Icecast's 32-hex-digit MD5 of the password, and crypt(3) "$6$" (SHA-512),
 * "$5$" (SHA-256) and "$y$" (yescrypt). Users added here get "$6$" with a random salt; Icecast
 * itself cannot read those lines (a file shared with Icecast must be managed by Icecast).
 *
 * One htpasswd_t per file, created on first use and kept for the life of the process. The
 * parsed users are an immutable snapshot: readers load the pointer and do not block (but for
 * the file's first read, which readers that come meanwhile wait for); a change on disk (mtime
 * to the nanosecond, size, inode or device) is noticed by the next check (one stat) and the
 * file re-read into a new snapshot swapped in; replaced snapshots are freed a
 * minute later, long after any reader is done (core/watched.h). A file that does not exist
 * has no users; one that exists but cannot be read keeps the users read before. Writes (add, delete) take the file's lock,
 * write a temporary file in the same directory, fsync it and rename it over the file, so the
 * file is never seen half-written.
 */
#ifndef RIMECAST_HTPASSWD_H
#define RIMECAST_HTPASSWD_H

#include <stddef.h>

#define HTPASSWD_USER_MAX 255
#define HTPASSWD_HASH_MAX 255
#define HTPASSWD_LINE_MAX 1024

typedef struct watched htpasswd_t; /* the file, as a core/watched.h watched file */

typedef enum {
    HTPASSWD_OK = 0,
    HTPASSWD_NO_USER = 1,
    HTPASSWD_BAD_PASSWORD = 2,
} htpasswd_result_t;

/* ---- pure parsers (no I/O) ---- */

/* One line (without its newline; a trailing \r is ignored). Returns 1 and user/hash
 * pointers+lengths into line for an entry, 0 for a line to skip (empty, '#' comment), -1 for
 * a malformed line (no ':', empty or too long user or hash, control characters). */
int htpasswd_parse_line(const char *line, size_t len, const char **user, size_t *ulen,
                        const char **hash, size_t *hlen);
/* 1 if name may be a user (1..HTPASSWD_USER_MAX bytes, no ':', no control characters, not
 * starting with '#', which the file reader takes for a comment). */
int htpasswd_user_valid(const char *name);
/* 1 if pass matches hash (MD5 hex compared in constant time, or crypt_r), else 0. */
int htpasswd_hash_verify(const char *hash, const char *pass);
/* A new "$6$<16 random salt chars>$..." hash of pass into out. 0 or -errno. */
int htpasswd_hash_new(const char *pass, char *out, size_t cap);

/* Counts entries of a whole file's text (tests, fuzzing): entries, or -1 on ENOMEM.
 * *malformed (may be NULL) gets the number of malformed lines skipped. */
long htpasswd_count(const char *text, size_t len, long *malformed);

/* ---- files ---- */

/* The htpasswd_t of this path (absolute), created on first use; NULL on ENOMEM. Never freed. */
htpasswd_t *htpasswd_get(const char *path);
/* Checks user/pass against the file (re-read first if it changed). HTPASSWD_* or -EIO when
 * the file could never be read (then nobody gets in). A user not in the file costs what the
 * costliest user in it does: pass is verified against that user's hash (the decoy) and the
 * answer thrown away, so names cannot be told from the time a refusal takes. */
int htpasswd_check(htpasswd_t *h, const char *user, const char *pass);
/* The decoy of the file as it is now (re-read first if it changed) into out: 1, or 0 when
 * the file has no user with a hash that is verified (then an unknown user costs nothing,
 * as a known one would not either), -ENOSPC if out is too small, -errno. */
int htpasswd_decoy(htpasswd_t *h, char *out, size_t cap);
/* How many checks of unknown users, in any file, verified a password against a decoy (tests). */
unsigned long htpasswd_decoy_checks(void);
/* Adds a user (-EEXIST if present, -EINVAL for a bad name or an empty
 * password) or deletes one (-ENOENT if
 * absent), rewriting the file atomically. 0 or -errno. */
int htpasswd_add(htpasswd_t *h, const char *user, const char *pass);
int htpasswd_delete(htpasswd_t *h, const char *user);
/* The users, sorted by name: a malloc'd array of malloc'd names in *names (free each and the
 * array). Returns the count or -errno. */
long htpasswd_list(htpasswd_t *h, char ***names);

#endif
