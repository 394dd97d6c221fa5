/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_redirect: reading a sibling's room document (upstream/redirect_parse.c): the room left
 * for a mount is the smaller of the server's and the mount's, an unlimited mount leaves the
 * server's, anything else is -1, and counts from the text cannot overflow the subtraction.
 */
#include "upstream/redirect.h"

#include <limits.h>
#include <string.h>

#include "testlib.h"

static long room(const char *text, const char *mount)
{
    return redirect_parse_room(text, strlen(text), mount);
}

static void rooms(void)
{
    const char *doc = "rimecast-room 1\nclients 10 100\nmount /live 5 50\nmount /free 3 -1\n"
                      "mount /full 60 50\n";
    CHECK(room(doc, "/live") == 45);
    CHECK(room(doc, "/free") == 90);
    CHECK(room(doc, "/full") == 0);
    CHECK(room(doc, "/absent") == -1);
    CHECK(room("clients 10 100\nmount /live 5 50\n", "/live") == -1); /* not a room document */
    CHECK(room("rimecast-room 1\nmount /live 5 50\n", "/live") == -1); /* no clients line */
    CHECK(room("", "/live") == -1);
}

static void extremes(void)
{
    /* a hostile or broken sibling: counts at the ends of a long */
    CHECK(room("rimecast-room 1\nclients -9223372036854775808 9223372036854775807\n"
               "mount /live -9223372036854775808 9223372036854775807\n", "/live") == LONG_MAX);
    CHECK(room("rimecast-room 1\nclients 9223372036854775807 -9223372036854775808\n"
               "mount /live 1 2\n", "/live") == 0);
    CHECK(room("rimecast-room 1\nclients -5 10\nmount /live -5 10\n", "/live") == 10);
}

int main(void)
{
    RUN(rooms);
    RUN(extremes);
    return testlib_done();
}
