/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dump: <dump-file> recording. While a source feeds a mount, one writer thread (shared by all
 * recordings, started with the first) copies the mount's blocks to the file: exactly the bytes
 * a listener without Icy-MetaData receives from the start: for Ogg the codec header pages
 * followed by every page as passed on (after our page checks); for other types the audio
 * without any ICY metadata the source interleaved.
 * The source's worker only registers and ends a recording: the writer follows the mount's block
 * chain itself (a cursor like a listener's), so publishing costs nothing per block. Opening the
 * file and every write happen on the writer thread, never on a worker. A writer that falls more
 * than the mount's queue-size behind skips to the live edge; errors (unwritable path, full
 * disk) are logged at most once a minute per recording, and streaming is never affected.
 */
#ifndef RIMECAST_DUMP_H
#define RIMECAST_DUMP_H

typedef struct mount mount_t;
typedef struct dump dump_t;

/* Starts recording m to `path` (strftime-expanded now; relative names are relative to the
 * server's working directory, as in Icecast). Call before the first block is published. The
 * file is opened in append mode by the writer thread. Returns the handle, or NULL (logged). */
dump_t *dump_start(mount_t *m, const char *path);
/* An upgrade: the file a recording writes (its expanded name), and the same recording taken
 * on in the new process: m's blocks from the live edge on are appended to that file, with no
 * codec headers before them (the file has them). Call before m publishes again, and only once
 * the old process finished its writes (dump_stop, dump_shutdown). NULL (logged) on failure. */
const char *dump_path(const dump_t *d);
dump_t *dump_continue(mount_t *m, const char *path);
/* The source left (call after mount_end): the writer writes what is left, closes the file and
 * frees the handle. */
void dump_stop(dump_t *d);
/* Shutdown: waits until every stopped recording is written and closed, then ends the thread. */
void dump_shutdown(void);

#endif
