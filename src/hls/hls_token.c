/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_token: issued session tokens and playlists tagged with them (see hls_token.h).
 *
 * A token is 16 bytes in hex: a nonce of 8 random bytes, then the first 8 bytes of
 * HMAC-SHA256(key, "rimecast-hls-session" NUL mount NUL nonce). The key is 32 random bytes
 * written once into the log directory, so tokens stay valid across a restart and an upgrade
 * (the new process reads the same file). Checking a token costs one HMAC, no state.
 */
#include "hls/hls_token.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"

#define KEY_LEN 32
#define NONCE_LEN 8
#define MAC_LEN 8

static unsigned char key[KEY_LEN];
static int key_set;

/* Reads the key file at path: 0, -ENOENT when it does not exist, else -errno (*why set). */
static int key_read(const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
        return -errno;
    }
    struct stat st;
    int rc = -EINVAL;
    *why = "it is not a plain file of 32 bytes with one link, owned by the server's user";
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
        st.st_size == KEY_LEN && (st.st_uid == geteuid() || st.st_uid == 0) &&
        read(fd, key, KEY_LEN) == KEY_LEN)
        rc = 0;
    close(fd);
    return rc;
}

/* Creates the key file at path with a new key: 0, -EEXIST (made meanwhile), else -errno. */
static int key_create(const char *path, const char **why)
{
    if (getrandom(key, KEY_LEN, 0) != KEY_LEN) {
        *why = "no random bytes";
        return -EIO;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        *why = strerror(errno);
        return -errno;
    }
    int ok = write(fd, key, KEY_LEN) == KEY_LEN && fsync(fd) == 0;
    close(fd);
    if (!ok) {
        unlink(path);
        *why = "it could not be written";
        return -EIO;
    }
    return 0;
}

int hls_token_init(const char *dir)
{
    char path[4096];
    const char *why = "no log directory";
    int rc = -ENOENT;
    key_set = 0;
    if (dir && snprintf(path, sizeof(path), "%s/%s", dir, HLS_TOKEN_KEY_FILE) < (int)sizeof(path)) {
        rc = key_read(path, &why);
        if (rc == -ENOENT && (rc = key_create(path, &why)) == -EEXIST)
            rc = key_read(path, &why);
    }
    if (rc == 0) {
        key_set = 1;
        return 0;
    }
    if (getrandom(key, KEY_LEN, 0) != KEY_LEN) {
        log_error("hls: no random bytes for the session token key: no HLS session can begin");
        return -EIO;
    }
    key_set = 1;
    /* info, not a warning: a station without a writable log directory (a test, a checkout)
     * loses nothing but tokens issued just before a restart */
    log_info("hls: session token key %s/%s not used (%s): tokens issued now are valid until "
             "this process ends, not across a restart or an upgrade", dir ? dir : "(none)",
             HLS_TOKEN_KEY_FILE, why);
    return 0;
}

static const char hex[] = "0123456789abcdef";

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[b[i] >> 4];
        out[2 * i + 1] = hex[b[i] & 15];
    }
}

static int from_hex(const char *s, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < 2 * n; i++) {
        const char *p = s[i] ? strchr(hex, s[i]) : NULL;
        if (!p)
            return -1;
        b[i / 2] = (unsigned char)(i % 2 ? (b[i / 2] << 4) | (p - hex) : (p - hex));
    }
    return 0;
}

/* The MAC of nonce for mount into mac (MAC_LEN bytes): 0, or -1. */
static int token_mac(const char *mount, const unsigned char *nonce, unsigned char *mac)
{
    static const char label[] = "rimecast-hls-session";
    unsigned char msg[sizeof(label) + 1024 + NONCE_LEN], md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    size_t mlen = strlen(mount);
    if (!key_set || mlen > 1024)
        return -1;
    memcpy(msg, label, sizeof(label)); /* with its NUL */
    memcpy(msg + sizeof(label), mount, mlen + 1);
    memcpy(msg + sizeof(label) + mlen + 1, nonce, NONCE_LEN);
    if (!HMAC(EVP_sha256(), key, KEY_LEN, msg, sizeof(label) + mlen + 1 + NONCE_LEN, md, &mdlen))
        return -1;
    memcpy(mac, md, MAC_LEN);
    return 0;
}

int hls_token_issue(const char *mount, char *out)
{
    unsigned char b[NONCE_LEN + MAC_LEN];
    if (getrandom(b, NONCE_LEN, 0) != NONCE_LEN || token_mac(mount, b, b + NONCE_LEN) < 0)
        return -EIO;
    to_hex(b, sizeof(b), out);
    out[HLS_TOKEN_LEN] = '\0';
    return 0;
}

int hls_token_issued(const char *mount, const char *token)
{
    unsigned char b[NONCE_LEN + MAC_LEN], mac[MAC_LEN];
    if (strlen(token) != HLS_TOKEN_LEN || from_hex(token, b, sizeof(b)) < 0 ||
        token_mac(mount, b, mac) < 0)
        return 0;
    return CRYPTO_memcmp(mac, b + NONCE_LEN, MAC_LEN) == 0;
}

int hls_token_form(const char *t)
{
    size_t n = 0;
    for (; t[n]; n++)
        if (!((t[n] >= '0' && t[n] <= '9') || (t[n] >= 'a' && t[n] <= 'f')))
            return 0;
    return n == HLS_TOKEN_LEN || n == HLS_TOKEN_LEN_OLD;
}

/* Appends uri (n bytes) with the session parameter added to its query: 0 or -1. */
static int tag_uri(buf_t *out, const char *uri, size_t n, const char *token)
{
    if (n > 7 && memcmp(uri, "hls/ad/", 7) == 0) /* a public ad's: the same for every session */
        return buf_append(out, uri, n) < 0 ? -1 : 0;
    return buf_append(out, uri, n) < 0 ||
                   buf_append_str(out, memchr(uri, '?', n) ? "&session=" : "?session=") < 0 ||
                   buf_append_str(out, token) < 0
               ? -1
               : 0;
}

/* The next URI="..." attribute of a tag line in [p, end): its value's first byte, or NULL. */
static const char *next_uri_attr(const char *line, const char *p, const char *end)
{
    static const char attr[] = "URI=\"";
    for (const char *q = p; q + sizeof(attr) - 1 <= end; q++)
        if (memcmp(q, attr, sizeof(attr) - 1) == 0 && q > line && (q[-1] == ':' || q[-1] == ','))
            return q + sizeof(attr) - 1;
    return NULL;
}

/* Appends one playlist line (without its newline) with its URIs tagged: 0 or -1. */
static int tag_line(buf_t *out, const char *line, size_t n, const char *token)
{
    if (n == 0)
        return 0;
    if (line[0] != '#') /* a segment's URI */
        return tag_uri(out, line, n, token);
    const char *end = line + n, *p = line;
    for (;;) {
        const char *uri = next_uri_attr(line, p, end);
        const char *close = uri ? memchr(uri, '"', (size_t)(end - uri)) : NULL;
        if (!close)
            return buf_append(out, p, (size_t)(end - p)) < 0 ? -1 : 0;
        if (buf_append(out, p, (size_t)(uri - p)) < 0 ||
            tag_uri(out, uri, (size_t)(close - uri), token) < 0)
            return -1;
        p = close;
    }
}

int hls_token_tag_playlist(const char *text, size_t len, const char *token, buf_t *out)
{
    const char *end = text + len;
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        if (tag_line(out, p, (size_t)(stop - p), token) < 0 || (nl && buf_append(out, "\n", 1) < 0))
            return -ENOMEM;
        p = nl ? nl + 1 : end;
    }
    return 0;
}
