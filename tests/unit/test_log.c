/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_log: the in-memory ring of the last error-log lines behind /admin/log: oldest first,
 * bounded at LOG_RECENT_LEN (the oldest lines go), lines the level filters out are not kept,
 * long lines are cut and control characters replaced, and concurrent writers never tear a line.
 */
#include "core/log.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "testlib.h"

static log_line_t lines[LOG_RECENT_LEN + 10];

static void starts_empty_and_keeps_lines_oldest_first(void)
{
    log_recent_clear();
    CHECK(log_recent(lines, LOG_RECENT_LEN) == 0);
    time_t before = time(NULL);
    log_warn("first %d", 1);
    log_error("second");
    log_info("third");
    CHECK(log_recent(lines, LOG_RECENT_LEN) == 3);
    CHECK_STR(lines[0].text, "starts_empty_and_keeps_lines_oldest_first first 1");
    CHECK(lines[0].level == LOG_WARN);
    CHECK(lines[1].level == LOG_ERROR);
    CHECK_STR(lines[2].text, "starts_empty_and_keeps_lines_oldest_first third");
    CHECK(lines[2].time >= before && lines[2].time <= time(NULL));
    CHECK_STR(log_level_name(LOG_ERROR), "EROR");
    CHECK_STR(log_level_name(9), "");
}

static void keeps_only_the_last_lines(void)
{
    log_recent_clear();
    for (int i = 0; i < LOG_RECENT_LEN + 50; i++)
        log_msg(LOG_WARN, "t", "line %d", i);
    CHECK(log_recent(lines, LOG_RECENT_LEN + 10) == LOG_RECENT_LEN);
    CHECK_STR(lines[0].text, "t line 50");
    char want[32];
    snprintf(want, sizeof(want), "t line %d", LOG_RECENT_LEN + 49);
    CHECK_STR(lines[LOG_RECENT_LEN - 1].text, want);
    /* less room: the newest ones */
    CHECK(log_recent(lines, 2) == 2);
    CHECK_STR(lines[1].text, want);
    CHECK(log_recent(lines, 0) == 0);
}

static void filtered_lines_are_not_kept(void)
{
    log_recent_clear();
    log_set_level(LOG_WARN);
    log_debug("not kept");
    log_info("not kept either");
    log_warn("kept");
    log_set_level(LOG_INFO);
    CHECK(log_recent(lines, LOG_RECENT_LEN) == 1);
    CHECK_STR(lines[0].text, "filtered_lines_are_not_kept kept");
}

static void long_lines_are_cut_and_controls_replaced(void)
{
    log_recent_clear();
    static char big[3000];
    memset(big, 'x', sizeof(big) - 1);
    log_msg(LOG_ERROR, "f", "%s", big);
    log_msg(LOG_ERROR, "f", "a\nb\rc\x1b<script>");
    CHECK(log_recent(lines, LOG_RECENT_LEN) == 2);
    CHECK(strlen(lines[0].text) == LOG_RECENT_TEXT - 1);
    CHECK_STR(lines[1].text, "f a?b?c?<script>");
}

static void *writer(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 2000; i++)
        log_msg(LOG_WARN, "w", "writer %ld line %d end", id, i);
    return NULL;
}

static void concurrent_writers_never_tear_a_line(void)
{
    log_recent_clear();
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, writer, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    int n = log_recent(lines, LOG_RECENT_LEN);
    CHECK(n == LOG_RECENT_LEN);
    int whole = 0;
    for (int i = 0; i < n; i++) {
        long id;
        int k;
        char end[8];
        if (sscanf(lines[i].text, "w writer %ld line %d %7s", &id, &k, end) == 3 &&
            strcmp(end, "end") == 0 && id >= 0 && id < 4 && k >= 0 && k < 2000)
            whole++;
    }
    CHECK(whole == n);
}

int main(void)
{
    /* the lines go to a file too: keep them off the test's output */
    CHECK(log_open("/dev/null", "/dev/null", LOG_INFO, NULL, 0) == 0);
    RUN(starts_empty_and_keeps_lines_oldest_first);
    RUN(keeps_only_the_last_lines);
    RUN(filtered_lines_are_not_kept);
    RUN(long_lines_are_cut_and_controls_replaced);
    RUN(concurrent_writers_never_tear_a_line);
    log_close();
    return testlib_done();
}
