/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls_internal: what the two files of TLS call in each other. tls_context.c owns the OpenSSL
 * contexts (the server's, swapped on reload, and the client's of outbound connections) and
 * the start-up, reload and cleanup of tls.h; tls.c makes connections with them (handshakes,
 * the transports). Nothing else includes it; the API of TLS is tls.h.
 */
#ifndef RIMECAST_TLS_INTERNAL_H
#define RIMECAST_TLS_INTERNAL_H

#include <stddef.h>

#include <openssl/ssl.h>

/* A new SSL of the server context in use (it holds its own reference to that context, so a
 * reload changes later connections only), or NULL: no context, or out of memory. Any thread:
 * takes the short lock the swap takes. */
SSL *tls_context_new_server_ssl(void);

/* The client context of outbound connections, or NULL when none was set up at start-up.
 * Built before the workers start and read-only after: no lock. */
SSL_CTX *tls_context_client(void);

/* The newest OpenSSL error as text in buf (cap bytes), the queue cleared; returns buf. */
const char *tls_error_text(char *buf, size_t cap);

#endif
