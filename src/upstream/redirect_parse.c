/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect_parse: reading a sibling's room document (see redirect.h), the text another server
 * answered: untrusted. Pure, apart from redirect.c's poller and table, so that the fuzzer
 * reaches it.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "upstream/redirect.h"

/* Next line of text from *pos as [start, end); 0 at the end. */
static int next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n)
{
    if (*pos >= len)
        return 0;
    const char *s = text + *pos;
    const char *eol = memchr(s, '\n', len - *pos);
    *n = eol ? (size_t)(eol - s) : len - *pos;
    *pos += *n + 1;
    *line = s;
    return 1;
}

/* The room between a count and its limit; counts from the text are clamped so that no
 * subtraction can overflow. */
static long room_left(long used, long max)
{
    if (used < 0)
        used = 0;
    return max > used ? max - used : 0;
}

long redirect_parse_room(const char *text, size_t len, const char *mount)
{
    size_t pos = 0, n;
    const char *line;
    long clients_room = -1, mount_room = -1;
    int header = 0;
    char name[1024];
    while (next_line(text, len, &pos, &line, &n)) {
        char l[1200];
        if (n >= sizeof(l))
            continue;
        memcpy(l, line, n);
        l[n] = '\0';
        long a, b;
        if (!header) {
            if (strcmp(l, "rimecast-room 1") != 0)
                return -1;
            header = 1;
        } else if (sscanf(l, "clients %ld %ld", &a, &b) == 2) {
            clients_room = room_left(a, b);
        } else if (sscanf(l, "mount %1023s %ld %ld", name, &a, &b) == 3 &&
                   strcmp(name, mount) == 0) {
            mount_room = b < 0 ? LONG_MAX : room_left(a, b);
        }
    }
    if (clients_room < 0 || mount_room < 0)
        return -1;
    return clients_room < mount_room ? clients_room : mount_room;
}
