/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls: TLS with OpenSSL. Inbound: the server context (certificate chain, key, TLS 1.2 ciphers,
 * session cache and tickets), its re-reading on SIGHUP, and the TLS transport of a connection
 * with its non-blocking handshake and its kernel-TLS variant. Outbound (relays pulling from an
 * https:// upstream): a client context (TLS 1.2+, the peer verified against the system's trust
 * store and <ssl-cafile>, its name or address checked) and a non-blocking client handshake on
 * a connected socket (net/connect.h), after which the same transport carries the bytes.
 *
 * The context is built by the main thread (start-up, reload) and swapped under a short lock
 * that only the accept of a TLS connection takes; each connection's SSL holds a reference to
 * the context it was made with, so a reload changes new handshakes only. Knows bytes, not
 * HTTP: the accept path says which ops take over once the handshake is done.
 */
#ifndef RIMECAST_TLS_H
#define RIMECAST_TLS_H

#include <stddef.h>

#include "conf/config.h"
#include "net/conn.h"

/* Start-up: builds the server context when a listen socket of cfg serves TLS and logs whether
 * kernel TLS can be used; builds the client context when cfg has relays or a master server
 * (or <ssl-cafile>). 0, or -1 with a message in err (an unreadable or broken <ssl-cafile>
 * too). Main thread, before the workers start and before privileges are dropped. */
int tls_setup(const config_t *cfg, char *err, size_t errlen);

/* SIGHUP: re-reads the certificate, key and ciphers named by cfg; new handshakes use them,
 * connections keep theirs. On failure (unreadable or broken files) logs why and keeps the
 * context in use. 0 or -1. Does nothing when no context was set up at start. The client
 * context stays as built at start-up (a changed <ssl-cafile> is warned about). Main thread. */
int tls_reload(const config_t *cfg);

/* Other libraries' outbound TLS (libcurl's HTTP client: sibling polls, URL authentication,
 * YP): tls_client_has_cas() says whether <ssl-cafile> named CAs at start-up; then
 * tls_client_trust() adds them to ssl_ctx (an OpenSSL SSL_CTX *, beside the trust store it
 * has), so those connections trust what the relays trust. 0, or -1 when one could not be
 * added. Any thread: the certificates are read at start-up only. */
int tls_client_has_cas(void);
int tls_client_trust(void *ssl_ctx);

/* The session-ticket keys of the server context in use (name, HMAC key, AES key: what
 * OpenSSL's ticket control moves), for the new process of an upgrade, which takes them over
 * the upgrade's socket (never a file): a listener that reconnects to it resumes its session.
 * TLS_TICKET_KEYS_LEN bytes in out, or 0 when there is no server context. Main thread. */
#define TLS_TICKET_KEYS_LEN 80
size_t tls_ticket_keys_get(unsigned char out[TLS_TICKET_KEYS_LEN]);
/* The new process of an upgrade: the old one's keys for the server context, so that tickets it
 * issued resume here (those this process issues use them too). 0; 1 when this process has no
 * server context (nothing to do); -1 when OpenSSL refused them or they are of another length.
 * Main thread, before the workers run. */
int tls_ticket_keys_set(const unsigned char *keys, size_t len);

/* Frees the context (at exit, after the workers stopped). */
void tls_cleanup(void);

/* Accept path: c is an accepted connection whose ops are what it does once it speaks plainly
 * (reading a request). The handshake runs first, on c's readable and writable events; then
 * those ops take over and their on_readable runs at once. detect: plain HTTP is served too,
 * told apart by the first byte (a TLS handshake record starts with 0x16). A handshake that
 * fails or meets plain HTTP on a TLS-only port ends in a close (logged, rate-limited); the
 * deadline set on c (the header timeout) covers a stalled handshake. Sets c->tls.
 * 0 or -errno (nothing changed: the caller closes c). */
int tls_accept(conn_t *c, int detect);

/* How an outbound handshake ended: err 0 (c is ready: install your ops and write), or a
 * negative errno with why, the reason for the log, worded to follow "TLS handshake failed: "
 * ("certificate verify failed (<OpenSSL's words>)", "connection closed by the peer", "not
 * complete in time", or OpenSSL's error); c is already closed then and destroy will run. why
 * is valid during the call only. */
typedef void (*tls_done_fn)(conn_t *c, int err, const char *why);

/* Outbound: c is a connected socket (net/connect.h done with 0). Starts the client handshake
 * with host (a name: SNI and the certificate's names; an address: the certificate's IP
 * entries) on c's readable and writable events, bounded by c's deadline (set it first); then
 * done runs once, maybe before this returns. Sets c->tls. 0 if under way, or -errno with
 * nothing changed (-ENOTSUP: no client context, as when nothing was configured to pull from
 * another server at start-up). Worker thread of c. */
int tls_connect(conn_t *c, const char *host, tls_done_fn done);

#endif
