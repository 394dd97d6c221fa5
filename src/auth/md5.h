/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * md5: MD5 (RFC 1321), only to read Icecast's htpasswd files, whose lines hold the hex MD5 of
 * each password. Nothing new is hashed with it (htpasswd.c writes crypt(3) SHA-512 hashes).
 * No state outside the caller's buffers.
 */
#ifndef RIMECAST_MD5_H
#define RIMECAST_MD5_H

#include <stddef.h>

/* The digest of len bytes of data, as 32 lowercase hex digits and a NUL in hex[33]. */
void md5_hex(const void *data, size_t len, char hex[33]);

#endif
