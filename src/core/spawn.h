/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * spawn: runs external commands (the <on-connect>/<on-disconnect> scripts) in the background.
 *
 * One thread, started with the first request, starts each command with posix_spawn (argv[0] =
 * the path, argv[1] = one argument, no shell), in a process group of its own, with stdin on
 * /dev/null, stdout and stderr on a pipe it reads, and no other file descriptor; default signal
 * dispositions and an empty signal mask. Output is written to the error log line by line,
 * escaped, at most SPAWN_LOG_MAX bytes per command. The thread reaps the command and kills its
 * process group when it runs past its timeout. Callers (workers) only queue a request: nothing
 * here ever blocks them. It knows nothing of mounts.
 */
#ifndef RIMECAST_SPAWN_H
#define RIMECAST_SPAWN_H

#define SPAWN_LOG_MAX 16384 /* bytes of one command's output copied to the error log */

/* Queues `path arg` to run; `what` names it in log lines (e.g. "on-connect /live", raw text:
 * escaped here). timeout_s > 0: the command's process group is killed (SIGKILL) after that
 * many seconds. 0 or -errno (then it was logged). Thread-safe. */
int spawn_run(const char *path, const char *arg, const char *what, int timeout_s);
/* Shutdown: starts what is queued, gives running commands up to grace_ms to finish (their
 * output is still logged), then ends the thread; commands still running are left alone. */
void spawn_shutdown(int grace_ms);

#endif
