/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_buf: the growable buffer: appends of every kind keep data NUL-terminated, growth
 * across many doublings, printf formatting larger than the spare room, taking the bytes, and
 * the sticky error that turns later appends into no-ops.
 */
#include "core/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static void appends_keep_text_terminated(void)
{
    buf_t b = BUF_INIT;
    CHECK(b.data == NULL && b.len == 0);
    CHECK(buf_append(&b, "ab", 2) == 0);
    CHECK(buf_append_char(&b, 'c') == 0);
    CHECK(buf_append_str(&b, "de") == 0);
    CHECK(buf_appendf(&b, "-%d-%s", 42, "x") == 0);
    CHECK(buf_append(&b, NULL, 0) == 0);
    CHECK(b.len == 10 && b.cap > b.len);
    CHECK_STR(b.data, "abcde-42-x");
    buf_free(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0 && b.error == 0);
}

static void grows_through_many_doublings(void)
{
    buf_t b = BUF_INIT;
    for (int i = 0; i < 100000; i++)
        buf_append_char(&b, (char)('a' + i % 26));
    CHECK(b.error == 0 && b.len == 100000 && strlen(b.data) == 100000);
    CHECK(b.data[99999] == 'a' + 99999 % 26);
    buf_free(&b);
}

static void appendf_larger_than_the_spare_room(void)
{
    buf_t b = BUF_INIT;
    char big[3000];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    CHECK(buf_append_str(&b, "x") == 0);
    CHECK(buf_appendf(&b, "[%s]", big) == 0);
    CHECK(b.len == 1 + 2 + sizeof(big) - 1);
    CHECK(b.data[0] == 'x' && b.data[1] == '[' && b.data[b.len - 1] == ']');
    CHECK(b.data[b.len] == '\0' && strlen(b.data) == b.len);
    CHECK(buf_appendf(&b, "%s", "") == 0 && b.len == 1 + 2 + sizeof(big) - 1);
    buf_free(&b);
}

static void take_hands_over_the_bytes(void)
{
    buf_t b = BUF_INIT;
    size_t len = 99;
    char *s = buf_take(&b, &len); /* nothing appended: an empty string, not NULL */
    CHECK_STR(s, "");
    CHECK(len == 0);
    free(s);
    buf_append_str(&b, "hello");
    s = buf_take(&b, &len);
    CHECK_STR(s, "hello");
    CHECK(len == 5 && b.data == NULL && b.len == 0 && b.cap == 0);
    free(s);
    CHECK(buf_append_str(&b, "again") == 0); /* usable after take */
    CHECK_OWNED(buf_take(&b, NULL), "again");
}

static void error_is_sticky(void)
{
    buf_t b = BUF_INIT;
    size_t len = 7;
    buf_append_str(&b, "kept");
    CHECK(buf_reserve(&b, SIZE_MAX) == -ENOMEM); /* cannot be satisfied */
    CHECK(b.error == -ENOMEM);
    CHECK(buf_append_str(&b, "lost") == -ENOMEM);
    CHECK(buf_appendf(&b, "%d", 1) == -ENOMEM);
    CHECK(buf_append_char(&b, 'x') == -ENOMEM);
    CHECK_STR(b.data, "kept"); /* what was there is untouched */
    CHECK(buf_take(&b, &len) == NULL);
    CHECK(len == 7 && b.data == NULL && b.error == 0);
    buf_append_str(&b, "x");
    buf_reserve(&b, SIZE_MAX - 1);
    buf_free(&b); /* clears the error too */
    CHECK(b.error == 0 && buf_append_str(&b, "ok") == 0);
    CHECK_STR(b.data, "ok");
    buf_free(&b);
}

int main(void)
{
    RUN(appends_keep_text_terminated);
    RUN(grows_through_many_doublings);
    RUN(appendf_larger_than_the_spare_room);
    RUN(take_hands_over_the_bytes);
    RUN(error_is_sticky);
    return testlib_done();
}
