/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cidr: IPv4 and IPv6 addresses and ranges ("192.0.2.7", "10.0.0.0/8", "2001:db8::/32"), and
 * lists of them as read from a file (one per line, '#' starts a comment, blank lines skipped).
 * IPv4 is kept as IPv4-mapped IPv6 (::ffff:a.b.c.d), so "127.0.0.0/8" also matches a client
 * that reached an IPv6 socket as ::ffff:127.0.0.1. Pure functions, no I/O.
 */
#ifndef RIMECAST_CIDR_H
#define RIMECAST_CIDR_H

#include <stddef.h>

typedef struct {
    unsigned char addr[16]; /* network bits only (host bits cleared) */
    unsigned prefix;        /* 0..128, in IPv6 terms */
} cidr_t;

typedef struct {
    cidr_t *v;
    size_t n;
} cidr_list_t;

/* A numeric address (IPv4 dotted quad or IPv6) into 16 bytes. 0 or -1. */
int cidr_addr_parse(const char *s, size_t len, unsigned char out[16]);
/* "addr" or "addr/prefix" (prefix 0..32 for IPv4, 0..128 for IPv6). 0 or -1. */
int cidr_parse(const char *s, size_t len, cidr_t *out);
/* 1 if addr is inside the range. */
int cidr_match(const cidr_t *r, const unsigned char addr[16]);

/* 1 if addr is an address no outbound request on an untrusted party's word may reach:
 * unspecified, loopback, private (RFC 1918, fc00::/7), shared (100.64/10), link-local,
 * benchmarking, multicast and reserved ranges. IPv4-mapped addresses count as IPv4. */
int cidr_is_internal(const unsigned char addr[16]);

/* Parses a file's text into out (malloc'd array, free with cidr_list_free). Returns the number
 * of ranges or -1 on ENOMEM; *malformed (may be NULL) gets the number of lines skipped. */
long cidr_list_parse(const char *text, size_t len, cidr_list_t *out, long *malformed);
int cidr_list_match(const cidr_list_t *l, const unsigned char addr[16]);
void cidr_list_free(cidr_list_t *l);

/* The address as a listener's may be kept under a privacy duty: an IPv4 address's /24
 * ("192.0.2.0"), an IPv6 address's /48 ("2001:db8:1::"), IPv4-mapped IPv6 as IPv4. Anything
 * that is not a numeric address becomes "-" (nothing of it may be kept). Writes out (cap). */
void cidr_truncate(const char *ip, char *out, size_t cap);

/* <anonymize-ip>: addresses leave the process (logs, admin pages, stats, events) only as
 * their network. Set with each config (net/server.c), read by any thread. */
void cidr_set_anonymize(int on);
int cidr_anonymizing(void);

#define CIDR_SHOWN_MAX 64
/* How a client's address may be shown or written: ip itself, or with <anonymize-ip> its
 * network (cidr_truncate) written to out (cap bytes, CIDR_SHOWN_MAX is enough). Returns ip or
 * out. Every place an address leaves the process goes through it. */
const char *cidr_shown(const char *ip, char *out, size_t cap);
/* cidr_shown into a buffer that lives as long as the enclosing block: for log arguments. */
#define CIDR_SHOWN(ip) cidr_shown((ip), (char[CIDR_SHOWN_MAX]){0}, CIDR_SHOWN_MAX)

#endif
