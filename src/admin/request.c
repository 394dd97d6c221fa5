/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request: parsing an admin command path and a client id (see request.h). No allocation.
 */
#include "admin/request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/admin.h"

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
    if (len >= cap || strchr(cmd, '/'))
        return -1;
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
