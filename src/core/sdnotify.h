/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sdnotify: telling the service manager (systemd, $NOTIFY_SOCKET) about the daemon's state.
 */
#ifndef RIMECAST_SDNOTIFY_H
#define RIMECAST_SDNOTIFY_H

/* Sends state ("READY=1", "MAINPID=1234", lines joined by '\n') as one datagram to
 * $NOTIFY_SOCKET. 1 when sent, 0 when there is no $NOTIFY_SOCKET, -errno on failure. */
int sd_notify_send(const char *state);

#endif
