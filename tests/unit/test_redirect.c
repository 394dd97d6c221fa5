/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_redirect: reading a sibling's room document (upstream/redirect_parse.c): the room left
 * for a mount is the smallest of the server's, its listeners' and the mount's, an unlimited
 * mount leaves the server's, anything else is -1, and counts from the text cannot overflow the
 * subtraction; a load's share of its limits is the largest of its ratios, a state other than
 * serving is read as such, and lines a reader does not know are skipped.
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
    /* a hostile or broken sibling: counts at the ends of a long (capped at 10^12) */
    CHECK(room("rimecast-room 1\nclients -9223372036854775808 9223372036854775807\n"
               "mount /live -9223372036854775808 9223372036854775807\n", "/live") ==
          1000000000000L);
    redirect_load_t l;
    const char *huge = "rimecast-room 1\nclients 9223372036854775807 1\n"
                       "listeners 9223372036854775807 1\nmount /live 9223372036854775807 1\n";
    CHECK(redirect_parse_load(huge, strlen(huge), "/live", &l) == 0);
    CHECK(redirect_load_ppm(&l) == 1000000000000L * 1000000); /* no overflow */
    CHECK(redirect_load_room(&l) == 0);
    CHECK(room("rimecast-room 1\nclients 9223372036854775807 -9223372036854775808\n"
               "mount /live 1 2\n", "/live") == 0);
    CHECK(room("rimecast-room 1\nclients -5 10\nmount /live -5 10\n", "/live") == 10);
}

static void loads(void)
{
    redirect_load_t l;
    const char *doc = "rimecast-room 1\nstate serving\nclients 50 200\nlisteners 40 80\n"
                      "some-later-line 1 2 3\nmount /live 30 40\nmount /open 10 -1\n";
    CHECK(redirect_parse_load(doc, strlen(doc), "/live", &l) == 0);
    CHECK(l.serving == 1 && l.clients == 50 && l.clients_max == 200);
    CHECK(l.listeners == 40 && l.listeners_max == 80 && l.mount == 30 && l.mount_max == 40);
    CHECK(redirect_load_ppm(&l) == 750000); /* the mount's 30 of 40 is the largest share */
    CHECK(redirect_load_room(&l) == 10);
    CHECK(redirect_parse_load(doc, strlen(doc), "/open", &l) == 0);
    CHECK(redirect_load_ppm(&l) == 500000); /* the listeners' 40 of 80 */
    CHECK(redirect_load_room(&l) == 40);
    /* no listeners line (an earlier version): no server-wide listener limit */
    const char *old = "rimecast-room 1\nclients 10 100\nmount /live 5 -1\n";
    CHECK(redirect_parse_load(old, strlen(old), "/live", &l) == 0);
    CHECK(l.serving == 1 && l.listeners_max == -1 && redirect_load_ppm(&l) == 100000);
    const char *stopping = "rimecast-room 1\nstate stopping\nclients 1 100\nmount /live 0 -1\n";
    CHECK(redirect_parse_load(stopping, strlen(stopping), "/live", &l) == 0 && l.serving == 0);
    const char *odd = "rimecast-room 1\nstate resting\nclients 1 100\nmount /live 0 -1\n";
    CHECK(redirect_parse_load(odd, strlen(odd), "/live", &l) == 0 && l.serving == 0);
    /* a limit of 0 is full: more than any share */
    const char *zero = "rimecast-room 1\nclients 1 100\nmount /live 0 0\n";
    CHECK(redirect_parse_load(zero, strlen(zero), "/live", &l) == 0);
    CHECK(redirect_load_ppm(&l) >= 1000000 && redirect_load_room(&l) == 0);
    /* nothing limited: no share, all the room there is */
    redirect_load_t none = {.clients_max = -1, .listeners_max = -1, .mount_max = -1};
    CHECK(redirect_load_ppm(&none) == 0 && redirect_load_room(&none) == LONG_MAX);
}

int main(void)
{
    RUN(loads);
    RUN(rooms);
    RUN(extremes);
    return testlib_done();
}
