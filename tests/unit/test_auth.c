/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_auth: the parsers of the auth layer: htpasswd lines and files, MD5 and crypt hash
 * checks, the decoy an unknown htpasswd user is checked against, a file's first use from
 * several threads at once, CIDR ranges and lists, forwarded-address picking.
 */
#include <crypt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth/access.h"
#include "core/cidr.h"
#include "auth/htpasswd.h"
#include "auth/md5.h"
#include "conf/config.h"
#include "core/str.h"
#include "net/server.h"
#include "testlib.h"

static void test_md5(void)
{
    char hex[33];
    md5_hex("", 0, hex);
    CHECK(strcmp(hex, "d41d8cd98f00b204e9800998ecf8427e") == 0);
    md5_hex("abc", 3, hex);
    CHECK(strcmp(hex, "900150983cd24fb0d6963f7d28e17f72") == 0);
    const char *long_in = "12345678901234567890123456789012345678901234567890123456789012345678901234567890";
    md5_hex(long_in, strlen(long_in), hex);
    CHECK(strcmp(hex, "57edf4a22be3c955ac49da2e2107b67a") == 0);
}

static void test_lines(void)
{
    const char *u, *h;
    size_t ul, hl;
    CHECK(htpasswd_parse_line("alice:abc", 9, &u, &ul, &h, &hl) == 1 && ul == 5 && hl == 3);
    CHECK(htpasswd_parse_line("bob:x\r", 6, &u, &ul, &h, &hl) == 1 && hl == 1);
    CHECK(htpasswd_parse_line("", 0, &u, &ul, &h, &hl) == 0);
    CHECK(htpasswd_parse_line("# c:d", 5, &u, &ul, &h, &hl) == 0);
    CHECK(htpasswd_parse_line("nocolon", 7, &u, &ul, &h, &hl) == -1);
    CHECK(htpasswd_parse_line(":hash", 5, &u, &ul, &h, &hl) == -1);
    CHECK(htpasswd_parse_line("user:", 5, &u, &ul, &h, &hl) == -1);
    CHECK(htpasswd_parse_line("us\ter:x", 7, &u, &ul, &h, &hl) == -1);
    long bad = 0;
    const char *file = "a:1\n# note\n\nbroken\nb:2\na:3\n";
    CHECK(htpasswd_count(file, strlen(file), &bad) == 2 && bad == 1);
    CHECK(htpasswd_user_valid("name") && !htpasswd_user_valid("a:b") &&
          !htpasswd_user_valid("") && !htpasswd_user_valid("x\ny") &&
          !htpasswd_user_valid("#x") && htpasswd_user_valid("x#"));
}

static void test_hashes(void)
{
    CHECK(htpasswd_hash_verify("5ebe2294ecd0e0f08eab7690d2a6ee69", "secret"));
    CHECK(htpasswd_hash_verify("5EBE2294ECD0E0F08EAB7690D2A6EE69", "secret"));
    CHECK(!htpasswd_hash_verify("5ebe2294ecd0e0f08eab7690d2a6ee69", "Secret"));
    char h[256];
    CHECK(htpasswd_hash_new("pa:ss", h, sizeof(h)) == 0 && strncmp(h, "$6$", 3) == 0);
    CHECK(htpasswd_hash_verify(h, "pa:ss") && !htpasswd_hash_verify(h, "pa:sS"));
    char h2[256];
    CHECK(htpasswd_hash_new("pa:ss", h2, sizeof(h2)) == 0 && strcmp(h, h2) != 0); /* salted */
    CHECK(!htpasswd_hash_verify("$1$abc$def", "x")); /* MD5-crypt is not accepted */
    CHECK(!htpasswd_hash_verify("plain", "plain"));
    CHECK(str_equal_ct("abc", "abc") && !str_equal_ct("abc", "abd") &&
          !str_equal_ct("abc", "ab") && !str_equal_ct(NULL, "a"));
}

static int in(const char *range, const char *ip)
{
    cidr_t r;
    unsigned char a[16];
    if (cidr_parse(range, strlen(range), &r) < 0 || cidr_addr_parse(ip, strlen(ip), a) < 0)
        return -1;
    return cidr_match(&r, a);
}

static void test_cidr(void)
{
    CHECK(in("127.0.0.0/8", "127.1.2.3") == 1);
    CHECK(in("127.0.0.0/8", "128.0.0.1") == 0);
    CHECK(in("127.0.0.0/8", "::ffff:127.0.0.9") == 1);
    CHECK(in("10.1.2.3", "10.1.2.3") == 1 && in("10.1.2.3", "10.1.2.4") == 0);
    CHECK(in("0.0.0.0/0", "8.8.8.8") == 1);
    CHECK(in("192.168.1.0/25", "192.168.1.127") == 1 && in("192.168.1.0/25", "192.168.1.128") == 0);
    CHECK(in("2001:db8::/32", "2001:db8:1::5") == 1 && in("2001:db8::/32", "2001:db9::1") == 0);
    CHECK(in("::1", "::1") == 1 && in("::/0", "127.0.0.1") == 1);
    cidr_t r;
    CHECK(cidr_parse("1.2.3.4/33", 10, &r) < 0 && cidr_parse("::/129", 6, &r) < 0);
    CHECK(cidr_parse("1.2.3.4/", 8, &r) < 0 && cidr_parse("1.2.3/8", 7, &r) < 0);
    CHECK(cidr_parse("1.2.3.4/1x", 10, &r) < 0 && cidr_parse("", 0, &r) < 0);
    cidr_list_t l;
    long bad = 0;
    const char *text = "# list\n127.0.0.1\n  10.0.0.0/8  # lan\nnot an address\n::1\n\n";
    CHECK(cidr_list_parse(text, strlen(text), &l, &bad) == 3 && bad == 1);
    unsigned char a[16];
    cidr_addr_parse("10.9.9.9", 8, a);
    CHECK(cidr_list_match(&l, a));
    cidr_addr_parse("11.0.0.1", 8, a);
    CHECK(!cidr_list_match(&l, a));
    cidr_list_free(&l);
}

static int trust_tens(const unsigned char a[16])
{
    return a[10] == 0xff && a[12] == 10;
}

static void test_forwarded(void)
{
    char out[64];
    const char *x = "6.6.6.6, 198.51.100.7, 10.1.2.3";
    CHECK(access_pick_forwarded(x, strlen(x), 0, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "198.51.100.7") == 0);
    x = "10.0.0.1,10.0.0.2";
    CHECK(access_pick_forwarded(x, strlen(x), 0, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "10.0.0.1") == 0);
    x = "[2001:db8::1]:443";
    CHECK(access_pick_forwarded(x, strlen(x), 0, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "2001:db8::1") == 0);
    x = "for=192.0.2.60;proto=http;by=203.0.113.43, for=\"[2001:db8:cafe::17]:4711\"";
    CHECK(access_pick_forwarded(x, strlen(x), 1, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "2001:db8:cafe::17") == 0);
    x = "garbage<script>";
    CHECK(access_pick_forwarded(x, strlen(x), 0, trust_tens, out, sizeof(out)) == 0);
    x = "for=unknown";
    CHECK(access_pick_forwarded(x, strlen(x), 1, trust_tens, out, sizeof(out)) == 0);
    CHECK(access_pick_forwarded("", 0, 0, trust_tens, out, sizeof(out)) == 0);
    x = "1.2.3.4:8080";
    CHECK(access_pick_forwarded(x, strlen(x), 0, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "1.2.3.4") == 0);
    /* a client's own line in front of its proxy's: the lines are one list, read from the
     * right */
    forwarded_line_t two[] = {{"6.6.6.6", 7}, {"198.51.100.7, 10.0.0.9", 22}};
    CHECK(access_pick_forwarded_lines(two, 2, NULL, 0, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "198.51.100.7") == 0);
    forwarded_line_t fwd_two[] = {{"for=6.6.6.6", 11}, {"for=198.51.100.7", 16}};
    CHECK(access_pick_forwarded_lines(NULL, 0, fwd_two, 2, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "198.51.100.7") == 0);
    /* both headers: a forged one that names another client is a conflict */
    forwarded_line_t real[] = {{"198.51.100.7", 12}}, forged[] = {{"for=6.6.6.6", 11}};
    CHECK(access_pick_forwarded_lines(real, 1, forged, 1, trust_tens, out, sizeof(out)) == -1);
    /* ... one that names the same client, or only trusted proxies, is not */
    forwarded_line_t same[] = {{"for=198.51.100.7", 16}}, proxies[] = {{"for=10.0.0.3", 12}};
    CHECK(access_pick_forwarded_lines(real, 1, same, 1, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "198.51.100.7") == 0);
    CHECK(access_pick_forwarded_lines(real, 1, proxies, 1, trust_tens, out, sizeof(out)) == 1 &&
          strcmp(out, "198.51.100.7") == 0);
    CHECK(access_pick_forwarded_lines(proxies + 0, 0, forged, 1, trust_tens, out,
                                      sizeof(out)) == 1 && strcmp(out, "6.6.6.6") == 0);
}

/* Replaces the file at path with text (a new inode: a reload is certain). */
static void write_users(const char *path, const char *text)
{
    char tmp[400];
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
    CHECK(rename(tmp, path) == 0);
}

/* The decoy of the file with text, "" when it has none. */
static const char *decoy_of(htpasswd_t *h, const char *path, const char *text)
{
    static char out[HTPASSWD_HASH_MAX + 1];
    write_users(path, text);
    int rc = htpasswd_decoy(h, out, sizeof(out));
    CHECK(rc >= 0);
    if (rc <= 0)
        out[0] = '\0';
    return out;
}

static void test_unknown_user_costs_the_costliest_known_one(void)
{
    const char *base = getenv("TMPDIR");
    char dir[200], path[300], text[2048], h6[256], h5[256], h5slow[256];
    struct crypt_data cd = {0};
    snprintf(dir, sizeof(dir), "%s/test_auth_XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/users", dir);
    htpasswd_t *h = htpasswd_get(path);
    CHECK(h != NULL);
    if (!h)
        return;
    CHECK(htpasswd_hash_new("pw6", h6, sizeof(h6)) == 0);
    snprintf(h5, sizeof(h5), "%s", crypt_r("pw5", "$5$saltsalt", &cd));
    snprintf(h5slow, sizeof(h5slow), "%s", crypt_r("pw5", "$5$rounds=20000$saltsalt", &cd));
    CHECK(strncmp(h5, "$5$saltsalt$", 12) == 0 && strncmp(h5slow, "$5$rounds=20000$", 16) == 0);
    const char *md5 = "5ebe2294ecd0e0f08eab7690d2a6ee69"; /* "secret" */

    /* SHA-512 above SHA-256 above MD5, whatever the order of the lines */
    snprintf(text, sizeof(text), "a:%s\nb:%s\nc:%s\n", md5, h6, h5);
    CHECK_STR(decoy_of(h, path, text), h6);
    /* an unknown user is verified against it; a known one is not */
    unsigned long before = htpasswd_decoy_checks();
    CHECK(htpasswd_check(h, "nobody", "x") == HTPASSWD_NO_USER);
    CHECK(htpasswd_decoy_checks() == before + 1);
    /* the decoy's own password lets no unknown name in */
    CHECK(htpasswd_check(h, "nobody", "pw6") == HTPASSWD_NO_USER);
    CHECK(htpasswd_decoy_checks() == before + 2);
    CHECK(htpasswd_check(h, "b", "pw6") == HTPASSWD_OK);
    CHECK(htpasswd_check(h, "c", "nope") == HTPASSWD_BAD_PASSWORD);
    CHECK(htpasswd_check(h, "a", "secret") == HTPASSWD_OK);
    CHECK(htpasswd_decoy_checks() == before + 2);

    /* more SHA rounds cost more than the kind; yescrypt is above both */
    snprintf(text, sizeof(text), "b:%s\nd:%s\n", h6, h5slow);
    CHECK_STR(decoy_of(h, path, text), h5slow);
    snprintf(text, sizeof(text), "y:$y$j9T$F5Jx5fExrKuJdv.XrBzw2/$aZMzmR1h1ETXzM3y8bF0yTj7VvOQ3FoWA\n"
             "b:%s\n", h6);
    CHECK(strncmp(decoy_of(h, path, text), "$y$", 3) == 0);
    /* a file of MD5 users: an unknown user costs an MD5 too, not a crypt */
    snprintf(text, sizeof(text), "a:%s\n", md5);
    CHECK_STR(decoy_of(h, path, text), md5);
    before = htpasswd_decoy_checks();
    CHECK(htpasswd_check(h, "nobody", "secret") == HTPASSWD_NO_USER);
    CHECK(htpasswd_decoy_checks() == before + 1);
    /* no hash that is ever verified (or no user): nothing to spend, known or not */
    CHECK_STR(decoy_of(h, path, "old:$1$abc$def\nplain:plain\n"), "");
    CHECK_STR(decoy_of(h, path, ""), "");
    before = htpasswd_decoy_checks();
    CHECK(htpasswd_check(h, "nobody", "x") == HTPASSWD_NO_USER);
    CHECK(htpasswd_decoy_checks() == before);
    /* users added through the file API keep the decoy up to date */
    CHECK(htpasswd_add(h, "new", "pw") == 0);
    char got[HTPASSWD_HASH_MAX + 1];
    CHECK(htpasswd_decoy(h, got, sizeof(got)) == 1 && strncmp(got, "$6$", 3) == 0);
    CHECK(htpasswd_delete(h, "new") == 0);
    CHECK(htpasswd_decoy(h, got, sizeof(got)) == 0);
    unlink(path);
    rmdir(dir);
}

/* Threads checking a file nobody has read yet, all at once: one reads it, the others wait
 * for it instead of finding no users (which would refuse everyone as "unavailable"). */
#define FIRST_USE_THREADS 4
#define FIRST_USE_FILES 40

static pthread_barrier_t first_use_barrier;
static htpasswd_t *first_use_file;
static atomic_int first_use_failures;

/* Runs fn on FIRST_USE_THREADS threads released together by first_use_barrier. */
static void at_once(void *(*fn)(void *))
{
    pthread_t t[FIRST_USE_THREADS];
    pthread_barrier_init(&first_use_barrier, NULL, FIRST_USE_THREADS);
    for (int k = 0; k < FIRST_USE_THREADS; k++)
        pthread_create(&t[k], NULL, fn, NULL);
    for (int k = 0; k < FIRST_USE_THREADS; k++)
        pthread_join(t[k], NULL);
    pthread_barrier_destroy(&first_use_barrier);
}

static void *first_use_check(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&first_use_barrier);
    if (htpasswd_check(first_use_file, "a", "secret") != HTPASSWD_OK)
        atomic_fetch_add(&first_use_failures, 1);
    return NULL;
}

static void test_first_use_from_many_threads_at_once(void)
{
    const char *base = getenv("TMPDIR");
    char dir[200], path[300];
    snprintf(dir, sizeof(dir), "%s/test_auth_XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    for (int i = 0; i < FIRST_USE_FILES; i++) {
        snprintf(path, sizeof(path), "%s/users%d", dir, i);
        write_users(path, "a:5ebe2294ecd0e0f08eab7690d2a6ee69\n"); /* "secret" */
        first_use_file = htpasswd_get(path);
        CHECK(first_use_file != NULL);
        if (!first_use_file)
            break;
        at_once(first_use_check);
        unlink(path);
    }
    CHECK(atomic_load(&first_use_failures) == 0);
    rmdir(dir);
}


/* The same for an allow-ip file: threads checking an allowed address while nobody has read
 * the file yet all find it allowed (none may see "no snapshot" and refuse it). */
static atomic_int allow_first_refusals;
#define ALLOW_FIRST_FILES 400 /* the window is a stat and a short read: many tries */

static void *allow_first_check(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&first_use_barrier);
    if (!access_ip_allowed("127.0.0.1"))
        atomic_fetch_add(&allow_first_refusals, 1);
    return NULL;
}

static void test_allow_file_first_use_from_many_threads_at_once(void)
{
    const char *base = getenv("TMPDIR");
    char dir[200], path[300], xml[600], err[256];
    snprintf(dir, sizeof(dir), "%s/test_auth_XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    for (int i = 0; i < ALLOW_FIRST_FILES; i++) {
        snprintf(path, sizeof(path), "%s/allow%d", dir, i);
        write_users(path, "127.0.0.0/8\n");
        int len = snprintf(xml, sizeof(xml), "<icecast><paths><allow-ip>%s</allow-ip></paths>"
                                             "</icecast>", path);
        config_t *cfg = NULL;
        CHECK(config_load_buffer(xml, (size_t)len, "t.xml", &cfg, err, sizeof(err), NULL) == 0);
        if (!cfg)
            break;
        server_set_config(cfg);
        at_once(allow_first_check);
        unlink(path);
    }
    CHECK(atomic_load(&allow_first_refusals) == 0);
    server_free_configs();
    rmdir(dir);
}

int main(void)
{
    RUN(test_md5);
    RUN(test_lines);
    RUN(test_hashes);
    RUN(test_unknown_user_costs_the_costliest_known_one);
    RUN(test_first_use_from_many_threads_at_once);
    RUN(test_allow_file_first_use_from_many_threads_at_once);
    RUN(test_cidr);
    RUN(test_forwarded);
    return testlib_done();
}
