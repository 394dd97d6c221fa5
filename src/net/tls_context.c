/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls_context: the OpenSSL contexts (see tls.h and tls_internal.h). The server context
 * (certificate chain, key, TLS 1.2 ciphers, TLS 1.3 suites, session cache and tickets) is built
 * at start-up and again on each SIGHUP, keeping its session-ticket keys, and swapped under a
 * short lock; the client context of outbound connections is built once at start-up. Whether
 * the kernel offers TLS is told once at start-up. Makes no connection: tls.c does.
 */
#include "net/tls.h"
#include "net/tls_internal.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "core/log.h"

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

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *ctx_current;
static SSL_CTX *client_ctx;      /* outbound; built at start-up, read-only after */
static char *client_cafile;      /* the <ssl-cafile> it was built with (as written) */
static STACK_OF(X509) *client_cas; /* its certificates, for libcurl's contexts; read-only after
                                  * start-up */

/* ---------------------------------------------------------------- the server context */

const char *tls_error_text(char *buf, size_t cap)
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
        snprintf(err, errlen, "TLS context: %s", tls_error_text(ebuf, sizeof(ebuf)));
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
        snprintf(err, errlen, "TLS 1.3 suites: %s", tls_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(err, errlen, "TLS certificate %s: %s", cert, tls_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key ? key : cert, SSL_FILETYPE_PEM) != 1) {
        snprintf(err, errlen, "TLS private key in %s: %s (the key must be PEM, without a "
                 "passphrase)", key ? key : cert, tls_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "TLS private key %s does not match the certificate %s: %s",
                 key ? key : cert, cert, tls_error_text(ebuf, sizeof(ebuf)));
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

/* Keeps the certificates of the CA file path in client_cas (the file was read by OpenSSL
 * already: a broken one failed there). 0, or -1 with err said. */
static int read_cas(const char *path, char *err, size_t errlen)
{
    char ebuf[256];
    BIO *in = BIO_new_file(path, "r");
    STACK_OF(X509_INFO) *infos = in ? PEM_X509_INFO_read_bio(in, NULL, NULL, NULL) : NULL;
    BIO_free(in);
    client_cas = infos ? sk_X509_new_null() : NULL;
    for (int i = 0; client_cas && i < sk_X509_INFO_num(infos); i++) {
        X509_INFO *xi = sk_X509_INFO_value(infos, i);
        if (xi->x509 && sk_X509_push(client_cas, xi->x509) > 0)
            xi->x509 = NULL; /* the stack owns it now */
    }
    sk_X509_INFO_pop_free(infos, X509_INFO_free);
    if (!client_cas) {
        snprintf(err, errlen, "<ssl-cafile> %s: %s", path, tls_error_text(ebuf, sizeof(ebuf)));
        return -1;
    }
    return 0;
}

int tls_client_trust(void *ssl_ctx)
{
    X509_STORE *store = SSL_CTX_get_cert_store(ssl_ctx);
    int rc = 0;
    for (int i = 0; store && i < sk_X509_num(client_cas); i++)
        if (X509_STORE_add_cert(store, sk_X509_value(client_cas, i)) != 1)
            rc = -1;
    ERR_clear_error();
    return store ? rc : -1;
}

int tls_client_has_cas(void)
{
    return sk_X509_num(client_cas) > 0;
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
        snprintf(err, errlen, "TLS client context: %s", tls_error_text(ebuf, sizeof(ebuf)));
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
                 "against <ssl-cafile> only", tls_error_text(ebuf, sizeof(ebuf)));
    ERR_clear_error();
    if (cafile && SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1) {
        snprintf(err, errlen, "<ssl-cafile> %s: %s (a PEM file of CA certificates)", cafile,
                 tls_error_text(ebuf, sizeof(ebuf)));
        goto fail;
    }
    if (cafile && read_cas(cafile, err, errlen) < 0)
        goto fail;
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
    unsigned char keys[TLS_TICKET_KEYS_LEN];
    pthread_mutex_lock(&ctx_lock);
    SSL_CTX *old = ctx_current;
    pthread_mutex_unlock(&ctx_lock);
    if (old && SSL_CTX_get_tlsext_ticket_keys(old, keys, sizeof(keys)) == 1 &&
        SSL_CTX_set_tlsext_ticket_keys(ctx, keys, sizeof(keys)) != 1)
        log_warn("TLS: session tickets issued before the reload will not resume");
    OPENSSL_cleanse(keys, sizeof(keys));
}

size_t tls_ticket_keys_get(unsigned char out[TLS_TICKET_KEYS_LEN])
{
    pthread_mutex_lock(&ctx_lock);
    int ok = ctx_current &&
             SSL_CTX_get_tlsext_ticket_keys(ctx_current, out, TLS_TICKET_KEYS_LEN) == 1;
    pthread_mutex_unlock(&ctx_lock);
    return ok ? TLS_TICKET_KEYS_LEN : 0;
}

int tls_ticket_keys_set(const unsigned char *keys, size_t len)
{
    unsigned char copy[TLS_TICKET_KEYS_LEN];
    if (len != TLS_TICKET_KEYS_LEN)
        return -1;
    memcpy(copy, keys, len); /* OpenSSL's control takes a writable buffer */
    pthread_mutex_lock(&ctx_lock);
    int rc = !ctx_current ? 1
             : SSL_CTX_set_tlsext_ticket_keys(ctx_current, copy, len) == 1 ? 0 : -1;
    pthread_mutex_unlock(&ctx_lock);
    OPENSSL_cleanse(copy, sizeof(copy));
    return rc;
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
    sk_X509_pop_free(client_cas, X509_free);
    client_cas = NULL;
}

/* ---------------------------------------------------------------- for tls.c */

SSL *tls_context_new_server_ssl(void)
{
    pthread_mutex_lock(&ctx_lock);
    SSL *ssl = ctx_current ? SSL_new(ctx_current) : NULL;
    pthread_mutex_unlock(&ctx_lock);
    return ssl;
}

SSL_CTX *tls_context_client(void)
{
    return client_ctx;
}
