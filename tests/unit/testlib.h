/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * testlib: a minimal unit-test harness. CHECK records a failure and goes on; the test binary
 * prints "N passed, N failed" and exits non-zero when anything failed (automake reads the exit).
 */
#ifndef RIMECAST_TESTLIB_H
#define RIMECAST_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int testlib_passed, testlib_failed;

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (cond) {                                                                            \
            testlib_passed++;                                                                  \
        } else {                                                                               \
            testlib_failed++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);           \
        }                                                                                      \
    } while (0)

#define CHECK_STR(a, b)                                                                        \
    do {                                                                                       \
        const char *ca_ = (a), *cb_ = (b);                                                     \
        if (ca_ && cb_ && strcmp(ca_, cb_) == 0) {                                             \
            testlib_passed++;                                                                  \
        } else {                                                                               \
            testlib_failed++;                                                                  \
            fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
                    ca_ ? ca_ : "(null)", cb_ ? cb_ : "(null)");                                \
        }                                                                                      \
    } while (0)

/* Compares a malloc'd result with the expected string and frees it. */
#define CHECK_OWNED(expr, want)                                                                \
    do {                                                                                       \
        char *got_ = (expr);                                                                   \
        CHECK_STR(got_, want);                                                                 \
        free(got_);                                                                            \
    } while (0)

#define CHECK_NULL(expr)                                                                       \
    do {                                                                                       \
        char *got_ = (expr);                                                                   \
        CHECK(got_ == NULL);                                                                   \
        free(got_);                                                                            \
    } while (0)

#define RUN(fn)                                                                                \
    do {                                                                                       \
        fprintf(stderr, "-- %s\n", #fn);                                                       \
        fn();                                                                                  \
    } while (0)

static inline int testlib_done(void)
{
    printf("%d passed, %d failed\n", testlib_passed, testlib_failed);
    return testlib_failed ? 1 : 0;
}

#endif
