/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth: listener authentication of mounts (<mount><authentication type="htpasswd">) and the
 * users connected under each name.
 *
 * A listener's GET or HEAD of a mount with authentication is checked once, when it joins,
 * on its worker: HTTP Basic credentials against the mount's htpasswd file (htpasswd.c), the
 * address back-off (guard.c), and, unless the option allow_duplicate_users is 1, whether that
 * user is already listening to the mount. A session (mount, user) is counted from a
 * successful GET until the connection ends (auth_session_end). A user deleted from the file
 * is refused from then on; listeners already connected under that name stay, as in Icecast.
 * URL authentication (auth_url.h) is asynchronous: the router asks it before calling
 * auth_listener_check, which only knows htpasswd.
 */
#ifndef RIMECAST_AUTH_H
#define RIMECAST_AUTH_H

typedef struct conn conn_t;
typedef struct mount_conf mount_conf_t;
typedef struct http_request http_request_t;
typedef struct htpasswd htpasswd_t;
typedef struct auth_session auth_session_t;

typedef enum {
    AUTH_OK = 0,      /* let in (*session set when the mount has authentication) */
    AUTH_DENIED,      /* 401 with WWW-Authenticate */
    AUTH_BLOCKED,     /* 429: the address is backing off (*retry_after seconds) */
    AUTH_UNAVAILABLE, /* the user file cannot be read: 401 as well, logged */
} auth_result_t;

typedef struct {
    auth_session_t *session; /* NULL if the mount has no authentication or for HEAD */
    char *user;              /* malloc'd user name when authenticated, else NULL */
    unsigned retry_after;
} auth_outcome_t;

/* The value of <option name=name> of mc's <authentication>, or NULL. */
const char *auth_mount_option(const mount_conf_t *mc, const char *name);

/* The htpasswd file of a mount block (its filename option resolved against basedir), or NULL
 * when the block has no htpasswd authentication. */
htpasswd_t *auth_mount_htpasswd(const mount_conf_t *mc);

/* Checks a listener of mount (GET, or HEAD when head is 1) from ip. The caller owns out->user
 * and ends out->session with auth_session_end when the connection ends. */
auth_result_t auth_listener_check(const char *mount, const http_request_t *req, const char *ip,
                                  int head, auth_outcome_t *out);
/* Ends a session (NULL is fine). Safe from any thread. */
void auth_session_end(auth_session_t *s);

/* Answers a refused check: 401 with the Basic challenge, or 429 with Retry-After. */
void auth_send_refusal(conn_t *c, auth_result_t r, unsigned retry_after);

#endif
