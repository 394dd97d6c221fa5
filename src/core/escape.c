/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * escape: one walker over the input and one rule function per output language (see escape.h).
 * The walker decodes characters (UTF-8, or bytes for log lines), replaces invalid UTF-8 with
 * U+FFFD, asks the language's rule what each character becomes, and stops before an escape
 * that would not fit. The rules hold no state: everything they need is the character and the
 * input byte before it.
 */
#include "core/escape.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

/* Longest output of one rule, and the worst output per input byte of the allocating escapers
 * ("&quot;", "\u0001": six bytes for one input byte). */
#define ESCAPE_RULE_MAX 8
#define ESCAPE_EXPANSION 6

/* What a rule returns to copy the input character unchanged. */
#define ESCAPE_COPY ((size_t)-1)

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* A rule writes the output for code point cp (the byte itself when the language is bytewise)
 * into out and returns its length (0 drops the character), or ESCAPE_COPY. prev is the input
 * byte before the character, 0 at the start. */
typedef size_t (*escape_rule_fn)(uint32_t cp, unsigned char prev, char *out);

typedef struct escape_lang {
    int bytewise;        /* 1: every byte is a character; 0: decode UTF-8 */
    escape_rule_fn rule;
    escape_rule_fn invalid; /* a byte of invalid UTF-8 goes through this rule; NULL: U+FFFD */
} escape_lang_t;

static size_t put(char *out, const char *lit)
{
    size_t n = strlen(lit);
    memcpy(out, lit, n);
    return n;
}

/* Escapes s[0..len) into out: at most outlen-1 bytes and a NUL (outlen > 0). Returns the
 * number of bytes written before the NUL. */
static size_t escape_walk(const escape_lang_t *lang, const char *s, size_t len, char *out,
                          size_t outlen)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;

    while (i < len) {
        char tmp[ESCAPE_RULE_MAX];
        const char *emit = tmp;
        uint32_t cp = p[i];
        size_t in = lang->bytewise ? 1 : utf8_decode(s + i, len - i, &cp);
        size_t n;

        if (in == 0 && lang->invalid) {
            n = lang->invalid(p[i], 0, tmp), in = 1;
        } else if (in == 0) {
            emit = replacement, n = sizeof(replacement) - 1, in = 1;
        } else {
            n = lang->rule(cp, i ? p[i - 1] : 0, tmp);
            if (n == ESCAPE_COPY)
                emit = s + i, n = in;
        }
        if (n > outlen - 1 - o)
            break;
        memcpy(out + o, emit, n);
        o += n;
        i += in;
    }
    out[o] = '\0';
    return o;
}

static size_t xml_rule(uint32_t cp, unsigned char prev, char *out)
{
    (void)prev;
    switch (cp) {
    case '&': return put(out, "&amp;");
    case '<': return put(out, "&lt;");
    case '>': return put(out, "&gt;");
    case '"': return put(out, "&quot;");
    case '\'': return put(out, "&#39;");
    case '\t': case '\n': case '\r': return ESCAPE_COPY;
    case 0xfffe: case 0xffff: return put(out, replacement);
    default: return cp < 0x20 ? 0 : ESCAPE_COPY; /* not XML 1.0 characters: dropped */
    }
}

/* U+2028/U+2029 are valid JSON but end a line in JavaScript; they are escaped too. */
static size_t json_rule(uint32_t cp, unsigned char prev, char *out)
{
    switch (cp) {
    case '"': return put(out, "\\\"");
    case '\\': return put(out, "\\\\");
    case '\b': return put(out, "\\b");
    case '\f': return put(out, "\\f");
    case '\n': return put(out, "\\n");
    case '\r': return put(out, "\\r");
    case '\t': return put(out, "\\t");
    case '/': return prev == '<' ? put(out, "\\/") : ESCAPE_COPY;
    default:
        if (cp >= 0x20 && cp != 0x7f && cp != 0x2028 && cp != 0x2029)
            return ESCAPE_COPY;
        out[0] = '\\', out[1] = 'u';
        for (int k = 0; k < 4; k++)
            out[2 + k] = "0123456789abcdef"[(cp >> (12 - 4 * k)) & 0xf];
        return 6;
    }
}

static size_t log_rule(uint32_t c, unsigned char prev, char *out)
{
    (void)prev;
    if (c == '\\' || c == '"') {
        out[0] = '\\', out[1] = (char)c;
        return 2;
    }
    if (c >= 0x20 && c < 0x7f)
        return ESCAPE_COPY;
    out[0] = '\\', out[1] = 'x';
    out[2] = "0123456789ABCDEF"[c >> 4], out[3] = "0123456789ABCDEF"[c & 0xf];
    return 4;
}

/* The playlist log: readable titles. Characters from U+00A0 up and '"' are kept; C1 controls
 * (U+0080-U+009F) are escaped byte by byte like every other control. */
static size_t log_utf8_rule(uint32_t c, unsigned char prev, char *out)
{
    if (c == '"' || c >= 0xa0)
        return ESCAPE_COPY;
    if (c < 0x80)
        return log_rule(c, prev, out);
    size_t n = log_rule(0xc2, prev, out);
    return n + log_rule(c, prev, out + n);
}

static const escape_lang_t lang_xml = {0, xml_rule, NULL};
static const escape_lang_t lang_json = {0, json_rule, NULL};
static const escape_lang_t lang_log = {1, log_rule, NULL};
static const escape_lang_t lang_log_utf8 = {0, log_utf8_rule, log_rule};

/* The allocating escapers size for the worst case, so the walker never truncates. */
static char *escape_alloc(const escape_lang_t *lang, const char *s, size_t len)
{
    char *out;

    if (len > (SIZE_MAX - 1) / ESCAPE_EXPANSION)
        return NULL;
    out = malloc(len * ESCAPE_EXPANSION + 1);
    if (out)
        escape_walk(lang, s, len, out, len * ESCAPE_EXPANSION + 1);
    return out;
}

char *escape_xml(const char *s, size_t len)
{
    return escape_alloc(&lang_xml, s, len);
}

char *escape_json(const char *s, size_t len)
{
    return escape_alloc(&lang_json, s, len);
}

int escape_json_buf(buf_t *b, const char *s, size_t len, int quoted)
{
    /* too long to escape asks for SIZE_MAX, which fails like ENOMEM */
    size_t room = len > (SIZE_MAX - 3) / ESCAPE_EXPANSION ? SIZE_MAX : len * ESCAPE_EXPANSION + 2;

    if (buf_reserve(b, room) < 0)
        return b->error;
    if (quoted)
        b->data[b->len++] = '"';
    b->len += escape_walk(&lang_json, s, len, b->data + b->len, b->cap - b->len);
    if (quoted)
        buf_append_char(b, '"');
    return b->error;
}

char *escape_log(char *out, size_t outlen, const char *s, size_t len)
{
    if (!out || outlen == 0)
        return out;
    escape_walk(&lang_log, s, len, out, outlen);
    return out;
}

char *escape_log_utf8(char *out, size_t outlen, const char *s, size_t len)
{
    if (!out || outlen == 0)
        return out;
    escape_walk(&lang_log_utf8, s, len, out, outlen);
    return out;
}

int escape_tsv_buf(buf_t *b, const char *s)
{
    if (!s)
        return buf_append_str(b, "\\N");
    for (; *s; s++) {
        const char *esc = *s == '\\' ? "\\\\" : *s == '\t' ? "\\t" : *s == '\n' ? "\\n"
                        : *s == '\r' ? "\\r" : NULL;
        if ((esc ? buf_append_str(b, esc) : buf_append_char(b, *s)) < 0)
            return -ENOMEM;
    }
    return 0;
}
