/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_record: typed, length-prefixed records: what is written reads back field by field, a
 * NULL string stays apart from an empty one, and input cut anywhere or lying about its
 * lengths sets the reader's error instead of reading past the end.
 */
#include "core/record.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void write_two(buf_t *b)
{
    size_t at = rec_begin(b, 7);
    rec_u8(b, 0xab);
    rec_u32(b, 0xdeadbeef);
    rec_u64(b, UINT64_MAX - 1);
    rec_i64(b, -42);
    rec_str(b, "mount");
    rec_str(b, NULL);
    rec_str(b, "");
    rec_bytes(b, "\0\1\2", 3);
    rec_end(b, at);
    at = rec_begin(b, 9);
    rec_end(b, at);
}

static void fields_read_back(void)
{
    buf_t b = BUF_INIT;
    write_two(&b);
    CHECK(b.error == 0);
    rec_reader_t r, f;
    uint16_t type = 0;
    rec_reader_init(&r, b.data, b.len);
    CHECK(rec_next(&r, &type, &f) == 1 && type == 7);
    CHECK(rec_get_u8(&f) == 0xab);
    CHECK(rec_get_u32(&f) == 0xdeadbeef);
    CHECK(rec_get_u64(&f) == UINT64_MAX - 1);
    CHECK(rec_get_i64(&f) == -42);
    char *s = rec_get_str(&f);
    CHECK_STR(s, "mount");
    free(s);
    CHECK(rec_get_str(&f) == NULL && !f.error); /* NULL written, NULL read, no error */
    s = rec_get_str(&f);
    CHECK(s && s[0] == '\0');
    free(s);
    size_t n;
    const unsigned char *p = rec_get_bytes(&f, &n);
    CHECK(p && n == 3 && p[0] == 0 && p[2] == 2);
    CHECK(!f.error && f.p == f.end);
    CHECK(rec_get_u32(&f) == 0 && f.error); /* past the record: an error, not its neighbour */
    CHECK(rec_next(&r, &type, &f) == 1 && type == 9 && f.p == f.end);
    CHECK(rec_next(&r, &type, &f) == 0);
    buf_free(&b);
}

static void cut_input_is_an_error_everywhere(void)
{
    buf_t b = BUF_INIT;
    write_two(&b);
    for (size_t len = 1; len < b.len - 6; len++) { /* the second record is 6 bytes */
        rec_reader_t r, f;
        uint16_t type;
        rec_reader_init(&r, b.data, len);
        int rc = rec_next(&r, &type, &f);
        CHECK(rc == -1 && r.error);
    }
    buf_free(&b);
}

static void lengths_that_lie_are_refused(void)
{
    buf_t b = BUF_INIT;
    size_t at = rec_begin(&b, 1);
    rec_u32(&b, 1000); /* a string's length with 2 bytes after it */
    buf_append(&b, "ab", 2);
    rec_end(&b, at);
    rec_reader_t r, f;
    uint16_t type;
    rec_reader_init(&r, b.data, b.len);
    CHECK(rec_next(&r, &type, &f) == 1);
    size_t n = 99;
    CHECK(rec_get_bytes(&f, &n) == NULL && n == 0 && f.error);
    CHECK(rec_get_u64(&f) == 0); /* sticky */
    buf_free(&b);
}

int main(void)
{
    RUN(fields_read_back);
    RUN(cut_input_is_an_error_everywhere);
    RUN(lengths_that_lie_are_refused);
    return testlib_done();
}
