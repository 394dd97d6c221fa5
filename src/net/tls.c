/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls: the server context and its reload, the handshake ops, the client context and handshake
 * of outbound connections, and the TLS transports (see tls.h). Writes gather iovecs into
 * SSL_write calls of at most one record through a per-thread scratch buffer, so nothing is
 * allocated per write. With kernel TLS (SSL_OP_ENABLE_KTLS, the kernel's tls module) the kernel
 * encrypts what is written to the socket: such connections switch to a transport whose writev
 * is the plain one (inbound only: the client context does not ask for it).
 */
#include "net/tls.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
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

/* TLS 1.2: forward-secret AEAD suites only. */
static const char default_ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384";

/* TLS 1.3: OpenSSL's three suites with AES-128-GCM first (fewer rounds than AES-256 for every
 * byte a listener is sent; what browsers ask for first). ChaCha20 goes first for a client that
 * puts it first (SSL_OP_PRIORITIZE_CHACHA): one without AES instructions. */
static const char tls13_suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

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

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *ctx_current;
static SSL_CTX *client_ctx;      /* outbound; built at start-up, read-only after */
static char *client_cafile;      /* the <ssl-cafile> it was built with (as written) */
static atomic_int ktls_used_logged;
static atomic_llong fail_logged_at;
static atomic_uint fail_suppressed;
static __thread unsigned char scratch[TLS_RECORD];

/* ---------------------------------------------------------------- the context */

/* The newest OpenSSL error as text, the queue cleared. */
static const char *ssl_error_text(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, buf, cap);
    else
        snprintf(buf, cap, "unknown error");
    ERR_clear_error();
    return buf;
}

static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    return 0; /* an encrypted key fails to load: nobody is there to type a passphrase */
}

/* Whether path can be opened for reading; else a message saying why (permissions after the
 * privilege drop named as such). */
static int check_readable(const char *what, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f) {
        fclose(f);
        return 0;
    }
    int e = errno;
    if (e == EACCES && geteuid() != 0)
        snprintf(err, errlen, "cannot read the TLS %s %s: %s (the server runs as uid %d after "
                 "start-up: the file must stay readable by that user to be re-read on reload)",
                 what, path, strerror(e), (int)geteuid());
    else
        snprintf(err, errlen, "cannot read the TLS %s %s: %s", what, path, strerror(e));
    return -1;
}

static void describe_certificate(SSL_CTX *ctx, const char *path)
{
    X509 *x = SSL_CTX_get0_certificate(ctx);
    if (!x)
        return;
    char subject[256] = "?", *serial = NULL;
    X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof(subject));
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    if (bn)
        serial = BN_bn2hex(bn);
    log_info("TLS: certificate %s loaded: %s, serial %s", path, subject, serial ? serial : "?");
    OPENSSL_free(serial);
    BN_free(bn);
}

static SSL_CTX *ctx_build(const config_t *cfg, char *err, size_t errlen)
{
    char ebuf[256];
    char *cert = config_path(cfg->basedir, cfg->ssl_certificate);
    char *key = cfg->ssl_private_key ? config_path(cfg->basedir, cfg->ssl_private_key) : NULL;
    SSL_CTX *ctx = NULL;

    if (!cert) {
        snprintf(err, errlen, "no TLS certificate: set <ssl-certificate> in <paths>");
        goto fail;
    }
    if (check_readable("certificate", cert, err, errlen) < 0 ||
        (key && check_readable("private key", key, err, errlen) < 0))
        goto fail;
    ERR_clear_error();
    if (!(ctx = SSL_CTX_new(TLS_server_method()))) {
        snprintf(err, errlen, "TLS context: %s", ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_PRIORITIZE_CHACHA |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_ENABLE_KTLS);
    /* partial writes: one record per SSL_write; moving buffer: a retry may come from the
     * scratch buffer; release buffers: an idle listener holds no 16 KB read buffer */
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"rimecast", 8);
    SSL_CTX_set_num_tickets(ctx, 1);
    SSL_CTX_set_dh_auto(ctx, 1); /* DHE suites: the built-in group matching the key's size */
    const char *ciphers = cfg->ssl_allowed_ciphers ? cfg->ssl_allowed_ciphers : default_ciphers;
    if (!SSL_CTX_set_cipher_list(ctx, ciphers)) {
        snprintf(err, errlen, "<ssl-allowed-ciphers> \"%s\" names no usable cipher", ciphers);
        goto fail;
    }
    if (!SSL_CTX_set_ciphersuites(ctx, tls13_suites)) {
        snprintf(err, errlen, "TLS 1.3 suites: %s", ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(err, errlen, "TLS certificate %s: %s", cert, ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key ? key : cert, SSL_FILETYPE_PEM) != 1) {
        snprintf(err, errlen, "TLS private key in %s: %s (the key must be PEM, without a "
                 "passphrase)", key ? key : cert, ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "TLS private key %s does not match the certificate %s: %s",
                 key ? key : cert, cert, ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    describe_certificate(ctx, cert);
    free(cert);
    free(key);
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    free(cert);
    free(key);
    return NULL;
}

static void ctx_install(SSL_CTX *ctx)
{
    pthread_mutex_lock(&ctx_lock);
    SSL_CTX *old = ctx_current;
    ctx_current = ctx;
    pthread_mutex_unlock(&ctx_lock);
    SSL_CTX_free(old); /* connections made with it hold their own reference */
}

/* Whether the kernel offers TLS offload: attaching the "tls" upper layer to a socket that is
 * not connected fails with ENOTCONN when it exists, ENOENT when it does not. */
static int kernel_has_tls(void)
{
#ifdef TCP_ULP
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int rc = setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", 3);
    int e = errno;
    close(fd);
    return rc == 0 || e == ENOTCONN;
#else
    return 0;
#endif
}

/* The context of outbound connections: TLS 1.2 and up, the peer's chain verified against the
 * system's trust store and <ssl-cafile>. The system store's bundle is read now (before a chroot
 * or the privilege drop); its hashed directory may be looked into later for an issuer the
 * bundle lacks. */
static SSL_CTX *client_ctx_build(const config_t *cfg, char *err, size_t errlen)
{
    char ebuf[256];
    char *cafile = cfg->ssl_cafile ? config_path(cfg->basedir, cfg->ssl_cafile) : NULL;
    SSL_CTX *ctx = NULL;

    if (cfg->ssl_cafile && !cafile) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (cafile && check_readable("CA file", cafile, err, errlen) < 0)
        goto fail;
    ERR_clear_error();
    if (!(ctx = SSL_CTX_new(TLS_client_method()))) {
        snprintf(err, errlen, "TLS client context: %s", ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* an upstream that closes without close_notify just ends the stream */
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set_default_verify_paths(ctx) != 1)
        log_warn("TLS: the system's trust store could not be read (%s): upstreams are verified "
                 "against <ssl-cafile> only", ssl_error_text(ebuf, sizeof(ebuf)));
    ERR_clear_error();
    if (cafile && SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
        snprintf(err, errlen, "<ssl-cafile> %s: %s (a PEM file of CA certificates)", cafile,
                 ssl_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    free(cafile);
    return ctx;
fail:
    ERR_clear_error();
    SSL_CTX_free(ctx);
    free(cafile);
    return NULL;
}

/* Whether cfg pulls from other servers (a redirect or a master's list may lead to https://). */
static int client_wanted(const config_t *cfg)
{
    return cfg->relays || cfg->master_server || cfg->ssl_cafile;
}

static int client_setup(const config_t *cfg, char *err, size_t errlen)
{
    if (!client_wanted(cfg) || client_ctx)
        return 0;
    SSL_CTX *ctx = client_ctx_build(cfg, err, errlen);
    if (!ctx)
        return -1;
    if (cfg->ssl_cafile && !(client_cafile = strdup(cfg->ssl_cafile))) {
        SSL_CTX_free(ctx);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    client_ctx = ctx;
    log_info("TLS: upstreams are verified against the system's trust store%s%s",
             cfg->ssl_cafile ? " and " : "", cfg->ssl_cafile ? cfg->ssl_cafile : "");
    return 0;
}

int tls_setup(const config_t *cfg, char *err, size_t errlen)
{
    if (client_setup(cfg, err, errlen) < 0)
        return -1;
    int wanted = 0;
    for (const listen_conf_t *l = cfg->listen; l; l = l->next)
        wanted |= l->tls != LISTEN_TLS_OFF;
    if (!wanted)
        return 0;
    SSL_CTX *ctx = ctx_build(cfg, err, errlen);
    if (!ctx)
        return -1;
    ctx_install(ctx);
    if (kernel_has_tls())
        log_info("TLS: kernel TLS available: listener writes are encrypted by the kernel when "
                 "the negotiated cipher allows it");
    else
        log_info("TLS: kernel TLS not available (the kernel's tls module is not loaded): "
                 "encryption in user space");
    return 0;
}

/* The session-ticket keys of the context in use, given to ctx: a listener that reconnects after
 * a reload resumes its session (an abbreviated handshake) rather than making a new one. The keys
 * live as long as the process, as they would without reloads. Main thread (the only writer of
 * ctx_current). */
static void keep_ticket_keys(SSL_CTX *ctx)
{
    unsigned char keys[80]; /* name, HMAC key, AES key: what OpenSSL's ticket control moves */
    pthread_mutex_lock(&ctx_lock);
    SSL_CTX *old = ctx_current;
    pthread_mutex_unlock(&ctx_lock);
    if (old && SSL_CTX_get_tlsext_ticket_keys(old, keys, sizeof(keys)) == 1 &&
        SSL_CTX_set_tlsext_ticket_keys(ctx, keys, sizeof(keys)) != 1)
        log_warn("TLS: session tickets issued before the reload will not resume");
    OPENSSL_cleanse(keys, sizeof(keys));
}

int tls_reload(const config_t *cfg)
{
    char err[512];
    const char *a = client_cafile, *b = cfg->ssl_cafile;
    if ((a || b) && (!a || !b || strcmp(a, b) != 0))
        log_warn("<ssl-cafile> changes take effect after a restart (upstreams are verified as "
                 "at start-up)");
    pthread_mutex_lock(&ctx_lock);
    int active = ctx_current != NULL;
    pthread_mutex_unlock(&ctx_lock);
    if (!active)
        return 0;
    SSL_CTX *ctx = ctx_build(cfg, err, sizeof(err));
    if (!ctx) {
        log_error("TLS: reload refused, new handshakes keep the certificate in use: %s", err);
        return -1;
    }
    keep_ticket_keys(ctx);
    ctx_install(ctx);
    log_info("TLS: certificate re-read; new connections use it");
    return 0;
}

void tls_cleanup(void)
{
    ctx_install(NULL);
    SSL_CTX_free(client_ctx);
    client_ctx = NULL;
    free(client_cafile);
    client_cafile = NULL;
}

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
        snprintf(buf, cap, "TLS handshake failed: %s", ssl_error_text(ebuf, sizeof(ebuf)));
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
    pthread_mutex_lock(&ctx_lock);
    t->ssl = ctx_current ? SSL_new(ctx_current) : NULL;
    pthread_mutex_unlock(&ctx_lock);
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
        ssl_error_text(buf, cap);
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
