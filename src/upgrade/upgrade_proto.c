/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_proto: the messages of the upgrade socket (see upgrade_proto.h).
 */
#include "upgrade/upgrade_proto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/server.h"

int upgrade_send(int fd, char kind, const void *data, size_t len, const int *fds, int nfds)
{
    struct iovec iov[2] = {{&kind, 1}, {(void *)data, len}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * UPGRADE_FD_BATCH)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
    if (nfds > 0) {
        memset(&u, 0, sizeof(u));
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
    }
    ssize_t n;
    do
        n = sendmsg(fd, &mh, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : 0;
}

int upgrade_send_text(int fd, char kind, const char *text)
{
    return upgrade_send(fd, kind, text, strlen(text), NULL, 0);
}


int upgrade_recv(int fd, upgrade_msg_t *m)
{
    unsigned char head;
    struct iovec iov[2] = {{&head, 1}, {m->data, sizeof(m->data)}};
    union {
        char buf[CMSG_SPACE(sizeof(int) * UPGRADE_FD_BATCH)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf,
                        .msg_controllen = sizeof(u.buf)};
    ssize_t n;
    do
        n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n == 0 ? 0 : -errno;
    m->kind = (char)head;
    m->len = (size_t)n - 1;
    m->nfds = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < k; i++) {
            int got;
            memcpy(&got, CMSG_DATA(cm) + (size_t)i * sizeof(int), sizeof(int));
            if (m->nfds < UPGRADE_FD_BATCH)
                m->fds[m->nfds++] = got;
            else
                close(got);
        }
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        return -EMSGSIZE;
    return 1;
}

int upgrade_counters(atomic_ullong **out, int cap)
{
    atomic_ullong *c[] = {&server.stats.connections, &server.stats.connections_refused,
                          &server.stats.client_connections, &server.stats.listener_connections,
                          &server.stats.source_client_connections,
                          &server.stats.source_relay_connections,
                          &server.stats.source_total_connections, &server.stats.file_connections,
                          &server.stats.stats_connections};
    int n = (int)(sizeof(c) / sizeof(c[0]));
    for (int i = 0; i < n && i < cap; i++)
        out[i] = c[i];
    return n < cap ? n : cap;
}
