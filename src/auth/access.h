/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access: who may talk to the server at all, from four files named in <paths>:
 *   allow-ip         addresses / CIDR ranges (IPv4, IPv6); when set, only those get in
 *   deny-ip          addresses / CIDR ranges refused
 *   deny-agents      User-Agent patterns refused (fnmatch wildcards, case-insensitive,
 *                    matched against the whole header; "*bot*" refuses any agent with "bot")
 *   trusted-proxies  addresses / CIDR ranges of reverse proxies whose X-Forwarded-For or
 *                    Forwarded: for= header names the real client; the <x-forwarded-for>
 *                    elements of <paths> (Icecast-KH) add proxies trusted the same way
 * One entry a line, '#' starts a comment. Each file is re-read when it changes on disk
 * (core/watched.h: mtime to the nanosecond, size, inode), into an immutable snapshot that
 * readers use without a lock. A file that does not exist is an empty list; one that exists
 * but cannot be read keeps the list read before, and one never read refuses what it would
 * let in (everyone, for allow-ip, deny-ip and deny-agents; no proxy is trusted). Each error
 * is logged once.
 *
 * Denied clients get 403: IP rules at accept, before the request is read, and again on the
 * forwarded address once a trusted proxy's request is parsed; the agent after parsing.
 */
#ifndef RIMECAST_ACCESS_H
#define RIMECAST_ACCESS_H

#include <stddef.h>

typedef struct http_request http_request_t;

/* 1 if ip may connect (allow-ip / deny-ip of the running config). */
int access_ip_allowed(const char *ip);
/* 1 if the agent (may be NULL: no header) is not refused by deny-agents. */
int access_agent_allowed(const char *agent, size_t len);
/* 1 if peer is listed in trusted-proxies or <x-forwarded-for>. */
int access_proxy_trusted(const char *peer);

/* The client behind a trusted proxy, from every X-Forwarded-For line (in order, as one
 * comma-separated list: a client's own line in front of its proxy's counts for nothing) and
 * every Forwarded: for= line likewise: in each list the rightmost address that is not itself
 * a trusted proxy (RFC 7239 section 7.1), else its leftmost. When both headers are present,
 * a list of trusted proxies only gives way to the other; two different clients named is a
 * conflict (a proxy writes one of the two, and which one a client forged cannot be told).
 * Writes the address, normalised, into out and returns 1; 0 when the request names none (or
 * none valid); -1 on a conflict (the request is refused). */
int access_forwarded_for(const http_request_t *req, char *out, size_t cap);

/* The same on header values given as lines (for tests and fuzzing): comma-separated
 * addresses, optional spaces, IPv6 in brackets or not, an optional :port on IPv4 / bracketed
 * IPv6; Forwarded lines in for= syntax. */
typedef struct {
    const char *value;
    size_t len;
} forwarded_line_t;
int access_pick_forwarded_lines(const forwarded_line_t *xff, size_t nxff,
                                const forwarded_line_t *fwd, size_t nfwd,
                                int (*trusted)(const unsigned char addr[16]), char *out,
                                size_t cap);
/* One value of one header (forwarded_syntax: a Forwarded line). */
int access_pick_forwarded(const char *value, size_t len, int forwarded_syntax,
                          int (*trusted)(const unsigned char addr[16]), char *out, size_t cap);

#endif
