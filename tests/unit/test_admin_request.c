/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_admin_request: admin command paths (views, the names Icecast aliases, paths that are
 * not commands, names that do not fit), client ids (digits only, no overflow) and the browser
 * headers that mark a request as sent by a page of another origin.
 */
#include "admin/request.h"

#include <string.h>

#include "admin/admin.h"
#include "testlib.h"

static void command_paths_and_views(void)
{
    char name[16];
    int view = 0;
    CHECK(admin_parse_command("/admin/listclients.xsl", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "listclients");
    CHECK(view == ADMIN_VIEW_XSL);
    CHECK(admin_parse_command("/admin/stats.json", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "stats");
    CHECK(view == ADMIN_VIEW_JSON);
    CHECK(admin_parse_command("/admin/metadata", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "metadata");
    CHECK(view == ADMIN_VIEW_XML);
    CHECK(admin_parse_command("/admin/.xsl", name, sizeof(name), &view) == 0);
    CHECK_STR(name, ".xsl"); /* no name before the suffix: an unknown command */
    CHECK(admin_parse_command("/admin", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "stats");
    CHECK(view == ADMIN_VIEW_XSL);
    CHECK(admin_parse_command("/admin/", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "stats");
    CHECK(admin_parse_command("/admin.cgi", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "admin.cgi");
    CHECK(admin_parse_command("/admin/a/top.json", name, sizeof(name), &view) == 0);
    CHECK_STR(name, "a/top"); /* a sub-command: one slash */
    CHECK(view == ADMIN_VIEW_JSON);
}

static void paths_that_are_not_commands(void)
{
    char name[16];
    int view = 0;
    CHECK(admin_parse_command("/admin/a/b/c", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin//b", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin/../b", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin/a/..", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin/a/.x", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin/a/", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin/0123456789abcdef", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/adm", name, sizeof(name), &view) == -1); /* never read past */
    CHECK(admin_parse_command("/adminx", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("", name, sizeof(name), &view) == -1);
    CHECK(admin_parse_command("/admin/x", name, 0, &view) == -1);
}

static void client_ids(void)
{
    unsigned long long id = 7;
    CHECK(admin_parse_id("42", &id) == 0 && id == 42);
    CHECK(admin_parse_id("0", &id) == 0 && id == 0);
    CHECK(admin_parse_id("18446744073709551615", &id) == 0 && id == 18446744073709551615ull);
    CHECK(admin_parse_id("18446744073709551616", &id) == -1);
    CHECK(admin_parse_id("-1", &id) == -1);
    CHECK(admin_parse_id("+1", &id) == -1);
    CHECK(admin_parse_id(" 1", &id) == -1);
    CHECK(admin_parse_id("1 ", &id) == -1);
    CHECK(admin_parse_id("", &id) == -1);
    CHECK(admin_parse_id(NULL, &id) == -1);
}

static void origins(void)
{
    /* no browser headers: a script or tool */
    CHECK(!admin_cross_origin(NULL, NULL, NULL, 0));
    CHECK(!admin_cross_origin("same-origin", NULL, "h:8000", 0));
    CHECK(!admin_cross_origin("none", NULL, NULL, 0));
    CHECK(admin_cross_origin("same-site", NULL, "h:8000", 0)); /* another port of the host */
    CHECK(admin_cross_origin("cross-site", NULL, "h:8000", 0));
    CHECK(admin_cross_origin("", NULL, "h:8000", 0));
    /* Origin against Host and the listener's scheme */
    CHECK(!admin_cross_origin(NULL, "http://h:8000", "h:8000", 0));
    CHECK(!admin_cross_origin(NULL, "HTTP://H:8000", "h:8000", 0));
    CHECK(!admin_cross_origin("same-origin", "http://h", "h:80", 0));
    CHECK(!admin_cross_origin(NULL, "http://h:80", "h", 0));
    CHECK(!admin_cross_origin(NULL, "https://h", "h", 1));
    CHECK(!admin_cross_origin(NULL, "https://h:8443", "h:8443", 1));
    CHECK(!admin_cross_origin(NULL, "http://[::1]:8000", "[::1]:8000", 0));
    CHECK(admin_cross_origin(NULL, "https://h:8000", "h:8000", 0)); /* scheme */
    CHECK(admin_cross_origin(NULL, "http://h:8000", "h:8000", 1));
    CHECK(admin_cross_origin(NULL, "http://h:8001", "h:8000", 0)); /* port */
    CHECK(admin_cross_origin(NULL, "http://h", "h:8000", 0));
    CHECK(admin_cross_origin(NULL, "http://g:8000", "h:8000", 0)); /* host */
    CHECK(admin_cross_origin(NULL, "http://hh:8000", "h:8000", 0));
    CHECK(admin_cross_origin(NULL, "null", "h:8000", 0));
    CHECK(admin_cross_origin(NULL, "http://h:8000", NULL, 0)); /* no Host to match */
    CHECK(admin_cross_origin(NULL, "http://h:8000/", "h:8000", 0));
    CHECK(admin_cross_origin(NULL, "http://u@h:8000", "h:8000", 0));
    CHECK(admin_cross_origin(NULL, "http://h:", "h:", 0));
    CHECK(admin_cross_origin(NULL, "http://h:99999", "h:99999", 0));
    CHECK(admin_cross_origin(NULL, "http://[::1]:8001", "[::1]:8000", 0));
    CHECK(admin_cross_origin(NULL, "", "h:8000", 0));
    CHECK(admin_cross_origin("same-origin", "http://g:8000", "h:8000", 0));
}

int main(void)
{
    RUN(command_paths_and_views);
    RUN(paths_that_are_not_commands);
    RUN(client_ids);
    RUN(origins);
    return testlib_done();
}
