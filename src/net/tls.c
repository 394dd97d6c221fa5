/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls: the handshake ops (inbound, and the client handshake of outbound connections) and the TLS
 * transports (see tls.h); the contexts they use are tls_context.c's. Writes gather iovecs into
 * SSL_write calls of at most one record through a per-thread scratch buffer, so nothing is
 * allocated per write. With kernel TLS (SSL_OP_ENABLE_KTLS, the kernel's tls module) the kernel
 * encrypts what is written to the socket: such connections switch to a transport whose writev
 * is the plain one (inbound only: the client context does not ask for it).
 */
#include "net/tls.h"
#include "net/tls_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "core/cidr.h"
#include "core/log.h"
#include "net/resolve.h"

#define TLS_RECORD 16384          /* plaintext of the largest TLS record: one SSL_write */
#define TLS_HANDSHAKE_BYTE 0x16   /* first byte of a TLS handshake record (ClientHello) */
#define TLS_LOG_INTERVAL 10       /* seconds between two logged failed handshakes */

typedef struct tls_conn {
    SSL *ssl;                /* NULL while detecting (auto) */
    const conn_ops_t *next;  /* ops once the handshake is done (accepted connections) */
    tls_done_fn done;        /* outbound: told once how the handshake ended */
    size_t record;           /* largest plaintext per record (max_fragment_length) */
    size_t unflushed;        /* bytes of an SSL_write that is encrypted but not yet sent */
    int failed;              /* a fatal error: no close_notify (SSL_shutdown) */
    int shut;                /* TLS_SHUT_*: how far our side's end has gone */
} tls_conn_t;

/* Our side's end: the record still held, then close_notify, then FIN. When the socket is full
 * the end waits for it to drain (the linger calls shutdown again on writable); conn_close gives
 * it one last try. Never a FIN behind half a record: a client would report a broken packet. */
enum { TLS_SHUT_NONE = 0, TLS_SHUT_WAITING = 1, TLS_SHUT_DONE = 2 };

static atomic_int ktls_used_logged;
static atomic_llong fail_logged_at;
static atomic_uint fail_suppressed;
static __thread unsigned char scratch[TLS_RECORD];

/* ---------------------------------------------------------------- failures */

/* One line per TLS_LOG_INTERVAL at most, whatever the number of workers and bad clients. */
static void log_failure(const conn_t *c, const char *what)
{
    long long now = (long long)time(NULL), last = atomic_load(&fail_logged_at);
    if (now - last < TLS_LOG_INTERVAL ||
        !atomic_compare_exchange_strong(&fail_logged_at, &last, now)) {
        atomic_fetch_add(&fail_suppressed, 1);
        return;
    }
    unsigned more = atomic_exchange(&fail_suppressed, 0);
    if (more)
        log_info("TLS: client %s: %s (and %u more failed handshakes not logged)",
                 CIDR_SHOWN(c->ip), what, more);
    else
        log_info("TLS: client %s: %s", CIDR_SHOWN(c->ip), what);
}

static void handshake_failure_text(int e, char *buf, size_t cap)
{
    unsigned long code = ERR_peek_last_error();
    int reason = ERR_GET_REASON(code);
    if (e == SSL_ERROR_SSL && (reason == SSL_R_HTTP_REQUEST ||
                               reason == SSL_R_HTTPS_PROXY_REQUEST))
        snprintf(buf, cap, "plain HTTP on a TLS port, closed");
    else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN)
        snprintf(buf, cap, "connection closed during the TLS handshake");
    else {
        char ebuf[200];
        snprintf(buf, cap, "TLS handshake failed: %s", tls_error_text(ebuf, sizeof(ebuf)));
    }
    ERR_clear_error();
}

/* ---------------------------------------------------------------- the transports */

static void tls_release(conn_t *c)
{
    tls_conn_t *t = c->transport_data;
    if (!t)
        return;
    SSL_free(t->ssl); /* drops the reference to its context */
    free(t);
    c->transport_data = NULL;
}

/* The connection goes on (or ends) as a plain one: no TLS state left. */
static void become_plain(conn_t *c)
{
    tls_release(c);
    c->transport = &transport_plain;
    c->tls = 0;
}

/* Empties this thread's OpenSSL error queue before an SSL_read or SSL_write, so that
 * SSL_get_error reads its result alone. Looking costs a tenth of clearing, and the queue is
 * nearly always empty: this runs once a listener write. */
static inline void errors_cleared(void)
{
    if (ERR_peek_error())
        ERR_clear_error();
}

/* An SSL_read/SSL_write result r <= 0 as the system calls say it. */
static ssize_t io_result(tls_conn_t *t, int r, int reading)
{
    int e = SSL_get_error(t->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        if (reading)
            return 0;
        errno = EPIPE;
        return -1;
    case SSL_ERROR_SYSCALL:
        t->failed = 1;
        ERR_clear_error();
        if (errno == 0) {
            if (reading)
                return 0;
            errno = EPIPE;
        }
        return -1;
    default:
        t->failed = 1;
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
}

static ssize_t tls_read(conn_t *c, void *buf, size_t len)
{
    tls_conn_t *t = c->transport_data;
    errors_cleared();
    errno = 0;
    int n = SSL_read(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
    if (n > 0) {
        /* decrypted bytes left inside OpenSSL raise no epoll edge: ask to be called again */
        if (SSL_has_pending(t->ssl))
            conn_read_again(c);
        return n;
    }
    return io_result(t, n, 1);
}

/* Sends the record an earlier SSL_write encrypted but could not send. The retry names the
 * same length; its bytes are not read again (they are in the record), so any buffer will do
 * (SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER). */
static int flush_unflushed(tls_conn_t *t)
{
    errors_cleared();
    errno = 0;
    int w = SSL_write(t->ssl, scratch, (int)t->unflushed);
    if (w > 0) {
        t->unflushed = 0;
        return 0;
    }
    return (int)io_result(t, w, 0);
}

/* The next SSL_write's bytes from iov[i] at off: the iovec itself when it holds a whole
 * record (or is the last), else up to one record gathered into the scratch buffer. */
static const void *next_chunk(const tls_conn_t *t, const struct iovec *iov, int iovcnt, int i,
                              size_t off, size_t *len)
{
    size_t n = iov[i].iov_len - off;
    if (n >= t->record || i + 1 == iovcnt) {
        *len = n < t->record ? n : t->record;
        return (const char *)iov[i].iov_base + off;
    }
    size_t got = 0;
    for (; i < iovcnt && got < t->record; i++, off = 0) {
        size_t take = iov[i].iov_len - off;
        if (take > t->record - got)
            take = t->record - got;
        memcpy(scratch + got, (const char *)iov[i].iov_base + off, take);
        got += take;
    }
    *len = got;
    return scratch;
}

static ssize_t tls_writev(conn_t *c, const struct iovec *iov, int iovcnt)
{
    tls_conn_t *t = c->transport_data;
    if (t->failed) {
        errno = EPIPE;
        return -1;
    }
    if (t->unflushed && flush_unflushed(t) < 0)
        return -1;
    size_t total = 0, off = 0;
    int i = 0;
    for (;;) {
        while (i < iovcnt && off >= iov[i].iov_len) {
            i++;
            off = 0;
        }
        if (i == iovcnt)
            return (ssize_t)total;
        size_t len;
        const void *p = next_chunk(t, iov, iovcnt, i, off, &len);
        errors_cleared();
        errno = 0;
        int w = SSL_write(t->ssl, p, (int)len);
        if (w <= 0) {
            int e = SSL_get_error(t->ssl, w);
            if ((e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) && !SSL_in_init(t->ssl)) {
                /* the chunk (one record) is encrypted and waits in OpenSSL's buffer: it counts
                 * as written, so the caller may change what follows; the next call sends it */
                t->unflushed = len;
                return (ssize_t)(total + len);
            }
            if (total)
                return (ssize_t)total;
            return io_result(t, w, 0);
        }
        total += (size_t)w;
        for (size_t left = (size_t)w; left;) {
            size_t n = iov[i].iov_len - off;
            if (left < n) {
                off += left;
                break;
            }
            left -= n;
            i++;
            off = 0;
        }
    }
}

static ssize_t ktls_writev(conn_t *c, const struct iovec *iov, int iovcnt)
{
    return writev(c->fd, iov, iovcnt); /* the kernel makes the records */
}

/* 1 if the close_notify (and the record before it) must wait for the socket to drain. */
static int close_notify_blocked(tls_conn_t *t)
{
    if (t->unflushed && flush_unflushed(t) < 0)
        return errno == EAGAIN;
    ERR_clear_error();
    errno = 0;
    int r = SSL_shutdown(t->ssl); /* close_notify; the peer's answer is not waited for */
    int blocked = r < 0 && SSL_get_error(t->ssl, r) == SSL_ERROR_WANT_WRITE;
    ERR_clear_error();
    return blocked;
}

static void tls_shutdown(conn_t *c)
{
    tls_conn_t *t = c->transport_data;
    if (t && t->shut == TLS_SHUT_DONE)
        return;
    if (t && t->ssl && !t->failed && SSL_is_init_finished(t->ssl) && close_notify_blocked(t)) {
        t->shut = TLS_SHUT_WAITING;
        return;
    }
    if (t)
        t->shut = TLS_SHUT_DONE;
    shutdown(c->fd, SHUT_WR);
}

static const transport_t transport_tls = {
    .name = "tls",
    .read = tls_read,
    .writev = tls_writev,
    .shutdown = tls_shutdown,
    .release = tls_release,
};

static const transport_t transport_ktls = {
    .name = "ktls",
    .read = tls_read,
    .writev = ktls_writev,
    .shutdown = tls_shutdown,
    .release = tls_release,
};

/* ---------------------------------------------------------------- the handshake */

static void handshake_step(conn_t *c);
static void handshake_timeout(conn_t *c);
static void detect_readable(conn_t *c);
static void detect_timeout(conn_t *c);

static const conn_ops_t handshake_ops = {
    .name = "tls-handshake",
    .on_readable = handshake_step,
    .on_writable = handshake_step,
    .on_timeout = handshake_timeout,
};

static const conn_ops_t detect_ops = {
    .name = "tls-detect",
    .on_readable = detect_readable,
    .on_timeout = detect_timeout,
};

static void handshake_done(conn_t *c, tls_conn_t *t)
{
    const SSL_SESSION *s = SSL_get_session(t->ssl);
    uint8_t mfl = s ? SSL_SESSION_get_max_fragment_length(s) : 0;
    if (mfl >= TLSEXT_max_fragment_length_512 && mfl <= TLSEXT_max_fragment_length_4096)
        t->record = (size_t)512 << (mfl - 1);
    if (BIO_get_ktls_send(SSL_get_wbio(t->ssl))) {
        c->transport = &transport_ktls;
        if (!atomic_exchange(&ktls_used_logged, 1))
            log_info("TLS: kernel TLS in use for sending (first for %s, %s)", CIDR_SHOWN(c->ip),
                     SSL_get_cipher_name(t->ssl));
    }
    c->ops = t->next;
    if (c->ops->on_readable)
        c->ops->on_readable(c); /* the request may be there already */
}

static void handshake_step(conn_t *c)
{
    tls_conn_t *t = c->transport_data;
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        handshake_done(c, t);
        return;
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return;
    char what[300];
    handshake_failure_text(e, what, sizeof(what));
    log_failure(c, what);
    /* a clean end: FIN after draining what the client sent (closing with unread input would
     * reset the connection), within the linger time */
    become_plain(c);
    conn_linger_close(c);
}

static void handshake_timeout(conn_t *c)
{
    log_failure(c, "TLS handshake not complete within header-timeout, closed");
    conn_close(c);
}

static int start_ssl(conn_t *c, tls_conn_t *t)
{
    t->ssl = tls_context_new_server_ssl();
    if (!t->ssl || SSL_set_fd(t->ssl, c->fd) != 1) {
        ERR_clear_error();
        return -ENOMEM;
    }
    SSL_set_accept_state(t->ssl);
    c->tls = 1;
    c->ops = &handshake_ops;
    return 0;
}

static void detect_readable(conn_t *c)
{
    tls_conn_t *t = c->transport_data;
    unsigned char first;
    ssize_t n = recv(c->fd, &first, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n == 1 && first == TLS_HANDSHAKE_BYTE) {
        if (start_ssl(c, t) < 0) {
            conn_close(c);
            return;
        }
        handshake_step(c);
        return;
    }
    /* plain HTTP (or the end of input, which the plain ops see for themselves) */
    const conn_ops_t *next = t->next;
    become_plain(c);
    c->ops = next;
    if (next->on_readable)
        next->on_readable(c);
}

static void detect_timeout(conn_t *c)
{
    tls_conn_t *t = c->transport_data;
    const conn_ops_t *next = t->next;
    become_plain(c); /* nothing was sent: answer as a plain HTTP client would be answered */
    c->ops = next;
    if (next->on_timeout)
        next->on_timeout(c);
    else
        conn_close(c);
}

int tls_accept(conn_t *c, int detect)
{
    tls_conn_t *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->next = c->ops;
    t->record = TLS_RECORD;
    c->transport = &transport_tls;
    c->transport_data = t;
    if (detect) {
        c->ops = &detect_ops;
        return 0;
    }
    if (start_ssl(c, t) < 0) {
        c->ops = t->next;
        become_plain(c);
        return -ENOMEM;
    }
    return 0;
}

/* ---------------------------------------------------------------- outbound handshake */

static void client_step(conn_t *c);
static void client_hangup(conn_t *c);
static void client_timeout(conn_t *c);

static const conn_ops_t client_handshake_ops = {
    .name = "tls-connect",
    .on_readable = client_step,
    .on_writable = client_step,
    .on_hangup = client_hangup,
    .on_timeout = client_timeout,
};

/* Tells the caller once; a failed connection is closed first (no close_notify). */
static void client_finish(conn_t *c, int err, const char *why)
{
    tls_conn_t *t = c->transport_data;
    tls_done_fn done = t->done;
    t->done = NULL;
    c->ops = &conn_writing_ops; /* until the caller installs its own */
    if (err) {
        t->failed = 1;
        conn_close(c);
    }
    done(c, err, why);
}

/* Why a client handshake failed, to follow "TLS handshake failed: " in the caller's log line:
 * the certificate check's own words when it was that, else OpenSSL's error. */
static void client_failure_text(tls_conn_t *t, int e, char *buf, size_t cap)
{
    long v = SSL_get_verify_result(t->ssl);
    if (v != X509_V_OK) {
        snprintf(buf, cap, "certificate verify failed (%s)", X509_verify_cert_error_string(v));
    } else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
        int err = errno;
        snprintf(buf, cap, "connection closed by the peer%s%s", err ? ": " : "",
                 err ? strerror(err) : "");
    } else {
        tls_error_text(buf, cap);
    }
    ERR_clear_error();
}

static void client_step(conn_t *c)
{
    tls_conn_t *t = c->transport_data;
    ERR_clear_error();
    errno = 0;
    int r = SSL_do_handshake(t->ssl);
    if (r == 1) {
        client_finish(c, 0, NULL);
        return;
    }
    int e = SSL_get_error(t->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return;
    char why[300];
    client_failure_text(t, e, why, sizeof(why));
    client_finish(c, -EPROTO, why);
}

static void client_hangup(conn_t *c)
{
    client_finish(c, -ECONNRESET, "connection closed by the peer");
}

static void client_timeout(conn_t *c)
{
    client_finish(c, -ETIMEDOUT, "not complete in time");
}

int tls_connect(conn_t *c, const char *host, tls_done_fn done)
{
    SSL_CTX *client_ctx = tls_context_client();
    if (!client_ctx)
        return -ENOTSUP;
    tls_conn_t *t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->record = TLS_RECORD;
    t->done = done;
    ERR_clear_error();
    t->ssl = SSL_new(client_ctx);
    int ok = t->ssl && SSL_set_fd(t->ssl, c->fd) == 1;
    if (ok && resolve_numeric(host)) {
        /* an address: checked against the certificate's IP entries; no SNI (RFC 6066) */
        ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), host) == 1;
    } else if (ok) {
        SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        ok = SSL_set_tlsext_host_name(t->ssl, host) == 1 && SSL_set1_host(t->ssl, host) == 1;
    }
    if (!ok) {
        ERR_clear_error();
        SSL_free(t->ssl);
        free(t);
        return -ENOMEM;
    }
    SSL_set_connect_state(t->ssl);
    c->transport = &transport_tls;
    c->transport_data = t;
    c->tls = 1;
    c->ops = &client_handshake_ops;
    client_step(c); /* the ClientHello goes out now */
    return 0;
}
