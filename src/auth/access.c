/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * access: allow-ip, deny-ip, deny-agents and trusted-proxies files as lock-free snapshots (the
 * proxies of <x-forwarded-for> are in the config itself), and the forwarded-address rules (see
 * access.h). Checked once per connection (IP) or request
 * (agent, forwarded address): one stat per file per check, never on the listener hot path.
 */
#include "auth/access.h"

#include <arpa/inet.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "core/cidr.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/str.h"
#include "core/watched.h"
#include "http/parser.h"
#include "net/server.h"

#define AGENT_MAX 1024

typedef struct snap {
    cidr_list_t ranges; /* address files */
    char **patterns;    /* agent file */
    size_t npatterns;
} snap_t;

static void snap_free(void *p)
{
    snap_t *s = p;
    if (!s)
        return;
    cidr_list_free(&s->ranges);
    for (size_t i = 0; i < s->npatterns; i++)
        free(s->patterns[i]);
    free(s->patterns);
    free(s);
}

static int parse_patterns(snap_t *s, const char *text, size_t len)
{
    size_t cap = 0;
    for (size_t pos = 0; pos < len;) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - line) : len - pos;
        pos += llen + 1;
        while (llen && (line[llen - 1] == '\r' || line[llen - 1] == ' ' || line[llen - 1] == '\t'))
            llen--;
        while (llen && (*line == ' ' || *line == '\t')) {
            line++;
            llen--;
        }
        if (llen == 0 || line[0] == '#')
            continue;
        if (s->npatterns == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **np = realloc(s->patterns, ncap * sizeof(*np));
            if (!np)
                return -1;
            s->patterns = np;
            cap = ncap;
        }
        if (!(s->patterns[s->npatterns] = str_ndup(line, llen)))
            return -1;
        s->npatterns++;
    }
    return 0;
}

static void *parse_ranges(const char *path, const char *text, size_t len)
{
    char esc[512];
    long bad = 0;
    snap_t *s = calloc(1, sizeof(*s));
    if (s && text && cidr_list_parse(text, len, &s->ranges, &bad) < 0) {
        snap_free(s);
        return NULL;
    }
    if (bad)
        log_warn("access file %s: %ld line(s) that are not an address or range skipped",
                 escape_log(esc, sizeof(esc), path, strlen(path)), bad);
    return s;
}

static void *parse_agents(const char *path, const char *text, size_t len)
{
    (void)path;
    snap_t *s = calloc(1, sizeof(*s));
    if (s && text && parse_patterns(s, text, len) < 0) {
        snap_free(s);
        return NULL;
    }
    return s;
}

static const watched_kind_t ranges_kind = {"access file", parse_ranges, snap_free};
static const watched_kind_t agents_kind = {"access file", parse_agents, snap_free};

/* The snapshot of a file (NULL path: none), re-read if it changed; NULL when the file could
 * never be read (the caller then refuses what the file would allow). */
static const snap_t *snapshot(const char *path, int agents)
{
    watched_t *w = path ? watched_get(path, agents ? &agents_kind : &ranges_kind) : NULL;
    return w ? watched_current(w) : NULL;
}

int access_ip_allowed(const char *ip)
{
    const config_t *cfg = server_config();
    unsigned char addr[16];
    if (!cfg->allow_ip && !cfg->deny_ip)
        return 1;
    if (cidr_addr_parse(ip, strlen(ip), addr) < 0)
        return 0;
    const snap_t *deny = snapshot(cfg->deny_ip, 0);
    if (cfg->deny_ip && (!deny || cidr_list_match(&deny->ranges, addr)))
        return 0; /* a deny file never read denies everyone */
    if (!cfg->allow_ip)
        return 1;
    const snap_t *allow = snapshot(cfg->allow_ip, 0);
    return allow && cidr_list_match(&allow->ranges, addr);
}

int access_agent_allowed(const char *agent, size_t len)
{
    const config_t *cfg = server_config();
    char buf[AGENT_MAX + 1];
    if (!cfg->deny_agents)
        return 1;
    const snap_t *s = snapshot(cfg->deny_agents, 1);
    if (!s)
        return 0; /* never read: every agent is refused */
    if (s->npatterns == 0)
        return 1;
    if (len > AGENT_MAX)
        len = AGENT_MAX;
    memcpy(buf, agent ? agent : "", agent ? len : 0);
    buf[agent ? len : 0] = '\0';
    for (size_t i = 0; i < s->npatterns; i++)
        if (fnmatch(s->patterns[i], buf, FNM_CASEFOLD) == 0)
            return 0;
    return 1;
}

/* A proxy of the trusted-proxies file or of the config's own <x-forwarded-for> list (the
 * Icecast-KH name for the same trust). */
static int trusted_addr(const unsigned char addr[16])
{
    const config_t *cfg = server_config();
    if (cidr_list_match(&cfg->forwarded_for, addr))
        return 1;
    const snap_t *s = snapshot(cfg->trusted_proxies, 0);
    return s && cidr_list_match(&s->ranges, addr);
}

int access_proxy_trusted(const char *peer)
{
    const config_t *cfg = server_config();
    unsigned char addr[16];
    if ((!cfg->trusted_proxies && cfg->forwarded_for.n == 0) ||
        cidr_addr_parse(peer, strlen(peer), addr) < 0)
        return 0;
    return trusted_addr(addr);
}

/* ---- forwarded addresses ---- */

static void format_addr(const unsigned char a[16], char *out, size_t cap)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(a, mapped, 12) == 0)
        inet_ntop(AF_INET, a + 12, out, (socklen_t)cap);
    else
        inet_ntop(AF_INET6, a, out, (socklen_t)cap);
}

/* One element's address: "1.2.3.4", "1.2.3.4:80", "[v6]", "[v6]:80", "v6", quoted or not. */
static int element_addr(const char *s, size_t len, unsigned char out[16])
{
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
        s++;
        len -= 2;
    }
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return -1;
        size_t after = len - (size_t)(close - s) - 1;
        if (after && close[1] != ':')
            return -1;
        return cidr_addr_parse(s + 1, (size_t)(close - s) - 1, out);
    }
    const char *colon = memchr(s, ':', len);
    if (colon && !memchr(colon + 1, ':', len - (size_t)(colon - s) - 1))
        len = (size_t)(colon - s); /* IPv4 with a port */
    return cidr_addr_parse(s, len, out);
}

/* The for= value of one Forwarded element ("for=1.2.3.4;proto=http"). */
static int forwarded_for(const char *s, size_t len, unsigned char out[16])
{
    for (size_t pos = 0; pos < len;) {
        const char *pair = s + pos, *semi = memchr(pair, ';', len - pos);
        size_t plen = semi ? (size_t)(semi - pair) : len - pos;
        pos += plen + 1;
        while (plen && (*pair == ' ' || *pair == '\t')) {
            pair++;
            plen--;
        }
        if (plen > 4 && str_ieq(pair, 4, "for="))
            return element_addr(pair + 4, plen - 4, out);
    }
    return -1;
}

/* Walks the comma-separated elements of lines[0..n) from the last element of the last line
 * back to the first: the first address that is not trusted goes into *pick (1 returned); when
 * every one is trusted, the leftmost (2); none valid: 0. Parsing stops at the first element
 * that is not an address: what stands left of garbage cannot be trusted. */
static int pick_lines(const forwarded_line_t *lines, size_t n, int forwarded_syntax,
                      int (*trusted)(const unsigned char addr[16]), unsigned char pick[16])
{
    unsigned char addr[16];
    int have = 0;
    for (size_t i = n; i-- > 0;) {
        const char *value = lines[i].value;
        size_t end = lines[i].len;
        while (end > 0) {
            size_t start = end;
            while (start > 0 && value[start - 1] != ',')
                start--;
            int rc = forwarded_syntax ? forwarded_for(value + start, end - start, addr)
                                      : element_addr(value + start, end - start, addr);
            if (rc < 0)
                return have ? 2 : 0;
            memcpy(pick, addr, 16);
            have = 1;
            if (!trusted || !trusted(addr))
                return 1;
            if (start == 0)
                break;
            end = start - 1;
        }
    }
    return have ? 2 : 0;
}

int access_pick_forwarded_lines(const forwarded_line_t *xff, size_t nxff,
                                const forwarded_line_t *fwd, size_t nfwd,
                                int (*trusted)(const unsigned char addr[16]), char *out,
                                size_t cap)
{
    unsigned char a[16], b[16];
    int ra = pick_lines(xff, nxff, 0, trusted, a);
    int rb = pick_lines(fwd, nfwd, 1, trusted, b);
    if (ra == 1 && rb == 1 && memcmp(a, b, 16) != 0)
        return -1; /* each names another client: which one the proxy wrote is unknowable */
    if (ra == 1 || (ra == 2 && rb != 1)) {
        format_addr(a, out, cap);
        return 1;
    }
    if (rb) {
        format_addr(b, out, cap);
        return 1;
    }
    return 0;
}

int access_pick_forwarded(const char *value, size_t len, int forwarded_syntax,
                          int (*trusted)(const unsigned char addr[16]), char *out, size_t cap)
{
    forwarded_line_t line = {value, len};
    return access_pick_forwarded_lines(forwarded_syntax ? NULL : &line, !forwarded_syntax,
                                       forwarded_syntax ? &line : NULL, forwarded_syntax != 0,
                                       trusted, out, cap);
}

int access_forwarded_for(const http_request_t *req, char *out, size_t cap)
{
    forwarded_line_t xff[HTTP_MAX_HEADERS], fwd[HTTP_MAX_HEADERS];
    size_t nxff = 0, nfwd = 0;
    for (size_t i = 0; i < req->num_headers; i++) {
        const http_header_t *h = &req->headers[i];
        if (str_ieq(h->name, h->name_len, "x-forwarded-for"))
            xff[nxff++] = (forwarded_line_t){h->value, h->value_len};
        else if (str_ieq(h->name, h->name_len, "forwarded"))
            fwd[nfwd++] = (forwarded_line_t){h->value, h->value_len};
    }
    return access_pick_forwarded_lines(xff, nxff, fwd, nfwd, trusted_addr, out, cap);
}
