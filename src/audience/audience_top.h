/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_top: the user agents (players) or referrers that brought the most sessions in a
 * period, by SQL over the session store (the backend's, audience_store_top), on the store's
 * thread like the figures
 * (audience/audience.h): a session counts when it was listening at some time in [from, to), and
 * its qualified time is clipped to the period as for TLH. Does not render anything
 * (admin/audience.c does).
 */
#ifndef RIMECAST_AUDIENCE_TOP_H
#define RIMECAST_AUDIENCE_TOP_H

#include <stddef.h>
#include <stdint.h>

#define AUDIENCE_TOP_DEFAULT 10
#define AUDIENCE_TOP_MAX 100

typedef struct audience_top_entry {
    char *name;                /* the agent or referrer as the client sent it; NULL: none sent */
    uint64_t sessions, qualified;
    uint64_t listened_ms;      /* qualified time inside the period */
} audience_top_entry_t;

typedef struct audience_top {
    /* asked */
    int64_t from_ms, to_ms;    /* the period [from, to) */
    char *mount;               /* NULL: every mount */
    char *server;              /* NULL: every server sharing the store; else that one's */
    int by_referer;            /* 0: by user agent, 1: by referrer */
    int limit;                 /* entries at most, 1..AUDIENCE_TOP_MAX */
    int qualify_s;             /* <qualified-session-seconds> */
    int gross;                 /* 1: every session; 0: the valid ones only (audience.h) */
    /* answered */
    audience_top_entry_t *entries; /* most sessions first, ties by name */
    size_t n;
    uint64_t sessions;         /* every session of the period, listed or not */
    int err;                   /* 0, -ENODEV (no database), -EAGAIN (it cannot be reached
                                * now), -EIO, -ENOMEM */
} audience_top_t;

/* Frees t's answer, mount and server. */
void audience_top_clear(audience_top_t *t);

#endif
