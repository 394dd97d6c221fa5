/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mpeg: frame sync for MPEG audio (MPEG-1, 2 and 2.5, Layers I, II and III) and AAC in ADTS.
 *
 * mpeg_frame_parse() reads one frame header; mpeg_sync_t follows a byte stream (any split)
 * and tells its owner where frames start, so the generic format can cut blocks at frames.
 * It skips an ID3v2 tag at the very start, locks after three consecutive frames with the same
 * version, layer and sample rate (ADTS: profile, rate, channels), and loses the lock on a
 * header that is not where the previous frame said. It never copies or changes the bytes.
 * Free-format MPEG (bitrate index 0) is not followed: such a stream never locks.
 * While locked it also measures the stream's bitrate (mpeg_sync_kbps): the frames' own bitrate
 * while every frame names the same one (CBR MP3), else the average over the stream so far
 * (VBR MP3; AAC, whose ADTS headers name none, counted without the ADTS headers).
 */
#ifndef RIMECAST_MPEG_H
#define RIMECAST_MPEG_H

#include <stddef.h>
#include <stdint.h>

#define MPEG_HEADER_MAX 7   /* bytes needed to judge any header (ADTS; MPEG needs 4) */
#define MPEG_LOCK_FRAMES 3  /* consecutive consistent frames before the stream counts as framed */
#define MPEG_LOST_LIMIT 65536 /* bytes without a lock after losing it before giving up */

enum { MPEG_KIND_AUDIO = 1, MPEG_KIND_ADTS = 2 };

typedef struct mpeg_frame {
    int kind;        /* MPEG_KIND_AUDIO or MPEG_KIND_ADTS */
    uint32_t len;    /* whole frame, header included */
    uint32_t key;    /* what must stay the same from frame to frame */
    uint32_t samplerate;
    uint32_t samples;   /* audio samples per channel the frame decodes to */
    uint32_t payload;   /* bytes that count toward the bitrate (ADTS: without its header) */
    uint16_t kbps;      /* MPEG audio: the header's bitrate; ADTS: 0 (none named) */
    uint8_t channels;   /* MPEG audio: 1 (mono) or 2; ADTS: its channel configuration's count,
                         * 0 when the configuration is carried in the audio itself */
} mpeg_frame_t;

/* Reads the header at p (n bytes available). Returns 1 and fills *f for a valid header,
 * 0 when p does not start a header, -EAGAIN when the n bytes are a valid beginning but too few
 * to tell (fewer than 4 for MPEG, 7 for ADTS). */
int mpeg_frame_parse(const unsigned char *p, size_t n, mpeg_frame_t *f);

/* Length of the ID3v2 tag at p (header, body and footer), 0 when p does not start one,
 * -EAGAIN when fewer than 10 bytes could still be one. */
long mpeg_id3v2_len(const unsigned char *p, size_t n);

enum {
    MPEG_SYNC_START,  /* first bytes: an ID3v2 tag? */
    MPEG_SYNC_PROBE,  /* not (yet) recognized: every block is a sync point */
    MPEG_SYNC_LOCKED, /* frames followed: only frame starts are sync points */
    MPEG_SYNC_LOST,   /* was framed, lost it: no sync points until locked again or given up */
};

typedef struct mpeg_sync {
    int mode;
    uint64_t pos;        /* bytes fed so far */
    uint64_t next;       /* where the next header is expected (or the search goes on) */
    uint64_t frame_start;/* start of the header being read or last read (a cut candidate) */
    uint64_t confirmed;  /* start of the last header validated while locked; UINT64_MAX none */
    uint64_t lost_at;
    uint64_t tag_end;    /* end of the ID3v2 tag the stream began with, 0 if none */
    uint64_t mark;       /* an offset the owner watches (its block's start) */
    int mark_ok;         /* a frame was confirmed (locked) at mark */
    uint32_t key;
    int run;             /* consecutive consistent headers */
    uint64_t run_start;  /* where the first header of that run starts */
    unsigned char hdr[10];
    unsigned have;
    /* bitrate of the locked frames (reset when the frames' key changes) */
    uint32_t rate_key, rate_samplerate;
    uint64_t rate_bytes, rate_samples;
    uint16_t rate_kbps;  /* the bitrate every frame named so far; 0 when they differ (VBR) */
} mpeg_sync_t;

void mpeg_sync_init(mpeg_sync_t *s);
/* Follows n more bytes of the stream. */
void mpeg_sync_feed(mpeg_sync_t *s, const unsigned char *p, size_t n);
/* The owner's block now starts at offset: mark_ok tells later whether a frame starts there. */
void mpeg_sync_mark(mpeg_sync_t *s, uint64_t offset);
/* The stream's bitrate in kbit/s, rounded: the one every locked frame named (CBR MP3), else the
 * average of the locked frames so far (VBR MP3, AAC). 0 until a second of audio was followed. */
unsigned mpeg_sync_kbps(const mpeg_sync_t *s);
/* Seconds of audio the bitrate was measured over (whole seconds). */
unsigned mpeg_sync_rate_seconds(const mpeg_sync_t *s);

#endif
