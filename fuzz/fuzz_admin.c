/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_admin: an admin request URL as the router hands it on. The input is split at the
 * first '?' into a path and a query; the path is decoded and normalised as the router does,
 * then parsed as a command path, and every parameter name an admin command reads is looked
 * up in the query (plus one name taken from the input). Results must be C strings that fit
 * their input; a parsed command name must fit its buffer and hold no '/'; a parsed client id
 * must print back to the digits it came from. The query is also taken as the Host header and
 * the path as an Origin or Sec-Fetch-Site value: an origin that matches a host over http
 * matches it over https too, and neither header given is never cross-origin.
 */
// fuzz-sources: src/admin/request.c src/core/url.c src/core/str.c src/core/buf.c
// fuzz-pkgs: libxml-2.0
// fuzz-args: -max_len=4096
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/request.h"
#include "core/url.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const param_names[] = {
    "mount", "destination", "id", "fallback", "mode", "song", "artist", "title", "charset",
    "pass", "username", "password", "action", "",
};

static void check_command(const char *path)
{
    char name[64];
    int view = -1;
    if (admin_parse_command(path, name, sizeof(name), &view) != 0)
        return;
    REQUIRE(memchr(name, '\0', sizeof(name)) != NULL);
    const char *slash = strchr(name, '/'); /* at most one level of sub-command, never "..", "." */
    REQUIRE(!slash || (slash != name && !strchr(slash + 1, '/') && name[0] != '.' &&
                       slash[1] != '.'));
    REQUIRE(view == ADMIN_VIEW_XML || view == ADMIN_VIEW_XSL || view == ADMIN_VIEW_JSON ||
            view == ADMIN_VIEW_TXT || view == ADMIN_VIEW_CSV);
    REQUIRE(strlen(name) <= strlen(path));
}

static void check_query(const char *q, size_t qlen, const char *extra_name)
{
    for (size_t i = 0; i < sizeof(param_names) / sizeof(param_names[0]); i++) {
        char *v = url_query_param(q, qlen, param_names[i]);
        if (!v)
            continue;
        REQUIRE(strlen(v) <= qlen);
        if (strcmp(param_names[i], "id") == 0) {
            unsigned long long id;
            if (admin_parse_id(v, &id) == 0) {
                char back[32];
                snprintf(back, sizeof(back), "%llu", id);
                const char *digits = v;
                while (*digits == '0' && digits[1])
                    digits++;
                REQUIRE(strcmp(back, digits) == 0);
            }
        }
        free(v);
    }
    char *v = url_query_param(q, qlen, extra_name);
    if (v)
        REQUIRE(strlen(v) <= qlen);
    free(v);
}

static void check_origin(const char *raw, const char *q, size_t qlen)
{
    char *host = malloc(qlen + 1), *origin = malloc(qlen + 16);
    REQUIRE(host && origin);
    memcpy(host, q, qlen);
    host[qlen] = '\0';
    REQUIRE(!admin_cross_origin(NULL, NULL, host, 0));
    int r = admin_cross_origin(raw, raw, host, 0) | admin_cross_origin(NULL, raw, NULL, 1);
    REQUIRE(r == 0 || r == 1);
    snprintf(origin, qlen + 16, "http://%s", host);
    int plain = admin_cross_origin(NULL, origin, host, 0);
    snprintf(origin, qlen + 16, "https://%s", host);
    REQUIRE(plain || !admin_cross_origin(NULL, origin, host, 1));
    free(host);
    free(origin);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    const char *qm = memchr(in, '?', size);
    size_t plen = qm ? (size_t)(qm - in) : size;
    const char *q = qm ? qm + 1 : in + size;
    size_t qlen = size - plen - (qm ? 1 : 0);

    /* the raw path as a C string, then as the router sees it (decoded, normalised) */
    char *raw = malloc(plen + 1);
    REQUIRE(raw);
    memcpy(raw, in, plen);
    raw[plen] = '\0';
    if (strlen(raw) == plen)
        check_command(raw);
    size_t dlen = 0;
    char *dec = url_decode(in, plen, 0, &dlen);
    if (dec) {
        REQUIRE(strlen(dec) == dlen && dlen <= plen);
        char *norm = url_normalize_path(dec, dlen);
        if (norm) {
            REQUIRE(norm[0] == '/' && !strstr(norm, "//") && !strstr(norm, "/../"));
            check_command(norm);
            free(norm);
        }
        free(dec);
    }

    /* the name of the extra lookup: the query's first bytes up to '=' or '&' */
    size_t nlen = 0;
    while (nlen < qlen && nlen < 32 && q[nlen] != '=' && q[nlen] != '&' && q[nlen] != '\0')
        nlen++;
    char extra[33];
    memcpy(extra, q, nlen);
    extra[nlen] = '\0';
    check_query(q, qlen, extra);
    check_origin(raw, q, qlen);
    free(raw);
    return 0;
}
