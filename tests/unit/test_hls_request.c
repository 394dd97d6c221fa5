/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_hls_request: the HLS request value read once from a request: what each URL form names
 * (playlist, segment, part, init segment, intro segment and its init, an ad's segment and
 * part, and what is no HLS URL),
 * the session token, _HLS_msn and _HLS_part (absent, set, malformed), the agent and referer
 * as views into the head; the copy a waiting request keeps (pointing at the window's name,
 * never at the router's buffers), and a request held with its connection and taken back.
 */
#include <stdint.h>
#include <string.h>

#include "hls/hls_route_internal.h"
#include "hls/hls_intro.h"
#include "hls/hls_window_internal.h"
#include "http/parser.h"
#include "testlib.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

/* Parses head (a whole request head) into req: 1 if it parsed. */
static int parse(const char *head, http_request_t *req)
{
    return http_parse_request(head, strlen(head), 0, req) > 0;
}

/* Reads the GET of uri (query included) for path into r: what hls_request_read returns. */
static int read_get(const char *uri, const char *path, hls_request_t *r, char *name,
                    http_request_t *req, char *head, size_t cap)
{
    snprintf(head, cap, "GET %s HTTP/1.1\r\nHost: x\r\nUser-Agent: ua/1\r\n"
             "Referer: https://example.org/p\r\n\r\n", uri);
    CHECK(parse(head, req));
    return hls_request_read(r, NULL, req, path, name);
}

static void url_forms(void)
{
    static char head[1024];
    static http_request_t req;
    static hls_name_t name;
    hls_request_t r;
    CHECK(read_get("/live.mp3/hls.m3u8", "/live.mp3/hls.m3u8", &r, name, &req, head,
                   sizeof(head)) == 1);
    CHECK(r.url.playlist && r.url.part == -1 && !r.url.intro);
    CHECK_STR(r.mount, "/live.mp3");
    CHECK(r.mount == name);
    CHECK(read_get("/a/b/hls/1700000000.mp3", "/a/b/hls/1700000000.mp3", &r, name, &req, head,
                   sizeof(head)) == 1);
    CHECK(!r.url.playlist && r.url.seq == 1700000000u && r.url.part == -1 && !r.url.init);
    CHECK_STR(r.url.ext, "mp3");
    CHECK_STR(r.mount, "/a/b");
    CHECK(read_get("/m/hls/42.3.aac", "/m/hls/42.3.aac", &r, name, &req, head,
                   sizeof(head)) == 1);
    CHECK(r.url.seq == 42 && r.url.part == 3);
    CHECK_STR(r.url.ext, "aac");
    CHECK(read_get("/o.ogg/hls/7.init.mp4", "/o.ogg/hls/7.init.mp4", &r, name, &req, head,
                   sizeof(head)) == 1);
    CHECK(r.url.init && r.url.seq == 7 && r.url.part == -1);
    CHECK_STR(r.url.ext, "mp4");
    CHECK_STR(r.mount, "/o.ogg");
    /* a mount whose name holds "/hls/": the last one is the pieces' folder */
    CHECK(read_get("/x/hls/y/hls/5.mp3", "/x/hls/y/hls/5.mp3", &r, name, &req, head,
                   sizeof(head)) == 1);
    CHECK_STR(r.mount, "/x/hls/y");
    CHECK(read_get("/m/hls/intro/2.mp3?file=%2Fi.mp3&v=1", "/m/hls/intro/2.mp3", &r, name,
                   &req, head, sizeof(head)) == 1);
    CHECK(r.url.intro && r.url.intro_seg == 2 && !r.url.playlist);
    CHECK_STR(r.mount, "/m");
    CHECK(read_get("/m/hls/intro/init.mp4", "/m/hls/intro/init.mp4", &r, name, &req, head,
                   sizeof(head)) == 1);
    CHECK(r.url.intro && r.url.intro_seg == HLS_INTRO_INIT);
    /* no HLS URL: left to the other routes */
    const char *not_hls[] = {"/hls.m3u8", "/m/hls/", "/m/hls/1.ogg", "/m/hls/1.2.3.mp3",
                             "/m/hls/1.30.mp3", "/m/hls/x.mp3", "/m/hls/1.init.mp3",
                             "/m/hls/intro/8.mp3", "/m/hls/intro/1.ogg", "/live.mp3",
                             "/hls/1.mp3"};
    for (size_t i = 0; i < sizeof(not_hls) / sizeof(not_hls[0]); i++) {
        CHECK(hls_request_names(not_hls[i]) == 0);
        CHECK(read_get(not_hls[i], not_hls[i], &r, name, &req, head, sizeof(head)) == 0);
    }
    CHECK(hls_request_names("/live.mp3/hls.m3u8") == 1);
    CHECK(hls_request_names("/m/hls/intro/0.aac") == 1);
    CHECK(hls_request_names("/m/hls/9.29.mp3") == 1);
}

static void names_that_do_not_fit(void)
{
    static char path[HTTP_MAX_URI + 32];
    static http_request_t req;
    static hls_name_t name;
    hls_request_t r;
    memset(path, 'a', sizeof(path));
    path[0] = '/';
    strcpy(path + sizeof(hls_name_t), "/hls.m3u8"); /* a name one byte too long */
    CHECK(parse("GET /x HTTP/1.1\r\n\r\n", &req));
    CHECK(hls_request_names(path) == 1); /* the form of one, */
    CHECK(hls_request_read(&r, NULL, &req, path, name) == 0); /* but no mount name fits */
    strcpy(path + sizeof(hls_name_t) - 1, "/hls.m3u8");
    CHECK(hls_request_read(&r, NULL, &req, path, name) == 1);
    CHECK(strlen(r.mount) == sizeof(hls_name_t) - 1);
}

static void query_and_headers(void)
{
    static char head[1024];
    static http_request_t req;
    static hls_name_t name;
    hls_request_t r;
    CHECK(read_get("/m/hls.m3u8?session=" TOKEN "&_HLS_msn=12&_HLS_part=3", "/m/hls.m3u8", &r,
                   name, &req, head, sizeof(head)));
    CHECK(r.token_arg == HLS_ARG_SET);
    CHECK_STR(hls_request_token(&r), TOKEN);
    CHECK(r.msn_arg == HLS_ARG_SET && r.msn == 12);
    CHECK(r.part_arg == HLS_ARG_SET && r.hls_part == 3);
    CHECK(r.agent_len == 4 && memcmp(r.agent, "ua/1", 4) == 0);
    CHECK(r.agent > head && r.agent < head + sizeof(head)); /* a view, not a copy */
    CHECK(r.referer_len == 21 && memcmp(r.referer, "https://example.org/p", 21) == 0);
    CHECK(r.http == &req);
    /* a token's form only; an escaped one decodes first */
    CHECK(read_get("/m/hls.m3u8?session=XYZ&_HLS_msn=1x", "/m/hls.m3u8", &r, name, &req, head,
                   sizeof(head)));
    CHECK(r.token_arg == HLS_ARG_BAD && !hls_request_token(&r));
    CHECK(r.msn_arg == HLS_ARG_BAD && r.part_arg == HLS_ARG_ABSENT);
    CHECK(read_get("/m/hls.m3u8?session=%30123456789abcdef0123456789abcdef", "/m/hls.m3u8", &r,
                   name, &req, head, sizeof(head)));
    CHECK_STR(hls_request_token(&r), TOKEN);
    CHECK(read_get("/m/hls.m3u8?session=%zz&_HLS_part=99999999999999999999999", "/m/hls.m3u8",
                   &r, name, &req, head, sizeof(head)));
    CHECK(r.token_arg == HLS_ARG_ABSENT); /* not decodable: as absent */
    CHECK(r.part_arg == HLS_ARG_BAD);     /* past 64 bits */
    /* a piece reads no blocking reload's parameters */
    CHECK(read_get("/m/hls/3.mp3?session=" TOKEN "&_HLS_msn=4", "/m/hls/3.mp3", &r, name, &req,
                   head, sizeof(head)));
    CHECK(r.token_arg == HLS_ARG_SET && r.msn_arg == HLS_ARG_ABSENT);
    CHECK(parse("GET /m/hls/3.mp3 HTTP/1.0\r\n\r\n", &req));
    CHECK(hls_request_read(&r, NULL, &req, "/m/hls/3.mp3", name));
    CHECK(!r.agent && !r.referer && r.token_arg == HLS_ARG_ABSENT);
    uint64_t v = 0;
    CHECK(parse("GET /m/hls/intro/0.mp3?file=a&v=17 HTTP/1.1\r\n\r\n", &req));
    CHECK(hls_request_query_number(&req, "v", &v) == HLS_ARG_SET && v == 17);
    CHECK(hls_request_query_number(&req, "file", &v) == HLS_ARG_BAD);
    CHECK(hls_request_query_number(&req, "w", &v) == HLS_ARG_ABSENT);
}

static void kept_and_held(void)
{
    static char head[1024];
    static http_request_t req;
    static hls_name_t name, login_buf;
    static struct hls window;
    char wname[] = "/m";
    window.name = wname;
    hls_request_t r, kept;
    CHECK(read_get("/m/hls.m3u8?session=" TOKEN, "/m/hls.m3u8", &r, name, &req, head,
                   sizeof(head)));
    /* kept before the window is found (an on-demand relay's): no name into the router's */
    hls_request_keep(&kept, &r);
    CHECK(kept.mount == NULL);
    r.window = &window;
    r.mount = window.name;
    r.login_buf = login_buf;
    r.login_known = 1;
    r.login = login_buf;
    hls_request_keep(&kept, &r);
    CHECK(kept.mount == window.name && kept.window == &window);
    CHECK(!kept.login_known && !kept.login && !kept.login_buf && !kept.login_conf);
    CHECK_STR(hls_request_token(&kept), TOKEN); /* its own copy */
    memset(r.token, 0, sizeof(r.token));
    CHECK_STR(hls_request_token(&kept), TOKEN);
    hls_request_resume(&kept, login_buf);
    CHECK(kept.login_buf == login_buf && !kept.login_known);

    /* held with a connection while it waits, and taken back once */
    conn_t c;
    memset(&c, 0, sizeof(c));
    hls_request_t back;
    CHECK(hls_request_take(&c, &back, login_buf) == 0); /* holds none */
    CHECK(hls_request_hold(&c, &kept) == 0);
    CHECK(c.role != NULL && c.data != NULL);
    CHECK(hls_request_hold(&c, &kept) < 0); /* one at a time */
    CHECK(hls_request_take(&c, &back, login_buf) == 1);
    CHECK(c.role == NULL && c.data == NULL);
    CHECK(back.window == &window && back.url.playlist && back.login_buf == login_buf);
    CHECK(hls_request_take(&c, &back, login_buf) == 0);
    /* a connection that closes while it holds one frees it (its role's on_close) */
    CHECK(hls_request_hold(&c, &kept) == 0);
    c.role->on_close(&c);
    CHECK(c.data == NULL);
}

/* An ad's segment or part: <mount>/hls/ad/<32 hex digits>/<n>[.<part>].<mp3|aac>. */
static void ad_forms(void)
{
    static char head[1024];
    static http_request_t req;
    static hls_name_t name;
    hls_request_t r;
    const char *id = "0123456789abcdef0123456789abcdef";
    char path[256];
    snprintf(path, sizeof(path), "/live.mp3/hls/ad/%s/3.mp3", id);
    CHECK(read_get(path, path, &r, name, &req, head, sizeof(head)) == 1);
    CHECK(r.url.ad && r.url.seq == 3 && r.url.part == -1 && !r.url.intro && !r.url.playlist);
    CHECK_STR(r.url.ad_id, id);
    CHECK_STR(r.url.ext, "mp3");
    CHECK_STR(r.mount, "/live.mp3");
    snprintf(path, sizeof(path), "/a/hls/ad/%s/0.11.aac", id);
    CHECK(read_get(path, path, &r, name, &req, head, sizeof(head)) == 1);
    CHECK(r.url.ad && r.url.seq == 0 && r.url.part == 11);
    CHECK_STR(r.url.ext, "aac");
    CHECK_STR(r.mount, "/a");
    /* an Opus ad's parts and its init segment */
    snprintf(path, sizeof(path), "/live.opus/hls/ad/%s/2.1.mp4", id);
    CHECK(read_get(path, path, &r, name, &req, head, sizeof(head)) == 1);
    CHECK(r.url.ad && !r.url.init && r.url.seq == 2 && r.url.part == 1);
    CHECK_STR(r.url.ext, "mp4");
    snprintf(path, sizeof(path), "/live.opus/hls/ad/%s/init.mp4", id);
    CHECK(read_get(path, path, &r, name, &req, head, sizeof(head)) == 1);
    CHECK(r.url.ad && r.url.init && r.url.part == -1);
    CHECK_STR(r.url.ext, "mp4");
    CHECK_STR(r.mount, "/live.opus");
    /* a kept copy keeps its id (a parked request answers again from it) */
    hls_request_t kept;
    hls_request_keep(&kept, &r);
    CHECK(kept.url.ad && strcmp(kept.url.ad_id, id) == 0);
    /* no ad URL: a short or long id, upper case, no number, another extension, a part too far */
    const char *not_ad[] = {"/m/hls/ad/0123456789abcdef/1.mp3",
                            "/m/hls/ad/0123456789abcdef0123456789abcdef0/1.mp3",
                            "/m/hls/ad/0123456789ABCDEF0123456789abcdef/1.mp3",
                            "/m/hls/ad/0123456789abcdef0123456789abcdef/x.mp3",
                            "/m/hls/ad/0123456789abcdef0123456789abcdef/1.ogg",
                            "/m/hls/ad/0123456789abcdef0123456789abcdef/init.mp3",
                            "/m/hls/ad/0123456789abcdef0123456789abcdef/init.0.mp4",
                            "/m/hls/ad/0123456789abcdef0123456789abcdef/1.30.mp3",
                            "/hls/ad/0123456789abcdef0123456789abcdef/1.mp3"};
    for (size_t i = 0; i < sizeof(not_ad) / sizeof(not_ad[0]); i++) {
        CHECK(hls_request_names(not_ad[i]) == 0);
        CHECK(read_get(not_ad[i], not_ad[i], &r, name, &req, head, sizeof(head)) == 0);
    }
}

int main(void)
{
    RUN(url_forms);
    RUN(ad_forms);
    RUN(names_that_do_not_fit);
    RUN(query_and_headers);
    RUN(kept_and_held);
    return testlib_done();
}
