/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * htpasswd: parsing, snapshots, reload on change and atomic rewrite of htpasswd files (see
 * htpasswd.h). Cold path only: a listener's check runs once per join.
 */
#include "auth/htpasswd.h"

#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/md5.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "core/watched.h"

typedef struct {
    char *name;
    char *hash;
} user_t;

typedef struct snapshot {
    user_t *users; /* sorted by name */
    size_t n;
    const char *decoy; /* the costliest hash of users (one of theirs), NULL if none */
} snapshot_t;

/* An htpasswd_t is the watched file itself (core/watched.h), its snapshots snapshot_t. */

static atomic_ulong decoy_checks; /* unknown users verified against a decoy */

/* ---- parsing ---- */

int htpasswd_parse_line(const char *line, size_t len, const char **user, size_t *ulen,
                        const char **hash, size_t *hlen)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0 || line[0] == '#')
        return 0;
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return -1;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
            return -1;
    *user = line;
    *ulen = (size_t)(colon - line);
    *hash = colon + 1;
    *hlen = len - *ulen - 1;
    if (*ulen == 0 || *ulen > HTPASSWD_USER_MAX || *hlen == 0 || *hlen > HTPASSWD_HASH_MAX)
        return -1;
    return 1;
}

int htpasswd_user_valid(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > HTPASSWD_USER_MAX || name[0] == '#') /* '#': a comment line */
        return 0;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f || name[i] == ':')
            return 0;
    return 1;
}

static int is_md5_hex(const char *hash)
{
    size_t i;
    for (i = 0; hash[i]; i++)
        if (!((hash[i] >= '0' && hash[i] <= '9') || (hash[i] >= 'a' && hash[i] <= 'f') ||
              (hash[i] >= 'A' && hash[i] <= 'F')))
            return 0;
    return i == 32;
}

int htpasswd_hash_verify(const char *hash, const char *pass)
{
    if (!hash || !pass)
        return 0;
    if (is_md5_hex(hash)) {
        char hex[33], want[33];
        md5_hex(pass, strlen(pass), hex);
        for (int i = 0; i < 33; i++)
            want[i] = (char)(hash[i] >= 'A' && hash[i] <= 'F' ? hash[i] + 32 : hash[i]);
        return str_equal_ct(hex, want);
    }
    if (strncmp(hash, "$6$", 3) != 0 && strncmp(hash, "$5$", 3) != 0 &&
        strncmp(hash, "$y$", 3) != 0)
        return 0;
    struct crypt_data *cd = calloc(1, sizeof(*cd));
    if (!cd)
        return 0;
    const char *out = crypt_r(pass, hash, cd);
    int ok = out && out[0] == '$' && str_equal_ct(out, hash);
    free(cd);
    return ok;
}

int htpasswd_hash_new(const char *pass, char *out, size_t cap)
{
    static const char alphabet[] =
        "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    unsigned char rnd[16];
    char salt[3 + 16 + 1];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -EIO;
    memcpy(salt, "$6$", 3);
    for (int i = 0; i < 16; i++)
        salt[3 + i] = alphabet[rnd[i] & 63];
    salt[19] = '\0';
    struct crypt_data *cd = calloc(1, sizeof(*cd));
    if (!cd)
        return -ENOMEM;
    const char *h = crypt_r(pass, salt, cd);
    int rc = h && strncmp(h, "$6$", 3) == 0 && strlen(h) < cap ? 0 : -EIO;
    if (rc == 0)
        memcpy(out, h, strlen(h) + 1);
    free(cd);
    return rc;
}

/* ---- snapshots ---- */

static void snapshot_free(snapshot_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        free(s->users[i].name);
        free(s->users[i].hash);
    }
    free(s->users);
    free(s);
}

static int user_cmp(const void *a, const void *b)
{
    return strcmp(((const user_t *)a)->name, ((const user_t *)b)->name);
}

/* What verifying a password against hash costs, as a rank: yescrypt above SHA-crypt (by
 * rounds, then SHA-512 above SHA-256 at equal rounds) above MD5; 0 for a hash that is never
 * verified (an unknown kind fails at once). Among yescrypt hashes the first one found is kept:
 * their cost parameters are not compared. */
static uint64_t hash_cost(const char *hash)
{
    if (is_md5_hex(hash))
        return 1;
    int sha512 = strncmp(hash, "$6$", 3) == 0;
    if (strncmp(hash, "$y$", 3) == 0)
        return UINT64_MAX;
    if (!sha512 && strncmp(hash, "$5$", 3) != 0)
        return 0;
    unsigned long long rounds = 5000; /* crypt(3)'s default, clamped as crypt clamps it */
    if (strncmp(hash + 3, "rounds=", 7) == 0) {
        rounds = strtoull(hash + 10, NULL, 10);
        rounds = rounds < 1000 ? 1000 : rounds > 999999999 ? 999999999 : rounds;
    }
    return 2 + rounds * 2 + (uint64_t)sha512;
}

/* The hash an unknown user's password is verified against, so that a name not in the file
 * costs what the slowest name in it does and names cannot be told apart by timing. */
static void snapshot_pick_decoy(snapshot_t *s)
{
    uint64_t best = 0;
    s->decoy = NULL;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t cost = hash_cost(s->users[i].hash);
        if (cost > best) {
            best = cost;
            s->decoy = s->users[i].hash;
        }
    }
}

/* Parses a file's text; a later line for the same user wins, as in Icecast. */
static snapshot_t *snapshot_parse(const char *text, size_t len, long *malformed)
{
    snapshot_t *s = calloc(1, sizeof(*s));
    size_t cap = 0;
    long bad = 0;
    if (!s)
        return NULL;
    for (size_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - (text + pos)) : len - pos;
        const char *u, *h;
        size_t ul, hl;
        int rc = llen > HTPASSWD_LINE_MAX ? -1 : htpasswd_parse_line(text + pos, llen, &u, &ul, &h, &hl);
        pos += llen + 1;
        if (rc < 0)
            bad++;
        if (rc <= 0)
            continue;
        if (s->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            user_t *nu = realloc(s->users, ncap * sizeof(*nu));
            if (!nu)
                goto fail;
            s->users = nu;
            cap = ncap;
        }
        user_t *e = &s->users[s->n];
        e->name = str_ndup(u, ul);
        e->hash = str_ndup(h, hl);
        if (!e->name || !e->hash) {
            free(e->name);
            free(e->hash);
            goto fail;
        }
        s->n++;
    }
    /* stable order by name, then keep the last line of each name */
    for (size_t i = 1; i < s->n; i++)
        for (size_t j = i; j > 0 && strcmp(s->users[j - 1].name, s->users[j].name) > 0; j--) {
            user_t t = s->users[j];
            s->users[j] = s->users[j - 1];
            s->users[j - 1] = t;
        }
    size_t w = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (w > 0 && strcmp(s->users[w - 1].name, s->users[i].name) == 0) {
            free(s->users[w - 1].name);
            free(s->users[w - 1].hash);
            s->users[w - 1] = s->users[i];
            continue;
        }
        s->users[w++] = s->users[i];
    }
    s->n = w;
    snapshot_pick_decoy(s);
    if (malformed)
        *malformed = bad;
    return s;
fail:
    snapshot_free(s);
    return NULL;
}

long htpasswd_count(const char *text, size_t len, long *malformed)
{
    snapshot_t *s = snapshot_parse(text, len, malformed);
    long n = s ? (long)s->n : -1;
    snapshot_free(s);
    return n;
}

static const user_t *snapshot_find(const snapshot_t *s, const char *name)
{
    user_t key = {.name = (char *)name};
    return s && s->n ? bsearch(&key, s->users, s->n, sizeof(user_t), user_cmp) : NULL;
}

/* ---- files ---- */

static void *parse_file(const char *path, const char *text, size_t len)
{
    char esc[512];
    long bad = 0;
    snapshot_t *s = snapshot_parse(text, len, &bad);
    if (!s)
        return NULL;
    escape_log(esc, sizeof(esc), path, strlen(path));
    if (bad)
        log_warn("htpasswd %s: %ld malformed line(s) skipped", esc, bad);
    if (text)
        log_info("htpasswd %s: %zu user(s) loaded", esc, s->n);
    return s;
}

static void free_file(void *s)
{
    snapshot_free(s);
}

static const watched_kind_t htpasswd_kind = {"htpasswd", parse_file, free_file};

htpasswd_t *htpasswd_get(const char *path)
{
    return watched_get(path, &htpasswd_kind);
}

int htpasswd_check(htpasswd_t *h, const char *user, const char *pass)
{
    char hash[HTPASSWD_HASH_MAX + 1];
    snapshot_t *s = watched_current(h);
    if (!s)
        return -EIO;
    const user_t *u = snapshot_find(s, user);
    /* the snapshot may be replaced meanwhile: its strings are copied first */
    snprintf(hash, sizeof(hash), "%s", u ? u->hash : s->decoy ? s->decoy : "");
    if (!u) {
        /* spend what the costliest known user would (the answer is ignored: even that
         * user's own password lets no unknown name in) */
        if (hash[0]) {
            (void)htpasswd_hash_verify(hash, pass);
            atomic_fetch_add_explicit(&decoy_checks, 1, memory_order_relaxed);
        }
        return HTPASSWD_NO_USER;
    }
    return htpasswd_hash_verify(hash, pass) ? HTPASSWD_OK : HTPASSWD_BAD_PASSWORD;
}

unsigned long htpasswd_decoy_checks(void)
{
    return atomic_load_explicit(&decoy_checks, memory_order_relaxed);
}

int htpasswd_decoy(htpasswd_t *h, char *out, size_t cap)
{
    snapshot_t *s = watched_current(h);
    if (!s)
        return -EIO;
    if (!s->decoy)
        return 0;
    if (strlen(s->decoy) >= cap)
        return -ENOSPC;
    memcpy(out, s->decoy, strlen(s->decoy) + 1);
    return 1;
}

/* Writes users as the file's new contents: temporary file in the same directory, fsync,
 * rename, fsync of the directory. On success *id is the new file's fstat. */
static int write_file(const char *path, const user_t *users, size_t n, struct stat *id)
{
    char *dirc = strdup(path), *tmp = NULL;
    int fd = -1, rc = -ENOMEM;
    FILE *f = NULL;
    struct stat st;
    size_t tlen = strlen(path) + sizeof(".tmpXXXXXX");
    if (!dirc || !(tmp = malloc(tlen)))
        goto done;
    snprintf(tmp, tlen, "%s.tmpXXXXXX", path);
    if ((fd = mkstemp(tmp)) < 0) {
        rc = -errno;
        goto done;
    }
    mode_t mode = stat(path, &st) == 0 ? st.st_mode & 0777 : 0600;
    if (fchmod(fd, mode) < 0 || !(f = fdopen(fd, "w"))) {
        rc = -errno;
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s:%s\n", users[i].name, users[i].hash);
    if (fflush(f) != 0 || fsync(fd) < 0 || fstat(fd, id) < 0) {
        rc = -errno;
        goto fail;
    }
    if (fclose(f) != 0) {
        f = NULL;
        fd = -1;
        rc = -errno;
        goto fail;
    }
    f = NULL;
    fd = -1;
    if (rename(tmp, path) < 0) {
        rc = -errno;
        goto fail;
    }
    int dfd = open(dirname(dirc), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    rc = 0;
    goto done;
fail:
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    unlink(tmp);
done:
    free(tmp);
    free(dirc);
    return rc;
}

/* Under the file's lock: the current users with one added (hash != NULL) or removed, written
 * out and swapped in. A file that cannot be read now is not written over. */
static int change_locked(htpasswd_t *h, const char *user, const char *hash)
{
    void *snap;
    int rc = watched_reload_locked(h, &snap);
    snapshot_t *cur = snap;
    struct stat st;
    if (rc < 0)
        return rc;
    if (!cur)
        return -EIO;
    const user_t *found = snapshot_find(cur, user);
    if (hash && found)
        return -EEXIST;
    if (!hash && !found)
        return -ENOENT;
    snapshot_t *s = calloc(1, sizeof(*s));
    if (!s || !(s->users = calloc(cur->n + 1, sizeof(user_t)))) {
        free(s);
        return -ENOMEM;
    }
    for (size_t i = 0; i < cur->n; i++) {
        if (&cur->users[i] == found)
            continue;
        user_t *e = &s->users[s->n++];
        e->name = strdup(cur->users[i].name);
        e->hash = strdup(cur->users[i].hash);
        if (!e->name || !e->hash)
            goto nomem;
    }
    if (hash) {
        user_t *e = &s->users[s->n++];
        if (!(e->name = strdup(user)) || !(e->hash = strdup(hash)))
            goto nomem;
        qsort(s->users, s->n, sizeof(user_t), user_cmp);
    }
    snapshot_pick_decoy(s);
    if ((rc = write_file(watched_path(h), s->users, s->n, &st)) < 0) {
        snapshot_free(s);
        return rc;
    }
    watched_replace_locked(h, s, &st);
    return 0;
nomem:
    snapshot_free(s);
    return -ENOMEM;
}

int htpasswd_add(htpasswd_t *h, const char *user, const char *pass)
{
    char hash[HTPASSWD_HASH_MAX + 1];
    if (!htpasswd_user_valid(user) || !pass || !*pass)
        return -EINVAL;
    int rc = htpasswd_hash_new(pass, hash, sizeof(hash));
    if (rc < 0)
        return rc;
    watched_lock(h);
    rc = change_locked(h, user, hash);
    watched_unlock(h);
    return rc;
}

int htpasswd_delete(htpasswd_t *h, const char *user)
{
    if (!user)
        return -EINVAL;
    watched_lock(h);
    int rc = change_locked(h, user, NULL);
    watched_unlock(h);
    return rc;
}

long htpasswd_list(htpasswd_t *h, char ***names)
{
    snapshot_t *s = watched_current(h);
    *names = NULL;
    if (!s)
        return -EIO;
    char **v = calloc(s->n + 1, sizeof(char *));
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++)
        if (!(v[i] = strdup(s->users[i].name))) {
            for (size_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            return -ENOMEM;
        }
    *names = v;
    return (long)s->n;
}
