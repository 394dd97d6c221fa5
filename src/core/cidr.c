/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cidr: address and range parsing and matching (see cidr.h).
 */
#include "core/cidr.h"

#include <arpa/inet.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cidr_addr_parse(const char *s, size_t len, unsigned char out[16])
{
    char buf[64];
    unsigned char v4[4];
    if (len == 0 || len >= sizeof(buf))
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (inet_pton(AF_INET, buf, v4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, v4, 4);
        return 0;
    }
    return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -1;
}

int cidr_parse(const char *s, size_t len, cidr_t *out)
{
    const char *slash = memchr(s, '/', len);
    size_t alen = slash ? (size_t)(slash - s) : len;
    int is_v4 = memchr(s, ':', alen) == NULL;
    unsigned max = is_v4 ? 32 : 128, prefix = max;
    if (cidr_addr_parse(s, alen, out->addr) < 0)
        return -1;
    if (slash) {
        const char *p = slash + 1, *end = s + len;
        if (p == end || end - p > 3)
            return -1;
        prefix = 0;
        for (; p < end; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            prefix = prefix * 10 + (unsigned)(*p - '0');
        }
        if (prefix > max)
            return -1;
    }
    out->prefix = is_v4 ? prefix + 96 : prefix;
    for (unsigned bit = out->prefix; bit < 128; bit++)
        out->addr[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
    return 0;
}

int cidr_match(const cidr_t *r, const unsigned char addr[16])
{
    unsigned full = r->prefix / 8, rest = r->prefix % 8;
    if (memcmp(r->addr, addr, full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned char mask = (unsigned char)(0xff00u >> rest);
    return (addr[full] & mask) == r->addr[full];
}

/* Ranges a server must not be steered into reaching on an untrusted party's word. */
static const char *const internal_ranges[] = {
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
    "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/3",
    "::/127", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b:1::/48",
};

int cidr_is_internal(const unsigned char addr[16])
{
    for (size_t i = 0; i < sizeof(internal_ranges) / sizeof(internal_ranges[0]); i++) {
        cidr_t r;
        if (cidr_parse(internal_ranges[i], strlen(internal_ranges[i]), &r) == 0 &&
            cidr_match(&r, addr))
            return 1;
    }
    return 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

long cidr_list_parse(const char *text, size_t len, cidr_list_t *out, long *malformed)
{
    size_t cap = 0;
    long bad = 0;
    out->v = NULL;
    out->n = 0;
    for (size_t pos = 0; pos < len;) {
        const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
        size_t llen = nl ? (size_t)(nl - line) : len - pos;
        pos += llen + 1;
        const char *hash = memchr(line, '#', llen);
        if (hash)
            llen = (size_t)(hash - line);
        while (llen && is_space(*line)) {
            line++;
            llen--;
        }
        while (llen && is_space(line[llen - 1]))
            llen--;
        if (llen == 0)
            continue;
        cidr_t r;
        if (cidr_parse(line, llen, &r) < 0) {
            bad++;
            continue;
        }
        if (out->n == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            cidr_t *nv = realloc(out->v, ncap * sizeof(*nv));
            if (!nv) {
                cidr_list_free(out);
                return -1;
            }
            out->v = nv;
            cap = ncap;
        }
        out->v[out->n++] = r;
    }
    if (malformed)
        *malformed = bad;
    return (long)out->n;
}

int cidr_list_match(const cidr_list_t *l, const unsigned char addr[16])
{
    for (size_t i = 0; l && i < l->n; i++)
        if (cidr_match(&l->v[i], addr))
            return 1;
    return 0;
}

void cidr_list_free(cidr_list_t *l)
{
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static atomic_int anonymize;

void cidr_set_anonymize(int on)
{
    atomic_store(&anonymize, on ? 1 : 0);
}

int cidr_anonymizing(void)
{
    return atomic_load(&anonymize);
}

const char *cidr_shown(const char *ip, char *out, size_t cap)
{
    if (!atomic_load(&anonymize))
        return ip;
    cidr_truncate(ip, out, cap);
    return out;
}

void cidr_truncate(const char *ip, char *out, size_t cap)
{
    struct in_addr a4;
    struct in6_addr a6;
    char text[INET6_ADDRSTRLEN] = "-";
    const char *v4 = ip && strncmp(ip, "::ffff:", 7) == 0 && strchr(ip + 7, '.') ? ip + 7 : ip;
    if (v4 && inet_pton(AF_INET, v4, &a4) == 1) {
        a4.s_addr &= htonl(0xffffff00u);
        inet_ntop(AF_INET, &a4, text, sizeof(text));
    } else if (ip && inet_pton(AF_INET6, ip, &a6) == 1) {
        memset(a6.s6_addr + 6, 0, 10);
        inet_ntop(AF_INET6, &a6, text, sizeof(text));
    }
    snprintf(out, cap, "%s", text);
}
