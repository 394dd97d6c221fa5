/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * relay_handover: relays across an upgrade (upgrade/, see docs/UPGRADE.md). A streaming
 * relay's connection goes to the new process with its relay's place; a relay that cannot
 * carry its connection has its mount carried and held for it; the old process forgets its
 * relays once the new one took over, and feeds the TLS listeners it keeps from the new
 * process. The relays themselves: relay.h.
 */
#ifndef RIMECAST_RELAY_HANDOVER_H
#define RIMECAST_RELAY_HANDOVER_H

typedef struct conn conn_t;
typedef struct worker worker_t;

/* An upgrade (upgrade/). relay_save writes the relay that c streams for (its local mount, the
 * upstream it is on) as record fields: 0; -ENOENT when c is no relay's connection; -ENOTSUP
 * when it is one that is not carried (not streaming yet, over TLS, a master's). relay_adopt,
 * in the new process before w runs, rebuilds from the fields of client_save, relay_save and
 * source_save the connection on fd and its relay (the one the config has for that mount,
 * streaming into the mount find(name, arg) returns); relay_start_all then leaves that relay
 * be. The connection (not yet watched), or NULL (fd closed): the relay is no longer
 * configured, or the fields do not read. */
typedef struct buf buf_t;
typedef struct rec_reader rec_reader_t;
typedef struct mount mount_t;
int relay_save(conn_t *c, buf_t *out);
conn_t *relay_adopt(worker_t *w, int fd, rec_reader_t *in,
                    mount_t *(*find)(const char *name, void *arg), void *arg);

/* An upgrade carries the mount of a relay whose connection cannot go (waiting to reconnect,
 * pulling over TLS, a master's) without it: relay_waiting (old process, main thread, workers
 * stopped) says whether one of our relays holds m; relay_hold_mount (new process, before
 * relay_start_all) keeps a carried mount with no source for the relay that starts on it: the
 * config's (relay_start_all) or the master's (its first list: relay_start_master), as if it
 * had lost its upstream now. A held mount no relay takes is ended (its listeners follow its
 * fallbacks): at relay_start_all without a master, else once the first stream list request
 * is over (relay_master_polled, answered or not). */
int relay_waiting(const mount_t *m);
int relay_hold_mount(mount_t *m);
void relay_master_polled(void);

/* An upgrade handed the relays over (the old process, its workers parked): every relay is
 * forgotten without ending its mount or logging, and none starts here any more (a master's
 * list included): the new process pulls them. Their memory stays: the process exits soon. */
void relay_forget_all(void);
/* An upgrade's local feed (the old process, which keeps TLS listeners of m after the new one
 * took m over): a plain HTTP listener of m's name on the new process at ip:port (loopback),
 * sending `header` (a full header line, no CRLF) with its request, that joins the new
 * process's stream and feeds m quietly (stream/source.h source_become_feed), ICY metadata
 * included. It does not reconnect: when its connection fails or ends, ended(m, why) runs on
 * its worker (m is not ended: the caller closes m's listeners, saying why once). When m has no
 * listener left, it closes (logged). 0 or -errno. */
typedef void (*relay_feed_end_fn)(mount_t *m, const char *why);
int relay_start_feed(mount_t *m, const char *ip, int port, const char *header,
                     relay_feed_end_fn ended);

#endif
