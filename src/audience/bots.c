/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bots: the robots lists (see bots.h): parsing the IAB/ABC format, matching an agent, the
 * built-in list and the station's <bots> file behind a lock that a reload swaps.
 */
#include "audience/bots.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/log.h"
#include "net/server.h"
#include "stream/session.h"

#define BOTS_FILE_MAX (16 << 20) /* a list larger than this is refused */

/* Self-declared robots only: agents that say they are a bot, crawler, spider or monitor,
 * and the monitoring services that check streams. Players, libraries and command-line
 * clients (curl, wget, ffmpeg's Lavf, python-requests) are not in it: people listen with
 * them. "bot" counts when a separator follows it (Googlebot/2.1, bingbot/2.0;, AhrefsBot;),
 * except in CUBOT (a phone maker whose agents carry its name). */
const char bots_builtin_text[] =
    "# pattern|active|exceptions|two-pass|impact|start-of-string\n"
    "bot/|1|cubot|0|2|0\n"
    "bot;|1|cubot|0|2|0\n"
    "bot)|1|cubot|0|2|0\n"
    "bot |1|cubot|0|2|0\n"
    "bot-|1|cubot|0|2|0\n"
    "bot_|1|cubot|0|2|0\n"
    "-bot|1||0|2|0\n"
    "_bot|1||0|2|0\n"
    "robot|1||0|2|0\n"
    "crawler|1||0|2|0\n"
    "spider|1||0|2|0\n"
    "slurp|1||0|2|0\n"
    "facebookexternalhit|1||0|2|0\n"
    "monitor|1||0|2|0\n"
    "uptime-kuma|1||0|2|0\n"
    "pingdom|1||0|2|0\n"
    "statuscake|1||0|2|0\n"
    "site24x7|1||0|2|0\n"
    "nagios|1||0|2|0\n"
    "check_http|1||0|2|0\n"
    "zabbix|1||0|2|0\n"
    "blackbox exporter|1||0|2|0\n";

typedef struct bot_entry {
    char *pattern;             /* lower case */
    char **exceptions;         /* lower case, nexceptions of them */
    size_t nexceptions;
    int start;                 /* the pattern must begin the agent */
} bot_entry_t;

struct bots {
    bot_entry_t *v;
    size_t n, cap;
};

static char *lower_copy(const char *s, size_t len)
{
    char *o = malloc(len + 1);
    if (!o)
        return NULL;
    for (size_t i = 0; i < len; i++)
        o[i] = (char)tolower((unsigned char)s[i]);
    o[len] = '\0';
    return o;
}

static void entry_free(bot_entry_t *e)
{
    free(e->pattern);
    for (size_t i = 0; i < e->nexceptions; i++)
        free(e->exceptions[i]);
    free(e->exceptions);
}

/* The ", "-separated exceptions of field f (len bytes) into e. 0 or -ENOMEM. */
static int parse_exceptions(bot_entry_t *e, const char *f, size_t len)
{
    size_t at = 0;
    while (at < len) {
        size_t end = at;
        while (end < len && f[end] != ',')
            end++;
        size_t a = at, b = end;
        while (a < b && isspace((unsigned char)f[a]))
            a++;
        while (b > a && isspace((unsigned char)f[b - 1]))
            b--;
        if (b > a) {
            char **v = realloc(e->exceptions, (e->nexceptions + 1) * sizeof(*v));
            if (!v)
                return -ENOMEM;
            e->exceptions = v;
            if (!(v[e->nexceptions] = lower_copy(f + a, b - a)))
                return -ENOMEM;
            e->nexceptions++;
        }
        at = end + 1;
    }
    return 0;
}

/* One line (no newline). 1 added, 0 skipped (comment, blank, inactive), -EINVAL malformed,
 * -ENOMEM. */
static int parse_line(bots_t *b, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\r' || isspace((unsigned char)line[len - 1])))
        len--;
    if (!len || line[0] == '#')
        return 0;
    const char *f[7];
    size_t flen[7], n = 0, start = 0;
    for (size_t i = 0; i <= len && n < 7; i++) {
        if (i < len && line[i] != '|')
            continue;
        f[n] = line + start;
        flen[n++] = i - start;
        start = i + 1;
    }
    if (start <= len) /* more fields than the format has */
        return -EINVAL;
    if (flen[0] == 0 || (n > 1 && (flen[1] != 1 || (f[1][0] != '0' && f[1][0] != '1'))) ||
        (n > 5 && flen[5] && (flen[5] != 1 || (f[5][0] != '0' && f[5][0] != '1'))))
        return -EINVAL;
    if (n > 1 && f[1][0] == '0')
        return 0;
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 64;
        bot_entry_t *v = realloc(b->v, ncap * sizeof(*v));
        if (!v)
            return -ENOMEM;
        b->v = v;
        b->cap = ncap;
    }
    bot_entry_t e = {.pattern = lower_copy(f[0], flen[0]),
                     .start = n > 5 && flen[5] == 1 && f[5][0] == '1'};
    if (!e.pattern || (n > 2 && parse_exceptions(&e, f[2], flen[2]) < 0)) {
        entry_free(&e);
        return -ENOMEM;
    }
    b->v[b->n++] = e;
    return 1;
}

bots_t *bots_parse(const char *text, size_t len, size_t *bad)
{
    bots_t *b = calloc(1, sizeof(*b));
    *bad = 0;
    for (size_t at = 0; b && at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - text) : len;
        int rc = parse_line(b, text + at, end - at);
        if (rc == -ENOMEM) {
            bots_free(b);
            return NULL;
        }
        *bad += rc == -EINVAL;
        at = end + 1;
    }
    return b;
}

size_t bots_count(const bots_t *b)
{
    return b ? b->n : 0;
}

/* Whether the lower-case agent a holds the lower-case text t. */
static int holds(const char *a, const char *t)
{
    return strstr(a, t) != NULL;
}

static int match_lower(const bots_t *b, const char *a)
{
    for (size_t i = 0; b && i < b->n; i++) {
        const bot_entry_t *e = &b->v[i];
        if (e->start ? strncmp(a, e->pattern, strlen(e->pattern)) != 0 : !holds(a, e->pattern))
            continue;
        int excepted = 0;
        for (size_t k = 0; k < e->nexceptions && !excepted; k++)
            excepted = holds(a, e->exceptions[k]);
        if (!excepted)
            return 1;
    }
    return 0;
}

int bots_match(const bots_t *b, const char *agent)
{
    if (!b || !agent || !*agent)
        return 0;
    char small[512];
    size_t len = strlen(agent);
    char *a = len < sizeof(small) ? small : malloc(len + 1);
    if (!a)
        return 0;
    for (size_t i = 0; i <= len; i++)
        a[i] = (char)tolower((unsigned char)agent[i]);
    int m = match_lower(b, a);
    if (a != small)
        free(a);
    return m;
}

void bots_free(bots_t *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        entry_free(&b->v[i]);
    free(b->v);
    free(b);
}

static bots_t *builtin;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void parse_builtin(void)
{
    size_t bad;
    builtin = bots_parse(bots_builtin_text, sizeof(bots_builtin_text) - 1, &bad);
}

const bots_t *bots_builtin(void)
{
    pthread_once(&builtin_once, parse_builtin);
    return builtin;
}

/* ---- the station's list ---- */

static pthread_rwlock_t station_lock = PTHREAD_RWLOCK_INITIALIZER;
static bots_t *station;

/* The file's text (malloc'd, *len), or NULL with errno set. */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    rewind(f);
    char *text = size >= 0 && size < BOTS_FILE_MAX ? malloc((size_t)size + 1) : NULL;
    size_t n = text ? fread(text, 1, (size_t)size + 1, f) : 0;
    int err = size < 0 ? EIO : size >= BOTS_FILE_MAX ? EFBIG : !text ? ENOMEM
              : ferror(f) ? EIO : n > (size_t)size ? EAGAIN /* it grew meanwhile */ : 0;
    fclose(f);
    if (err) {
        free(text);
        errno = err;
        return NULL;
    }
    *len = n;
    return text;
}

static void swap_station(bots_t *next)
{
    pthread_rwlock_wrlock(&station_lock);
    bots_t *old = station;
    station = next;
    pthread_rwlock_unlock(&station_lock);
    bots_free(old);
}

void bots_load(void)
{
    const char *path = server_config()->audience_bots;
    bots_builtin();
    session_set_classifier(bots_classify);
    if (!path) {
        swap_station(NULL);
        return;
    }
    size_t len = 0, bad = 0;
    char *text = read_file(path, &len);
    const char *why = text ? "out of memory" : strerror(errno);
    bots_t *b = text ? bots_parse(text, len, &bad) : NULL;
    free(text);
    if (!b) {
        log_error("audience: cannot read the bots list %s: %s; the built-in list alone is used",
                  path, why);
        swap_station(NULL);
        return;
    }
    if (bad)
        log_warn("audience: %zu malformed line%s of the bots list %s skipped", bad,
                 bad == 1 ? "" : "s", path);
    log_info("audience: %zu robots from %s, beside the built-in list", bots_count(b), path);
    swap_station(b);
}

const char *bots_classify(const char *agent)
{
    if (!agent || !*agent)
        return "";
    if (bots_match(bots_builtin(), agent))
        return SESSION_INVALID_BOT;
    pthread_rwlock_rdlock(&station_lock);
    int m = bots_match(station, agent);
    pthread_rwlock_unlock(&station_lock);
    return m ? SESSION_INVALID_BOT : "";
}
