/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_proto: what the two sides of an upgrade share (upgrade.c: the old process,
 * upgrade_take.c: the new one): the socket's messages, the state's record types, the limits.
 *
 * On the socket (AF_UNIX, SOCK_SEQPACKET), each message begins with its kind:
 *   new -> old   'H' ready for the state (its format version follows), 'R' refused (why),
 *                'K' state taken
 *   old -> new   'F' descriptors (SCM_RIGHTS, at most UPGRADE_FD_BATCH), 'D' state bytes,
 *                'E' the end (descriptor count and byte count), 'G' go on
 * The state is UPGRADE_MAGIC, the format version (32 bits), then records (core/record.h): the
 * listening sockets, the pidfile, the counters, the TLS ticket keys, the ad tracking retries,
 * the event ring, the history, the ICY metadata,
 * the mounts (each with its HLS windows and sessions), the feed tokens, the YP listings, the
 * sources and relays, then the connections (listeners, event feeds, clients waiting for a
 * request, answers being written, HLS requests waiting or being sent). A
 * connection's record names its descriptor by its index among those sent.
 */
#ifndef RIMECAST_UPGRADE_PROTO_H
#define RIMECAST_UPGRADE_PROTO_H

#include <stdatomic.h>
#include <stddef.h>

#define UPGRADE_ENV "RIMECAST_HANDOVER_FD"
#define UPGRADE_MAGIC "RIMECAST-STATE\n"
#define UPGRADE_VERSION 7u /* change it whenever a record's fields change */
#define UPGRADE_FD_BATCH 250
#define UPGRADE_CHUNK 32768
#define UPGRADE_GO_MS 10000 /* the new process waits for the go-ahead */

enum {
    REC_LISTEN = 1,
    REC_PIDFILE,
    REC_STATS,
    REC_META,
    REC_MOUNT,
    REC_SOURCE,
    REC_LISTENER,
    REC_HISTORY,
    REC_RELAY,
    REC_EVENTS,
    REC_FEED,
    REC_HLS,
    REC_READING,
    REC_REPLY,
    REC_FEED_TOKEN, /* a mount the old process goes on serving TLS listeners of, and the
                     * one-time token its local feed presents (upgrade.h) */
    REC_YP,         /* a YP directory listing, touched on by the new process (yp/yp.h) */
    REC_HLS_WINDOW, /* the HLS windows following a mount (hls/hls_carry.h), before its
                     * sessions (REC_HLS) */
    REC_HLS_CONN,   /* an HLS request in flight: parked, or a segment or part being sent */
    REC_LISTENER_AD, /* a listener in an ad break: REC_LISTENER's fields, then its break's */
    REC_TLS_KEYS,   /* the TLS session-ticket keys (net/tls.h): a reconnecting listener's
                     * ticket resumes in the new process; a binary that does not know the
                     * record skips it, as it skips any record it does not know */
    REC_ADS_BEACONS, /* the ad tracking URLs waiting to be tried again (ads/ads_carry.h); a
                      * binary that does not know it skips it (they are not sent) */
};

/* A message as received: its kind, its bytes, the descriptors that came with it (the
 * receiver's to close). */
typedef struct upgrade_msg {
    char kind;
    unsigned char data[UPGRADE_CHUNK + 64];
    size_t len;
    int fds[UPGRADE_FD_BATCH];
    int nfds;
} upgrade_msg_t;

/* Sends one message of `kind` with len bytes and nfds (at most UPGRADE_FD_BATCH) descriptors.
 * 0 or -errno. */
int upgrade_send(int fd, char kind, const void *data, size_t len, const int *fds, int nfds);
/* The same with a text. */
int upgrade_send_text(int fd, char kind, const char *text);
/* One message (blocking): 1, 0 at the end of the stream, -errno. */
int upgrade_recv(int fd, upgrade_msg_t *m);

/* The server's counters that go over, in the order the state has them; their number. */
int upgrade_counters(atomic_ullong **out, int cap);

/* A feed token: UPGRADE_TOKEN_BYTES random bytes as lowercase hex. */
#define UPGRADE_TOKEN_BYTES 16
#define UPGRADE_TOKEN_HEX (2 * UPGRADE_TOKEN_BYTES)

#endif
