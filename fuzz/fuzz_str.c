/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_str: libFuzzer driver for the escapers and decoders in core/ (str, escape, utf8, url).
 *
 * Each escaper's output is checked against its output language (XML through libxml2, JSON by
 * a small string-grammar check, log lines byte by byte and by unescaping back); decoders must
 * round-trip with their encoders; normalised paths must be fixed points without dot segments.
 */
// fuzz-sources: src/core/str.c src/core/escape.c src/core/utf8.c src/core/url.c src/core/buf.c
// fuzz-pkgs: libxml-2.0
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/parser.h>

#include "core/buf.h"
#include "core/escape.h"
#include "core/str.h"
#include "core/url.h"
#include "core/utf8.h"

#include "fuzz.h"

static void ignore_xml_error(void *ctx, const xmlError *err)
{
    (void)ctx;
    (void)err;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xmlInitParser();
    xmlSetStructuredErrorFunc(NULL, (xmlStructuredErrorFunc)ignore_xml_error);
    return 0;
}

static void parses_as_xml(const char *pre, const char *text, const char *post)
{
    size_t a = strlen(pre), b = strlen(text), c = strlen(post);
    char *doc_text = malloc(a + b + c + 1);
    REQUIRE(doc_text);
    memcpy(doc_text, pre, a);
    memcpy(doc_text + a, text, b);
    memcpy(doc_text + a + b, post, c + 1);
    xmlDocPtr doc = xmlReadMemory(doc_text, (int)(a + b + c), "fuzz.xml", "UTF-8",
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    REQUIRE(doc != NULL);
    xmlFreeDoc(doc);
    free(doc_text);
}

static void check_xml(const char *s, size_t len)
{
    char *x = escape_xml(s, len);
    REQUIRE(x);
    size_t n = strlen(x);
    REQUIRE(utf8_valid(x, n));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)x[i];
        REQUIRE(c != '<' && c != '>' && c != '"' && c != '\'');
        REQUIRE(c >= 0x20 || c == '\t' || c == '\n' || c == '\r');
        if (c == '&')
            REQUIRE(!strncmp(x + i, "&amp;", 5) || !strncmp(x + i, "&lt;", 4) ||
                    !strncmp(x + i, "&gt;", 4) || !strncmp(x + i, "&quot;", 6) ||
                    !strncmp(x + i, "&#39;", 5));
    }
    parses_as_xml("<a>", x, "</a>");
    parses_as_xml("<a b=\"", x, "\"/>");
    free(x);
}

static void check_json(const char *s, size_t len)
{
    char *j = escape_json(s, len);
    REQUIRE(j);
    size_t n = strlen(j);
    REQUIRE(utf8_valid(j, n));
    REQUIRE(!strstr(j, "</"));
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)j[i];
        REQUIRE(c >= 0x20 && c != '"' && c != 0x7f);
        if (c != '\\')
            continue;
        c = (unsigned char)j[++i];
        if (c == 'u') {
            for (int k = 1; k <= 4; k++)
                REQUIRE(j[i + k] && strchr("0123456789abcdef", j[i + k]));
            i += 4;
        } else {
            REQUIRE(c && strchr("\"\\/bfnrt", c));
        }
    }
    buf_t b = BUF_INIT;
    REQUIRE(escape_json_buf(&b, s, len, 1) == 0);
    REQUIRE(b.len == n + 2 && b.data[0] == '"' && memcmp(b.data + 1, j, n) == 0 &&
            b.data[n + 1] == '"');
    buf_free(&b);
    free(j);
}

/* Unescapes a log escape, which must give back the input exactly; then a short buffer must
 * hold the longest prefix of the full escape that ends between two escapes. */
static void check_log(const char *s, size_t len, size_t small)
{
    size_t cap = len * 4 + 1;
    char *out = malloc(cap), *back = malloc(len + 1), *cut = malloc(small + 1);
    unsigned char *starts = calloc(cap + 1, 1);
    size_t o = 0, i;
    REQUIRE(out && back && cut && starts);
    REQUIRE(escape_log(out, cap, s, len) == out);
    for (i = 0; out[i]; i++) {
        unsigned char c = (unsigned char)out[i];
        starts[i] = 1;
        REQUIRE(c >= 0x20 && c < 0x7f && c != '"');
        if (c != '\\') {
            back[o++] = (char)c;
        } else if (out[i + 1] == 'x') {
            char hex[3] = {out[i + 2], out[i + 3], 0};
            REQUIRE(strspn(hex, "0123456789ABCDEF") == 2);
            back[o++] = (char)strtol(hex, NULL, 16);
            i += 3;
        } else {
            REQUIRE(out[i + 1] == '\\' || out[i + 1] == '"');
            back[o++] = out[++i];
        }
    }
    starts[i] = 1;
    REQUIRE(o == len && memcmp(back, s, len) == 0);
    if (small) {
        escape_log(cut, small, s, len);
        size_t m = strlen(cut);
        REQUIRE(m < small && strncmp(cut, out, m) == 0 && starts[m]);
        if (out[m]) { /* the next escape did not fit */
            size_t next = m + 1;
            while (!starts[next])
                next++;
            REQUIRE(next > small - 1);
        }
    }
    free(starts);
    free(cut);
    free(out);
    free(back);
}

static void check_base64(const char *s, size_t len)
{
    unsigned char *dec = malloc(len / 4 * 3 + 1);
    REQUIRE(dec);
    long n = str_base64_decode(s, len, dec, len / 4 * 3 + 1);
    if (n >= 0) { /* strict decoding: only canonical encodings are accepted */
        char *enc = str_base64_encode(dec, (size_t)n);
        REQUIRE(enc && strlen(enc) == len && memcmp(enc, s, len) == 0);
        free(enc);
    }
    free(dec);
    char *enc = str_base64_encode((const unsigned char *)s, len);
    size_t elen = strlen(enc);
    dec = malloc(elen / 4 * 3 + 1);
    REQUIRE(enc && dec);
    REQUIRE(str_base64_decode(enc, elen, dec, elen / 4 * 3 + 1) == (long)len);
    REQUIRE(memcmp(dec, s, len) == 0);
    free(dec);
    free(enc);
}

static void check_url(const char *s, size_t len)
{
    size_t n;
    for (int plus = 0; plus <= 1; plus++) {
        char *d = url_decode(s, len, plus, &n);
        if (d)
            REQUIRE(n <= len && strlen(d) == n);
        free(d);
    }
    char *e = url_encode(s, len);
    REQUIRE(e && strspn(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/%") ==
                     strlen(e));
    char *d = url_decode(e, strlen(e), 0, &n);
    if (memchr(s, '\0', len))
        REQUIRE(d == NULL);
    else
        REQUIRE(d && n == len && memcmp(d, s, len) == 0);
    free(d);
    free(e);
    static const char *const names[] = {"mount", "a", "", "song"};
    for (size_t i = 0; i < 4; i++)
        free(url_query_param(s, len, names[i]));
}

static void check_path(const char *s, size_t len)
{
    char *p = url_normalize_path(s, len);
    if (!p)
        return;
    size_t n = strlen(p);
    REQUIRE(p[0] == '/' && !strstr(p, "//") && !strchr(p, '\\') && n <= len + 1);
    for (const char *seg = p + 1; *seg;) {
        size_t sl = strcspn(seg, "/");
        REQUIRE(sl > 0 && seg[sl - 1] != '.');
        seg += sl + (seg[sl] == '/');
    }
    char *again = url_normalize_path(p, n);
    REQUIRE(again && strcmp(again, p) == 0);
    free(again);
    free(p);
}

/* A request path decoded and normalised in place into a buffer of the caller's is what
 * decoding and then normalising into allocations gives; a buffer without room for the NUL
 * gives nothing. */
static void check_request_path(const char *s, size_t len)
{
    size_t n;
    char *dec = url_decode(s, len, 0, &n);
    char *want = dec && dec[0] == '/' ? url_normalize_path(dec, n) : NULL;
    char *buf = malloc(len + 1);
    REQUIRE(buf);
    const char *got = url_request_path(s, len, buf, len + 1);
    REQUIRE(want ? got && strcmp(got, want) == 0 : got == NULL);
    REQUIRE(url_request_path(s, len, buf, len) == NULL);
    free(buf);
    free(want);
    free(dec);
}

static void check_charsets(const char *s, size_t len)
{
    char *u = utf8_from_charset(s, len, "ISO-8859-1");
    REQUIRE(u && utf8_valid(u, strlen(u)));
    free(u);
    u = utf8_from_charset(s, len, "UTF-8");
    REQUIRE((u != NULL) == utf8_valid(s, len));
    free(u);
    u = utf8_from_charset(s, len, "CP1252");
    if (u)
        REQUIRE(utf8_valid(u, strlen(u)));
    free(u);
    char *lit = str_ndup(s, len);
    REQUIRE(lit);
    REQUIRE(str_ieq(s, len, lit) == (strlen(lit) == len));
    free(lit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;

    check_xml(s, size);
    check_json(s, size);
    check_log(s, size, size ? data[0] : 0);
    check_base64(s, size);
    check_url(s, size);
    check_path(s, size);
    check_request_path(s, size);
    check_charsets(s, size);
    return 0;
}
