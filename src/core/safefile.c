/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * safefile: opening a file the server writes without being led to another one (see
 * safefile.h). Cold path: start-up, reloads, rotations, a dump file per source.
 */
#include "core/safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
    int set;
    uid_t uid;
    gid_t gid;
} owner;

void safefile_set_owner(uid_t uid, gid_t gid)
{
    owner.set = 1;
    owner.uid = uid;
    owner.gid = gid;
}

static int open_flags(int flags)
{
    /* O_NONBLOCK: a FIFO planted at the name must not hang the open */
    return O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK |
           (flags & SAFEFILE_APPEND ? O_APPEND : 0);
}

static int refuse(int fd, int err, const char *text, const char **why)
{
    if (fd >= 0)
        close(fd);
    *why = text ? text : err == ELOOP ? "it is a symbolic link" : strerror(err);
    return -err;
}

static int blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* open(2) with the effective ids of the owner; errno kept. Root is taken back at once: if that
 * fails the process is in no state to go on. */
static int open_as_owner(const char *path, int oflags)
{
    uid_t euid = geteuid();
    gid_t egid = getegid();
    if (setegid(owner.gid) < 0)
        return -1;
    if (seteuid(owner.uid) < 0) {
        int err = errno;
        if (setegid(egid) < 0)
            abort();
        errno = err;
        return -1;
    }
    int fd = open(path, oflags | O_CREAT, 0644);
    int err = errno;
    if (seteuid(euid) < 0 || setegid(egid) < 0)
        abort();
    errno = err;
    return fd;
}

/* May a symbolic link in the directory dfd be followed as root? Only where no one but root
 * can have put it there or can swap it: a directory of root's that no group or other writes. */
static int links_trusted_in(int dfd)
{
    struct stat st;
    return fstat(dfd, &st) == 0 && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* As root: the directory path lies in, reached one name at a time, following a symbolic link
 * only where links_trusted_in says so. A descriptor (O_PATH) and *name, the last name of path;
 * or -errno with *why set. */
static int open_parent(const char *path, const char **name, const char **why)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof(buf))
        return refuse(-1, ENAMETOOLONG, len ? NULL : "no file name", why);
    memcpy(buf, path, len + 1);
    int dfd = open(buf[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return refuse(-1, errno, NULL, why);
    char *p = buf;
    for (char *slash; (slash = strchr(p, '/')) != NULL;) {
        *slash = '\0';
        char *next = slash + 1;
        while (*next == '/')
            next++;
        if (*p) {
            int nfd = openat(dfd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (nfd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
                struct stat st;
                if (fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
                    if (!links_trusted_in(dfd))
                        return refuse(dfd, ELOOP, "a directory on its path is a symbolic link "
                                      "in a directory others than root may write", why);
                    nfd = openat(dfd, p, O_PATH | O_DIRECTORY | O_CLOEXEC);
                } else {
                    errno = ENOTDIR;
                }
            }
            if (nfd < 0)
                return refuse(dfd, errno, NULL, why);
            close(dfd);
            dfd = nfd;
        }
        p = next;
    }
    if (!*p)
        return refuse(dfd, EISDIR, "it names a directory", why);
    *name = path + (p - buf);
    return dfd;
}

/* As root, where the owner may not open path (or for a file of root's): created new and given to the owner, or an
 * existing plain file with one link that is the owner's already. With SAFEFILE_ROOTS the file
 * is root's instead: a new one is not given away, an existing one must be root's. */
static int open_as_root(const char *path, int flags, const char **why)
{
    const char *name;
    int dfd = open_parent(path, &name, why);
    if (dfd < 0)
        return dfd;
    int created = 1;
    int fd = openat(dfd, name, open_flags(flags) | O_CREAT | O_EXCL, 0644);
    if (fd < 0 && errno == EEXIST) {
        created = 0;
        fd = openat(dfd, name, open_flags(flags));
    }
    int err = errno;
    close(dfd);
    if (fd < 0)
        return refuse(-1, err, NULL, why);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return refuse(fd, errno, NULL, why);
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
        return refuse(fd, EPERM, "it is not a plain file with a single link", why);
    uid_t want = flags & SAFEFILE_ROOTS ? 0 : owner.uid;
    if (created && want != 0) {
        if (fchown(fd, owner.uid, owner.gid) < 0)
            return refuse(fd, errno, NULL, why);
    } else if (!created && st.st_uid != want) {
        return refuse(fd, EPERM, want ? "it belongs to another user than the one the server "
                      "runs as" : "it does not belong to root", why);
    }
    return blocking(fd);
}

int safefile_std_stream(const char *path)
{
    if (!path)
        return 0;
    return strcmp(path, "/dev/stdout") == 0 ? 1 : strcmp(path, "/dev/stderr") == 0 ? 2 : 0;
}

int safefile_open(const char *path, int flags, const char **why)
{
    *why = "";
    int std = flags & SAFEFILE_ROOTS ? 0 : safefile_std_stream(path);
    if (std) {
        int fd = fcntl(std, F_DUPFD_CLOEXEC, 3);
        return fd < 0 ? refuse(-1, errno, NULL, why) : fd;
    }
    if (!owner.set || geteuid() != 0) {
        int fd = open(path, open_flags(flags) | O_CREAT, 0644);
        return fd < 0 ? refuse(-1, errno, NULL, why) : blocking(fd);
    }
    if (flags & SAFEFILE_ROOTS)
        return open_as_root(path, flags, why);
    int fd = open_as_owner(path, open_flags(flags));
    if (fd >= 0)
        return blocking(fd);
    if (errno != EACCES && errno != EPERM)
        return refuse(-1, errno, NULL, why);
    return open_as_root(path, flags, why);
}
