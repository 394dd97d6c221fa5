/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_chunked: the chunked body decoder gives the same plain body however the input is split
 * (every split point, byte by byte), skips extensions and trailers, stops at the end of the
 * body, and refuses bad hex, overflow, missing CRLFs and over-long lines with their codes.
 */
#include "http/chunked.h"

#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static const char sample[] = "5\r\nhello\r\n"
                             "1a;name=value;x=\"q\"\r\nabcdefghijklmnopqrstuvwxyz\r\n"
                             "A \r\n0123456789\r\n"
                             "0\r\nX-Trailer: t\r\nOther: u\r\n\r\n";
static const char sample_body[] = "helloabcdefghijklmnopqrstuvwxyz0123456789";

/* Decodes s in pieces of the given sizes (cycled); returns the body length or the error. */
static ssize_t decode_pieces(const char *s, size_t len, const size_t *sizes, size_t nsizes,
                             char *body, size_t *used_total)
{
    chunked_t d;
    chunked_init(&d);
    unsigned char *copy = malloc(len + 1);
    memcpy(copy, s, len);
    size_t at = 0, out = 0, k = 0, used_sum = 0;
    ssize_t r = 0;
    while (at < len) {
        size_t n = sizes[k++ % nsizes];
        if (n > len - at)
            n = len - at;
        size_t used;
        r = chunked_decode(&d, copy + at, n, &used);
        if (r < 0)
            break;
        memcpy(body + out, copy + at, (size_t)r);
        out += (size_t)r;
        used_sum += used;
        at += n;
        if (chunked_done(&d))
            break;
    }
    free(copy);
    if (used_total)
        *used_total = used_sum;
    return r < 0 ? r : (ssize_t)out;
}

static ssize_t decode_all(const char *s, char *body)
{
    size_t len = strlen(s);
    return decode_pieces(s, len, &len, 1, body, NULL);
}

static void whole_body_at_once(void)
{
    char body[256];
    ssize_t n = decode_all(sample, body);
    CHECK(n == (ssize_t)strlen(sample_body));
    CHECK(n > 0 && memcmp(body, sample_body, (size_t)n) == 0);
}

static void every_split_point_gives_the_same_body(void)
{
    size_t len = strlen(sample);
    for (size_t cut = 1; cut < len; cut++) {
        size_t sizes[2] = {cut, len};
        char body[256];
        ssize_t n = decode_pieces(sample, len, sizes, 2, body, NULL);
        CHECK(n == (ssize_t)strlen(sample_body));
        CHECK(n > 0 && memcmp(body, sample_body, (size_t)n) == 0);
    }
    for (size_t a = 1; a < 8; a++)
        for (size_t b = 1; b < 8; b++) {
            size_t sizes[2] = {a, b};
            char body[256];
            ssize_t n = decode_pieces(sample, len, sizes, 2, body, NULL);
            CHECK(n == (ssize_t)strlen(sample_body) && memcmp(body, sample_body, (size_t)n) == 0);
        }
}

static void bytes_after_the_body_are_not_consumed(void)
{
    chunked_t d;
    chunked_init(&d);
    unsigned char buf[] = "3\r\nabc\r\n0\r\n\r\nNEXT";
    size_t used;
    ssize_t n = chunked_decode(&d, buf, sizeof(buf) - 1, &used);
    CHECK(n == 3 && memcmp(buf, "abc", 3) == 0);
    CHECK(chunked_done(&d));
    CHECK(used == sizeof(buf) - 1 - 4);
    CHECK(chunked_decode(&d, buf, 4, &used) == 0 && used == 0);
}

static void large_and_uppercase_sizes(void)
{
    chunked_t d;
    chunked_init(&d);
    unsigned char head[] = "00FFFF\r\n";
    CHECK(chunked_decode(&d, head, sizeof(head) - 1, NULL) == 0);
    unsigned char *data = malloc(0xffff);
    memset(data, 'x', 0xffff);
    CHECK(chunked_decode(&d, data, 0xffff, NULL) == 0xffff);
    free(data);
    unsigned char tail[] = "\r\n0\r\n\r\n";
    CHECK(chunked_decode(&d, tail, sizeof(tail) - 1, NULL) == 0 && chunked_done(&d));
}

static int error_of(const char *s)
{
    char body[8192];
    return (int)decode_all(s, body);
}

static void bad_framing_is_refused(void)
{
    CHECK(error_of("x\r\nabc\r\n") == CHUNKED_ERR_SYNTAX);          /* not hex */
    CHECK(error_of("\r\n") == CHUNKED_ERR_SYNTAX);                  /* no digits */
    CHECK(error_of(";ext\r\n") == CHUNKED_ERR_SYNTAX);
    CHECK(error_of("3\nabc\r\n") == CHUNKED_ERR_SYNTAX);            /* bare LF */
    CHECK(error_of("3\r\nabcX\r\n") == CHUNKED_ERR_SYNTAX);         /* data longer than size */
    CHECK(error_of("3\r\nabc\rX") == CHUNKED_ERR_SYNTAX);           /* CR without LF */
    CHECK(error_of("3\r\nabc\n0\r\n\r\n") == CHUNKED_ERR_SYNTAX);   /* LF without CR */
    CHECK(error_of("3x\r\nabc\r\n") == CHUNKED_ERR_SYNTAX);
    CHECK(error_of("-3\r\nabc\r\n") == CHUNKED_ERR_SYNTAX);
    CHECK(error_of("0\r\nTrailer\n\r\n") == CHUNKED_ERR_SYNTAX);
    CHECK(error_of("0\r\n\rX") == CHUNKED_ERR_SYNTAX);
    CHECK(error_of("ffffffffffffffffff\r\n") == CHUNKED_ERR_OVERFLOW);
    CHECK(error_of("10000000001\r\n") == CHUNKED_ERR_OVERFLOW);     /* 2^40 + 1 */
    CHECK(error_of("10000000000\r\n") > CHUNKED_ERR_OVERFLOW);      /* 2^40: accepted */
}

static void line_limits(void)
{
    char *s = malloc(CHUNKED_MAX_LINE + 16);
    strcpy(s, "1;");
    memset(s + 2, 'e', CHUNKED_MAX_LINE);
    strcpy(s + 2 + CHUNKED_MAX_LINE, "\r\n");
    CHECK(error_of(s) == CHUNKED_ERR_TOO_LONG);
    memset(s, '0', CHUNKED_MAX_LINE + 1);
    strcpy(s + CHUNKED_MAX_LINE + 1, "\r\n");
    CHECK(error_of(s) == CHUNKED_ERR_TOO_LONG);
    strcpy(s, "0\r\n");
    memset(s + 3, 't', CHUNKED_MAX_LINE + 1);
    strcpy(s + 3 + CHUNKED_MAX_LINE + 1, "\r\n\r\n");
    CHECK(error_of(s) == CHUNKED_ERR_TOO_LONG);
    /* exactly at the limit is fine */
    strcpy(s, "1;");
    memset(s + 2, 'e', CHUNKED_MAX_LINE - 2);
    strcpy(s + CHUNKED_MAX_LINE, "\r\nz\r\n0\r\n\r\n");
    char body[8];
    CHECK(decode_all(s, body) == 1 && body[0] == 'z');
    free(s);
}

static void errors_are_sticky(void)
{
    chunked_t d;
    chunked_init(&d);
    unsigned char bad[] = "zz";
    CHECK(chunked_decode(&d, bad, 2, NULL) == CHUNKED_ERR_SYNTAX);
    unsigned char good[] = "3\r\nabc\r\n";
    CHECK(chunked_decode(&d, good, sizeof(good) - 1, NULL) == CHUNKED_ERR_SYNTAX);
    CHECK(chunked_strerror(CHUNKED_ERR_OVERFLOW)[0] != '\0');
}

int main(void)
{
    RUN(whole_body_at_once);
    RUN(every_split_point_gives_the_same_body);
    RUN(bytes_after_the_body_are_not_consumed);
    RUN(large_and_uppercase_sizes);
    RUN(bad_framing_is_refused);
    RUN(line_limits);
    RUN(errors_are_sticky);
    return testlib_done();
}
