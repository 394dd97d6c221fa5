/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_token: the tokens that name HLS sessions. The server issues each one (a multivariant
 * playlist hands it out) as a random nonce and a MAC of the nonce and the mount name under a
 * secret key of the server's, so a token is unguessable, good for one mount only, and a
 * session begins only with a token this server (or an earlier process of it: the key is kept
 * in a file) issued. Also the tagging of a playlist's URIs with the token, for mounts whose
 * pieces answer only within a session. Knows no sessions: hls_session.c keeps those.
 */
#ifndef RIMECAST_HLS_TOKEN_H
#define RIMECAST_HLS_TOKEN_H

#include <stddef.h>

#include "core/buf.h"

#define HLS_TOKEN_LEN 32        /* hex digits of a token: 8 bytes of nonce, 8 of MAC */
#define HLS_TOKEN_LEN_OLD 16    /* a token of an earlier version (a session carried over) */
#define HLS_TOKEN_KEY_FILE "hls-token.key"

/* Loads the key from dir/hls-token.key, creating the file (mode 0600, 32 random bytes) when
 * it is missing; without a usable directory (NULL, unwritable) the key is random and lives as
 * long as the process (logged once: tokens issued then do not outlive it). Main thread, as the
 * user the server runs as, before the workers serve. 0, or -EIO when no random bytes could be
 * had (the key stays unset: no token is issued or accepted). */
int hls_token_init(const char *dir);

/* Writes a new token for mount `mount` (HLS_TOKEN_LEN hex digits and a NUL) to out. 0, or
 * -EIO (no key, or no random bytes). */
int hls_token_issue(const char *mount, char *out);

/* 1 if token is one this server issued for mount `mount`, else 0 (constant time in the MAC). */
int hls_token_issued(const char *mount, const char *token);

/* 1 if t has a token's form (HLS_TOKEN_LEN or HLS_TOKEN_LEN_OLD lower-case hex digits). */
int hls_token_form(const char *t);

/* Appends playlist text (len bytes) to out with `session=<token>` added to the query of every
 * URI it lists (segment and intro lines, and the URI="..." of EXT-X-PART, EXT-X-PRELOAD-HINT,
 * EXT-X-MAP and EXT-X-RENDITION-REPORT). 0 or -ENOMEM. */
int hls_token_tag_playlist(const char *text, size_t len, const char *token, buf_t *out);

#endif
