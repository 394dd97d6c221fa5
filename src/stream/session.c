/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * session: a listener session's record at its end (see session.h): the JSON line of the
 * session log and the hand-over to the store.
 */
#include "stream/session.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/config.h"
#include "core/buf.h"
#include "core/cidr.h"
#include "core/escape.h"
#include "core/log.h"
#include "net/server.h"

static void (*_Atomic sink_fn)(const session_record_t *r);
static atomic_int stopping;

static const char *const end_names[] = {
    [SESSION_END_CLIENT] = "client_left",     [SESSION_END_KICKED] = "kicked",
    [SESSION_END_SOURCE_GONE] = "source_gone", [SESSION_END_TOO_SLOW] = "too_slow",
    [SESSION_END_TIME_LIMIT] = "time_limit",   [SESSION_END_SHUTDOWN] = "shutdown",
};

const char *session_end_name(session_end_t end)
{
    return (unsigned)end < sizeof(end_names) / sizeof(end_names[0]) ? end_names[end]
                                                                     : "client_left";
}

void session_address(const char *ip, int truncate, char *out, size_t cap)
{
    if (truncate)
        cidr_truncate(ip, out, cap);
    else
        snprintf(out, cap, "%s", ip ? ip : "-");
}

int64_t session_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" */
static void iso_time(char *out, size_t cap, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, ".%03dZ", (int)(ms % 1000));
}

/* ,"name":"escaped text" or ,"name":null */
static void json_text(buf_t *b, const char *name, const char *s)
{
    buf_appendf(b, ",\"%s\":", name);
    if (s)
        escape_json_buf(b, s, strlen(s), 1);
    else
        buf_append_str(b, "null");
}

static void write_line(const session_record_t *r)
{
    char start[40], end[40];
    iso_time(start, sizeof(start), r->start_ms);
    iso_time(end, sizeof(end), r->end_ms);
    int64_t ms = r->end_ms > r->start_ms ? r->end_ms - r->start_ms : 0;
    buf_t b = BUF_INIT;
    buf_appendf(&b, "{\"id\":%llu", (unsigned long long)r->id);
    json_text(&b, "mount", r->mount);
    json_text(&b, "served", r->served ? r->served : r->mount);
    buf_appendf(&b, ",\"start\":\"%s\",\"end\":\"%s\",\"seconds\":%lld.%03d,\"bytes\":%llu",
                start, end, (long long)(ms / 1000), (int)(ms % 1000),
                (unsigned long long)r->bytes);
    json_text(&b, "address", r->address);
    json_text(&b, "agent", r->agent);
    json_text(&b, "referer", r->referer);
    json_text(&b, "user", r->user);
    json_text(&b, "country", r->country);
    json_text(&b, "ended", session_end_name(r->end));
    buf_append_str(&b, "}\n");
    size_t len;
    char *line = buf_take(&b, &len);
    if (line)
        log_session_line(line, len);
    free(line);
}

void session_end(const session_record_t *r)
{
    session_record_t rec = *r;
    char addr[64];
    session_address(r->address, server_config()->address_truncation, addr, sizeof(addr));
    rec.address = addr;
    if (atomic_load(&stopping) && rec.end == SESSION_END_CLIENT)
        rec.end = SESSION_END_SHUTDOWN;
    write_line(&rec);
    void (*sink)(const session_record_t *) = atomic_load(&sink_fn);
    if (sink)
        sink(&rec);
}

void session_set_sink(void (*sink)(const session_record_t *r))
{
    atomic_store(&sink_fn, sink);
}

void session_server_stopping(void)
{
    atomic_store(&stopping, 1);
}
