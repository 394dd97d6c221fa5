/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * admin: Icecast's /admin/<command> API and what every command shares: Basic authentication
 * (admin credentials; the metadata commands also take that mount's source credentials, checked
 * by the mount's stream_auth URL when it has one, the request parked meanwhile; streamlist takes
 * relay credentials; failures feed the per-address back-off of auth/guard.h, a blocked address
 * gets 429), passwords compared in constant time, parameter access, and the views of a
 * handler's XML document: raw XML (/admin/cmd), HTML through adminroot/<cmd>.xsl
 * (/admin/cmd.xsl; an <iceresponse> document without its own <cmd>.xsl uses response.xsl, as
 * Icecast does) or JSON (/admin/cmd.json). The route table (name, mount needed, credentials
 * scope, handler, views, whether it changes the server) is in commands.c; the handlers live in commands.c and clients.c.
 *
 * A request's life: admin_handle() parses and authenticates, then runs the handler, which
 * answers at once or later (after a worker_broadcast); either way exactly one admin_send_*()
 * call ends it and frees the admin_req_t.
 */
#ifndef RIMECAST_ADMIN_H
#define RIMECAST_ADMIN_H

#include <stddef.h>
#include <stdint.h>
#include <libxml/tree.h>

#include "admin/request.h" /* ADMIN_VIEW_* */

typedef struct conn conn_t;
typedef struct worker worker_t;
typedef struct mount mount_t;
typedef struct http_request http_request_t;

typedef enum {
    ADMIN_AUTH_NONE,   /* anyone (buildm3u) */
    ADMIN_AUTH_GLOBAL, /* admin credentials */
    ADMIN_AUTH_SOURCE, /* admin, or the source credentials of the mount= named (metadata
                        * only: a source user may do nothing else, as in Icecast) */
    ADMIN_AUTH_RELAY,  /* the relay credentials only (as Icecast: admin gets 401) */
} admin_auth_t;

typedef struct admin_req admin_req_t;

/* The Content-Security-Policy line of every admin answer: scripts, styles and everything else
 * from the server itself only (web/admin.js, web/style.css), nothing inline, no plugins, no
 * <base>, forms sent to the server only, and no framing by another page. */
#define ADMIN_CSP \
    "Content-Security-Policy: default-src 'self'; script-src 'self'; style-src 'self'; " \
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'\r\n"

typedef struct admin_cmd {
    const char *name;
    int needs_mount;         /* mount= must name a live mount (400 otherwise) */
    admin_auth_t auth;
    void (*handler)(admin_req_t *a);
    int views;               /* ADMIN_VIEW_* accepted */
    int changes;             /* changes the server's state: refused (403) when a browser
                              * marks it as sent by a page of another origin */
} admin_cmd_t;

struct admin_req {
    conn_t *conn;            /* valid until the handler returns (async: see admin_conn) */
    uint64_t conn_id;
    worker_t *worker;
    const admin_cmd_t *cmd;
    int view;
    char *query;             /* raw query string (copy) */
    size_t query_len;
    char *mount_name;        /* mount= (decoded) or NULL */
    mount_t *mount;          /* referenced when needs_mount */
    int admin;               /* authenticated with admin credentials */
    int source_checked;      /* the auth server accepted its source credentials (stream_auth) */
    void *data;              /* handler state for async commands */
    void (*free_data)(void *data);
};

/* Answers a request under /admin/ or /admin.cgi (path normalised). */
void admin_handle(conn_t *c, const http_request_t *req, const char *path);

/* 1 if req carries the admin credentials (Basic). */
int admin_auth_admin(const http_request_t *req);
/* 1 if user/pass are the source credentials of mount (its <mount> password and username,
 * else "source" and the global source password). */
int admin_auth_source(const char *mount, const char *user, const char *pass);

/* Source credentials for mount on a mount whose URL authentication has a stream_auth URL: the
 * auth server decides (stream_auth with admin=1) instead of the passwords. Returns 0 if mount
 * has none (a is untouched: check the passwords), else 1: a was parked, and once the server
 * accepts, a->source_checked is set and the request goes on (mount checks, handler), or it is
 * answered (401 refused, 403 no answer or busy); either way the caller must not touch a. */
int admin_ask_auth_server(admin_req_t *a, const char *mount, const char *user, const char *pass);
/* 1 if a comes from the address of m's source (a forwarded address when it came through a
 * trusted proxy, as the source's), or m's source has no address; 0 otherwise. */
int admin_from_source_address(admin_req_t *a, const mount_t *m);

/* A query parameter of the request (decoded, malloc'd) or NULL. */
char *admin_param(const admin_req_t *a, const char *name);

/* Ending a request (each frees a). The document is consumed. */
void admin_send_doc(admin_req_t *a, xmlDocPtr doc);
/* <iceresponse><message/><return/></iceresponse> in the requested view. */
void admin_send_response(admin_req_t *a, const char *message, int ret);
void admin_send_error(admin_req_t *a, int status, const char *message);
/* A complete body of this content type (text, HTML page, playlist). */
void admin_send_raw(admin_req_t *a, const char *ctype, const char *body, size_t len,
                    const char *extra);
/* Frees a without answering (the connection was taken over, e.g. an event stream). */
void admin_req_free(admin_req_t *a);

/* For async handlers: parks the connection until the answer (no reads, not re-dispatched). */
void admin_park(admin_req_t *a);
/* The request's connection if it is still open and parked, else NULL (worker thread). */
conn_t *admin_conn(admin_req_t *a);

/* Command table lookup (commands.c). */
const admin_cmd_t *admin_find_command(const char *name);

#endif
