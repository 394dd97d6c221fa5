/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sdnotify: the notification protocol of systemd's Type=notify services, spoken directly: one
 * AF_UNIX datagram per message to $NOTIFY_SOCKET, a file descriptor passed along for a barrier.
 * See sdnotify.h for the contract.
 */
#include "core/sdnotify.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* $NOTIFY_SOCKET as an address: its length, 0 when the variable is unset or empty, or -errno. */
static int notify_address(struct sockaddr_un *sa, socklen_t *len)
{
    const char *name = getenv("NOTIFY_SOCKET");
    if (!name || !*name)
        return 0;
    if (name[0] != '/' && name[0] != '@')
        return -EAFNOSUPPORT; /* e.g. systemd's "vsock:" addresses: not for a local daemon */
    size_t n = strlen(name);
    if (n >= sizeof(sa->sun_path))
        return -ENAMETOOLONG;
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path, name, n);
    if (name[0] == '@') {
        sa->sun_path[0] = '\0'; /* abstract: the name is the bytes after the NUL, no terminator */
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
    } else {
        *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
    }
    return 1;
}

/* One datagram holding state, with fd passed along when fd >= 0. As sd_notify_send. */
static int notify_send_with_fd(const char *state, int fd)
{
    struct sockaddr_un sa;
    socklen_t salen = 0;
    if (!state || !*state)
        return -EINVAL;
    int rc = notify_address(&sa, &salen);
    if (rc <= 0)
        return rc;
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    struct iovec iov = {.iov_base = (void *)state, .iov_len = strlen(state)};
    struct msghdr msg = {.msg_name = &sa, .msg_namelen = salen, .msg_iov = &iov, .msg_iovlen = 1};
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } control;
    if (fd >= 0) {
        memset(&control, 0, sizeof(control));
        msg.msg_control = control.buf;
        msg.msg_controllen = sizeof(control.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    rc = sendmsg(s, &msg, MSG_NOSIGNAL) < 0 ? -errno : 1;
    close(s);
    return rc;
}

int sd_notify_send(const char *state)
{
    return notify_send_with_fd(state, -1);
}

int sd_notify_barrier(int timeout_ms)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    int rc = notify_send_with_fd("BARRIER=1", p[1]);
    close(p[1]); /* from now on only the manager's copy keeps the pipe open */
    if (rc > 0) {
        struct pollfd pfd = {.fd = p[0], .events = 0};
        int n;
        while ((n = poll(&pfd, 1, timeout_ms)) < 0 && errno == EINTR)
            ;
        rc = n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 1;
    }
    close(p[0]);
    return rc;
}
