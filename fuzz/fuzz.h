/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the libFuzzer drivers share. */
#ifndef RIMECAST_FUZZ_H
#define RIMECAST_FUZZ_H

/* An invariant of the code under test: a trap (a crash input for libFuzzer) when it fails. */
#define REQUIRE(cond)                                                                          \
    do {                                                                                       \
        if (!(cond))                                                                           \
            __builtin_trap();                                                                  \
    } while (0)

#endif
