/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sdnotify: telling the service manager (systemd's Type=notify) what the daemon is doing, by a
 * datagram to the socket $NOTIFY_SOCKET names, as sd_notify(3) does, without libsystemd.
 * Outside a service manager (no $NOTIFY_SOCKET) every call does nothing. The variable is left in
 * the environment, so that a process this one starts (the new binary of an upgrade) can speak
 * for the service too. Each call opens and closes its own socket: callable from any thread, on
 * cold paths only (start-up, reload, upgrade, shutdown).
 */
#ifndef RIMECAST_SDNOTIFY_H
#define RIMECAST_SDNOTIFY_H

/* Sends state, newline-separated assignments ("READY=1", "RELOADING=1", "STOPPING=1",
 * "MAINPID=1234", "STATUS=text"), as one datagram to $NOTIFY_SOCKET: a path ("/run/...") or an
 * abstract name ("@name"). Returns 1 when sent, 0 when there is no $NOTIFY_SOCKET (nothing to
 * do), or -errno: -EINVAL for an empty state, -EAFNOSUPPORT for a socket address of another
 * kind, -ENAMETOOLONG for one too long, or what socket() or sendmsg() said. */
int sd_notify_send(const char *state);

/* Waits until the service manager has read every message sent before (sd_notify_barrier(3)):
 * sends "BARRIER=1" with the write end of a pipe and waits up to timeout_ms for the manager to
 * close it. Call it after "MAINPID=" and before the old main process exits, so that the manager
 * never sees its main process end before it has heard of the new one. Returns 1 when the
 * manager has read them, 0 when there is no $NOTIFY_SOCKET, -ETIMEDOUT, or another -errno. */
int sd_notify_barrier(int timeout_ms);

#endif
