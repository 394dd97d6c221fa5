/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_export: session records as W3C extended or TSV log lines, a chunk at a time, and
 * the daily files of <export-dir> (see audience_export.h).
 */
#include "audience/audience_export.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audience/audience_backend.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/loop.h"
#include "net/server.h"
#include "stream/session.h"

#define DAY_MS 86400000LL
#define EXPORT_AFTER_MS 60000      /* a day is written once it ended this long ago (its last
                                    * records have reached the store) */
#define EXPORT_EVERY_MS 600000     /* looked at again this often */

static const char *const w3c_fields[] = {
    "date", "time", "x-start", "time-taken", "sc-bytes", "cs-uri-stem", "s-computername",
    "x-listener", "cs(User-Agent)", "x-country", "x-ended", "x-invalid", "x-kind"};
static const char *const tsv_fields[] = {
    "start", "end", "seconds", "bytes", "mount", "server", "listener", "user_agent", "country",
    "ended", "invalid", "kind"};

const char *const *audience_export_fields(audience_format_t format, size_t *n)
{
    if (format == AUDIENCE_FORMAT_W3C) {
        *n = sizeof(w3c_fields) / sizeof(w3c_fields[0]);
        return w3c_fields;
    }
    *n = sizeof(tsv_fields) / sizeof(tsv_fields[0]);
    return tsv_fields;
}

int audience_export_init(audience_export_t *x, int64_t from_ms, int64_t to_ms,
                         const char *mount, const char *srv, audience_format_t format)
{
    *x = (audience_export_t){.from_ms = from_ms, .to_ms = to_ms, .format = format,
                             .longest_ms = -1, .out = BUF_INIT};
    x->mount = mount ? strdup(mount) : NULL;
    x->server = srv ? strdup(srv) : NULL;
    return (mount && !x->mount) || (srv && !x->server) ? -ENOMEM : 0;
}

void audience_export_clear(audience_export_t *x)
{
    free(x->mount);
    free(x->server);
    buf_free(&x->out);
    x->mount = x->server = NULL;
}

/* ---- text ---- */

void audience_export_w3c_text(buf_t *b, const char *s)
{
    if (!s) {
        buf_append_char(b, '-');
        return;
    }
    buf_append_char(b, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"')
            buf_append_str(b, "\"\"");
        else if (*p == '\\')
            buf_append_str(b, "\\\\");
        else if (*p < 0x20 || *p == 0x7f)
            buf_appendf(b, "\\x%02X", *p);
        else
            buf_append_char(b, (char)*p);
    }
    buf_append_char(b, '"');
}

void audience_export_tsv_text(buf_t *b, const char *s)
{
    escape_tsv_buf(b, s);
}

/* ---- lines ---- */

/* ms as 2026-11-25T21:00:00.123Z (iso) or as the date and the time apart (W3C's). */
static void utc(int64_t ms, char *date, size_t dcap, char *tod, size_t tcap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, dcap, "%Y-%m-%d", &tm);
    char hms[16];
    strftime(hms, sizeof(hms), "%H:%M:%S", &tm);
    snprintf(tod, tcap, "%s.%03d", hms, (int)(ms % 1000));
}

static void iso(buf_t *b, int64_t ms)
{
    char d[16], t[24];
    utc(ms, d, sizeof(d), t, sizeof(t));
    buf_appendf(b, "%sT%sZ", d, t);
}

void audience_export_head(buf_t *b, audience_format_t format, int64_t now_ms)
{
    size_t n;
    const char *const *f = audience_export_fields(format, &n);
    if (format == AUDIENCE_FORMAT_W3C) {
        char d[16], t[24];
        utc(now_ms, d, sizeof(d), t, sizeof(t));
        buf_appendf(b, "#Version: 1.0\n#Software: Rimecast\n#Date: %s %.8s\n#Fields:", d, t);
        for (size_t i = 0; i < n; i++)
            buf_appendf(b, " %s", f[i]);
        buf_append_char(b, '\n');
        return;
    }
    for (size_t i = 0; i < n; i++)
        buf_appendf(b, "%s%s", i ? "\t" : "", f[i]);
    buf_append_char(b, '\n');
}

void audience_export_line(buf_t *b, audience_format_t format, const audience_session_row_t *r)
{
    int64_t ms = r->end_ms > r->start_ms ? r->end_ms - r->start_ms : 0;
    char listener[CIDR_SHOWN_MAX];
    if (r->key && *r->key) /* else the address, only its network */
        snprintf(listener, sizeof(listener), "%s", r->key);
    else
        session_address(r->ip, 1, listener, sizeof(listener));
    const char *kind = r->hls ? "hls" : "stream";
    if (format == AUDIENCE_FORMAT_W3C) {
        char d[16], t[24];
        utc(r->end_ms, d, sizeof(d), t, sizeof(t));
        buf_appendf(b, "%s %s ", d, t);
        iso(b, r->start_ms);
        buf_appendf(b, " %lld.%03d %llu ", (long long)(ms / 1000), (int)(ms % 1000),
                    (unsigned long long)r->bytes);
        const char *texts[] = {r->mount, r->server, listener, r->agent, r->country, r->ended,
                               r->invalid ? r->invalid : "", kind};
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
            if (i)
                buf_append_char(b, ' ');
            audience_export_w3c_text(b, texts[i]);
        }
        buf_append_char(b, '\n');
        return;
    }
    iso(b, r->start_ms);
    buf_append_char(b, '\t');
    iso(b, r->end_ms);
    buf_appendf(b, "\t%lld.%03d\t%llu", (long long)(ms / 1000), (int)(ms % 1000),
                (unsigned long long)r->bytes);
    const char *texts[] = {r->mount, r->server, listener, r->agent, r->country, r->ended,
                           r->invalid ? r->invalid : "", kind};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        buf_append_char(b, '\t');
        audience_export_tsv_text(b, texts[i]);
    }
    buf_append_char(b, '\n');
}

/* ---- from the store ---- */

void audience_export_chunk(audience_db_t *db, audience_export_t *x)
{
    x->out.len = 0;
    x->rows = 0;
    x->more = 0;
    if (!db || !db->be->sessions) {
        x->err = -ENODEV;
        return;
    }
    x->err = 0;
    db->be->sessions(db, x);
}

/* Writes the sessions of [from, from + 1 day) to path (made under a temporary name and
 * renamed into place). 0 or -errno. */
static int write_day(audience_db_t *db, const char *dir, int64_t from, const char *name_of)
{
    char name[64], path[4096], tmp[4096];
    char d[16], t[24];
    utc(from, d, sizeof(d), t, sizeof(t));
    snprintf(name, sizeof(name), "sessions-%s.log", d);
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >= sizeof(tmp))
        return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (fd < 0)
        return -errno;
    audience_export_t x;
    int err = audience_export_init(&x, from, from + DAY_MS, NULL, name_of, AUDIENCE_FORMAT_W3C);
    buf_t head = BUF_INIT;
    audience_export_head(&head, AUDIENCE_FORMAT_W3C, session_now_ms());
    if (!err && (size_t)write(fd, head.data, head.len) != head.len)
        err = -EIO;
    buf_free(&head);
    do {
        if (!err)
            audience_export_chunk(db, &x);
        err = err ? err : x.err;
        if (!err && x.out.len && (size_t)write(fd, x.out.data, x.out.len) != x.out.len)
            err = -EIO;
    } while (!err && x.more);
    audience_export_clear(&x);
    if (!err && fsync(fd) < 0)
        err = -errno;
    if (close(fd) < 0 && !err)
        err = -EIO;
    if (!err && rename(tmp, path) < 0)
        err = -errno;
    if (err)
        unlink(tmp);
    return err;
}

uint64_t audience_export_days(audience_db_t *db, const char *own)
{
    const char *dir = server_config()->audience_export;
    uint64_t now = loop_now_ms();
    if (!dir || !db)
        return now + EXPORT_EVERY_MS;
    int64_t wall = session_now_ms();
    int64_t last = (wall - EXPORT_AFTER_MS) / DAY_MS * DAY_MS - DAY_MS; /* the last whole day */
    for (int64_t day = last - (AUDIENCE_EXPORT_DAYS - 1) * DAY_MS; day <= last; day += DAY_MS) {
        char d[16], t[24], path[4096];
        utc(day, d, sizeof(d), t, sizeof(t));
        snprintf(path, sizeof(path), "%s/sessions-%s.log", dir, d);
        struct stat sb;
        if (stat(path, &sb) == 0)
            continue;
        int err = write_day(db, dir, day, own);
        if (err) {
            static log_ratelimit_t rl;
            log_warn_limited(&rl, 3600000, "audience: cannot write the sessions of %s to %s: %s",
                             d, dir, strerror(-err));
            return now + EXPORT_EVERY_MS;
        }
        log_info("audience: the sessions of %s written to %s", d, path);
        return now + 1000; /* the next day a second on: records do not wait long behind */
    }
    /* the next day ends at midnight UTC: looked at then, or in EXPORT_EVERY_MS */
    int64_t next = (wall / DAY_MS + 1) * DAY_MS + EXPORT_AFTER_MS - wall;
    return now + (uint64_t)(next < EXPORT_EVERY_MS ? next : EXPORT_EVERY_MS);
}
