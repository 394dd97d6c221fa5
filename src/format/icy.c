/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * icy: parsing of inbound ICY metadata text (see icy.h).
 * Source text is untrusted: every scan is bounded by the given length, quotes inside titles
 * are tolerated, and a missing terminator is not an error.
 */
#include "format/icy.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* 1 if m[0..len) starts with optional blanks then an identifier followed by "='". */
static int icy_key_starts(const char *m, size_t len)
{
    size_t i = 0;
    while (i < len && (m[i] == ' ' || m[i] == '\t' || m[i] == '\r' || m[i] == '\n'))
        i++;
    size_t k = i;
    while (i < len && (isalnum((unsigned char)m[i]) || m[i] == '_' || m[i] == '-'))
        i++;
    return i > k && len - i >= 2 && m[i] == '=' && m[i + 1] == '\'';
}

/* Finds "key='" (case-insensitive) and returns its value's start and length. */
static int icy_find_value(const char *m, size_t len, const char *key, size_t *start,
                          size_t *vlen)
{
    size_t klen = strlen(key);
    for (size_t i = 0; i + klen + 2 <= len; i++) {
        if (strncasecmp(m + i, key, klen) != 0 || m[i + klen] != '=' || m[i + klen + 1] != '\'')
            continue;
        if (i > 0 && (isalnum((unsigned char)m[i - 1]) || m[i - 1] == '_'))
            continue; /* "XStreamTitle" is another key */
        size_t v = i + klen + 2;
        for (size_t j = v; j < len; j++) {
            if (m[j] != '\'')
                continue;
            int ends = j + 1 == len; /* a closing quote without ';' at the very end */
            if (!ends && m[j + 1] == ';')
                ends = j + 2 >= len || icy_key_starts(m + j + 2, len - j - 2);
            if (ends) {
                *start = v;
                *vlen = j - v;
                return 1;
            }
        }
        *start = v; /* no terminator: everything left */
        *vlen = len - v;
        return 1;
    }
    return 0;
}

static char *icy_copy_value(const char *m, size_t len, const char *key, int *err)
{
    size_t start, vlen;
    if (!icy_find_value(m, len, key, &start, &vlen))
        return NULL;
    char *v = malloc(vlen + 1);
    if (!v) {
        *err = 1;
        return NULL;
    }
    memcpy(v, m + start, vlen);
    v[vlen] = '\0';
    return v;
}

int icy_parse(const char *meta, size_t len, char **title, char **url)
{
    const char *nul = memchr(meta, '\0', len);
    if (nul)
        len = (size_t)(nul - meta);
    while (len > 0 && (meta[len - 1] == ' ' || meta[len - 1] == '\r' || meta[len - 1] == '\n'))
        len--;
    int err = 0;
    *title = icy_copy_value(meta, len, "StreamTitle", &err);
    *url = icy_copy_value(meta, len, "StreamUrl", &err);
    if (err) {
        free(*title);
        free(*url);
        *title = *url = NULL;
        return -ENOMEM;
    }
    return 0;
}

