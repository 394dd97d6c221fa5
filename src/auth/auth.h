/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth: listener authentication of mounts (<mount><authentication type="htpasswd">) and the
 * users connected under each name.
 *
 * A listener's GET or HEAD of a mount with authentication is checked once, when it joins:
 * the address back-off (guard.c) on its worker, then HTTP Basic credentials against the
 * mount's htpasswd file (htpasswd.c) on a verifier thread (verify.h; a password hash costs
 * milliseconds that every other client of the worker would wait), the listener parked
 * meanwhile (park.h) and holding nothing else; then, back on its worker and unless the
 * option allow_duplicate_users is 1, whether that user is already listening to the mount. A
 * session (mount, user) is counted from a successful GET until the connection ends. A user
 * deleted from the file is refused from then on; listeners already connected under that
 * name stay, as in Icecast. URL authentication (auth_url.h) is the router's to ask first:
 * auth_listener_begin only knows htpasswd.
 */
#ifndef RIMECAST_AUTH_H
#define RIMECAST_AUTH_H

typedef struct conn conn_t;
typedef struct mount_conf mount_conf_t;
typedef struct http_request http_request_t;
typedef struct watched htpasswd_t; /* as in auth/htpasswd.h */
typedef struct auth_session auth_session_t;

typedef enum {
    AUTH_OK = 0,      /* let in */
    AUTH_DENIED,      /* 401 with WWW-Authenticate */
    AUTH_BLOCKED,     /* 429: the address is backing off (Retry-After) */
    AUTH_UNAVAILABLE, /* the user file cannot be read: 401 as well, logged */
} auth_result_t;

/* The value of <option name=name> of mc's <authentication>, or NULL. */
const char *auth_mount_option(const mount_conf_t *mc, const char *name);

/* The htpasswd file of a mount block (its filename option resolved against basedir), or NULL
 * when the block has no htpasswd authentication. */
htpasswd_t *auth_mount_htpasswd(const mount_conf_t *mc);
/* 1 if a listener let in by mount block `from`'s authentication (NULL: by none, it logged in
 * nowhere) may enter mount block `to` without logging in again: `to` has no authentication,
 * or both read the same htpasswd file (URL authentication is never shared). */
int auth_covers(const mount_conf_t *from, const mount_conf_t *to);

/* What becomes of a listener whose credentials passed: on its worker, with the mount name
 * given to auth_listener_begin (valid during the call). */
typedef void (*auth_admitted_fn)(conn_t *c, const char *mount);

/* Authenticates the listener on c (req: its GET or HEAD) for mount, the mount it asked for.
 * Returns 1 when the mount has no authentication: the caller goes on at once. Otherwise 0, and
 * c is no longer the caller's: it was refused (answered: 401 with the challenge, 429 while its
 * address backs off, 403 when too many wait), or it is parked while its password is verified
 * and then refused, or let in: its user goes to the access log, a GET's session ends with the
 * connection, and admitted(c, mount) runs. A connection closed meanwhile is forgotten. */
int auth_listener_begin(conn_t *c, const http_request_t *req, const char *mount,
                        auth_admitted_fn admitted);
/* Ends a session (NULL is fine). Safe from any thread. */
void auth_session_end(auth_session_t *s);

/* An upgrade: the session c's listener holds (none, or its user's on its mount) as record
 * fields: 0, or -ENOTSUP for a session of another kind (URL authentication's); and the same
 * session held again by c in the new process (0 or -errno). */
typedef struct buf buf_t;
typedef struct rec_reader rec_reader_t;
int auth_session_save(conn_t *c, buf_t *out);
int auth_session_restore(conn_t *c, rec_reader_t *in);
/* The same for a session held by something other than a connection (an HLS session): s or
 * NULL as record fields, and the session they describe held again (*out NULL when none). */
void auth_user_session_save(const auth_session_t *s, buf_t *out);
int auth_user_session_restore(rec_reader_t *in, auth_session_t **out);

/* Answers a refused check: 401 with the Basic challenge, or 429 with Retry-After. */
void auth_send_refusal(conn_t *c, auth_result_t r, unsigned retry_after);

#endif
