/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_parser: pins down what the request-head parser accepts (real source and listener
 * clients, split delivery, odd spacing) and how early and with which code it refuses the rest.
 */
#include "http/parser.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "testlib.h"

static http_request_t req;

static int parse(const char *s)
{
    return http_parse_request(s, strlen(s), 0, &req);
}

static int span_is(const char *p, size_t n, const char *want)
{
    return p && n == strlen(want) && memcmp(p, want, n) == 0;
}

static int header_is(const char *name, const char *want)
{
    const http_header_t *h = http_find_header(&req, name);
    return h && span_is(h->value, h->value_len, want);
}

static void simple_get_is_parsed_in_place(void)
{
    const char *s = "GET /stream.ogg HTTP/1.1\r\nHost: example.org\r\nIcy-MetaData: 1\r\n\r\n";
    CHECK(parse(s) == (int)strlen(s));
    CHECK(req.method == HTTP_METHOD_GET);
    CHECK(span_is(req.method_str, req.method_len, "GET"));
    CHECK(span_is(req.uri, req.uri_len, "/stream.ogg"));
    CHECK(span_is(req.path, req.path_len, "/stream.ogg"));
    CHECK(req.query == NULL);
    CHECK(req.version_major == 1 && req.version_minor == 1 && !req.is_ice);
    CHECK(req.num_headers == 2);
    CHECK(req.headers[0].name == s + 26); /* zero-copy */
    CHECK(header_is("host", "example.org"));
    CHECK(header_is("ICY-METADATA", "1"));
    CHECK(http_find_header(&req, "Host2") == NULL);
    char *dup = http_header_dup(&req, "Host");
    CHECK_STR(dup, "example.org");
    free(dup);
    CHECK(http_header_dup(&req, "Missing") == NULL);
}

static void body_bytes_after_head_are_not_parsed(void)
{
    const char s[] = "PUT /live HTTP/1.1\r\nContent-Type: audio/ogg\r\n\r\nOggS\0\0\r\n\r\n";
    CHECK(http_parse_request(s, sizeof(s) - 1, 0, &req) == 47);
    CHECK(req.method == HTTP_METHOD_PUT);
}

static void http10_and_ice_source(void)
{
    CHECK(parse("GET / HTTP/1.0\r\n\r\n") == 18);
    CHECK(req.version_minor == 0 && req.num_headers == 0);

    const char *ice = "SOURCE /live.mp3 ICE/1.0\r\nice-password: hackme\r\n"
                      "content-type: audio/mpeg\r\nice-name: My Radio\r\n\r\n";
    CHECK(parse(ice) == (int)strlen(ice));
    CHECK(req.method == HTTP_METHOD_SOURCE && req.is_ice);
    CHECK(req.version_major == 1 && req.version_minor == 0);
    CHECK(header_is("Ice-Password", "hackme"));
    CHECK(header_is("ice-name", "My Radio"));

    CHECK(parse("SOURCE /live HTTP/1.0\r\nAuthorization: Basic c291cmNlOmhhY2ttZQ==\r\n\r\n") > 0);
    CHECK(req.method == HTTP_METHOD_SOURCE && !req.is_ice);
}

static void put_with_expect_continue(void)
{
    const char *s = "PUT /live.ogg HTTP/1.1\r\nHost: localhost:8000\r\n"
                    "Authorization: Basic c291cmNlOmhhY2ttZQ==\r\nUser-Agent: libshout/2.4.6\r\n"
                    "Content-Type: application/ogg\r\nIce-Public: 0\r\nExpect: 100-continue\r\n\r\n";
    CHECK(parse(s) == (int)strlen(s));
    CHECK(req.method == HTTP_METHOD_PUT);
    CHECK(req.num_headers == 6);
    CHECK(header_is("expect", "100-continue"));
}

static void methods_are_case_sensitive(void)
{
    CHECK(parse("HEAD / HTTP/1.1\r\n\r\n") > 0 && req.method == HTTP_METHOD_HEAD);
    CHECK(parse("POST /admin/metadata HTTP/1.1\r\n\r\n") > 0 && req.method == HTTP_METHOD_POST);
    CHECK(parse("STATS / HTTP/1.0\r\n\r\n") > 0 && req.method == HTTP_METHOD_STATS);
    CHECK(parse("get / HTTP/1.1\r\n\r\n") > 0 && req.method == HTTP_METHOD_OTHER);
    CHECK(parse("DELETE /x HTTP/1.1\r\n\r\n") > 0 && req.method == HTTP_METHOD_OTHER);
    CHECK(span_is(req.method_str, req.method_len, "DELETE"));
}

static void odd_spacing_is_trimmed(void)
{
    const char *s = "GET  /a  HTTP/1.1\r\nHost:nospace\r\nX-Tabs:\t \tv a l\t \r\n"
                    "X-Empty:\r\nX-Spaces:    \r\n\r\n";
    CHECK(parse(s) == (int)strlen(s));
    CHECK(span_is(req.uri, req.uri_len, "/a"));
    CHECK(header_is("Host", "nospace"));
    CHECK(header_is("X-Tabs", "v a l"));
    CHECK(header_is("X-Empty", ""));
    CHECK(header_is("X-Spaces", ""));
    CHECK(parse("GET / HTTP/1.1\r\nHost : x\r\n\r\n") == HTTP_PARSE_ERROR); /* space before ':' */
}

static void bare_lf_line_ends_are_refused(void)
{
    /* any line of the head ending in LF without CR, the blank line too */
    const char *bad[] = {
        "GET /x HTTP/1.0\nHost: a\nUser-Agent: b\n\n",
        "GET /x HTTP/1.1\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nA: 1\nB: 2\r\n\r\n",
        "GET / HTTP/1.1\r\nA: 1\r\n\n",
        "PUT /live.mp3 HTTP/1.1\r\nContent-Type: audio/mpeg\n\r\n",
        "GET /x ICE/1.0\n\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(parse(bad[i]) == HTTP_PARSE_ERROR);
    /* refused as soon as the line is complete, not when the head is */
    CHECK(parse("GET /x HTTP/1.1\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET /x HTTP/1.1\r\nHost: a\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET /x HTTP/1.1\r\nHost: a\r") == HTTP_PARSE_PARTIAL);
}

static void source_logins_keep_bare_lf_and_cr_cr_lf(void)
{
    /* DarkIce's login, as it writes it: LF line ends, then CRLF CRLF */
    const char *darkice = "SOURCE /live.mp3 HTTP/1.0\nContent-type: audio/mpeg\n"
                          "Authorization: Basic c291cmNlOmhhY2ttZQ==\nUser-Agent: DarkIce/1.4\n"
                          "ice-bitrate: 128\nice-public: 0\nice-name: Radio\r\n\r\n";
    CHECK(parse(darkice) == (int)strlen(darkice));
    CHECK(req.method == HTTP_METHOD_SOURCE && req.num_headers == 6);
    CHECK(header_is("ice-name", "Radio") && header_is("ice-bitrate", "128"));
    /* its ICE/1.0 login of old, LF only */
    const char *ice = "SOURCE /live ICE/1.0\nice-password: hackme\n\n";
    CHECK(parse(ice) == (int)strlen(ice) && req.is_ice);
    const char *nsv = "SOURCE /nsv ICE/1.0\r\r\ncontent-type: video/nsv\r\r\n\r\r\n";
    CHECK(parse(nsv) == (int)strlen(nsv));
    CHECK(header_is("content-type", "video/nsv"));
    const char *lead = "\r\nGET / HTTP/1.1\r\n\r\n";
    CHECK(parse(lead) == (int)strlen(lead) && req.method == HTTP_METHOD_GET);
}

static void split_delivery_byte_by_byte(void)
{
    const char *s = "PUT /live.ogg?x=1 HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n";
    size_t total = strlen(s), prev = 0;
    int partial_ok = 1;

    for (size_t n = 1; n < total; n++) {
        if (http_parse_request(s, n, prev, &req) != HTTP_PARSE_PARTIAL)
            partial_ok = 0;
        prev = n;
    }
    CHECK(partial_ok);
    CHECK(http_parse_request(s, total, prev, &req) == (int)total);
    CHECK(header_is("Expect", "100-continue"));
    CHECK(span_is(req.query, req.query_len, "x=1"));

    const char *lf = "SOURCE / HTTP/1.0\n\n";
    CHECK(http_parse_request(lf, 18, 17, &req) == HTTP_PARSE_PARTIAL);
    CHECK(http_parse_request(lf, 19, 18, &req) == 19);
    const char *get = "GET / HTTP/1.1\r\nA: b\n";
    CHECK(http_parse_request(get, 16, 0, &req) == HTTP_PARSE_PARTIAL);
    CHECK(http_parse_request(get, 22, 16, &req) == HTTP_PARSE_ERROR);
    CHECK(http_parse_request("", 0, 0, &req) == HTTP_PARSE_PARTIAL);
}

static void absolute_uri_options_and_query(void)
{
    CHECK(parse("GET http://example.org:8000/live?a=1&b=2 HTTP/1.1\r\n\r\n") > 0);
    CHECK(span_is(req.path, req.path_len, "/live"));
    CHECK(span_is(req.query, req.query_len, "a=1&b=2"));
    CHECK(span_is(req.uri, req.uri_len, "http://example.org:8000/live?a=1&b=2"));
    CHECK(parse("GET HTTP://host HTTP/1.1\r\n\r\n") > 0);
    CHECK(span_is(req.path, req.path_len, "/") && req.query == NULL);
    CHECK(parse("GET http:///x HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET ftp://h/x HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);

    CHECK(parse("OPTIONS * HTTP/1.1\r\n\r\n") > 0);
    CHECK(req.method == HTTP_METHOD_OPTIONS && span_is(req.path, req.path_len, "*"));
    CHECK(parse("GET * HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);

    CHECK(parse("GET /admin/metadata?mount=/x&mode=updinfo&song=a+b HTTP/1.0\r\n\r\n") > 0);
    CHECK(span_is(req.path, req.path_len, "/admin/metadata"));
    CHECK(span_is(req.query, req.query_len, "mount=/x&mode=updinfo&song=a+b"));
    CHECK(parse("GET /x? HTTP/1.0\r\n\r\n") > 0);
    CHECK(req.query != NULL && req.query_len == 0 && span_is(req.path, req.path_len, "/x"));
    CHECK(parse("GET x HTTP/1.0\r\n\r\n") == HTTP_PARSE_ERROR);
}

static void malformed_request_lines(void)
{
    CHECK(parse("garbage\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse(" GET / HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);   /* empty method */
    CHECK(parse("GET HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);      /* missing URI */
    CHECK(parse("GET /\r\n\r\n") == HTTP_PARSE_ERROR);             /* HTTP/0.9 */
    CHECK(parse("GET / HTTP/1.1 \r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP1.1\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("G(T / HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET /a\tb HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET /a\rb HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET /\x7f HTTP/1.1\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("\x16\x03\x01\x02\x00") == HTTP_PARSE_ERROR); /* TLS hello, no LF yet */
    CHECK(parse("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n") > 0);    /* raw UTF-8 is tolerated */
}

static void bad_versions(void)
{
    CHECK(parse("GET / HTTP/2.0\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
    CHECK(parse("GET / FOO/1.0\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
    CHECK(parse("GET / HTTP/0.9\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
    CHECK(parse("GET / http/1.1\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
    CHECK(parse("GET / HTTP/1.10\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
    CHECK(parse("GET / ICE/2.0\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
}

static void control_chars_nul_and_obs_fold(void)
{
    const char nul[] = "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n";
    CHECK(http_parse_request(nul, sizeof(nul) - 1, 0, &req) == HTTP_PARSE_ERROR);
    const char nul_partial[] = "GET /\0";
    CHECK(http_parse_request(nul_partial, sizeof(nul_partial) - 1, 0, &req) == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX: a\rz\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX: a\tz\r\n\r\n") > 0 && header_is("X", "a\tz"));
    CHECK(parse("GET / HTTP/1.1\r\nX: \xe2\x82\xac\r\n\r\n") > 0); /* obs-text */
    CHECK(parse("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\n Host: a\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nBad Name: a\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\n: a\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nNoColon\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX(: a\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse("GET / HTTP/1.1\r\nX: a\r\n\r\r\r\n\r\n") == HTTP_PARSE_ERROR);
    /* a bad header line is refused before the head is complete */
    CHECK(parse("GET / HTTP/1.1\r\nX: a\x01\r\nMore: ") == HTTP_PARSE_ERROR);
}

/* The value and URI checks look at eight bytes at a time: a refused byte is found at every
 * offset of a long value or URI, beside any neighbour, and tabs and obs-text pass anywhere. */
static void control_bytes_at_every_offset(void)
{
    static const unsigned char refused[] = {0x01, 0x08, 0x0b, 0x1f, 0x7f};
    static const unsigned char fill[] = {'a', 0x20, 0x7e, 0x80, 0xff};
    char line[128];
    for (size_t f = 0; f < sizeof(fill); f++) {
        for (size_t at = 0; at < 40; at++) {
            for (size_t r = 0; r < sizeof(refused); r++) {
                char value[41];
                memset(value, fill[f] == 0x20 ? 'b' : fill[f], 40);
                value[0] = 'v'; /* a value starts after the spaces */
                value[at] = (char)refused[r];
                value[40] = '\0';
                snprintf(line, sizeof(line), "GET / HTTP/1.1\r\nX: %s\r\n\r\n", value);
                CHECK(parse(line) == HTTP_PARSE_ERROR);
                memset(value, 'u', 40);
                value[at] = (char)refused[r];
                snprintf(line, sizeof(line), "GET /%s HTTP/1.1\r\n\r\n", value);
                CHECK(parse(line) == HTTP_PARSE_ERROR);
            }
            char value[41];
            memset(value, fill[f], 40);
            value[0] = 'v';
            value[39] = 'w';
            value[at] = at && at < 39 ? '\t' : value[at]; /* trailing tabs are trimmed */
            value[40] = '\0';
            snprintf(line, sizeof(line), "GET / HTTP/1.1\r\nX: %s\r\n\r\n", value);
            CHECK(parse(line) > 0 && header_is("X", value));
        }
    }
}

static char *repeat_headers(size_t lines, int finish)
{
    size_t cap = 32 + lines * 16;
    char *s = malloc(cap), *o = s;
    o += sprintf(o, "GET / HTTP/1.1\r\n");
    for (size_t i = 0; i < lines; i++)
        o += sprintf(o, "X-%zu: v\r\n", i);
    if (finish)
        o += sprintf(o, "\r\n");
    return s;
}

static void header_count_limit(void)
{
    char *s = repeat_headers(HTTP_MAX_HEADERS, 1);
    CHECK(parse(s) == (int)strlen(s) && req.num_headers == HTTP_MAX_HEADERS);
    free(s);
    s = repeat_headers(HTTP_MAX_HEADERS + 1, 1);
    CHECK(parse(s) == HTTP_PARSE_TOO_MANY_HEADERS);
    free(s);
    s = repeat_headers(1000, 0); /* partial head, refused early */
    CHECK(parse(s) == HTTP_PARSE_TOO_MANY_HEADERS);
    free(s);
    s = repeat_headers(HTTP_MAX_HEADERS, 0);
    CHECK(parse(s) == HTTP_PARSE_PARTIAL);
    free(s);
}

static void head_size_limit(void)
{
    size_t big = 100 * 1024;
    char *s = malloc(big + 1);
    memcpy(s, "GET / HTTP/1.1\r\nX-Big: ", 23);
    memset(s + 23, 'a', big - 23);
    s[big] = '\0';
    CHECK(parse(s) == HTTP_PARSE_TOO_LARGE);
    CHECK(http_parse_request(s, HTTP_MAX_HEAD_BYTES, 0, &req) == HTTP_PARSE_PARTIAL);
    CHECK(http_parse_request(s, HTTP_MAX_HEAD_BYTES + 1, HTTP_MAX_HEAD_BYTES, &req) ==
          HTTP_PARSE_TOO_LARGE);
    /* a head ending exactly at the limit is fine */
    memcpy(s + HTTP_MAX_HEAD_BYTES - 4, "\r\n\r\n", 4);
    CHECK(http_parse_request(s, big, 0, &req) == HTTP_MAX_HEAD_BYTES);
    s[HTTP_MAX_HEAD_BYTES - 4] = 'a';
    memcpy(s + HTTP_MAX_HEAD_BYTES - 3, "\r\n\r\n", 4);
    CHECK(http_parse_request(s, big, 0, &req) == HTTP_PARSE_TOO_LARGE);
    free(s);
}

static void uri_length_limit(void)
{
    size_t n = HTTP_MAX_URI + 64;
    char *s = malloc(n + 32);
    memcpy(s, "GET /", 5);
    memset(s + 5, 'u', HTTP_MAX_URI);
    strcpy(s + 4 + HTTP_MAX_URI, " HTTP/1.1\r\n\r\n");
    CHECK(parse(s) > 0 && req.uri_len == HTTP_MAX_URI);
    memset(s + 5, 'u', HTTP_MAX_URI);
    strcpy(s + 5 + HTTP_MAX_URI, " HTTP/1.1\r\n\r\n");
    CHECK(parse(s) == HTTP_PARSE_URI_TOO_LONG);
    s[5 + HTTP_MAX_URI] = '\0'; /* still on the request line */
    CHECK(parse(s) == HTTP_PARSE_URI_TOO_LONG);
    free(s);
}

static void basic_auth(void)
{
    char *u, *p;
    CHECK(parse("GET / HTTP/1.0\r\nAuthorization: Basic c291cmNlOmhhY2ttZQ==\r\n\r\n") > 0);
    CHECK(http_parse_basic_auth(&req, &u, &p) == 0);
    CHECK_STR(u, "source");
    CHECK_STR(p, "hackme");
    free(u);
    free(p);
    /* "user:pa:ss" -> password keeps its colons; scheme is case-insensitive */
    CHECK(parse("GET / HTTP/1.0\r\nAuthorization: basic  dXNlcjpwYTpzcw==\r\n\r\n") > 0);
    CHECK(http_parse_basic_auth(&req, &u, &p) == 0);
    CHECK_STR(u, "user");
    CHECK_STR(p, "pa:ss");
    free(u);
    free(p);
    CHECK(parse("GET / HTTP/1.0\r\nAuthorization: Basic OnB3\r\n\r\n") > 0); /* ":pw" */
    CHECK(http_parse_basic_auth(&req, &u, &p) == 0);
    CHECK_STR(u, "");
    CHECK_STR(p, "pw");
    free(u);
    free(p);

    const char *bad[] = {
        "GET / HTTP/1.0\r\n\r\n",
        "GET / HTTP/1.0\r\nAuthorization: Digest abc\r\n\r\n",
        "GET / HTTP/1.0\r\nAuthorization: Basic\r\n\r\n",
        "GET / HTTP/1.0\r\nAuthorization: Basicc291cmNlOmhhY2ttZQ==\r\n\r\n",
        "GET / HTTP/1.0\r\nAuthorization: Basic c291cmNl\r\n\r\n",         /* no colon */
        "GET / HTTP/1.0\r\nAuthorization: Basic c291cmNlOmhhY2ttZQ\r\n\r\n", /* no padding */
        "GET / HTTP/1.0\r\nAuthorization: Basic !!!!\r\n\r\n",
        "GET / HTTP/1.0\r\nAuthorization: Basic c29 1cmNl\r\n\r\n",
        "GET / HTTP/1.0\r\nAuthorization: Basic YQBiOmM=\r\n\r\n", /* "a\0b:c" */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        u = p = (char *)1;
        CHECK(parse(bad[i]) > 0);
        CHECK(http_parse_basic_auth(&req, &u, &p) == -1 && u == NULL && p == NULL);
    }

    char *head = malloc(4096), *o = head;
    o += sprintf(o, "GET / HTTP/1.0\r\nAuthorization: Basic ");
    for (int i = 0; i < 1400 / 4; i++) /* "aaa" x 350 = 1050 decoded bytes */
        o += sprintf(o, "YWFh");
    sprintf(o, "OnA=\r\n\r\n");
    CHECK(parse(head) > 0);
    CHECK(http_parse_basic_auth(&req, &u, &p) == -1);
    free(head);

    /* 1024 decoded bytes are accepted, 1025 are not */
    for (size_t n = 1024; n <= 1025; n++) {
        unsigned char creds[1025];
        memset(creds, 'a', n);
        creds[0] = ':';
        char *b64 = str_base64_encode(creds, n);
        char *line = malloc(strlen(b64) + 64);
        sprintf(line, "GET / HTTP/1.0\r\nAuthorization: Basic %s\r\n\r\n", b64);
        CHECK(parse(line) > 0);
        int rc = http_parse_basic_auth(&req, &u, &p);
        CHECK(n == 1024 ? rc == 0 && strlen(p) == 1023 : rc == -1);
        if (rc == 0) {
            free(u);
            free(p);
        }
        free(line);
        free(b64);
    }
}

static void content_length_must_be_one_plain_number(void)
{
    CHECK(parse("GET / HTTP/1.0\r\n\r\n") > 0 && req.content_length == -1);
    CHECK(parse("PUT /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n") > 0 && req.content_length == 0);
    CHECK(parse("PUT /a HTTP/1.1\r\nContent-Length:  42 \r\n\r\n") > 0 &&
          req.content_length == 42);
    CHECK(parse("PUT /a HTTP/1.1\r\nContent-Length: 9223372036854775807\r\n\r\n") > 0 &&
          req.content_length == 9223372036854775807LL);
    CHECK(parse("PUT /a HTTP/1.1\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n") > 0 &&
          req.content_length == 5);
    const char *bad[] = {
        "Content-Length: -1", "Content-Length: +5", "Content-Length: abc",
        "Content-Length: 1 2", "Content-Length: 5,5", "Content-Length: 0x10",
        "Content-Length: ", "Content-Length: 9223372036854775808",
        "Content-Length: 99999999999999999999999", "Content-Length: 5\r\nContent-Length: 6",
        "Content-Length: 5\r\nContent-Length: 05x", "CONTENT-LENGTH: 1e3",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char head[256];
        snprintf(head, sizeof(head), "PUT /live HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", bad[i]);
        CHECK(parse(head) == HTTP_PARSE_ERROR);
    }
    /* a partial head is not judged before it is complete */
    CHECK(parse("PUT /a HTTP/1.1\r\nContent-Length: -1\r\n") == HTTP_PARSE_PARTIAL);
}

static int with_transfer_encoding(const char *method, const char *lines)
{
    char head[256];
    snprintf(head, sizeof(head), "%s /live HTTP/1.1\r\nHost: x\r\n%s\r\n\r\n", method, lines);
    return parse(head);
}

static void transfer_encoding_is_chunked_once_or_refused(void)
{
    const char *ok[] = {
        "Transfer-Encoding: chunked", "transfer-encoding: CHUNKED", "Transfer-Encoding:  chunked\t",
        "Transfer-Encoding: , chunked ,", /* empty list elements count for nothing */
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        CHECK(with_transfer_encoding("PUT", ok[i]) > 0);
        CHECK(with_transfer_encoding("GET", ok[i]) > 0); /* what the server does with it: not ours */
    }
    /* a coding we do not know: 501 (RFC 9112 section 6.1) */
    const char *unknown[] = {
        "Transfer-Encoding: gzip", "Transfer-Encoding: identity", "Transfer-Encoding: gzip, chunked",
        "Transfer-Encoding: identity, chunked", "Transfer-Encoding: chunked, gzip",
        "Transfer-Encoding: chunked;q=1", "Transfer-Encoding: chunk", "Transfer-Encoding: chunkeds",
        "Transfer-Encoding: @#!", "Transfer-Encoding: chunked\r\nTransfer-Encoding: x-garbage",
        "Transfer-Encoding: chunked chunked",
    };
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        CHECK(with_transfer_encoding("PUT", unknown[i]) == HTTP_PARSE_NOT_IMPLEMENTED);
    CHECK(with_transfer_encoding("GET", "Transfer-Encoding: gzip") == HTTP_PARSE_NOT_IMPLEMENTED);
    CHECK(with_transfer_encoding("SOURCE", "Transfer-Encoding: br") == HTTP_PARSE_NOT_IMPLEMENTED);
    /* chunked twice, or a list of nothing: malformed framing, 400 */
    CHECK(with_transfer_encoding("PUT", "Transfer-Encoding: chunked, chunked") == HTTP_PARSE_ERROR);
    CHECK(with_transfer_encoding("PUT", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked") ==
          HTTP_PARSE_ERROR);
    CHECK(with_transfer_encoding("PUT", "Transfer-Encoding:") == HTTP_PARSE_ERROR);
    CHECK(with_transfer_encoding("PUT", "Transfer-Encoding: , ") == HTTP_PARSE_ERROR);
    /* judged once the head is complete */
    CHECK(parse("PUT /a HTTP/1.1\r\nTransfer-Encoding: gzip\r\n") == HTTP_PARSE_PARTIAL);
}

static void status_texts(void)
{
    const int codes[] = {100, 101, 200, 204, 206, 301, 302, 304, 400, 401, 403, 404, 405,
                         408, 411, 413, 414, 416, 431, 500, 501, 503, 505};
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
        const char *t = http_status_text(codes[i]);
        CHECK(t && *t && strcmp(t, "Unknown") != 0);
    }
    CHECK_STR(http_status_text(200), "OK");
    CHECK_STR(http_status_text(404), "File Not Found");
    CHECK_STR(http_status_text(431), "Request Header Fields Too Large");
    CHECK_STR(http_status_text(999), "Unknown");
}

static http_response_t resp;

static int parse_resp(const char *s)
{
    return http_parse_response(s, strlen(s), &resp);
}

static void response_heads_of_icecast_and_shoutcast(void)
{
    const char *ice = "HTTP/1.0 200 OK\r\nContent-Type: audio/mpeg\r\nicy-metaint: 16000\r\n"
                      "icy-name:  Radio \r\n\r\nAUDIO";
    CHECK(parse_resp(ice) == (int)strlen(ice) - 5);
    CHECK(resp.status == 200 && !resp.is_icy && resp.version_minor == 0);
    CHECK(span_is(resp.reason, resp.reason_len, "OK"));
    CHECK(resp.num_headers == 3);
    const http_header_t *h = http_response_header(&resp, "ICY-METAINT");
    CHECK(h && span_is(h->value, h->value_len, "16000"));
    h = http_response_header(&resp, "icy-name");
    CHECK(h && span_is(h->value, h->value_len, "Radio"));
    CHECK(http_response_header(&resp, "location") == NULL);

    const char *sc = "ICY 200 OK\r\nicy-notice1:<BR>This stream requires Winamp<BR>\r\n"
                     "content-type:audio/aacp\r\n\r\n";
    CHECK(parse_resp(sc) == (int)strlen(sc));
    CHECK(resp.status == 200 && resp.is_icy);

    const char *redir = "HTTP/1.1 302 Found\nLocation: http://10.0.0.2:8000/live\n\n";
    CHECK(parse_resp(redir) == (int)strlen(redir));
    CHECK(resp.status == 302 && resp.version_minor == 1);
    h = http_response_header(&resp, "location");
    CHECK(h && span_is(h->value, h->value_len, "http://10.0.0.2:8000/live"));

    CHECK(parse_resp("HTTP/1.0 404\r\n\r\n") > 0 && resp.status == 404 && resp.reason_len == 0);
}

static void response_heads_partial_and_malformed(void)
{
    const char *full = "HTTP/1.0 200 OK\r\nContent-Type: audio/ogg\r\n\r\n";
    for (size_t n = 0; n < strlen(full); n++)
        CHECK(http_parse_response(full, n, &resp) == HTTP_PARSE_PARTIAL);
    CHECK(parse_resp("HTTP/2.0 200 OK\r\n\r\n") == HTTP_PARSE_BAD_VERSION);
    CHECK(parse_resp("HTTP/1.0 2000 OK\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse_resp("HTTP/1.0 20 OK\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse_resp("HTTP/1.0 099 OK\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse_resp("SOURCE 200 OK\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse_resp("HTTP/1.0 200 O\x01K\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse_resp("HTTP/1.0 200 OK\r\nBad Header\r\n\r\n") == HTTP_PARSE_ERROR);
    CHECK(parse_resp("HTTP/1.0 200 OK\r\n folded: x\r\n\r\n") == HTTP_PARSE_ERROR);
    char big[HTTP_MAX_HEAD_BYTES + 64];
    memset(big, 'a', sizeof(big));
    memcpy(big, "HTTP/1.0 200 OK\r\nX: ", 21);
    CHECK(http_parse_response(big, sizeof(big), &resp) == HTTP_PARSE_TOO_LARGE);
    char many[HTTP_MAX_HEADERS * 8 + 64];
    size_t o = (size_t)sprintf(many, "HTTP/1.0 200 OK\r\n");
    for (int i = 0; i <= HTTP_MAX_HEADERS; i++)
        o += (size_t)sprintf(many + o, "X: %d\r\n", i % 10);
    sprintf(many + o, "\r\n");
    CHECK(parse_resp(many) == HTTP_PARSE_TOO_MANY_HEADERS);
}

int main(void)
{
    RUN(simple_get_is_parsed_in_place);
    RUN(body_bytes_after_head_are_not_parsed);
    RUN(http10_and_ice_source);
    RUN(put_with_expect_continue);
    RUN(methods_are_case_sensitive);
    RUN(odd_spacing_is_trimmed);
    RUN(bare_lf_line_ends_are_refused);
    RUN(source_logins_keep_bare_lf_and_cr_cr_lf);
    RUN(split_delivery_byte_by_byte);
    RUN(absolute_uri_options_and_query);
    RUN(malformed_request_lines);
    RUN(bad_versions);
    RUN(control_chars_nul_and_obs_fold);
    RUN(control_bytes_at_every_offset);
    RUN(header_count_limit);
    RUN(head_size_limit);
    RUN(uri_length_limit);
    RUN(basic_auth);
    RUN(content_length_must_be_one_plain_number);
    RUN(transfer_encoding_is_chunked_once_or_refused);
    RUN(status_texts);
    RUN(response_heads_of_icecast_and_shoutcast);
    RUN(response_heads_partial_and_malformed);
    return testlib_done();
}
