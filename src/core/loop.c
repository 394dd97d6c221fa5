/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop: epoll registration, fd flags, clock and timerfd helpers (see loop.h).
 */
#include "core/loop.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int loop_add(int epfd, int fd, uint32_t events, loop_handler_t *h)
{
    struct epoll_event ev = {.events = events, .data.ptr = h};
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int loop_del(int epfd, int fd)
{
    return epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL) < 0 ? -errno : 0;
}

int loop_set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

uint64_t loop_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t loop_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int loop_timerfd_set(int fd, unsigned period_ms)
{
    struct itimerspec its = {
        .it_interval = {.tv_sec = period_ms / 1000, .tv_nsec = (long)(period_ms % 1000) * 1000000L},
    };
    its.it_value = its.it_interval;
    return timerfd_settime(fd, 0, &its, NULL) < 0 ? -errno : 0;
}

int loop_timerfd(unsigned period_ms)
{
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (fd < 0)
        return -errno;
    int rc = loop_timerfd_set(fd, period_ms);
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}
