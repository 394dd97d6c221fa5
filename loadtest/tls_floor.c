/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tls_floor: the user-space price of one listener write over TLS, without sockets. N server
 * connections are made in memory (OpenSSL on both ends, a throw-away P-256 certificate), one
 * set per TLS 1.3 suite asked for; then each write does what the server's TLS transport does
 * for a pass: the pass's blocks (several iovecs from a shared 1 MB area) gathered into one
 * scratch buffer, the error queue looked at (or cleared: --clear), one SSL_write of one record,
 * sent into a sink. Connections are written in turn, as a worker's pass does, so that with many
 * of them each write finds its connection's OpenSSL state out of the caches, as it does in the
 * server. Prints the CPU time per write for each suite, rounds alternating between the sets.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define AREA (1 << 20)     /* the shared blocks a pass is gathered from */
#define RECORD 16384       /* the largest plaintext of a record: one SSL_write */
#define MAX_SETS 8
#define SWEEP_WRITES 10000 /* writes between two readings of the clock */

typedef struct {
    const char *suite;
    SSL **conns;
} conn_set_t;

static struct {
    int connections, bytes, iovecs, rounds, clear;
} opt = {10000, 8192, 3, 20, 0};

static unsigned char scratch[RECORD];

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "tls_floor: %s\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

/* A self-signed P-256 certificate and its key, both in memory. */
static void make_identity(EVP_PKEY **key, X509 **cert)
{
    *key = EVP_EC_gen("P-256");
    *cert = X509_new();
    if (!*key || !*cert)
        die("no key or certificate");
    X509_NAME *name = X509_get_subject_name(*cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"floor", -1, -1,
                               0);
    X509_set_issuer_name(*cert, name);
    ASN1_INTEGER_set(X509_get_serialNumber(*cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(*cert), 0);
    X509_gmtime_adj(X509_getm_notAfter(*cert), 86400);
    X509_set_pubkey(*cert, *key);
    if (!X509_sign(*cert, *key, EVP_sha256()))
        die("cannot sign the certificate");
}

/* The server context as the server's TLS listen sockets set it up, with one TLS 1.3 suite. */
static SSL_CTX *server_context(const char *suite, EVP_PKEY *key, X509 *cert)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, key) != 1 ||
        SSL_CTX_set_ciphersuites(ctx, suite) != 1)
        die("server context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_ENABLE_KTLS);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_num_tickets(ctx, 1);
    return ctx;
}

/* One server connection, its handshake done with a client over a BIO pair, then writing into
 * a sink (the client is gone). */
static SSL *connection(SSL_CTX *sctx, SSL_CTX *cctx)
{
    SSL *s = SSL_new(sctx), *c = SSL_new(cctx);
    BIO *sb, *cb;
    if (!s || !c || !BIO_new_bio_pair(&sb, 1 << 16, &cb, 1 << 16))
        die("out of memory");
    SSL_set_bio(s, sb, sb);
    SSL_set_bio(c, cb, cb);
    SSL_set_accept_state(s);
    SSL_set_connect_state(c);
    for (int i = 0; i < 20 && !(SSL_is_init_finished(s) && SSL_is_init_finished(c)); i++) {
        SSL_do_handshake(c);
        SSL_do_handshake(s);
    }
    if (!SSL_is_init_finished(s))
        die("handshake not done");
    SSL_free(c);
    BIO_up_ref(sb); /* the read side keeps the pair's end; writes go to the sink */
    SSL_set0_wbio(s, BIO_new(BIO_s_null()));
    return s;
}

/* One pass's write to s: blocks gathered, the error queue, one record. */
static void write_pass(SSL *s, const unsigned char *area, size_t at)
{
    size_t got = 0, piece = (size_t)opt.bytes / (size_t)opt.iovecs;
    for (int k = 0; k < opt.iovecs; k++) {
        size_t n = k + 1 == opt.iovecs ? (size_t)opt.bytes - got : piece;
        memcpy(scratch + got, area + at + got, n);
        got += n;
    }
    if (opt.clear)
        ERR_clear_error();
    else if (ERR_peek_error())
        ERR_clear_error();
    if (SSL_write(s, scratch, (int)got) != (int)got)
        die("SSL_write");
}

/* One round of a set: every connection written once, the whole repeated until at least
 * SWEEP_WRITES writes were made (so that the clock, read by a system call, costs nothing to
 * speak of). Returns the CPU seconds and adds the writes to *writes. */
static double round_of(const conn_set_t *set, const unsigned char *area, int round, long *writes)
{
    int sweeps = (SWEEP_WRITES + opt.connections - 1) / opt.connections;
    double t0 = cpu_seconds();
    for (int k = 0; k < sweeps; k++) {
        for (int i = 0; i < opt.connections; i++) {
            size_t at = ((size_t)(round * 7 + k * 3 + i % 5) * (size_t)opt.bytes) %
                        (AREA - RECORD);
            write_pass(set->conns[i], area, at);
        }
    }
    *writes += (long)sweeps * opt.connections;
    return cpu_seconds() - t0;
}

static void usage(void)
{
    fprintf(stderr, "usage: tls_floor [--connections 10000] [--bytes 8192] [--iovecs 3] "
                    "[--rounds 20] [--clear] [SUITE...]\n"
                    "  (default suites: TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 "
                    "TLS_CHACHA20_POLY1305_SHA256)\n");
    exit(2);
}

static void parse(int argc, char **argv)
{
    static const struct option longs[] = {
        {"connections", 1, 0, 'n'}, {"bytes", 1, 0, 'b'}, {"iovecs", 1, 0, 'k'},
        {"rounds", 1, 0, 'r'},      {"clear", 0, 0, 'c'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (ch) {
        case 'n': opt.connections = atoi(optarg); break;
        case 'b': opt.bytes = atoi(optarg); break;
        case 'k': opt.iovecs = atoi(optarg); break;
        case 'r': opt.rounds = atoi(optarg); break;
        case 'c': opt.clear = 1; break;
        default: usage();
        }
    }
    if (opt.connections < 1 || opt.bytes < 1 || opt.bytes > RECORD || opt.iovecs < 1 ||
        opt.iovecs > opt.bytes || opt.rounds < 1 || argc - optind > MAX_SETS)
        usage();
}

int main(int argc, char **argv)
{
    static const char *defaults[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                                     "TLS_CHACHA20_POLY1305_SHA256"};
    parse(argc, argv);
    int nsets = optind < argc ? argc - optind : 3;
    conn_set_t sets[MAX_SETS];
    EVP_PKEY *key;
    X509 *cert;
    make_identity(&key, &cert);
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    if (!cctx)
        die("client context");
    for (int s = 0; s < nsets; s++) {
        sets[s].suite = optind < argc ? argv[optind + s] : defaults[s];
        SSL_CTX *sctx = server_context(sets[s].suite, key, cert);
        if (!(sets[s].conns = calloc((size_t)opt.connections, sizeof(SSL *))))
            die("out of memory");
        for (int i = 0; i < opt.connections; i++)
            sets[s].conns[i] = connection(sctx, cctx);
        SSL_CTX_free(sctx); /* the connections hold it */
    }
    unsigned char *area = malloc(AREA);
    if (!area)
        die("out of memory");
    memset(area, 0x5a, AREA);
    double spent[MAX_SETS] = {0};
    long writes[MAX_SETS] = {0};
    for (int r = 0; r < opt.rounds; r++)
        for (int s = 0; s < nsets; s++)
            spent[s] += round_of(&sets[s], area, r, &writes[s]);
    printf("%d connections, %d bytes a write from %d iovecs, %d rounds, error queue %s:\n",
           opt.connections, opt.bytes, opt.iovecs, opt.rounds, opt.clear ? "cleared" : "peeked");
    for (int s = 0; s < nsets; s++)
        printf("%-30s %.2f us a write\n", sets[s].suite, spent[s] / (double)writes[s] * 1e6);
    return 0;
}
