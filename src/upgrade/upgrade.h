/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade: the running binary replaced without dropping a listener (SIGUSR2; docs/UPGRADE.md).
 * The old process starts the binary at its installed path with a socket to it; the new one
 * loads its config, then asks for the state: the listening sockets, the pidfile, every mount
 * with its queue, every source and plain listener with its place (records, core/record.h;
 * descriptors with SCM_RIGHTS). It rebuilds them before its workers run and confirms; the old
 * process then exits. Anything that fails on the way (the new binary exits, refuses the
 * config, cannot read the state, hangs) leaves the old process serving on, with a log line.
 *
 * Old side: upgrade_remember at start-up, upgrade_run from the signal loop (main thread).
 * New side (main thread, in start-up order): upgrade_inherited, upgrade_refuse on a config
 * that does not load, upgrade_receive before the workers are created, upgrade_restore after
 * (before they run), upgrade_confirm.
 */
#ifndef RIMECAST_UPGRADE_H
#define RIMECAST_UPGRADE_H

#include <stddef.h>
#include <sys/types.h>

/* The pidfile as the old process holds it (open, root's), handed to the new one. */
typedef struct upgrade_pidfile {
    int fd; /* -1: none */
    char *path;
    dev_t dev;
    ino_t ino;
} upgrade_pidfile_t;

/* Start-up: the binary's path (argv[0] resolved against $PATH, made absolute and real now: a
 * package upgrade later replaces the file there) and the arguments to start it with again. */
void upgrade_remember(int argc, char **argv);

/* SIGUSR2, from the signal loop: runs an upgrade to its end. Signals that arrive meanwhile
 * are read from sfd: SIGUSR2 and SIGHUP are logged and ignored, SIGTERM/SIGINT abandon it and
 * set *stop. 1 when the new process took over (the caller exits at once, without closing
 * what it handed over), 2 when it did and TLS listeners stay here (upgrade_drain); 0 when this process serves on (logged: "upgrade: failed: why"). */
int upgrade_run(int sfd, const upgrade_pidfile_t *pidfile, int *stop);
/* After upgrade_run returned 2 (it handed over and kept its TLS listeners, whose state cannot
 * move): the workers go on serving them until the last one leaves or <upgrade-drain> seconds
 * pass (or SIGTERM/SIGINT comes), then what is left is closed, with a log line. The caller
 * then exits. Nothing is accepted and the pidfile and the service manager are left alone: the
 * new process is the main one. */
void upgrade_drain(int sfd);

/* The first listening socket that serves plain HTTP, as an address to reach it at (a wildcard
 * address as loopback) and its port; with loopback_only, one bound to a wildcard or loopback
 * address only. The port, or -1 if none. */
typedef struct config config_t;
int upgrade_plain_listen(const config_t *cfg, int loopback_only, char *host, size_t hcap);

/* New side: a request for mount `mount` presented the feed token value[0..len) (the header
 * X-Rimecast-Feed; the caller checked it comes from a loopback address): 1 when it is the
 * token the old process sent for that mount, not used yet and not older than <upgrade-drain>
 * seconds (compared in constant time; it is used up now), else 0. Any thread. */
int upgrade_feed_claim(const char *mount, const char *value, size_t len);

/* New side. The socket to the old process (from the environment, which is cleared), or -1 when
 * this is an ordinary start. */
int upgrade_inherited(void);
/* Tells the old process why this one does not take over (it logs it) and closes fd. */
void upgrade_refuse(int fd, const char *why);
/* Asks for and reads the state; the listening sockets go to the workers to be created
 * (worker_inherit_listen), the pidfile into *pidfile. 0, or -1 with why in err (this
 * process then refuses and exits). */
int upgrade_receive(int fd, upgrade_pidfile_t *pidfile, char *err, size_t cap);
/* The workers exist and do not run yet: mounts, sources and listeners rebuilt on them.
 * 0, or -1 with why in err. */
int upgrade_restore(char *err, size_t cap);
/* Tells the old process the state is taken and waits for its go-ahead (it stops touching
 * what it handed over) or its exit. 0, or -1 when the old process says no. Closes fd. */
int upgrade_confirm(char *err, size_t cap);

#endif
