/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_url: the ad server's URL from a template, and the VAST macros (see ads_url.h).
 */
#include "ads/ads_url.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"

/* Appends s percent-encoded: every byte but the RFC 3986 unreserved ones. 0 or -1. */
static int append_encoded(buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        unsigned char c = *p;
        int plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~';
        char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
        if ((plain ? buf_append_char(b, (char)c) : buf_append(b, esc, 3)) < 0)
            return -1;
    }
    return 0;
}

/* The value of placeholder name (len bytes), or NULL when it is none of ours. */
static const char *value_of(const char *name, size_t len, const ads_url_vars_t *v, char *num,
                            size_t cap)
{
#define IS(s) (len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
    if (IS("ip"))
        return v->ip ? v->ip : "";
    if (IS("ua"))
        return v->ua ? v->ua : "";
    if (IS("country"))
        return v->country ? v->country : "";
    if (IS("session"))
        return v->session ? v->session : "";
    if (IS("mount"))
        return v->mount ? v->mount : "";
    if (IS("duration")) {
        snprintf(num, cap, "%u", v->duration);
        return num;
    }
    if (IS("cachebuster")) {
        snprintf(num, cap, "%u", v->cachebuster);
        return num;
    }
    return NULL;
#undef IS
}

static char *take_bounded(buf_t *b)
{
    if (b->len > ADS_URL_MAX) {
        buf_free(b);
        return NULL;
    }
    return buf_take(b, NULL);
}

char *ads_url_expand(const char *tmpl, const ads_url_vars_t *v)
{
    buf_t b = {0};
    for (const char *p = tmpl; *p && b.len <= ADS_URL_MAX;) {
        const char *close = *p == '{' ? strchr(p, '}') : NULL;
        char num[24];
        const char *val = close ? value_of(p + 1, (size_t)(close - p - 1), v, num, sizeof(num))
                                : NULL;
        int rc;
        if (val) {
            rc = append_encoded(&b, val);
            p = close + 1;
        } else {
            rc = buf_append_char(&b, *p++);
        }
        if (rc < 0) {
            buf_free(&b);
            return NULL;
        }
    }
    return take_bounded(&b);
}

char *ads_url_macros(const char *url, int code, uint32_t cachebuster, int64_t now_s)
{
    buf_t b = {0};
    char num[40];
    for (const char *p = url; *p && b.len <= ADS_URL_MAX;) {
        int rc;
        if (code > 0 && strncmp(p, "[ERRORCODE]", 11) == 0) {
            snprintf(num, sizeof(num), "%d", code);
            rc = buf_append_str(&b, num);
            p += 11;
        } else if (strncmp(p, "[CACHEBUSTING]", 14) == 0) {
            snprintf(num, sizeof(num), "%08u", cachebuster % 100000000u);
            rc = buf_append_str(&b, num);
            p += 14;
        } else if (strncmp(p, "[TIMESTAMP]", 11) == 0) {
            time_t t = (time_t)now_s;
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(num, sizeof(num), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
            rc = append_encoded(&b, num);
            p += 11;
        } else {
            rc = buf_append_char(&b, *p++);
        }
        if (rc < 0) {
            buf_free(&b);
            return NULL;
        }
    }
    return take_bounded(&b);
}
