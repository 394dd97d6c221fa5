/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_cmd: `rimecast --upgrade -c CONFIG`, the operator's side of an upgrade of a running
 * server. It finds the server's main process, asks it to hand over to the binary now installed
 * (SIGUSR2), waits for the result and says it. It never starts or stops a server itself, and
 * runs in its own short-lived process, apart from any server.
 */
#ifndef RIMECAST_UPGRADE_CMD_H
#define RIMECAST_UPGRADE_CMD_H

#include <sys/types.h>

/* Exit statuses of the command. */
enum {
    UPGRADE_DONE = 0,        /* handed over: a new process serves */
    UPGRADE_FAILED = 1,      /* the server said it failed, or no hand-over within the timeout */
    UPGRADE_USAGE = 2,       /* the config cannot be read */
    UPGRADE_NOT_POSSIBLE = 3 /* no running server found, or one that cannot hand over (a
                              * version before it: SIGUSR2 would stop it, so none is sent) */
};

/* Upgrades the server config_file describes. Its main process is pid when pid > 0, else the
 * one the config's <pidfile> names, else (no <pidfile>) systemd's rimecast.service main PID.
 * It must be a rimecast that handles SIGUSR2; it is sent SIGUSR2, then the command waits up to
 * timeout_s seconds for the error log's "upgrade: handed over to PID n" or "upgrade: failed:"
 * line, for the pidfile (or systemd's main PID) to name n, and for the server's first plain
 * listen socket to answer an HTTP request while n runs. Prints what happened (the result on
 * stdout, a failure on stderr) and returns one of the statuses above. */
int upgrade_cmd_run(const char *config_file, pid_t pid, int timeout_s);

#endif
