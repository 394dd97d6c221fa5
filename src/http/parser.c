/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * parser: HTTP/1.x and ICE/1.x request heads, parsed in place with hard limits.
 *
 * A call first looks for the blank line that ends the head, scanning only the bytes that
 * arrived since the previous call. A complete head is then parsed line by line into pointers
 * into the caller's buffer. While the head is still partial, the complete lines are checked
 * whenever a new line has arrived, so garbage, oversized heads and header floods are refused
 * before the client sends the rest. Owns no memory except what the *_dup/auth helpers return.
 */
#include "http/parser.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"

/* Base64 of the longest credentials accepted (HTTP_AUTH_MAX decoded bytes). */
#define HTTP_AUTH_MAX 1024
#define HTTP_AUTH_B64_MAX ((HTTP_AUTH_MAX + 2) / 3 * 4)
/* Longer method tokens are refused (no real method comes close). */
#define HTTP_METHOD_MAX 32

/* RFC 7230 tchar: "!#$%&'*+-.^_`|~" DIGIT ALPHA */
static const unsigned char tchar_table[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1, ['&'] = 1, ['\''] = 1, ['*'] = 1, ['+'] = 1,
    ['-'] = 1, ['.'] = 1, ['^'] = 1, ['_'] = 1, ['`'] = 1, ['|'] = 1, ['~'] = 1,
    ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
};

static int is_tchar(unsigned char c)
{
    return tchar_table[c];
}

/* Bytes that may not appear in a request line or header (HTAB is allowed in values only). */
static int is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* Offset of the first byte in p[0..n) that may not appear in a request line (any control
 * byte) or, with tab_ok, in a header value (a control byte other than HTAB); n if none. Eight
 * bytes at a time: a word is looked at byte by byte only when it holds a byte below 0x20 or a
 * DEL (a value's tab, or the byte refused). */
static size_t ctl_span(const char *p, size_t n, int tab_ok)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x, del;
        memcpy(&x, p + i, 8);
        del = x ^ (0x7f * ones);
        /* a byte below 0x20, or a zero byte of x ^ DEL: the lowest such byte always sets
         * its high bit here (no borrow reaches it), so none is missed; a word flagged by a
         * borrow is only looked at again byte by byte */
        if ((((x - 0x20 * ones) & ~x) | ((del - ones) & ~del)) & highs)
            break;
    }
    for (; i < n; i++)
        if (is_ctl((unsigned char)p[i]) && !(tab_ok && p[i] == '\t'))
            return i;
    return n;
}

/* Length of a line's content once its terminator's CRs are removed: "\n", "\r\n", "\r\r\n". */
static size_t strip_cr(const char *line, size_t n)
{
    for (int k = 0; k < 2 && n > 0 && line[n - 1] == '\r'; k++)
        n--;
    return n;
}

/* Leading empty lines before the request line are ignored (RFC 7230 section 3.5). */
static size_t skip_leading_blank(const char *buf, size_t len)
{
    size_t i = 0;
    while (i < len && (buf[i] == '\r' || buf[i] == '\n'))
        i++;
    return i;
}

/* Offset just past the LF of the blank line ending the head, or 0. Looks at LFs at or after
 * `from` (earlier ones were already rejected) and never beyond HTTP_MAX_HEAD_BYTES. */
static size_t find_head_end(const char *buf, size_t len, size_t from)
{
    size_t limit = len < HTTP_MAX_HEAD_BYTES ? len : HTTP_MAX_HEAD_BYTES;

    while (from < limit) {
        const char *lf = memchr(buf + from, '\n', limit - from);
        if (!lf)
            return 0;
        size_t i = (size_t)(lf - buf);
        /* i >= skip + 1, and buf[skip] is the request line's first byte, so any LF found
         * looking back is a real line end. */
        if (buf[i - 1] == '\n' || (buf[i - 1] == '\r' && buf[i - 2] == '\n') ||
            (buf[i - 1] == '\r' && buf[i - 2] == '\r' && buf[i - 3] == '\n'))
            return i + 1;
        from = i + 1;
    }
    return 0;
}

static http_method_t method_from(const char *m, size_t n)
{
    static const struct {
        const char *name;
        http_method_t method;
    } methods[] = {
        {"GET", HTTP_METHOD_GET},         {"HEAD", HTTP_METHOD_HEAD},
        {"PUT", HTTP_METHOD_PUT},         {"POST", HTTP_METHOD_POST},
        {"SOURCE", HTTP_METHOD_SOURCE},   {"OPTIONS", HTTP_METHOD_OPTIONS},
        {"STATS", HTTP_METHOD_STATS},
    };
    for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
        if (strlen(methods[i].name) == n && memcmp(methods[i].name, m, n) == 0)
            return methods[i].method;
    }
    return HTTP_METHOD_OTHER;
}

/* Up to 3 decimal digits at p[*i..n); -1 if none. */
static int parse_digits(const char *p, size_t n, size_t *i)
{
    int v = 0;
    size_t start = *i;

    while (*i < n && *i - start < 3 && p[*i] >= '0' && p[*i] <= '9')
        v = v * 10 + (p[(*i)++] - '0');
    return *i == start ? -1 : v;
}

/* "NAME/d.d": malformed -> ERROR; well formed but not HTTP/1.x or ICE/1.x -> BAD_VERSION. */
static int parse_protocol(const char *p, size_t n, http_request_t *req)
{
    size_t i = 0, name_len;
    int major, minor;

    while (i < n && ((p[i] >= 'A' && p[i] <= 'Z') || (p[i] >= 'a' && p[i] <= 'z')))
        i++;
    name_len = i;
    if (name_len == 0 || i == n || p[i++] != '/')
        return HTTP_PARSE_ERROR;
    major = parse_digits(p, n, &i);
    if (major < 0 || i == n || p[i++] != '.')
        return HTTP_PARSE_ERROR;
    size_t minor_start = i;
    minor = parse_digits(p, n, &i);
    if (minor < 0 || i != n)
        return HTTP_PARSE_ERROR;
    req->is_ice = name_len == 3 && memcmp(p, "ICE", 3) == 0;
    if (!req->is_ice && !(name_len == 4 && memcmp(p, "HTTP", 4) == 0))
        return HTTP_PARSE_BAD_VERSION;
    if (major != 1 || i - minor_start != 1)
        return HTTP_PARSE_BAD_VERSION;
    req->version_major = major;
    req->version_minor = minor;
    return 0;
}

/* Splits the target into path and query. An absolute URL's path starts after the
 * authority; "http://host" alone has the path "/". */
static int parse_target(http_request_t *req)
{
    const char *t = req->uri, *q;
    size_t n = req->uri_len, skip = 0;

    if (n == 1 && t[0] == '*') {
        if (req->method != HTTP_METHOD_OPTIONS)
            return HTTP_PARSE_ERROR;
        req->path = t;
        req->path_len = 1;
        return 0;
    }
    if (t[0] != '/') {
        if (n > 7 && str_ieq(t, 7, "http://"))
            skip = 7;
        else if (n > 8 && str_ieq(t, 8, "https://"))
            skip = 8;
        else
            return HTTP_PARSE_ERROR;
        size_t a = skip;
        while (a < n && t[a] != '/' && t[a] != '?')
            a++;
        if (a == skip)
            return HTTP_PARSE_ERROR; /* empty authority */
        t += a;
        n -= a;
    }
    q = memchr(t, '?', n);
    req->path = t;
    req->path_len = q ? (size_t)(q - t) : n;
    if (q) {
        req->query = q + 1;
        req->query_len = n - req->path_len - 1;
    }
    if (req->path_len == 0) {
        req->path = "/";
        req->path_len = 1;
    }
    return 0;
}

/* "METHOD SP target SP protocol". With `partial`, the line may be cut anywhere: what is
 * there is checked (characters, URI length) and running out of bytes is PARTIAL. */
static int parse_request_line(const char *line, size_t n, int partial, http_request_t *req)
{
    size_t i = 0, t;

    while (i < n && i <= HTTP_METHOD_MAX && is_tchar((unsigned char)line[i]))
        i++;
    if (i == n && partial && i <= HTTP_METHOD_MAX)
        return HTTP_PARSE_PARTIAL;
    if (i == 0 || i > HTTP_METHOD_MAX || i == n || line[i] != ' ')
        return HTTP_PARSE_ERROR; /* empty method, or a byte that is neither tchar nor SP */
    req->method_str = line;
    req->method_len = i;
    req->method = method_from(line, i);
    while (i < n && line[i] == ' ')
        i++;
    t = i;
    const char *sp = memchr(line + t, ' ', n - t);
    i = sp ? (size_t)(sp - line) : n;
    if (ctl_span(line + t, i - t, 0) != i - t)
        return HTTP_PARSE_ERROR;
    if (i - t > HTTP_MAX_URI)
        return HTTP_PARSE_URI_TOO_LONG;
    if (i == n && partial)
        return HTTP_PARSE_PARTIAL;
    if (i == t || i == n)
        return HTTP_PARSE_ERROR; /* missing URI or missing protocol */
    req->uri = line + t;
    req->uri_len = i - t;
    while (i < n && line[i] == ' ')
        i++;
    if (partial)
        return HTTP_PARSE_PARTIAL;
    int rc = parse_protocol(line + i, n - i, req);
    return rc ? rc : parse_target(req);
}

static int parse_header_line(const char *line, size_t n, http_header_t *h)
{
    size_t i = 0;

    if (line[0] == ' ' || line[0] == '\t')
        return HTTP_PARSE_ERROR; /* obsolete line folding */
    while (i < n && is_tchar((unsigned char)line[i]))
        i++;
    if (i == 0 || i == n || line[i] != ':')
        return HTTP_PARSE_ERROR;
    h->name = line;
    h->name_len = i++;
    while (i < n && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (ctl_span(line + i, n - i, 1) != n - i)
        return HTTP_PARSE_ERROR;
    while (n > i && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    h->value = line + i;
    h->value_len = n - i;
    return 0;
}

/* Checks every Content-Length header and keeps its value in req->content_length: only digits,
 * no overflow, and repeated headers must agree. 0 or HTTP_PARSE_ERROR. */
static int parse_content_length(http_request_t *req)
{
    req->content_length = -1;
    for (size_t i = 0; i < req->num_headers; i++) {
        const http_header_t *h = &req->headers[i];
        if (!str_ieq(h->name, h->name_len, "content-length"))
            continue;
        if (h->value_len == 0)
            return HTTP_PARSE_ERROR;
        long long v = 0;
        for (size_t k = 0; k < h->value_len; k++) {
            unsigned char d = (unsigned char)h->value[k];
            if (d < '0' || d > '9' || v > (LLONG_MAX - (d - '0')) / 10)
                return HTTP_PARSE_ERROR;
            v = v * 10 + (d - '0');
        }
        if (req->content_length >= 0 && req->content_length != v)
            return HTTP_PARSE_ERROR;
        req->content_length = v;
    }
    return 0;
}

/* The codings of every Transfer-Encoding header: none, or "chunked" once (RFC 9112 section
 * 6.1). 0, HTTP_PARSE_NOT_IMPLEMENTED for any other coding (gzip, identity, a parameter,
 * garbage: a body we cannot frame), or HTTP_PARSE_ERROR for chunked twice or an empty list. */
static int parse_transfer_coding(const http_request_t *req)
{
    int seen = 0, chunked = 0;
    for (size_t i = 0; i < req->num_headers; i++) {
        const http_header_t *h = &req->headers[i];
        if (!str_ieq(h->name, h->name_len, "transfer-encoding"))
            continue;
        seen = 1;
        const char *p = h->value, *end = h->value + h->value_len;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *e = comma ? comma : end;
            while (p < e && (*p == ' ' || *p == '\t'))
                p++;
            const char *last = e;
            while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
                last--;
            if (last > p) { /* empty list elements are allowed and mean nothing */
                if (!str_ieq(p, (size_t)(last - p), "chunked"))
                    return HTTP_PARSE_NOT_IMPLEMENTED;
                chunked++;
            }
            p = comma ? comma + 1 : end;
        }
    }
    return seen && chunked != 1 ? HTTP_PARSE_ERROR : 0;
}

/* 1 if the line ending at lf (its LF, never the buffer's first byte) must be refused: it
 * ends in a bare LF (RFC 9112 section 2.2), in a request other than SOURCE. A SOURCE login
 * keeps them: DarkIce writes its head with bare LFs, and Icecast takes it. */
static int bare_lf_refused(const char *lf, const http_request_t *req)
{
    return lf[-1] != '\r' && req->method != HTTP_METHOD_SOURCE;
}

/* Parses the lines in buf[0..len) up to the blank line and returns the head length; a partial
 * head has its complete lines checked, its request line as far as it goes, and gives PARTIAL. */
static int parse_lines(const char *buf, size_t len, int partial, http_request_t *req)
{
    size_t pos = skip_leading_blank(buf, len);
    const char *lf = memchr(buf + pos, '\n', len - pos);
    int rc;

    if (!lf) /* only a partial head can lack the request line's LF */
        return parse_request_line(buf + pos, strip_cr(buf + pos, len - pos), 1, req);
    rc = parse_request_line(buf + pos, strip_cr(buf + pos, (size_t)(lf - buf) - pos), 0, req);
    if (rc)
        return rc;
    if (bare_lf_refused(lf, req))
        return HTTP_PARSE_ERROR;
    for (pos = (size_t)(lf - buf) + 1; pos < len; pos = (size_t)(lf - buf) + 1) {
        lf = memchr(buf + pos, '\n', len - pos);
        if (!lf)
            break;
        if (bare_lf_refused(lf, req))
            return HTTP_PARSE_ERROR;
        size_t n = strip_cr(buf + pos, (size_t)(lf - buf) - pos);
        if (n == 0) { /* the blank line: head length */
            if (parse_content_length(req))
                return HTTP_PARSE_ERROR;
            rc = parse_transfer_coding(req);
            return rc ? rc : (int)(lf - buf) + 1;
        }
        if (req->num_headers == HTTP_MAX_HEADERS)
            return HTTP_PARSE_TOO_MANY_HEADERS;
        rc = parse_header_line(buf + pos, n, &req->headers[req->num_headers]);
        if (rc)
            return rc;
        req->num_headers++;
    }
    return partial ? HTTP_PARSE_PARTIAL : HTTP_PARSE_ERROR;
}

int http_parse_request(const char *buf, size_t len, size_t prev_len, http_request_t *req)
{
    size_t skip, from, end;

    memset(req, 0, offsetof(http_request_t, headers)); /* num_headers too */
    req->content_length = -1;
    if (prev_len > len)
        prev_len = 0;
    if (len == 0)
        return HTTP_PARSE_PARTIAL;
    skip = skip_leading_blank(buf, len);
    from = prev_len > skip + 1 ? prev_len : skip + 1;
    end = find_head_end(buf, len, from);
    /* Bytes before prev_len were checked by the previous call; bytes after the head are body. */
    if (memchr(buf + prev_len, '\0', (end ? end : len) - prev_len))
        return HTTP_PARSE_ERROR;
    if (end)
        return parse_lines(buf, end, 0, req);
    if (len > HTTP_MAX_HEAD_BYTES)
        return HTTP_PARSE_TOO_LARGE;
    /* Re-check only when a line was completed or the request line is still growing. */
    if (prev_len == 0 || memchr(buf + prev_len, '\n', len - prev_len) ||
        !memchr(buf + skip, '\n', len - skip))
        return parse_lines(buf, len, 1, req);
    return HTTP_PARSE_PARTIAL;
}

/* ---- response heads (relays) ---- */

/* "HTTP/1.x SSS reason" or "ICY SSS reason"; the reason may be empty. */
static int parse_status_line(const char *line, size_t n, http_response_t *resp)
{
    size_t i;

    if (n >= 4 && memcmp(line, "ICY ", 4) == 0) {
        resp->is_icy = 1;
        i = 4;
    } else if (n >= 9 && memcmp(line, "HTTP/1.", 7) == 0 && line[7] >= '0' && line[7] <= '9' &&
               line[8] == ' ') {
        resp->version_minor = line[7] - '0';
        i = 9;
    } else if (n >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        return HTTP_PARSE_BAD_VERSION;
    } else {
        return HTTP_PARSE_ERROR;
    }
    while (i < n && line[i] == ' ')
        i++;
    if (n - i < 3 || line[i] < '1' || line[i] > '9' || line[i + 1] < '0' || line[i + 1] > '9' ||
        line[i + 2] < '0' || line[i + 2] > '9')
        return HTTP_PARSE_ERROR;
    resp->status = (line[i] - '0') * 100 + (line[i + 1] - '0') * 10 + (line[i + 2] - '0');
    i += 3;
    if (i < n && line[i] != ' ')
        return HTTP_PARSE_ERROR;
    while (i < n && line[i] == ' ')
        i++;
    for (size_t k = i; k < n; k++)
        if (is_ctl((unsigned char)line[k]) && line[k] != '\t')
            return HTTP_PARSE_ERROR;
    resp->reason = line + i;
    resp->reason_len = n - i;
    return 0;
}

int http_parse_response(const char *buf, size_t len, http_response_t *resp)
{
    memset(resp, 0, offsetof(http_response_t, headers));
    resp->num_headers = 0;
    size_t skip = skip_leading_blank(buf, len);
    if (len <= skip)
        return len > HTTP_MAX_HEAD_BYTES ? HTTP_PARSE_TOO_LARGE : HTTP_PARSE_PARTIAL;
    size_t end = find_head_end(buf, len, skip + 1);
    if (!end)
        return len > HTTP_MAX_HEAD_BYTES ? HTTP_PARSE_TOO_LARGE : HTTP_PARSE_PARTIAL;
    if (memchr(buf, '\0', end))
        return HTTP_PARSE_ERROR;
    const char *lf = memchr(buf + skip, '\n', end - skip);
    int rc = parse_status_line(buf + skip, strip_cr(buf + skip, (size_t)(lf - buf) - skip), resp);
    if (rc)
        return rc;
    for (size_t pos = (size_t)(lf - buf) + 1; pos < end; pos = (size_t)(lf - buf) + 1) {
        lf = memchr(buf + pos, '\n', end - pos);
        size_t n = strip_cr(buf + pos, (size_t)(lf - buf) - pos);
        if (n == 0)
            return (int)end;
        if (resp->num_headers == HTTP_MAX_HEADERS)
            return HTTP_PARSE_TOO_MANY_HEADERS;
        rc = parse_header_line(buf + pos, n, &resp->headers[resp->num_headers]);
        if (rc)
            return rc;
        resp->num_headers++;
    }
    return HTTP_PARSE_ERROR; /* not reached: the head ends with its blank line */
}

const http_header_t *http_response_header(const http_response_t *resp, const char *name)
{
    for (size_t i = 0; i < resp->num_headers; i++) {
        if (str_ieq(resp->headers[i].name, resp->headers[i].name_len, name))
            return &resp->headers[i];
    }
    return NULL;
}

const http_header_t *http_find_header(const http_request_t *req, const char *name)
{
    /* a request is asked for ten headers or so: names of another length are passed over
     * without a look at their letters */
    size_t len = name ? strlen(name) : 0;
    for (size_t i = 0; len && i < req->num_headers; i++) {
        if (req->headers[i].name_len == len && str_ieq(req->headers[i].name, len, name))
            return &req->headers[i];
    }
    return NULL;
}

char *http_header_dup(const http_request_t *req, const char *name)
{
    const http_header_t *h = http_find_header(req, name);
    return h ? str_ndup(h->value, h->value_len) : NULL;
}

int http_parse_basic_auth(const http_request_t *req, char **user, char **pass)
{
    const http_header_t *h = http_find_header(req, "Authorization");
    unsigned char creds[HTTP_AUTH_B64_MAX / 4 * 3 + 1];
    const char *colon;
    size_t i = 5;
    long n;

    *user = *pass = NULL;
    if (!h || h->value_len <= 6 || !str_ieq(h->value, 5, "Basic") || h->value[5] != ' ')
        return -1;
    while (i < h->value_len && h->value[i] == ' ')
        i++;
    if (h->value_len - i > HTTP_AUTH_B64_MAX)
        return -1;
    n = str_base64_decode(h->value + i, h->value_len - i, creds, sizeof(creds));
    if (n < 0 || n > HTTP_AUTH_MAX || memchr(creds, '\0', (size_t)n))
        return -1;
    colon = memchr(creds, ':', (size_t)n);
    if (!colon)
        return -1;
    *user = str_ndup((const char *)creds, (size_t)(colon - (const char *)creds));
    *pass = str_ndup(colon + 1, (size_t)n - (size_t)(colon - (const char *)creds) - 1);
    if (!*user || !*pass)
        goto fail;
    return 0;
fail:
    free(*user);
    free(*pass);
    *user = *pass = NULL;
    return -1;
}

const char *http_status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 101: return "Switching Protocols";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 308: return "Permanent Redirect";
    case 400: return "Bad Request";
    case 401: return "Authentication Required";
    case 403: return "Forbidden";
    case 404: return "File Not Found"; /* Icecast's wording */
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Request Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 426: return "Upgrade Required";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: break;
    }
    if (status >= 100 && status < 600) {
        static const char *const classes[] = {"Informational", "Success", "Redirection",
                                              "Client Error", "Server Error"};
        return classes[status / 100 - 1];
    }
    return "Unknown";
}
