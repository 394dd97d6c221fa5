/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_str: the generic string helpers: base64 (round trip and strict decoding), case-
 * insensitive comparison and duplication.
 */
#include "core/str.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void base64_round_trip_and_strictness(void)
{
    unsigned char bin[256], dec[400];
    for (int i = 0; i < 256; i++)
        bin[i] = (unsigned char)i;
    for (size_t n = 0; n <= 256; n += 1 + n / 7) {
        char *enc = str_base64_encode(bin, n);
        long got = str_base64_decode(enc, strlen(enc), dec, sizeof(dec));
        CHECK(got == (long)n && memcmp(dec, bin, n) == 0);
        free(enc);
    }
    CHECK_OWNED(str_base64_encode((const unsigned char *)"source:hackme", 13),
                "c291cmNlOmhhY2ttZQ==");
    CHECK(str_base64_decode("Zm9vYg==", 8, dec, sizeof(dec)) == 4 && memcmp(dec, "foob", 5) == 0);
    CHECK(str_base64_decode("", 0, dec, 1) == 0 && dec[0] == '\0');
    CHECK(str_base64_decode("Zm9vYg", 6, dec, sizeof(dec)) == -1);     /* no padding */
    CHECK(str_base64_decode("Zm9v\nYg==", 9, dec, sizeof(dec)) == -1); /* whitespace */
    CHECK(str_base64_decode("Zm=vYg==", 8, dec, sizeof(dec)) == -1);   /* '=' inside */
    CHECK(str_base64_decode("Zg==Zg==", 8, dec, sizeof(dec)) == -1);
    CHECK(str_base64_decode("Z===", 4, dec, sizeof(dec)) == -1);
    CHECK(str_base64_decode("Zh==", 4, dec, sizeof(dec)) == -1);       /* non-zero pad bits */
    CHECK(str_base64_decode("Zm9vYg==", 8, dec, 6) == -1);             /* outlen too small */
    CHECK(str_base64_decode("Zm9vYg==", 8, dec, 7) == 4);
}

static void ieq_and_dup(void)
{
    CHECK(str_ieq("Content-Type", 12, "content-type"));
    CHECK(!str_ieq("Content-Type", 7, "content-type"));
    CHECK(!str_ieq("Content", 7, "content-type"));
    CHECK(str_ieq("", 0, ""));
    CHECK(!str_ieq(NULL, 0, ""));
    CHECK(str_dup(NULL) == NULL);
    CHECK_OWNED(str_dup("x"), "x");
    CHECK_OWNED(str_ndup("hello", 4), "hell");
}

int main(void)
{
    RUN(base64_round_trip_and_strictness);
    RUN(ieq_and_dup);
    return testlib_done();
}
