/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * filemount: a webroot file played as a mount, for fallbacks that name a file
 * (<fallback-mount>/silence.mp3</fallback-mount>).
 *
 * Design: the file is read once (stream/webfile.h); a file mount is an ordinary mount_t, not
 * in the registry (it is no live mount: not listed, not reachable by its name), whose queue
 * is fed by one timer on worker 0 instead of a source: every tick it publishes the bytes due
 * at the file's bitrate (from its MP3 frames, else the bitrate of the mount the listeners came
 * from, else the one its name gives in brackets as Icecast-KH's "/fallback-[128].aac", else
 * 128 kbit/s), looping over the file's audio (ID3 tags left out). Listeners
 * subscribe to it like to any mount, so they are written by the usual fan-out, move away with
 * fallback-override and are counted as usual; no thread and no copy per listener. A file mount
 * nobody used for FILEMOUNT_IDLE_MS is ended and dropped; a changed file (mtime) gets a new
 * one. An Ogg file is looped as a chained stream (every loop a new link with its own BOS and
 * header pages, through the Ogg format handler) at the byte rate its granule positions give
 * (Vorbis, Opus; other codecs: the hint or the default).
 */
#ifndef RIMECAST_FILEMOUNT_H
#define RIMECAST_FILEMOUNT_H

typedef struct mount mount_t;

#define FILEMOUNT_IDLE_MS 10000

/* The file mount playing webroot file `path`, started if needed; `bitrate_hint` (bits/s, 0
 * for none) is used when the file has no MP3 frames to measure. A new reference, or NULL
 * when path is no usable file. Any thread. */
mount_t *filemount_get(const char *path, long bitrate_hint);

/* Registers the pacing timer (start-up, before workers are created). */
void filemount_register(void);

#endif
