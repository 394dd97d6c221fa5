/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_url: percent-decoding on malformed input and NUL, percent-encoding, query parameters,
 * and request-path normalisation (dot segments, escaping the root).
 */
#include "core/url.h"
#include "core/buf.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void url_decode_rejects_malformed_and_nul(void)
{
    size_t n = 99;
    CHECK_OWNED(url_decode("a%20b+c%2F", 10, 1, &n), "a b c/");
    CHECK(n == 6);
    CHECK_OWNED(url_decode("a+b", 3, 0, &n), "a+b");
    CHECK_OWNED(url_decode("%c3%A9", 6, 0, &n), "\xc3\xa9");
    CHECK_OWNED(url_decode("", 0, 0, &n), "");
    CHECK(n == 0);
    CHECK_NULL(url_decode("%zz", 3, 0, &n));
    CHECK_NULL(url_decode("abc%", 4, 0, &n));
    CHECK_NULL(url_decode("abc%4", 5, 0, &n));
    CHECK_NULL(url_decode("a%00b", 5, 0, &n));
    CHECK_NULL(url_decode("a\0b", 3, 0, &n));
    CHECK_OWNED(url_decode("%41%4", 3, 0, &n), "A"); /* stops at len */
    CHECK_OWNED(url_encode("/a b/\xc3\xa9?&=~", 11), "/a%20b/%C3%A9%3F%26%3D~");
}

/* Icecast 2.4 escapes every byte of a POST field but letters and digits, in lowercase hex. */
static void form_fields_escaped_as_icecast(void)
{
    buf_t b = {0};
    CHECK(url_form_append(&b, "sn", "A_b") == 0);
    CHECK(url_form_append(&b, "mount", "/a.mp3?q=1&z=a_b") == 0);
    CHECK(url_form_append(&b, "agent", "My Agent/1.0 (x~y) \xc3\xa9") == 0);
    CHECK(url_form_append(&b, "user", NULL) == 0);
    CHECK_STR(b.data, "sn=A%5fb&mount=%2fa%2emp3%3fq%3d1%26z%3da%5fb"
                      "&agent=My%20Agent%2f1%2e0%20%28x%7ey%29%20%c3%a9&user=");
    buf_free(&b);
}

static void query_params(void)
{
    const char *q = "mount=%2Flive&mode=updinfo&song=Artist+-+T%C3%ADtle&empty=&flag&x=%zz";
    size_t n = strlen(q);
    CHECK_OWNED(url_query_param(q, n, "mount"), "/live");
    CHECK_OWNED(url_query_param(q, n, "mode"), "updinfo");
    CHECK_OWNED(url_query_param(q, n, "song"), "Artist - T\xc3\xadtle");
    CHECK_OWNED(url_query_param(q, n, "empty"), "");
    CHECK_OWNED(url_query_param(q, n, "flag"), "");
    CHECK_NULL(url_query_param(q, n, "x"));
    CHECK_NULL(url_query_param(q, n, "missing"));
    CHECK_NULL(url_query_param(q, n, "mou"));
    CHECK_OWNED(url_query_param("a=1&a=2", 7, "a"), "1");
    CHECK_OWNED(url_query_param("mo%75nt=/x", 10, "mount"), "/x");
    CHECK_OWNED(url_query_param("a=1&b=2", 5, "b"), "");  /* "a=1&b" */
    CHECK_NULL(url_query_param("", 0, "a"));
    /* the same into a caller's buffer, no longer than it */
    char v[8];
    CHECK_STR(url_query_value(q, n, "mount", v, sizeof(v)), "/live");
    CHECK_STR(url_query_value(q, n, "flag", v, sizeof(v)), "");
    CHECK_STR(url_query_value("m%6fde=a+b%21", 13, "mode", v, sizeof(v)), "a b!");
    CHECK(url_query_value(q, n, "x", v, sizeof(v)) == NULL);
    CHECK(url_query_value(q, n, "mou", v, sizeof(v)) == NULL);
    CHECK(url_query_value(q, n, "song", v, sizeof(v)) == NULL);  /* 16 bytes decoded */
    CHECK_STR(url_query_value("a%00=1&a=2", 10, "a", v, sizeof(v)), "2");
    CHECK(url_query_value("a=%00", 5, "a", v, sizeof(v)) == NULL);
}

static char *norm(const char *s)
{
    return url_normalize_path(s, strlen(s));
}

static void path_normalisation(void)
{
    CHECK_OWNED(norm("/"), "/");
    CHECK_OWNED(norm("/live.ogg"), "/live.ogg");
    CHECK_OWNED(norm("//"), "/");
    CHECK_OWNED(norm("//a///b"), "/a/b");
    CHECK_OWNED(norm("/x/./y"), "/x/y");
    CHECK_OWNED(norm("/a/b/../c"), "/a/c");
    CHECK_OWNED(norm("/a/b/.."), "/a/");
    CHECK_OWNED(norm("/a/"), "/a/");
    CHECK_OWNED(norm("/a/."), "/a/");
    CHECK_OWNED(norm("/a/.."), "/");
    CHECK_OWNED(norm("/.hidden/x.y"), "/.hidden/x.y");
    CHECK_OWNED(norm("/a..b"), "/a..b");
    CHECK_NULL(norm("/a/../.."));
    CHECK_NULL(norm("/.."));
    CHECK_NULL(norm("/../etc/passwd"));
    CHECK_NULL(norm("/status.xsl."));
    CHECK_NULL(norm("/a./b"));
    CHECK_NULL(norm("/..."));
    CHECK_NULL(norm("/a\\..\\b"));
    CHECK_NULL(url_normalize_path("/a\0b", 4));
    CHECK_NULL(norm("relative"));
    CHECK_NULL(norm(""));
    /* callers decode first: "%2e%2e" becomes ".." and is then resolved */
    size_t n;
    char *dec = url_decode("/a/%2e%2e/%2E%2e/etc", 20, 0, &n);
    CHECK_STR(dec, "/a/../../etc");
    CHECK_NULL(url_normalize_path(dec, n));
    free(dec);
    dec = url_decode("/x/%2e%2e/y", 11, 0, &n);
    CHECK_OWNED(url_normalize_path(dec, n), "/y");
    free(dec);
}

/* The request path decoded and normalised in place, in a buffer of the caller's, is what
 * decoding and then normalising into allocations gives, for every case above and more. */
static void request_path_in_place(void)
{
    static const char *const cases[] = {
        "/", "/a/b", "//a//b/", "/a/./b/../c", "/a/..", "/x/%2e%2e/y", "/a/%2e%2e/%2E%2e/etc",
        "/%41%2fb", "/a%00b", "/a%", "/a%4", "/a%zz", "relative", "%2fa", "/a+b", "/..",
        "/a./b", "/a\\b", "/.", "/a/b/./", "/a/b/..", "/caf%C3%A9/hls.m3u8", "/m/hls/12.3.mp3",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *raw = cases[i];
        size_t len = strlen(raw), n;
        char *dec = url_decode(raw, len, 0, &n);
        char *want = dec && dec[0] == '/' ? url_normalize_path(dec, n) : NULL;
        char buf[64];
        const char *got = url_request_path(raw, len, buf, sizeof(buf));
        if (want)
            CHECK_STR(got, want);
        else
            CHECK(got == NULL);
        free(dec);
        free(want);
    }
    char small[6];
    CHECK(url_request_path("/abcde", 6, small, sizeof(small)) == NULL); /* needs len + 1 */
    CHECK_STR(url_request_path("/abcd", 5, small, sizeof(small)), "/abcd");
}

int main(void)
{
    RUN(url_decode_rejects_malformed_and_nul);
    RUN(query_params);
    RUN(form_fields_escaped_as_icecast);
    RUN(path_normalisation);
    RUN(request_path_in_place);
    return testlib_done();
}
