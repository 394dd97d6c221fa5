/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hls_playlist: the media playlist of an HLS window (RFC 8216, and the low-latency tags of
 * its second edition): the complete segments the window lists, and with `ll` the parts of
 * the last segments, the open segment's parts and the hint of the part to come.
 * Segment URIs are relative to the playlist (<mount>/hls.m3u8 -> <mount>/hls/<seq>.mp3) and
 * the same for every client, so that a cache serves them to all. An Opus window's segments
 * (.mp4) follow the EXT-X-MAP of their init segment, written again where it changes. The
 * multivariant playlist's one variant, with its bit rates: measured on the segments, or the
 * stream's own before there is one.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stream/mount.h"
#include "hls/hls.h"
#include "hls/hls_window_internal.h"
#include "hls/hls_fmp4.h"
#include "hls/hls_intro.h"
#include "hls/hls_ads.h"

#define PARTS_LISTED_SEGMENTS 2 /* complete segments whose parts stay listed */

static void write_date(buf_t *out, int64_t ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[40];
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
    buf_appendf(out, "#EXT-X-PROGRAM-DATE-TIME:%s.%03dZ\n", date, (int)(ms % 1000));
}

static void write_parts(buf_t *out, const hls_seg_t *s, const char *ext)
{
    for (int i = 0; i < s->nparts; i++)
        buf_appendf(out, "#EXT-X-PART:DURATION=%.5f,URI=\"hls/%" PRIu64 ".%d.%s\",INDEPENDENT=YES\n",
                    (double)s->parts[i].samples / s->rate, s->seq, i, ext);
}

/* *map: the init segment named last (UINT64_MAX: none yet); disc: a discontinuity before
 * it even if the window has none there. */
static void write_segment_head(buf_t *out, const hls_seg_t *s, uint64_t *map, int disc)
{
    if (s->discontinuity || disc)
        buf_append_str(out, "#EXT-X-DISCONTINUITY\n");
    if (s->init && s->init_id != *map) {
        buf_appendf(out, "#EXT-X-MAP:URI=\"hls/%" PRIu64 ".init.mp4\"\n", s->init_id);
        *map = s->init_id;
    }
    write_date(out, s->pdt_ms);
}

/* Discontinuities before segment seq, as the window counts them (seq at least first_seq). */
static uint64_t disc_before(const hls_t *h, uint64_t seq)
{
    uint64_t disc = h->disc_dropped;
    for (uint64_t q = h->first_seq; q < seq; q++) {
        const hls_seg_t *s = hls_seg_at((hls_t *)h, q);
        disc += s && s->discontinuity;
    }
    return disc;
}

/* A session's view: its intro's segments take the sequence numbers just before its first
 * live segment, and stay listed (the window then listed from further back, by as many
 * segments as the intro has) until the common playlist's first is that many past the first
 * live one; then the view lists what everyone's lists (its first jumps ahead: segments may
 * leave the front several at once). *first (the common first) becomes the view's; the
 * discontinuity sequence it starts with is returned. */
static uint64_t view_first(const hls_t *h, const hls_view_t *v, uint64_t *first)
{
    uint64_t n = (uint64_t)v->nsegs, m = v->live_from, f = *first;
    if (f < m + n)
        f = f - n > m - n ? f - n : m - n; /* f >= n: the window began after m - n */
    *first = f;
    uint64_t disc = v->dseq_base + (f > m);
    if (f > m + 1)
        disc += disc_before(h, f) - v->disc_before_next;
    return disc;
}

/* The intro's segments from sequence first on, dated as if they ended where the live stream
 * begins (live: the first live segment, NULL when the window no longer holds it). */
static void write_intro(buf_t *out, const hls_view_t *v, uint64_t first, const hls_seg_t *live)
{
    const hls_intro_t *in = v->intro;
    uint64_t seq0 = v->live_from - (uint64_t)v->nsegs, left = 0;
    if (first == seq0)
        buf_append_str(out, "#EXT-X-START:TIME-OFFSET=0\n"); /* the intro is played first */
    hls_intro_map(in, out); /* an Opus intro's own init segment */
    for (uint64_t q = first; q < v->live_from; q++)
        left += in->segs[q - seq0].samples;
    for (uint64_t q = first; q < v->live_from; q++) {
        if (live)
            write_date(out, live->pdt_ms - (int64_t)(left * 1000 / in->rate));
        left -= in->segs[q - seq0].samples;
        buf_appendf(out, "#EXTINF:%.5f,\n", (double)in->segs[q - seq0].samples / in->rate);
        hls_intro_uri(in, (int)(q - seq0), out);
        buf_append_str(out, "\n");
    }
}

void hls_view_begin_locked(hls_t *h, const hls_intro_t *intro, hls_view_t *v)
{
    /* live from the newest complete segment: the intro, then what is live now */
    uint64_t m = h->open_seq > h->first_seq ? h->open_seq - 1 : h->open_seq;
    /* the window must still hold the live segments listed after the intro (it keeps twice
     * the listed ones): a longer intro is cut short */
    v->nsegs = intro->nsegs < h->listed + 1 ? intro->nsegs : h->listed + 1;
    if (m < (uint64_t)v->nsegs)
        m = (uint64_t)v->nsegs;
    v->intro = intro;
    v->live_from = m;
    v->dseq_base = disc_before(h, m);
    v->disc_before_next = disc_before(h, m + 1);
}

void hls_playlist_head(buf_t *out, const hls_t *h, int ll, uint64_t seq, uint64_t disc)
{
    buf_appendf(out, "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-TARGETDURATION:%d\n", h->target);
    if (ll)
        buf_appendf(out,
                    "#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=%.3f\n"
                    "#EXT-X-PART-INF:PART-TARGET=%.3f\n",
                    3.0 * h->part_ms / 1000, h->part_ms / 1000.0);
    buf_appendf(out, "#EXT-X-MEDIA-SEQUENCE:%" PRIu64 "\n#EXT-X-DISCONTINUITY-SEQUENCE:%" PRIu64
                "\n#EXT-X-INDEPENDENT-SEGMENTS\n", seq, disc);
}

int hls_playlist_first_locked(hls_t *h, uint64_t *first_out)
{
    uint64_t first = h->first_seq;
    if (h->open_seq > first + (uint64_t)h->listed)
        first = h->open_seq - (uint64_t)h->listed;
    /* the listed segments last at least three target durations (segments are a bit shorter
     * than the target: one more may be needed) */
    double listed = 0;
    for (uint64_t q = first; q < h->open_seq && h->segs; q++) {
        const hls_seg_t *s = hls_seg_at(h, q);
        listed += s ? (double)s->samples / s->rate : 0;
    }
    while (h->segs && listed < 3.0 * h->target && first > h->first_seq &&
           hls_seg_at(h, first - 1)) {
        const hls_seg_t *s = hls_seg_at(h, --first);
        listed += (double)s->samples / s->rate;
    }
    *first_out = first;
    return !h->segs || first >= h->open_seq ? -EAGAIN : 0;
}

/* What a session's playlist with an ad break borrows (hls_adview.c). */
void hls_playlist_date(buf_t *out, int64_t ms)
{
    write_date(out, ms);
}

void hls_playlist_parts(buf_t *out, const hls_seg_t *s, const char *ext)
{
    write_parts(out, s, ext);
}

uint64_t hls_playlist_disc_before(const hls_t *h, uint64_t seq)
{
    return disc_before(h, seq);
}

uint64_t hls_playlist_view_first(const hls_t *h, const hls_view_t *v, uint64_t *first)
{
    return view_first(h, v, first);
}

int hls_playlist(hls_t *h, buf_t *out, int ll)
{
    return hls_playlist_view(h, out, ll, NULL);
}

/* The playlist everyone without an intro gets, if rendered at this version: appended to out. */
static int cached(hls_t *h, buf_t *out, int ll)
{
    if (h->playlist_at[ll] != h->version + 1)
        return 0;
    buf_append(out, h->playlist_text[ll].data, h->playlist_text[ll].len);
    return 1;
}

/* Keeps what was rendered from `from` on in out as the playlist of this version. */
static void keep(hls_t *h, const buf_t *out, size_t from, int ll)
{
    buf_t *text = &h->playlist_text[ll];
    text->len = 0;
    if (out->error || buf_append(text, out->data + from, out->len - from) < 0) {
        buf_free(text); /* a failed append is sticky: start afresh next time */
        h->playlist_at[ll] = 0;
        return;
    }
    h->playlist_at[ll] = h->version + 1;
}

int hls_playlist_view(hls_t *h, buf_t *out, int ll, const hls_view_t *v)
{
    pthread_mutex_lock(&h->lock);
    ll = ll != 0;
    if (!v && cached(h, out, ll)) {
        pthread_mutex_unlock(&h->lock);
        return out->error;
    }
    size_t from = out->len;
    const char *ext = h->is_opus ? "mp4" : h->adts ? "aac" : "mp3";
    uint64_t map = UINT64_MAX;
    uint64_t first;
    if (hls_playlist_first_locked(h, &first) < 0) {
        pthread_mutex_unlock(&h->lock);
        return -EAGAIN;
    }
    uint64_t disc = v ? view_first(h, v, &first) : disc_before(h, first);
    hls_playlist_head(out, h, ll, first, disc);
    if (v && first < v->live_from) {
        write_intro(out, v, first, hls_seg_at(h, v->live_from));
        first = v->live_from;
    }
    for (uint64_t q = first; q < h->open_seq; q++) {
        const hls_seg_t *s = hls_seg_at(h, q);
        if (!s)
            continue;
        write_segment_head(out, s, &map, v && q == v->live_from); /* after the intro */
        if (ll && q + PARTS_LISTED_SEGMENTS >= h->open_seq)
            write_parts(out, s, ext);
        buf_appendf(out, "#EXTINF:%.5f,\nhls/%" PRIu64 ".%s\n", (double)s->samples / s->rate,
                    s->seq, ext);
    }
    if (ll) {
        const hls_seg_t *s = hls_seg_at(h, h->open_seq);
        int next = 0;
        if (s && !s->complete) {
            write_segment_head(out, s, &map, 0);
            write_parts(out, s, ext);
            next = s->nparts;
        }
        buf_appendf(out, "#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"hls/%" PRIu64 ".%d.%s\"\n",
                    h->open_seq, next, ext);
    }
    if (!v)
        keep(h, out, from, ll);
    pthread_mutex_unlock(&h->lock);
    return out->error;
}

/* ---- the multivariant playlist ---- */

/* BANDWIDTH while neither a segment nor the stream's rate is known: a guess from above. */
#define BANDWIDTH_UNKNOWN 320000.0
#define OPUS_PACKET_MS 20 /* the usual Opus packet, before the window has seen any */

/* The stream's bit rate (bit/s, 0 unknown), from the two figures the stats report: what the
 * format handler measured of the frames (the "audio_bitrate" tag, after a second of audio),
 * else what the source declared (ice-bitrate, icy-br, ice-audio-info) or <mount><bitrate>
 * set. The stats show the declared one first; here the measure comes first, as it is what
 * the segments will hold. AAC's counts its raw blocks, without their ADTS headers. */
static double mount_rate(mount_t *m)
{
    char *tag = mount_get_tag(m, "audio_bitrate");
    long bps = tag ? strtol(tag, NULL, 10) : 0;
    free(tag);
    if (bps >= 1000 && bps <= 100000000)
        return (double)bps;
    const char *declared = mount_info(m)->bitrate;
    long kbps = declared ? strtol(declared, NULL, 10) : 0;
    return kbps > 0 && kbps <= 100000 ? kbps * 1000.0 : 0;
}

/* What the multivariant playlist needs of a window, taken under its lock. */
typedef struct window_kind {
    int opus, adts;
    uint32_t rate; /* samples a second, 0 unknown */
    int target, part_ms;
} window_kind_t;

/* What a window of this kind serves beyond the stream's bit rate (bit/s): for packed audio
 * the ID3 tag in front of each segment and, for AAC, the ADTS header of each frame (7 bytes a
 * 1024 samples); for Opus each part's fragment boxes (emsg with its ID3 tag, moof with a trun
 * entry a packet, mdat header), made once without payload for packets of OPUS_PACKET_MS. */
static double overhead_rate(const window_kind_t *k)
{
    if (!k->opus) {
        double adts = k->adts ? 7.0 * 8 * (k->rate ? k->rate : 48000) / 1024 : 0;
        return HLS_ID3_LEN * 8.0 / k->target + adts;
    }
    uint32_t n = (uint32_t)(k->part_ms / OPUS_PACKET_MS), *durs = calloc(n + 1, sizeof(*durs));
    unsigned char id3[HLS_ID3_MAX], none = 0;
    fmp4_frag_t f = {.durs = durs, .sizes = durs, .n = n, .payload = &none, .id3 = id3,
                     .id3_len = hls_id3_tag(id3, 0, NULL)};
    block_t *b = durs ? fmp4_fragment(&f) : NULL; /* the boxes alone: no payload */
    double bits = b ? 8.0 * b->len : 0;
    if (b)
        block_unref(b);
    free(durs);
    return bits * 1000.0 / k->part_ms;
}

/* A bit rate as an attribute: whole bits a second, rounded up. */
static unsigned bits_up(double r)
{
    unsigned u = (unsigned)r;
    return u + ((double)u < r);
}

/* BANDWIDTH is the peak segment bit rate, AVERAGE-BANDWIDTH the average (RFC 8216bis section
 * 4.4.6.2), both of the segments as served (tag and boxes included): measured on the
 * segments the window holds, else, before the first is complete, the stream's rate plus
 * the overhead of the window's kind (both then the same). */
int hls_multivariant(hls_t *h, buf_t *out, const char *token, const char *tail)
{
    pthread_mutex_lock(&h->lock);
    double peak = 0, bits = 0, secs = 0;
    uint32_t tag_bits = h->is_opus ? 0 : 8 * HLS_ID3_LEN; /* the time tag of every segment */
    for (uint64_t q = h->first_seq; h->segs && q < h->open_seq; q++) {
        const hls_seg_t *s = hls_seg_at(h, q);
        if (s && s->nparts && s->samples) {
            double b = 8.0 * (double)(s->parts[s->nparts - 1].end - s->parts[0].start) + tag_bits;
            double d = (double)s->samples / s->rate;
            peak = b / d > peak ? b / d : peak;
            bits += b;
            secs += d;
        }
    }
    int known = h->frames_known || h->open_seq > h->first_seq;
    const char *codecs = h->is_opus ? "Opus" : !known ? NULL : h->adts ? "mp4a.40.2"
                                                                        : "mp4a.40.34";
    mount_t *m = h->mount && secs == 0 ? mount_ref(h->mount) : NULL;
    window_kind_t kind = {.opus = h->is_opus, .adts = h->adts, .rate = h->rate,
                          .target = h->target, .part_ms = h->part_ms};
    pthread_mutex_unlock(&h->lock);
    double average = secs > 0 ? bits / secs : 0;
    if (m) { /* no segment yet: the stream's own rate (the mount is read without our lock) */
        double rate = mount_rate(m);
        if (!known) /* no frame seen yet: AAC by its content type */
            kind.adts = strstr(mount_info(m)->content_type, "aac") != NULL;
        mount_unref(m);
        average = peak = rate > 0 ? rate + overhead_rate(&kind) : 0;
    }
    buf_appendf(out, "#EXTM3U\n#EXT-X-VERSION:6\n#EXT-X-INDEPENDENT-SEGMENTS\n"
                "#EXT-X-STREAM-INF:BANDWIDTH=%u", bits_up(peak > 0 ? peak : BANDWIDTH_UNKNOWN));
    if (average > 0)
        buf_appendf(out, ",AVERAGE-BANDWIDTH=%u", bits_up(average));
    if (codecs)
        buf_appendf(out, ",CODECS=\"%s\"", codecs);
    buf_appendf(out, "\nhls.m3u8?session=%s%s\n", token, tail ? tail : "");
    return out->error;
}
