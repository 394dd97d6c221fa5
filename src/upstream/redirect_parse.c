/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect_parse: reading a sibling's room document (see redirect.h), the text another server
 * answered: untrusted; and the arithmetic of a load (its share of the limits, the room left),
 * on counts clamped so that nothing can overflow. Pure, apart from redirect.c's poller and
 * table, so that the fuzzer and the unit test reach it.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "upstream/redirect.h"

/* Counts beyond this are taken as this: a ratio in parts per million then still fits a long. */
#define COUNT_CAP 1000000000000L

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

static long clamp_count(long v)
{
    return v < 0 ? 0 : v > COUNT_CAP ? COUNT_CAP : v;
}

/* A limit as read: below 0 none (-1), else capped. */
static long clamp_limit(long v)
{
    return v < 0 ? -1 : v > COUNT_CAP ? COUNT_CAP : v;
}

int redirect_parse_load(const char *text, size_t len, const char *mount, redirect_load_t *out)
{
    size_t pos = 0, n;
    const char *line;
    int header = 0, clients = 0, listed = 0;
    char name[1024];
    *out = (redirect_load_t){.listeners_max = -1, .mount_max = -1, .serving = 1};
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
        } else if (strncmp(l, "state ", 6) == 0) {
            out->serving = strcmp(l + 6, "serving") == 0; /* any other state takes nobody */
        } else if (sscanf(l, "clients %ld %ld", &a, &b) == 2) {
            out->clients = clamp_count(a);
            out->clients_max = clamp_count(b);
            clients = 1;
        } else if (sscanf(l, "listeners %ld %ld", &a, &b) == 2) {
            out->listeners = clamp_count(a);
            out->listeners_max = clamp_limit(b);
        } else if (!listed && sscanf(l, "mount %1023s %ld %ld", name, &a, &b) == 3 &&
                   strcmp(name, mount) == 0) {
            out->mount = clamp_count(a);
            out->mount_max = clamp_limit(b);
            listed = 1;
        }
    }
    return clients && listed ? 0 : -1;
}

/* n of max in parts per million; no limit (max < 0): 0; a limit of 0 is full already. */
static long share_ppm(long n, long max)
{
    n = clamp_count(n);
    if (max < 0)
        return 0;
    if (max == 0)
        return 1000000 + n;
    return n * 1000000 / clamp_count(max);
}

long redirect_load_ppm(const redirect_load_t *l)
{
    long s = share_ppm(l->clients, l->clients_max);
    long t = share_ppm(l->listeners, l->listeners_max);
    long u = share_ppm(l->mount, l->mount_max);
    s = t > s ? t : s;
    return u > s ? u : s;
}

/* The room between a count and its limit (LONG_MAX: no limit). */
static long room_left(long used, long max)
{
    if (max < 0)
        return LONG_MAX;
    used = clamp_count(used);
    max = clamp_count(max);
    return max > used ? max - used : 0;
}

long redirect_load_room(const redirect_load_t *l)
{
    long r = room_left(l->clients, l->clients_max);
    long s = room_left(l->listeners, l->listeners_max);
    long t = room_left(l->mount, l->mount_max);
    r = s < r ? s : r;
    return t < r ? t : r;
}

long redirect_parse_room(const char *text, size_t len, const char *mount)
{
    redirect_load_t l;
    if (redirect_parse_load(text, len, mount, &l) < 0)
        return -1;
    return redirect_load_room(&l);
}
