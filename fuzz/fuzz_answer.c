/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_answer: what other servers answer to the fetch thread. Even first byte: the input is an
 * answer's header block, read as URL authentication (icecast-auth-user, the time limit, the
 * message) and a directory (YPResponse, SID, TouchFreq) read it, through fetch_header and
 * fetch_has_header_line. First byte 1 (mod 4): a sibling's room document, read for a mount
 * named by the second byte. 3: a master's stream list, each line read as a mount to relay.
 * Values must be trimmed copies of text inside the input, and a value found must also be found
 * as the exact "name: value" line; a room is never negative except for "not listed", and a
 * load read from a room document has no negative count, share or room, even with the
 * listeners sent since added; a mount from the list is a clean path taken from its line, in
 * normal form.
 */
// fuzz-sources: src/http/fetch_headers.c src/upstream/redirect_parse.c src/upstream/master_parse.c src/core/url.c src/core/str.c src/core/buf.c
// fuzz-args: -max_len=8192
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/url.h"
#include "http/fetch.h"
#include "upstream/master.h"
#include "upstream/redirect.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = {"icecast-auth-user", "icecast-auth-timelimit",
                                    "icecast-auth-message", "YPResponse", "YPMessage", "SID",
                                    "TouchFreq", "x"};

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

static void headers(const char *text, size_t len)
{
    fetch_result_t r = {.headers = text, .headers_len = len, .body = "", .status = 200};
    /* a NUL inside a value ends what the callers see of it: only the bounds hold then */
    int nul = memchr(text, '\0', len) != NULL;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char buf[256];
        const char *v = fetch_header(&r, names[i], buf, sizeof(buf));
        if (!v)
            continue;
        size_t n = strlen(v);
        REQUIRE(v == buf && n < sizeof(buf));
        REQUIRE(!memchr(v, '\n', n)); /* one line's value, never the next line */
        if (n == 0 || nul)
            continue;
        /* trimmed at the start, and at the end unless the value was cut to fit buf */
        REQUIRE(!blank(v[0]));
        REQUIRE(n + 1 == sizeof(buf) || (!blank(v[n - 1]) && v[n - 1] != '\r'));
        /* the value is text of the input */
        int found = 0;
        for (size_t at = 0; at + n <= len && !found; at++)
            found = memcmp(text + at, v, n) == 0;
        REQUIRE(found);
        /* a whole value is also found as the exact line */
        if (n + 1 < sizeof(buf)) {
            char line[300];
            snprintf(line, sizeof(line), "%s: %s", names[i], v);
            REQUIRE(fetch_has_header_line(&r, line));
        }
        /* a number read the way the callers read it never traps */
        (void)strtol(v, NULL, 10);
    }
    (void)fetch_has_header_line(&r, "icecast-auth-user: 1");
}

static void room(const char *text, size_t len, const char *mount)
{
    long left = redirect_parse_room(text, len, mount);
    REQUIRE(left >= -1);
    redirect_load_t l;
    if (redirect_parse_load(text, len, mount, &l) < 0) {
        REQUIRE(left == -1);
        return;
    }
    /* counts never negative; a sibling's counts raised by the listeners sent to it (as the
     * choice does) never overflow the share or the room */
    REQUIRE(l.clients >= 0 && l.listeners >= 0 && l.mount >= 0);
    REQUIRE(redirect_load_room(&l) == left && left >= 0);
    REQUIRE(redirect_load_ppm(&l) >= 0);
    l.clients += 1000000;
    l.listeners += 1000000;
    l.mount += 1000000;
    REQUIRE(redirect_load_ppm(&l) >= 0 && redirect_load_room(&l) >= 0);
}

static void master_list(const char *text, size_t len)
{
    for (size_t pos = 0; pos < len;) {
        const char *eol = memchr(text + pos, '\n', len - pos);
        size_t n = eol ? (size_t)(eol - (text + pos)) : len - pos;
        const char *line = text + pos;
        char *name = master_parse_name(line, n);
        if (name) {
            size_t k = strlen(name);
            REQUIRE(k >= 2 && k <= MASTER_PARSE_MAX_NAME && name[0] == '/' && k <= n);
            REQUIRE(memcmp(line + n - k, name, k) == 0); /* the end of its own line */
            for (size_t i = 0; i < k; i++)
                REQUIRE((unsigned char)name[i] > 0x20 && name[i] != 0x7f);
            char *again = url_normalize_path(name, k);
            REQUIRE(again && strcmp(again, name) == 0);
            free(again);
            free(name);
        }
        pos += n + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    /* the readers get NUL-ended text, as the fetch thread stores it */
    char *text = malloc(size - 1);
    if (!text)
        return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = '\0';
    if (data[0] % 2 == 0) {
        headers(text, size - 2);
    } else if (data[0] % 4 == 3) {
        master_list(text, size - 2);
    } else {
        static const char *const mounts[] = {"/live", "/a", "/", "/stream.mp3"};
        room(text, size - 2, mounts[data[1] % 4]);
    }
    free(text);
    return 0;
}
