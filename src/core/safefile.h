/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * safefile: opening the files the server writes (error, access and playlist logs, the pidfile,
 * dump files) so that whoever can write in their directory (the user the server drops to,
 * above all) cannot make the server write, truncate or give away another file.
 *
 * A file is never opened through a symbolic link at its own name, and only a plain file with
 * one link is kept. Started as root with a user to drop to (safefile_set_owner), a file is
 * first opened as that user (effective ids switched around the open), so the kernel checks
 * what the user may do; only where the user may not (a directory only root writes) is it
 * opened as root, then along a path whose symbolic links all belong to root, and a file
 * created then is given to the user. An existing file is kept only when it already belongs to
 * the user (or, with SAFEFILE_ROOTS, to root: then it is never given away). Nothing here
 * reads the config; the caller says who the user is.
 */
#ifndef RIMECAST_SAFEFILE_H
#define RIMECAST_SAFEFILE_H

#include <sys/types.h>

/* The user and group the server drops to. Called as root before any thread is started; without
 * it (or not as root) files are opened as the process is, with the same checks. */
void safefile_set_owner(uid_t uid, gid_t gid);

enum {
    SAFEFILE_APPEND = 1,       /* O_APPEND (logs, dump files); else the caller truncates */
    SAFEFILE_ROOTS = 2,        /* opened as root only, the file is and stays root's (the
                                * pidfile: the user must not change the pid it names) */
};

/* Opens path for writing, created with mode 0644 when missing (O_CLOEXEC). Returns the
 * descriptor, or -errno with *why set to a sentence fragment saying why ("it is a symbolic
 * link", "it is not a plain file with a single link", ...; static text). The two names
 * "/dev/stdout" and "/dev/stderr" (symbolic links on Linux, which Icecast-KH configs such as
 * AzuraCast's name as their error log) are the process's own standard output and error: a
 * copy of descriptor 1 or 2, never opened by name; not for SAFEFILE_ROOTS. */
int safefile_open(const char *path, int flags, const char **why);

/* 1 or 2 when path is exactly "/dev/stdout" or "/dev/stderr", else 0: a file of that name is
 * the process's own output, which is neither rotated nor renamed. */
int safefile_std_stream(const char *path);

#endif
