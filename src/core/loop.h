/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loop: the small pieces every epoll user shares: the handler an epoll event points to, fd
 * helpers and a monotonic clock. The loops themselves live in net/worker_loop.c (one per
 * worker thread) and main.c (signals); this file owns no state.
 */
#ifndef RIMECAST_LOOP_H
#define RIMECAST_LOOP_H

#include <stdint.h>
#include <sys/epoll.h>

typedef struct loop_handler loop_handler_t;
struct loop_handler {
    /* Called with the epoll event mask. */
    void (*on_event)(loop_handler_t *h, uint32_t events);
};

/* Registers fd with epoll, data.ptr = h. 0 or -errno. */
int loop_add(int epfd, int fd, uint32_t events, loop_handler_t *h);
int loop_del(int epfd, int fd);
int loop_set_nonblock(int fd);
/* Monotonic milliseconds. */
uint64_t loop_now_ms(void);
uint64_t loop_now_us(void);
/* Creates a periodic non-blocking timerfd firing every period_ms (0: created stopped); -errno
 * on failure. */
int loop_timerfd(unsigned period_ms);
/* Sets a timerfd's period (0 stops it). 0 or -errno. */
int loop_timerfd_set(int fd, unsigned period_ms);

#endif
