/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_record: a session record (stream/session.h) as the audience store keeps it until
 * it is written: one allocation holding the record, its strings and the server's name, in a
 * singly linked list (the store's queue, a batch). Made by the session sink on the worker
 * that ended the session (one malloc and copies, never a lock held long); freed by the store's
 * thread once written or lost.
 */
#ifndef RIMECAST_AUDIENCE_RECORD_H
#define RIMECAST_AUDIENCE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "ads/ads_record.h"
#include "stream/session.h"

/* A record is a session's, or (ad not NULL) an ad decision's (audience_ads.h): then r has its
 * session's id, its mount, when it was asked and ended (start_ms, end_ms) and hls. */
typedef struct audience_record {
    struct audience_record *next;
    session_record_t r;        /* its strings point into text[] */
    ads_record_t *ad;          /* an ad decision's record, in text[]; NULL: a session's */
    const char *server;        /* the server's name (<audience><server-name>); NULL: none */
    uint8_t uid[16];           /* the record's id in a shared store (set by the store's
                                * thread; all zero until then) */
    char text[];
} audience_record_t;

/* A copy of r and the server's name (NULL: none), strings included; NULL without memory. */
audience_record_t *audience_record_copy(const session_record_t *r, const char *name);
/* Frees a list of records; returns how many there were. */
size_t audience_record_free_list(audience_record_t *list);

#endif
