/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_auth: the parsers of the auth layer: htpasswd lines and files, MD5 and crypt hash
 * checks, CIDR ranges and lists, forwarded-address picking.
 */
#include <stdlib.h>
#include <string.h>

#include "auth/access.h"
#include "auth/cidr.h"
#include "auth/htpasswd.h"
#include "auth/md5.h"
#include "core/str.h"
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
          !htpasswd_user_valid("") && !htpasswd_user_valid("x\ny"));
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
}

int main(void)
{
    RUN(test_md5);
    RUN(test_lines);
    RUN(test_hashes);
    RUN(test_cidr);
    RUN(test_forwarded);
    return testlib_done();
}
