/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_http: libFuzzer driver for the request-head parser, header lookups and Basic auth.
 *
 * Checks that results point inside the input and respect the limits, that feeding the same
 * bytes in two pieces (with prev_len) gives the same answer as one piece, that a head other
 * than SOURCE has CRLF line ends only, and that the input
 * used as an Authorization value never breaks the credential decoder. The same input is also
 * read as an upstream server's response head (relays).
 */
// fuzz-sources: src/http/parser.c src/core/str.c
// fuzz-args: -max_len=20000
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "http/parser.h"

#include "fuzz.h"

static int inside(const char *p, size_t n, const char *buf, size_t len)
{
    return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

static void check_header(const http_header_t *h, const char *buf, size_t head_len)
{
    REQUIRE(h->name_len > 0 && inside(h->name, h->name_len, buf, head_len));
    REQUIRE(inside(h->value, h->value_len, buf, head_len));
    for (size_t i = 0; i < h->name_len; i++)
        REQUIRE((unsigned char)h->name[i] > 0x20 && h->name[i] != ':' && h->name[i] != 0x7f);
    for (size_t i = 0; i < h->value_len; i++) {
        unsigned char c = (unsigned char)h->value[i];
        REQUIRE(c == '\t' || (c >= 0x20 && c != 0x7f));
    }
    if (h->value_len) {
        REQUIRE(h->value[0] != ' ' && h->value[0] != '\t');
        REQUIRE(h->value[h->value_len - 1] != ' ' && h->value[h->value_len - 1] != '\t');
    }
}

static void check_lookups(const http_request_t *req)
{
    char name[64];

    for (size_t i = 0; i < req->num_headers; i++) {
        const http_header_t *h = &req->headers[i];
        if (h->name_len >= sizeof(name))
            continue;
        memcpy(name, h->name, h->name_len);
        name[h->name_len] = '\0';
        const http_header_t *found = http_find_header(req, name);
        REQUIRE(found && found <= h && str_ieq(found->name, found->name_len, name));
        char *dup = http_header_dup(req, name);
        REQUIRE(dup && strlen(dup) == found->value_len);
        free(dup);
    }
    char *user, *pass;
    if (http_parse_basic_auth(req, &user, &pass) == 0) {
        REQUIRE(user && pass && !strchr(user, ':'));
        REQUIRE(strlen(user) + strlen(pass) < 1024);
        free(user);
        free(pass);
    } else {
        REQUIRE(!user && !pass);
    }
}

/* The Transfer-Encoding headers of a head that got through say "chunked" once, with only
 * blanks and commas around it. */
static void check_transfer_coding(const http_request_t *req)
{
    char said[8];
    size_t n = 0;
    int seen = 0;
    for (size_t i = 0; i < req->num_headers; i++) {
        const http_header_t *h = &req->headers[i];
        if (!str_ieq(h->name, h->name_len, "transfer-encoding"))
            continue;
        seen = 1;
        for (size_t k = 0; k < h->value_len; k++) {
            char c = h->value[k];
            if (c == ' ' || c == '\t' || c == ',')
                continue;
            REQUIRE(n < 7);
            said[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
        }
    }
    REQUIRE(!seen || (n == 7 && memcmp(said, "chunked", 7) == 0));
}

static void check_complete(const http_request_t *req, const char *buf, size_t len, int rc)
{
    size_t head = (size_t)rc;

    REQUIRE(head <= len && head <= HTTP_MAX_HEAD_BYTES && req->num_headers <= HTTP_MAX_HEADERS);
    REQUIRE(buf[head - 1] == '\n' && !memchr(buf, '\0', head));
    REQUIRE(req->method_len > 0 && inside(req->method_str, req->method_len, buf, head));
    REQUIRE(req->uri_len > 0 && req->uri_len <= HTTP_MAX_URI);
    REQUIRE(inside(req->uri, req->uri_len, buf, head));
    REQUIRE(req->path_len > 0);
    REQUIRE(inside(req->path, req->path_len, buf, head) || (req->path_len == 1 && *req->path == '/'));
    REQUIRE(req->path[0] == '/' || (req->path[0] == '*' && req->method == HTTP_METHOD_OPTIONS));
    REQUIRE(!req->query || inside(req->query, req->query_len, buf, head));
    REQUIRE(req->version_major == 1 && req->version_minor >= 0 && req->version_minor <= 9);
    for (size_t i = 0; i < req->num_headers; i++)
        check_header(&req->headers[i], buf, head);
    check_lookups(req);
    /* a head other than SOURCE ends its lines with CRLF only (blank lines before it aside) */
    if (req->method != HTTP_METHOD_SOURCE)
        for (size_t i = (size_t)(req->method_str - buf); i < head; i++)
            REQUIRE(buf[i] != '\n' || buf[i - 1] == '\r');
    check_transfer_coding(req);
}

/* The same bytes in two deliveries must give the one-delivery answer. */
static void check_split(const char *buf, size_t len, size_t cut, int whole)
{
    static http_request_t req;

    if (cut == 0 || cut >= len)
        return;
    int first = http_parse_request(buf, cut, 0, &req);
    if (first != HTTP_PARSE_PARTIAL) {
        /* an error in a prefix is an error of the whole; a complete prefix is the same head */
        REQUIRE(first < 0 ? whole < 0 : first == whole);
        return;
    }
    REQUIRE(http_parse_request(buf, len, cut, &req) == whole);
}

static void fuzz_auth_value(const uint8_t *data, size_t size)
{
    static const char pre[] = "GET / HTTP/1.1\r\nAuthorization: Basic ";
    static http_request_t req;
    char *buf = malloc(sizeof(pre) + size + 4);
    char *user, *pass;

    if (!buf)
        return;
    memcpy(buf, pre, sizeof(pre) - 1);
    memcpy(buf + sizeof(pre) - 1, data, size);
    memcpy(buf + sizeof(pre) - 1 + size, "\r\n\r\n", 4);
    if (http_parse_request(buf, sizeof(pre) - 1 + size + 4, 0, &req) > 0 &&
        http_parse_basic_auth(&req, &user, &pass) == 0) {
        REQUIRE(user && pass);
        free(user);
        free(pass);
    }
    free(buf);
}

static void fuzz_response(const char *buf, size_t size)
{
    static http_response_t resp;

    int rc = http_parse_response(buf, size, &resp);
    REQUIRE(rc >= HTTP_PARSE_BAD_VERSION);
    REQUIRE(size <= HTTP_MAX_HEAD_BYTES || rc != HTTP_PARSE_PARTIAL);
    if (rc <= 0)
        return;
    size_t head = (size_t)rc;
    REQUIRE(head <= size && head <= HTTP_MAX_HEAD_BYTES && resp.num_headers <= HTTP_MAX_HEADERS);
    REQUIRE(buf[head - 1] == '\n' && !memchr(buf, '\0', head));
    REQUIRE(resp.status >= 100 && resp.status <= 999);
    REQUIRE(inside(resp.reason, resp.reason_len, buf, head));
    for (size_t i = 0; i < resp.num_headers; i++) {
        check_header(&resp.headers[i], buf, head);
        REQUIRE(http_response_header(&resp, "x") == NULL || resp.num_headers > 0);
    }
    /* a complete head parses the same with more bytes after it */
    if (size > 1 && head < size)
        REQUIRE(http_parse_response(buf, head, &resp) == rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static http_request_t req;
    const char *buf = (const char *)data;

    int rc = http_parse_request(buf, size, 0, &req);
    REQUIRE(rc >= HTTP_PARSE_LOWEST);
    REQUIRE(size <= HTTP_MAX_HEAD_BYTES || rc != HTTP_PARSE_PARTIAL);
    if (rc > 0)
        check_complete(&req, buf, size, rc);
    REQUIRE(http_status_text(rc > 0 ? 200 : 400) != NULL);

    if (size > 1) {
        check_split(buf, size, (size_t)data[0] * size / 256, rc);
        check_split(buf, size, size / 2, rc);
        check_split(buf, size, size - 1, rc);
    }
    if (size <= 2048)
        fuzz_auth_value(data, size);
    fuzz_response(buf, size);
    return 0;
}
