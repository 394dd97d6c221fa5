/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request: parsing an admin command path and a client id (see request.h). No allocation.
 */
#include "admin/request.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *suffix;
    int view;
} view_suffixes[] = {
    {".xsl", ADMIN_VIEW_XSL},
    {".json", ADMIN_VIEW_JSON},
    {".txt", ADMIN_VIEW_TXT},
    {".csv", ADMIN_VIEW_CSV},
    {".xml", ADMIN_VIEW_XML},
};

int admin_parse_command(const char *path, char *name, size_t cap, int *view)
{
    static const char prefix[] = "/admin/";
    *view = ADMIN_VIEW_XML;
    if (cap == 0)
        return -1;
    name[0] = '\0';
    if (strcmp(path, "/admin.cgi") == 0) {
        snprintf(name, cap, "admin.cgi");
        return 0;
    }
    if (strcmp(path, "/admin") == 0 || strcmp(path, prefix) == 0) {
        snprintf(name, cap, "stats");
        *view = ADMIN_VIEW_XSL;
        return 0;
    }
    if (strncmp(path, prefix, sizeof(prefix) - 1) != 0)
        return -1;
    const char *cmd = path + sizeof(prefix) - 1;
    size_t len = strlen(cmd);
    const char *slash = strchr(cmd, '/'); /* one level of sub-commands: audience/top */
    if (len >= cap || (slash && (slash == cmd || strchr(slash + 1, '/'))))
        return -1;
    if (slash && (cmd[0] == '.' || slash[1] == '.' || slash[1] == '\0'))
        return -1; /* a sub-command is two words: no "..", ".", or empty level */
    for (size_t i = 0; i < sizeof(view_suffixes) / sizeof(view_suffixes[0]); i++) {
        size_t sl = strlen(view_suffixes[i].suffix);
        if (len > sl && strcmp(cmd + len - sl, view_suffixes[i].suffix) == 0) {
            len -= sl;
            *view = view_suffixes[i].view;
            break;
        }
    }
    memcpy(name, cmd, len);
    name[len] = '\0';
    return 0;
}

int admin_parse_id(const char *s, unsigned long long *id)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE || !end || *end != '\0')
        return -1;
    *id = v;
    return 0;
}

/* Splits "host[:port]" or "[v6]:port" (len bytes) into the host (without brackets) and its
 * port, def_port when none is given. 0, or -1 if it is not of that form. */
static int split_host_port(const char *s, size_t len, const char **host, size_t *hlen,
                           unsigned *port, unsigned def_port)
{
    const char *end = s + len, *colon = NULL;
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return -1;
        *host = s + 1;
        *hlen = (size_t)(close - s - 1);
        if (close + 1 < end && close[1] != ':')
            return -1;
        colon = close + 1 < end ? close + 1 : NULL;
    } else {
        colon = memchr(s, ':', len);
        *host = s;
        *hlen = colon ? (size_t)(colon - s) : len;
    }
    if (*hlen == 0)
        return -1;
    for (size_t i = 0; i < *hlen; i++)
        if ((*host)[i] == '/' || (*host)[i] == '@' || (*host)[i] == ' ')
            return -1;
    *port = def_port;
    if (colon) {
        unsigned v = 0;
        const char *p = colon + 1;
        if (p == end)
            return -1;
        for (; p < end; p++) {
            if (*p < '0' || *p > '9' || (v = v * 10 + (unsigned)(*p - '0')) > 65535)
                return -1;
        }
        *port = v;
    }
    return 0;
}

/* 1 if origin ("scheme://host[:port]", as browsers send it) names the scheme, host and port
 * of a request that came with this Host header on a listener of that scheme. */
static int same_origin(const char *origin, const char *host, int tls)
{
    const char *scheme = tls ? "https://" : "http://";
    size_t sl = strlen(scheme);
    unsigned def = tls ? 443 : 80, oport, hport;
    const char *oh, *hh;
    size_t ohl, hhl;
    if (!host || strncasecmp(origin, scheme, sl) != 0)
        return 0;
    if (split_host_port(origin + sl, strlen(origin + sl), &oh, &ohl, &oport, def) < 0 ||
        split_host_port(host, strlen(host), &hh, &hhl, &hport, def) < 0)
        return 0;
    return ohl == hhl && strncasecmp(oh, hh, ohl) == 0 && oport == hport;
}

int admin_cross_origin(const char *fetch_site, const char *origin, const char *host, int tls)
{
    if (fetch_site && strcasecmp(fetch_site, "same-origin") != 0 &&
        strcasecmp(fetch_site, "none") != 0)
        return 1;
    return origin && !same_origin(origin, host, tls); /* "null" is no origin of ours */
}
