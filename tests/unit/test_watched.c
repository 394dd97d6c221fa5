/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_watched: a watched file is parsed once per version on disk; a file that does not exist
 * reads as empty; a file that exists but cannot be read keeps the version read before, or
 * gives no snapshot when nothing was read yet; a snapshot put in by a writer is not parsed
 * again. (A directory stands for an unreadable file: as root, modes do not stop a read.)
 */
#include "core/watched.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

typedef struct {
    long lines; /* -1: the file did not exist */
} count_t;

static int parses;

static void *parse_count(const char *path, const char *text, size_t len)
{
    (void)path;
    count_t *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    parses++;
    c->lines = text ? 0 : -1;
    for (size_t i = 0; text && i < len; i++)
        c->lines += text[i] == '\n';
    return c;
}

static void free_count(void *c)
{
    free(c);
}

static const watched_kind_t count_kind = {"test file", parse_count, free_count};

static void write_lines(const char *path, int n)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    for (int i = 0; i < n; i++)
        fprintf(f, "line %d\n", i);
    fclose(f);
}

static long lines(watched_t *w)
{
    count_t *c = watched_current(w);
    return c ? c->lines : -100;
}

static void test_versions_errors_and_writers(void)
{
    const char *base = getenv("TMPDIR");
    char dir[200], path[300], other[300];
    snprintf(dir, sizeof(dir), "%s/test_watched_XXXXXX", base && *base ? base : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/list", dir);
    snprintf(other, sizeof(other), "%s/never-readable", dir);

    watched_t *w = watched_get(path, &count_kind);
    CHECK(w != NULL && watched_get(path, &count_kind) == w);
    if (!w)
        return;
    CHECK(lines(w) == -1); /* does not exist: empty */
    CHECK(lines(w) == -1 && parses == 1);

    write_lines(path, 3);
    CHECK(lines(w) == 3 && parses == 2);
    void *snap = watched_current(w);
    CHECK(watched_current(w) == snap && parses == 2); /* unchanged: one stat, no parse */

    /* exists but cannot be read: the version before stays */
    CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
    CHECK(lines(w) == 3 && parses == 2);
    watched_lock(w);
    void *got = NULL;
    CHECK(watched_reload_locked(w, &got) == -EISDIR && got == snap);
    watched_unlock(w);

    /* nothing ever read and unreadable: no snapshot */
    CHECK(mkdir(other, 0700) == 0);
    watched_t *never = watched_get(other, &count_kind);
    CHECK(never != NULL && watched_current(never) == NULL);

    /* readable again */
    CHECK(rmdir(path) == 0);
    write_lines(path, 5);
    CHECK(lines(w) == 5 && parses == 3);

    /* a writer's snapshot is current as soon as it is put in, and the file not parsed again */
    watched_lock(w);
    write_lines(path, 7);
    struct stat st;
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && fstat(fd, &st) == 0);
    if (fd >= 0)
        close(fd);
    count_t *mine = calloc(1, sizeof(*mine));
    CHECK(mine != NULL);
    if (mine) {
        mine->lines = 7;
        watched_replace_locked(w, mine, &st);
    }
    watched_unlock(w);
    CHECK(watched_current(w) == mine && parses == 3);

    /* removed: empty again */
    CHECK(unlink(path) == 0);
    CHECK(lines(w) == -1 && parses == 4);

    rmdir(other);
    rmdir(dir);
}

int main(void)
{
    RUN(test_versions_errors_and_writers);
    return testlib_done();
}
