/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auth_url: <authentication type="url"> of a mount, as Icecast 2.4 speaks it: form POSTs to
 * the auth server for listener_add, listener_remove, mount_add, mount_remove and stream_auth
 * (sources), through the HTTP client thread (http/fetch.h).
 *
 * A client waiting for an answer is parked (park.h): its connection gets ops that ignore its
 * input and keep a deadline (the request's timeout and a little more), and holds nothing
 * else. The answer comes back on the connection's worker; if the connection is still parked,
 * the caller's resume function runs with the outcome (accepted or not, time limit, message).
 * At most AUTH_URL_MAX_PENDING clients wait at once; more are refused "busy".
 * Options: listener_add, listener_remove, mount_add, mount_remove, stream_auth, username,
 * password (of the auth server), auth_header, timelimit_header, headers, header_prefix,
 * timeout (seconds, default 15; Icecast fixes it at 15), preroll_header (default
 * icecast-preroll: the listener_add answer's header naming a file of the webroot, as <intro>
 * names one, that this listener hears first instead of the mount's <intro>).
 */
#ifndef RIMECAST_AUTH_URL_H
#define RIMECAST_AUTH_URL_H

#include <stdint.h>

typedef struct conn conn_t;
typedef struct mount_conf mount_conf_t;
typedef struct http_request http_request_t;
typedef struct buf buf_t;
typedef struct rec_reader rec_reader_t;

#define AUTH_URL_MAX_PENDING 1000
#define AUTH_URL_MESSAGE_MAX 200

/* One client's exchange with the auth server: the fields sent, then the outcome. For an
 * accepted listener it becomes the session whose end sends listener_remove. */
typedef struct auth_url_session {
    uint64_t conn_id;
    void (*resume)(conn_t *c, struct auth_url_session *s);
    uintptr_t tag;       /* the caller's (e.g. a source's request head length) */
    void *arg;           /* the caller's state, freed with arg_free if the client leaves
                          * first; a resume function that keeps it sets arg to NULL */
    void (*arg_free)(void *arg);
    char *mount_name;    /* the mount (no query) */
    char *user;          /* credentials the client gave, or NULL */
    /* outcome, set before resume runs */
    int accepted;
    int unavailable;     /* no answer (down, timed out): refused, not the client's fault */
    unsigned timelimit;  /* seconds, 0 = none */
    char message[AUTH_URL_MESSAGE_MAX]; /* why it was refused (control characters dropped) */
    char *preroll;       /* an accepted listener's preroll: a webroot file name (relative, no
                          * "..", no control characters) its answer named; NULL: none */
    /* private */
    char *remove_url, *userpwd, *uri, *pass, *ip, *agent, *server, *auth_header,
        *timelimit_header, *preroll_header;
    unsigned timeout_ms;
    int port;
} auth_url_session_t;

typedef void (*auth_url_resume_fn)(conn_t *c, auth_url_session_t *s);

/* 1 if mc has <authentication type="url">. */
int auth_url_enabled(const mount_conf_t *mc);
/* 1 if mc has URL authentication with a stream_auth URL (sources are checked by it). */
int auth_url_checks_sources(const mount_conf_t *mc);

typedef enum {
    AUTH_URL_PARKED = 0, /* c waits; resume runs later on its worker */
    AUTH_URL_ACCEPTED,   /* no listener_add URL: accepted now, *out is the session */
    AUTH_URL_BUSY,       /* too many waiting: answer 403 "busy, please try again later" */
    AUTH_URL_FAILED,     /* out of memory */
} auth_url_start_t;

/* 1 if name may be a preroll: a relative path in the webroot (not empty, no leading "/", no
 * "." or ".." segment, no empty segment, no control character or backslash, under 256
 * bytes). */
int auth_url_preroll_ok(const char *name);

/* A listener of mount (uri = the requested path with its query) asks to join. */
auth_url_start_t auth_url_listener_add(conn_t *c, const mount_conf_t *mc, const char *mount,
                                       const http_request_t *req, auth_url_resume_fn resume,
                                       auth_url_session_t **out);
/* A source asks to feed mount with user/pass (either may be NULL: sent empty). admin is 1 for
 * a metadata update (sent as admin=1). arg (with arg_free, may be NULL) goes with the session:
 * owned by it only once PARKED is returned; on any other result the caller keeps it. Same
 * results as above, never ACCEPTED. */
auth_url_start_t auth_url_stream_auth(conn_t *c, const mount_conf_t *mc, const char *mount,
                                      const char *user, const char *pass, int admin,
                                      uintptr_t tag, void *arg, void (*arg_free)(void *arg),
                                      auth_url_resume_fn resume);

/* The accepted listener's connection ended: sends listener_remove (duration, bytes sent) if
 * configured, and frees s. For client_t.on_end. */
void auth_url_session_end(conn_t *c, void *s);
/* The same for a session that is not one connection (an HLS session): it lasted duration_s
 * seconds and was sent `sent` bytes. Frees s. */
void auth_url_session_close(auth_url_session_t *s, uint64_t duration_s, uint64_t sent);
void auth_url_session_free(auth_url_session_t *s);

/* An accepted session written into an upgrade's state (core/record.h), and read back in the
 * new process (NULL: unreadable or out of memory), so that listener_remove is sent when the
 * carried listener ends there. */
void auth_url_session_save(const auth_url_session_t *s, buf_t *out);
auth_url_session_t *auth_url_session_restore(rec_reader_t *in);

/* A source started (added 1) or ended (0) on mount: mount_add / mount_remove, if set. */
void auth_url_mount_event(const mount_conf_t *mc, const char *mount, int added);

/* Answers a refused or failed client: 403 with the message. */
void auth_url_send_refusal(conn_t *c, const auth_url_session_t *s);

#endif
