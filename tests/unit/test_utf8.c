/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_utf8: UTF-8 validation and strict charset conversion through iconv.
 */
#include "core/utf8.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void utf8_validation(void)
{
    CHECK(utf8_valid("caf\xc3\xa9", 5));
    CHECK(!utf8_valid("caf\xc3", 4));
}

static void to_utf8_via_iconv(void)
{
    CHECK_OWNED(utf8_from_charset("caf\xe9", 4, "ISO-8859-1"), "caf\xc3\xa9");
    CHECK_OWNED(utf8_from_charset("caf\xe9", 4, "latin1"), "caf\xc3\xa9");
    CHECK_OWNED(utf8_from_charset("\x80", 1, "cp1252"), "\xe2\x82\xac");
    CHECK_OWNED(utf8_from_charset("caf\xc3\xa9", 5, "UTF-8"), "caf\xc3\xa9");
    CHECK_OWNED(utf8_from_charset("", 0, "UTF-8"), "");
    CHECK_NULL(utf8_from_charset("caf\xe9", 4, "UTF-8"));
    CHECK_NULL(utf8_from_charset("abc", 3, "NO-SUCH-CHARSET"));
    char big[5000];
    memset(big, '\xe9', sizeof(big));
    char *u = utf8_from_charset(big, sizeof(big), "ISO-8859-1");
    CHECK(u && strlen(u) == 2 * sizeof(big));
    free(u);
}

int main(void)
{
    RUN(utf8_validation);
    RUN(to_utf8_via_iconv);
    return testlib_done();
}
