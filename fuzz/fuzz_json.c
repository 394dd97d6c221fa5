/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_json: the XML-to-JSON views (admin/json.c) on any document libxml2 accepts from the
 * input: element and attribute names, text with every code point, repeated and interleaved
 * elements, deep nesting. Both renderings must be one valid JSON value (RFC 8259, checked
 * by a strict recursive-descent reader below) followed by a newline.
 */
// fuzz-sources: src/admin/json.c src/core/escape.c src/core/buf.c src/core/utf8.c src/core/str.c
// fuzz-pkgs: libxml-2.0
// fuzz-args: -max_len=8192
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>

#include "admin/json.h"

#include "fuzz.h"

static void ignore_xml_error(void *ctx, const xmlError *err)
{
    (void)ctx;
    (void)err;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    xmlInitParser();
    xmlSetStructuredErrorFunc(NULL, (xmlStructuredErrorFunc)ignore_xml_error);
    return 0;
}

/* ---- a strict JSON reader: returns the position after one value, or NULL ---- */

static const char *json_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static const char *json_str(const char *p, const char *end)
{
    if (p >= end || *p++ != '"')
        return NULL;
    while (p < end && *p != '"') {
        unsigned char c = (unsigned char)*p++;
        if (c < 0x20)
            return NULL;
        if (c != '\\')
            continue;
        if (p >= end)
            return NULL;
        c = (unsigned char)*p++;
        if (c == 'u') {
            if (end - p < 4 || !is_hex(p[0]) || !is_hex(p[1]) || !is_hex(p[2]) || !is_hex(p[3]))
                return NULL;
            p += 4;
        } else if (!strchr("\"\\/bfnrt", c)) {
            return NULL;
        }
    }
    return p < end ? p + 1 : NULL;
}

static const char *json_num(const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return NULL;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static const char *json_val(const char *p, const char *end, int depth);

static const char *json_members(const char *p, const char *end, int depth, char close,
                                int keyed)
{
    p = json_ws(p + 1, end);
    if (p < end && *p == close)
        return p + 1;
    for (;;) {
        if (keyed) {
            p = json_ws(json_str(p, end), end);
            if (!p || p >= end || *p++ != ':')
                return NULL;
        }
        p = json_val(p, end, depth + 1);
        if (!p || (p = json_ws(p, end)) >= end)
            return NULL;
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
    }
}

static const char *json_val(const char *p, const char *end, int depth)
{
    if (!p || depth > 1000)
        return NULL;
    p = json_ws(p, end);
    if (p >= end)
        return NULL;
    if (*p == '{')
        return json_members(p, end, depth, '}', 1);
    if (*p == '[')
        return json_members(p, end, depth, ']', 0);
    if (*p == '"')
        return json_str(p, end);
    return json_num(p, end);
}

static void check_json(const char *s, size_t len)
{
    REQUIRE(s && len > 0 && s[len - 1] == '\n' && strlen(s) == len);
    REQUIRE(s[0] == '{');
    const char *end = json_val(s, s + len - 1, 0);
    REQUIRE(end == s + len - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    xmlDocPtr doc = xmlReadMemory((const char *)data, (int)size, "fuzz.xml", NULL,
                                  XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!doc)
        return 0;
    size_t len = 0;
    char *j = json_render(doc, &len);
    check_json(j, len);
    free(j);
    j = json_render_status(doc, &len);
    check_json(j, len);
    free(j);
    xmlFreeDoc(doc);
    return 0;
}
