/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_str: pins down the escapers (what leaves the server as XML, JSON or a log line), the
 * base64 and percent decoders on malformed input, query parameters, charset conversion and
 * request-path normalisation.
 */
#include "core/str.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* Compares a malloc'd result with the expected string and frees it. */
#define CHECK_OWNED(expr, want)                                                                \
    do {                                                                                       \
        char *got_ = (expr);                                                                   \
        CHECK_STR(got_, want);                                                                 \
        free(got_);                                                                            \
    } while (0)

#define CHECK_NULL(expr)                                                                       \
    do {                                                                                       \
        char *got_ = (expr);                                                                   \
        CHECK(got_ == NULL);                                                                   \
        free(got_);                                                                            \
    } while (0)

static char *xml(const char *s)
{
    return str_escape_xml(s, strlen(s));
}

static char *json(const char *s)
{
    return str_escape_json(s, strlen(s));
}

static void xml_escapes_markup_and_drops_controls(void)
{
    CHECK_OWNED(xml("<script>alert('x')</script>"),
                "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
    CHECK_OWNED(xml("a & b \"q\""), "a &amp; b &quot;q&quot;");
    CHECK_OWNED(xml("line1\r\nline2\tend"), "line1\r\nline2\tend");
    CHECK_OWNED(xml("a\x01\x02\x1b[31mb\x0c"), "a[31mb");
    CHECK_OWNED(xml("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb5"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xb5");
    CHECK_OWNED(xml("bad\xff\xfe!"), "bad\xef\xbf\xbd\xef\xbf\xbd!");
    CHECK_OWNED(xml("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");              /* overlong '/' */
    CHECK_OWNED(xml("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"); /* surrogate */
    CHECK_OWNED(xml("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd");              /* truncated */
    CHECK_OWNED(xml("\xef\xbf\xbe"), "\xef\xbf\xbd");                       /* U+FFFE */
    CHECK_OWNED(xml("]]>"), "]]&gt;");
    CHECK_OWNED(str_escape_xml("a\0b", 3), "ab");
    CHECK_OWNED(str_escape_xml(NULL, 0), "");
}

static void json_escapes_quotes_controls_and_script_end(void)
{
    CHECK_OWNED(json("say \"hi\" \\ now"), "say \\\"hi\\\" \\\\ now");
    CHECK_OWNED(json("\b\f\n\r\t"), "\\b\\f\\n\\r\\t");
    CHECK_OWNED(json("\x01\x1f\x7f"), "\\u0001\\u001f\\u007f");
    CHECK_OWNED(str_escape_json("\0", 1), "\\u0000");
    CHECK_OWNED(json("</script><script>"), "<\\/script><script>");
    CHECK_OWNED(json("a/b"), "a/b");
    CHECK_OWNED(json("x\xff"), "x\xef\xbf\xbd");
    CHECK_OWNED(json("\xe2\x80\xa8"), "\\u2028");
    CHECK_OWNED(json("\xc3\xa9"), "\xc3\xa9");
}

static void log_escape_never_emits_controls(void)
{
    char out[64];
    CHECK_STR(str_escape_log(out, sizeof(out), "GET /a\r\nX: y", 12), "GET /a\\x0D\\x0AX: y");
    CHECK_STR(str_escape_log(out, sizeof(out), "a\"b\\c", 5), "a\\\"b\\\\c");
    CHECK_STR(str_escape_log(out, sizeof(out), "%s%n\x1b\xff", 6), "%s%n\\x1B\\xFF");
    CHECK_STR(str_escape_log(out, sizeof(out), "\0", 1), "\\x00");
    /* truncation never splits an escape */
    CHECK_STR(str_escape_log(out, 6, "ab\ncd", 5), "ab");
    CHECK_STR(str_escape_log(out, 7, "ab\ncd", 5), "ab\\x0A");
    CHECK_STR(str_escape_log(out, 4, "a\"b", 3), "a\\\"");
    CHECK_STR(str_escape_log(out, 3, "a\"b", 3), "a");
    CHECK_STR(str_escape_log(out, 1, "abc", 3), "");
    CHECK(str_escape_log(out, 0, "abc", 3) == out);
    CHECK_STR(str_escape_log_utf8(out, sizeof(out), "T\xc3\xaftle|\n\\", 9),
              "T\xc3\xaftle|\\x0A\\\\");
    CHECK_STR(str_escape_log_utf8(out, sizeof(out), "\xc2\x85\xff\xc3", 4), "\\xC2\\x85\\xFF\\xC3");
    CHECK_STR(str_escape_log_utf8(out, 3, "\xc3\xaf\xc3\xaf", 4), "\xc3\xaf");
    CHECK_STR(str_escape_log_utf8(out, sizeof(out), "\"q\"\r", 4), "\"q\"\\x0D");
}

static void base64_round_trip_and_strictness(void)
{
    unsigned char bin[256], dec[400];
    for (int i = 0; i < 256; i++)
        bin[i] = (unsigned char)i;
    for (size_t n = 0; n <= 256; n += 1 + n / 7) {
        char *enc = str_base64_encode(bin, n);
        long got = str_base64_decode(enc, strlen(enc), dec, sizeof(dec));
        CHECK(got == (long)n && memcmp(dec, bin, n) == 0);
        free(enc);
    }
    CHECK_OWNED(str_base64_encode((const unsigned char *)"source:hackme", 13),
                "c291cmNlOmhhY2ttZQ==");
    CHECK(str_base64_decode("Zm9vYg==", 8, dec, sizeof(dec)) == 4 && memcmp(dec, "foob", 5) == 0);
    CHECK(str_base64_decode("", 0, dec, 1) == 0 && dec[0] == '\0');
    CHECK(str_base64_decode("Zm9vYg", 6, dec, sizeof(dec)) == -1);     /* no padding */
    CHECK(str_base64_decode("Zm9v\nYg==", 9, dec, sizeof(dec)) == -1); /* whitespace */
    CHECK(str_base64_decode("Zm=vYg==", 8, dec, sizeof(dec)) == -1);   /* '=' inside */
    CHECK(str_base64_decode("Zg==Zg==", 8, dec, sizeof(dec)) == -1);
    CHECK(str_base64_decode("Z===", 4, dec, sizeof(dec)) == -1);
    CHECK(str_base64_decode("Zh==", 4, dec, sizeof(dec)) == -1);       /* non-zero pad bits */
    CHECK(str_base64_decode("Zm9vYg==", 8, dec, 6) == -1);             /* outlen too small */
    CHECK(str_base64_decode("Zm9vYg==", 8, dec, 7) == 4);
}

static void url_decode_rejects_malformed_and_nul(void)
{
    size_t n = 99;
    CHECK_OWNED(str_url_decode("a%20b+c%2F", 10, 1, &n), "a b c/");
    CHECK(n == 6);
    CHECK_OWNED(str_url_decode("a+b", 3, 0, &n), "a+b");
    CHECK_OWNED(str_url_decode("%c3%A9", 6, 0, &n), "\xc3\xa9");
    CHECK_OWNED(str_url_decode("", 0, 0, &n), "");
    CHECK(n == 0);
    CHECK_NULL(str_url_decode("%zz", 3, 0, &n));
    CHECK_NULL(str_url_decode("abc%", 4, 0, &n));
    CHECK_NULL(str_url_decode("abc%4", 5, 0, &n));
    CHECK_NULL(str_url_decode("a%00b", 5, 0, &n));
    CHECK_NULL(str_url_decode("a\0b", 3, 0, &n));
    CHECK_OWNED(str_url_decode("%41%4", 3, 0, &n), "A"); /* stops at len */
    CHECK_OWNED(str_url_encode("/a b/\xc3\xa9?&=~", 11), "/a%20b/%C3%A9%3F%26%3D~");
}

static void query_params(void)
{
    const char *q = "mount=%2Flive&mode=updinfo&song=Artist+-+T%C3%ADtle&empty=&flag&x=%zz";
    size_t n = strlen(q);
    CHECK_OWNED(str_query_param(q, n, "mount"), "/live");
    CHECK_OWNED(str_query_param(q, n, "mode"), "updinfo");
    CHECK_OWNED(str_query_param(q, n, "song"), "Artist - T\xc3\xadtle");
    CHECK_OWNED(str_query_param(q, n, "empty"), "");
    CHECK_OWNED(str_query_param(q, n, "flag"), "");
    CHECK_NULL(str_query_param(q, n, "x"));
    CHECK_NULL(str_query_param(q, n, "missing"));
    CHECK_NULL(str_query_param(q, n, "mou"));
    CHECK_OWNED(str_query_param("a=1&a=2", 7, "a"), "1");
    CHECK_OWNED(str_query_param("mo%75nt=/x", 10, "mount"), "/x");
    CHECK_OWNED(str_query_param("a=1&b=2", 5, "b"), "");  /* "a=1&b" */
    CHECK_NULL(str_query_param("", 0, "a"));
}

static void ieq_and_dup(void)
{
    CHECK(str_ieq("Content-Type", 12, "content-type"));
    CHECK(!str_ieq("Content-Type", 7, "content-type"));
    CHECK(!str_ieq("Content", 7, "content-type"));
    CHECK(str_ieq("", 0, ""));
    CHECK(!str_ieq(NULL, 0, ""));
    CHECK(str_dup(NULL) == NULL);
    CHECK_OWNED(str_dup("x"), "x");
    CHECK_OWNED(str_ndup("hello", 4), "hell");
    CHECK(str_utf8_valid("caf\xc3\xa9", 5));
    CHECK(!str_utf8_valid("caf\xc3", 4));
}

static void to_utf8_via_iconv(void)
{
    CHECK_OWNED(str_to_utf8("caf\xe9", 4, "ISO-8859-1"), "caf\xc3\xa9");
    CHECK_OWNED(str_to_utf8("caf\xe9", 4, "latin1"), "caf\xc3\xa9");
    CHECK_OWNED(str_to_utf8("\x80", 1, "cp1252"), "\xe2\x82\xac");
    CHECK_OWNED(str_to_utf8("caf\xc3\xa9", 5, "UTF-8"), "caf\xc3\xa9");
    CHECK_OWNED(str_to_utf8("", 0, "UTF-8"), "");
    CHECK_NULL(str_to_utf8("caf\xe9", 4, "UTF-8"));
    CHECK_NULL(str_to_utf8("abc", 3, "NO-SUCH-CHARSET"));
    char big[5000];
    memset(big, '\xe9', sizeof(big));
    char *u = str_to_utf8(big, sizeof(big), "ISO-8859-1");
    CHECK(u && strlen(u) == 2 * sizeof(big));
    free(u);
}

static char *norm(const char *s)
{
    return str_normalize_path(s, strlen(s));
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
    CHECK_NULL(str_normalize_path("/a\0b", 4));
    CHECK_NULL(norm("relative"));
    CHECK_NULL(norm(""));
    /* callers decode first: "%2e%2e" becomes ".." and is then resolved */
    size_t n;
    char *dec = str_url_decode("/a/%2e%2e/%2E%2e/etc", 20, 0, &n);
    CHECK_STR(dec, "/a/../../etc");
    CHECK_NULL(str_normalize_path(dec, n));
    free(dec);
    dec = str_url_decode("/x/%2e%2e/y", 11, 0, &n);
    CHECK_OWNED(str_normalize_path(dec, n), "/y");
    free(dec);
}

int main(void)
{
    RUN(xml_escapes_markup_and_drops_controls);
    RUN(json_escapes_quotes_controls_and_script_end);
    RUN(log_escape_never_emits_controls);
    RUN(base64_round_trip_and_strictness);
    RUN(url_decode_rejects_malformed_and_nul);
    RUN(query_params);
    RUN(ieq_and_dup);
    RUN(to_utf8_via_iconv);
    RUN(path_normalisation);
    return testlib_done();
}
