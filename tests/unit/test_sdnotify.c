/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_sdnotify: a notification reaches a datagram socket of the test's own, named by a path or
 * by an abstract name, as one message with exactly the state sent; without $NOTIFY_SOCKET
 * nothing is sent; addresses of another kind, names too long and empty states are refused; a
 * barrier passes a descriptor along and returns once the receiver has closed it, and times out
 * while it keeps it.
 */
#include "core/sdnotify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testlib.h"

static char dir[80];

/* A datagram socket bound at name ("@..." abstract, else a path); -1 on failure. */
static int receiver(const char *name)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    socklen_t len = (socklen_t)(sizeof(sa.sun_family) + n + (name[0] == '@' ? 0 : 1));
    memcpy(sa.sun_path, name, n);
    if (name[0] == '@')
        sa.sun_path[0] = '\0';
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && bind(s, (struct sockaddr *)&sa, len) < 0) {
        close(s);
        return -1;
    }
    return s;
}

/* One datagram (without blocking) as a string; *fd gets a descriptor passed with it, or -1. */
static char *receive(int s, int *fd)
{
    static char buf[512];
    union {
        struct cmsghdr align;
        char b[CMSG_SPACE(sizeof(int))];
    } control;
    struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf) - 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.b,
                         .msg_controllen = sizeof(control.b)};
    ssize_t n = recvmsg(s, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return NULL;
    buf[n] = '\0';
    *fd = -1;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
        memcpy(fd, CMSG_DATA(c), sizeof(int));
    return buf;
}

/* A receiver at dir/name, which $NOTIFY_SOCKET names from now on; its path in path. */
static int notify_socket_at(const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    int s = receiver(path);
    CHECK(s >= 0);
    setenv("NOTIFY_SOCKET", path, 1);
    return s;
}

static void test_path_socket(void)
{
    char path[128];
    int s = notify_socket_at("notify", path, sizeof(path));
    CHECK(sd_notify_send("READY=1") == 1);
    CHECK(sd_notify_send("RELOADING=1\nMONOTONIC_USEC=1") == 1);
    int fd;
    CHECK_STR(receive(s, &fd), "READY=1");
    CHECK(fd == -1);
    CHECK_STR(receive(s, &fd), "RELOADING=1\nMONOTONIC_USEC=1");
    CHECK(receive(s, &fd) == NULL); /* one datagram per call, nothing more */
    CHECK_STR(getenv("NOTIFY_SOCKET"), path); /* left for a process started later */
    close(s);
    unlink(path);
    CHECK(sd_notify_send("READY=1") < 0); /* nobody listens there any more */
}

static void test_abstract_socket(void)
{
    char name[64];
    snprintf(name, sizeof(name), "@rimecast-test-sdnotify-%d", (int)getpid());
    int s = receiver(name);
    CHECK(s >= 0);
    setenv("NOTIFY_SOCKET", name, 1);
    CHECK(sd_notify_send("STOPPING=1") == 1);
    int fd;
    CHECK_STR(receive(s, &fd), "STOPPING=1");
    close(s);
}

static void test_no_socket_and_refusals(void)
{
    unsetenv("NOTIFY_SOCKET");
    CHECK(sd_notify_send("READY=1") == 0);
    CHECK(sd_notify_barrier(10) == 0);
    setenv("NOTIFY_SOCKET", "", 1);
    CHECK(sd_notify_send("READY=1") == 0);
    setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
    CHECK(sd_notify_send("READY=1") == -EAFNOSUPPORT);
    char longname[200];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[0] = '/';
    longname[sizeof(longname) - 1] = '\0';
    setenv("NOTIFY_SOCKET", longname, 1);
    CHECK(sd_notify_send("READY=1") == -ENAMETOOLONG);
    setenv("NOTIFY_SOCKET", "@x", 1);
    CHECK(sd_notify_send("") == -EINVAL);
    CHECK(sd_notify_send(NULL) == -EINVAL);
    unsetenv("NOTIFY_SOCKET");
}

static void test_barrier(void)
{
    char path[128];
    int s = notify_socket_at("barrier", path, sizeof(path));
    /* nobody reads: the descriptor stays in the socket's queue, so the pipe stays open */
    CHECK(sd_notify_barrier(100) == -ETIMEDOUT);
    int fd;
    CHECK_STR(receive(s, &fd), "BARRIER=1");
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    /* a receiver (another process) reads the message and closes the descriptor it got */
    pid_t child = fork();
    if (child == 0) {
        struct timeval tv = {.tv_sec = 5};
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        char buf[64];
        ssize_t n = recv(s, buf, sizeof(buf), MSG_PEEK);
        int got = -1;
        const char *m = n > 0 ? receive(s, &got) : NULL;
        _exit(m && strcmp(m, "BARRIER=1") == 0 && got >= 0 && close(got) == 0 ? 0 : 1);
    }
    CHECK(sd_notify_barrier(5000) == 1);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(s);
    unlink(path);
    unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
    /* a socket path must fit in 108 bytes: a long $TMPDIR is not used */
    const char *base = getenv("TMPDIR");
    if (!base || !*base || strlen(base) > 40)
        base = "/tmp";
    snprintf(dir, sizeof(dir), "%s/test_sdnotify.XXXXXX", base);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN(test_path_socket);
    RUN(test_abstract_socket);
    RUN(test_no_socket_and_refusals);
    RUN(test_barrier);
    rmdir(dir);
    return testlib_done();
}
