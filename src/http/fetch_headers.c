/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fetch_headers: reading the header lines of an answer the fetch thread collected (see
 * fetch.h): a header's value, or whether one exact "name: value" line is there. Pure
 * functions over the text, with no libcurl and no thread, so that the fuzzer reaches them.
 * The text is an auth server's, a directory's or a sibling's: untrusted.
 */
#include <string.h>
#include <strings.h>

#include "http/fetch.h"

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Calls fn on each header line of r (name and value trimmed); stops when fn returns 1. */
static int each_header(const fetch_result_t *r,
                       int (*fn)(const char *name, size_t nlen, const char *value, size_t vlen,
                                 void *arg),
                       void *arg)
{
    const char *p = r->headers, *end = r->headers + r->headers_len;
    while (p && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (colon) {
            const char *v = colon + 1, *ve = le;
            while (v < ve && is_blank(*v))
                v++;
            while (ve > v && (is_blank(ve[-1]) || ve[-1] == '\r'))
                ve--;
            const char *ne = colon;
            while (ne > p && is_blank(ne[-1]))
                ne--;
            if (fn(p, (size_t)(ne - p), v, (size_t)(ve - v), arg))
                return 1;
        }
        p = eol ? eol + 1 : NULL;
    }
    return 0;
}

typedef struct {
    const char *name;
    size_t nlen;
    const char *value;
    size_t vlen;
    int found;
} header_query_t;

static int match_value(const char *name, size_t nlen, const char *value, size_t vlen, void *arg)
{
    header_query_t *q = arg;
    if (nlen == q->nlen && strncasecmp(name, q->name, nlen) == 0) {
        q->value = value;
        q->vlen = vlen;
        q->found = 1;
    }
    return 0;
}

const char *fetch_header(const fetch_result_t *r, const char *name, char *buf, size_t len)
{
    header_query_t q = {name, strlen(name), NULL, 0, 0};
    each_header(r, match_value, &q);
    if (!q.found || len == 0)
        return NULL;
    size_t n = q.vlen < len - 1 ? q.vlen : len - 1;
    memcpy(buf, q.value, n);
    buf[n] = '\0';
    return buf;
}

static int match_line(const char *name, size_t nlen, const char *value, size_t vlen, void *arg)
{
    header_query_t *q = arg;
    return q->found = nlen == q->nlen && strncasecmp(name, q->name, nlen) == 0 &&
                      vlen == q->vlen && memcmp(value, q->value, vlen) == 0;
}

int fetch_has_header_line(const fetch_result_t *r, const char *line)
{
    const char *colon = strchr(line, ':');
    if (!colon)
        return 0;
    header_query_t q = {line, (size_t)(colon - line), colon + 1, 0, 0};
    while (q.nlen > 0 && is_blank(line[q.nlen - 1]))
        q.nlen--;
    while (is_blank(*q.value))
        q.value++;
    q.vlen = strlen(q.value);
    while (q.vlen > 0 && (is_blank(q.value[q.vlen - 1]) || q.value[q.vlen - 1] == '\r'))
        q.vlen--;
    return each_header(r, match_line, &q);
}
