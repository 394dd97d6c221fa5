/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * redirect_internal: the sibling table redirect.c fills (each sibling's last room document,
 * from the poller's answers) and redirect_choose.c reads when it sends a listener away. Both
 * under redirect_lock. Nothing else includes it; the API is redirect.h.
 */
#ifndef RIMECAST_REDIRECT_INTERNAL_H
#define RIMECAST_REDIRECT_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define REDIRECT_SIBLINGS_MAX 64

typedef struct redirect_sibling {
    char *url;            /* base URL: http[s]://host[:port] */
    int tls;              /* an https:// one: the only kind a TLS listener is sent to */
    char *room;           /* the last answer (a room document of a serving server), or NULL */
    size_t room_len;
    uint64_t answered_ms; /* when it came */
    long sent;            /* redirects sent to it since */
    int polling;
    int up;               /* as last logged: 1 taking listeners, 0 not, -1 not known yet */
} redirect_sibling_t;

extern pthread_mutex_t redirect_lock;
extern redirect_sibling_t redirect_siblings[REDIRECT_SIBLINGS_MAX];
extern int redirect_nsiblings;

#endif
