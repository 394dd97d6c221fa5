/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ogg: the Ogg format handler. Finds pages with libogg (capture pattern, CRC), tracks the
 * logical streams of the current group of BOS pages by serial number, asks each stream's codec
 * (ogg_codec.h) which pages carry headers, hands the header pages to the sink as one block once
 * every stream's headers are complete, then emits one block per page, flagged where a listener
 * may start. A BOS page after data starts a new group (a chained stream): its header pages are
 * also emitted inline so that listeners already playing continue. Garbage and corrupt pages are
 * skipped with one log line per incident. Owns its libogg state; never decodes audio.
 * A metadata update (set_meta) is carried into a single-stream Vorbis, Opus or FLAC group as a
 * chain link of our own at the next page a listener may start on: an empty EOS page ends the
 * link playing, the kept header packets go out again under a new serial with the comment
 * packet rewritten (ogg_comment.c), inline and as the headers for new listeners, and the
 * source's pages go on relabelled (serial, sequence, granule positions from 0) until the
 * source starts a group of its own. An Opus group carries one only when f->opus_title_updates
 * says so (the admin layer refuses updates on Opus mounts that do not).
 */
#include "format/format.h"
#include "format/ogg_codec.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/record.h"

#define OGG_FEED_CHUNK 16384          /* bytes handed to libogg at a time: bounds its buffer */
#define OGG_HEADERS_MAX (4u << 20)    /* header pages of one group (cover art included) */
#define OGG_STREAMS_MAX 16            /* logical streams in one group */
#define OGG_GARBAGE_LOG_AFTER 65536   /* log a long garbage run without waiting for its end */
#define OGG_GROUP_TAGS_MAX 32
#define OGG_FLUSH_RESCANS 16          /* false capture patterns looked past at end of stream */
#define OGG_KEPT_MAX 32               /* header packets kept for metadata updates */

typedef struct ogg_lstream {
    uint32_t serial;
    int hdr_done;       /* every header packet of this stream has been seen */
    int os_live;        /* os is initialised (only while headers are being read) */
    ogg_stream_state os;
    ogg_codec_stream_t codec;
} ogg_lstream_t;

typedef struct ogg_state {
    format_t *f;
    ogg_sync_state sync;
    ogg_lstream_t streams[OGG_STREAMS_MAX];
    int nstreams;
    int group_open;     /* only BOS pages seen so far in this group */
    int headers_sent;   /* set_headers() done for this group */
    int has_video;      /* a stream with keyframes decides the sync points */
    int emitted_data;   /* a data page went out: later groups start mid-flight */
    int failed;         /* sticky fatal error */
    unsigned char *hdr; /* header pages of this group, concatenated (kept for an upgrade) */
    size_t hdr_len, hdr_cap;
    const char *tags[OGG_GROUP_TAGS_MAX]; /* keys reported for this group */
    int ntags;
    uint64_t offset;    /* source bytes consumed by page sync, for log lines */
    int in_garbage, garbage_logged, garbage_corrupt, orphan_logged, overflow_logged;
    uint64_t garbage_start, garbage_bytes;
    /* metadata updates (see the file header) */
    ogg_head_packet_t kept[OGG_KEPT_MAX]; /* header packets of a one-stream group (malloc'd) */
    int nkept, kept_all;   /* kept_all: every header packet of the group is in kept */
    int upd_pending;       /* set_meta came: carry it at the next start page */
    char *upd_title, *upd_artist;
    int relinked;          /* the group's pages go out relabelled as our link */
    uint32_t out_serial, out_seq, links;
    int64_t base;          /* subtracted from the source's granule positions while relinked */
    int64_t src_granule;   /* the last granule position of the source's pages, -1 none */
    int64_t out_granule;   /* the last granule position that went out */
    uint32_t src_seq;      /* the sequence number of the source's last page */
    int meta_logged;
    int replaying;         /* restore: the group's header pages read again, nothing sent */
} ogg_state_t;

static void ogg_logf(ogg_state_t *st, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void ogg_logf(ogg_state_t *st, int level, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (st->f->sink.log)
        st->f->sink.log(st->f->sink.ctx, level, msg);
}

void ogg_codec_log(ogg_codec_stream_t *s, int level, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ogg_logf(s->owner, level, "Ogg %s: %s", s->ops ? s->ops->name : "stream", msg);
}

void ogg_codec_tag(ogg_codec_stream_t *s, const char *key, const char *value)
{
    ogg_state_t *st = s->owner;
    for (int i = 0; i < st->ntags; i++)
        if (strcmp(st->tags[i], key) == 0)
            return;
    if (st->ntags == OGG_GROUP_TAGS_MAX)
        return;
    st->tags[st->ntags++] = key;
    if (st->f->sink.set_tag)
        st->f->sink.set_tag(st->f->sink.ctx, key, value);
}

/* Skeleton (all packets up to its EOS are headers) and Kate (header count in its BOS) are
 * recognised so that their header pages are kept; neither reports tags. */
static int skeleton_bos_matches(const unsigned char *p, size_t len)
{
    return len >= 8 && memcmp(p, "fishead\0", 8) == 0 ? OGG_BOS_YES : OGG_BOS_NO;
}

static int skeleton_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    if (s->packets == 0 || (len >= 8 && memcmp(p, "fisbone\0", 8) == 0) ||
        (len >= 6 && memcmp(p, "index\0", 6) == 0))
        return OGG_HDR_MORE;
    return len == 0 ? OGG_HDR_DONE : OGG_HDR_NOT;
}

static int kate_bos_matches(const unsigned char *p, size_t len)
{
    if (len < 8 || memcmp(p, "\x80kate\0\0\0", 8) != 0)
        return OGG_BOS_NO;
    return len < 64 ? OGG_BOS_MALFORMED : OGG_BOS_YES;
}

static int kate_header_packet(ogg_codec_stream_t *s, const unsigned char *p, size_t len)
{
    if (s->packets == 0) {
        s->needed = p[11] ? p[11] : 1;
        return s->needed == 1 ? OGG_HDR_DONE : OGG_HDR_MORE;
    }
    if (len == 0 || !(p[0] & 0x80))
        return OGG_HDR_NOT;
    return s->packets + 1 >= s->needed ? OGG_HDR_DONE : OGG_HDR_MORE;
}

static const ogg_codec_ops_t ogg_skeleton_ops = {"Skeleton", skeleton_bos_matches,
                                                 skeleton_header_packet, NULL, NULL};
static const ogg_codec_ops_t ogg_kate_ops = {"Kate", kate_bos_matches, kate_header_packet, NULL,
                                             NULL};

static const ogg_codec_ops_t *const ogg_codecs[] = {
    &ogg_vorbis_ops, &ogg_opus_ops, &ogg_flac_ops,     &ogg_theora_ops,
    &ogg_speex_ops,  &ogg_kate_ops, &ogg_skeleton_ops,
};

/* ---- logical streams and groups ---- */

static ogg_lstream_t *ogg_find(ogg_state_t *st, uint32_t serial)
{
    for (int i = 0; i < st->nstreams; i++)
        if (st->streams[i].serial == serial)
            return &st->streams[i];
    return NULL;
}

static void ogg_lstream_headers_done(ogg_lstream_t *ls)
{
    ls->hdr_done = 1;
    if (ls->os_live)
        ogg_stream_clear(&ls->os);
    ls->os_live = 0;
}

static int ogg_all_headers_done(const ogg_state_t *st)
{
    if (st->nstreams == 0)
        return 0;
    for (int i = 0; i < st->nstreams; i++)
        if (!st->streams[i].hdr_done)
            return 0;
    return 1;
}

static void ogg_forget_kept(ogg_state_t *st)
{
    for (int i = 0; i < st->nkept; i++)
        free((void *)st->kept[i].data);
    st->nkept = 0;
    st->kept_all = 1;
}

/* Keeps a header packet of a one-stream group for the links metadata updates make. */
static void ogg_keep_packet(ogg_state_t *st, const ogg_packet *op)
{
    if (st->nstreams != 1 || !st->kept_all)
        return;
    unsigned char *copy = NULL;
    if (st->nkept < OGG_KEPT_MAX)
        copy = malloc(op->bytes > 0 ? (size_t)op->bytes : 1);
    if (!copy) {
        st->kept_all = 0;
        return;
    }
    memcpy(copy, op->packet, (size_t)op->bytes);
    st->kept[st->nkept].data = copy;
    st->kept[st->nkept++].len = (size_t)op->bytes;
}

/* Forgets the current group: a new BOS page starts another one. Tags of the old group are
 * withdrawn; the new group's tags_done() follows when its headers are complete. */
static void ogg_group_start(ogg_state_t *st)
{
    if (st->nstreams > 0)
        ogg_logf(st, LOG_INFO, "Ogg: new logical stream group at byte %llu (chained stream)",
                 (unsigned long long)st->offset);
    for (int i = 0; i < st->nstreams; i++)
        ogg_lstream_headers_done(&st->streams[i]);
    st->nstreams = 0;
    for (int i = 0; i < st->ntags; i++)
        if (st->f->sink.set_tag)
            st->f->sink.set_tag(st->f->sink.ctx, st->tags[i], NULL);
    st->ntags = 0;
    ogg_forget_kept(st);
    /* the source's own link replaces ours, and its comments what an update not yet carried
     * said (the stats show its tags from now on) */
    st->relinked = 0;
    st->upd_pending = 0;
    st->src_granule = -1;
    st->hdr_len = 0;
    st->group_open = 1;
    st->headers_sent = 0;
    st->has_video = 0;
    st->overflow_logged = 0;
}

/* Keeps a page of the header phase; a chain link starting mid-flight also emits it inline. */
static int ogg_keep_header_page(ogg_state_t *st, const ogg_page *pg)
{
    size_t n = (size_t)pg->header_len + (size_t)pg->body_len;
    if (st->hdr_len + n > OGG_HEADERS_MAX) {
        ogg_logf(st, LOG_ERROR, "Ogg: codec headers exceed %u bytes, dropping the source",
                 OGG_HEADERS_MAX);
        return -EMSGSIZE;
    }
    if (st->hdr_len + n > st->hdr_cap) {
        size_t cap = st->hdr_cap ? st->hdr_cap : 16384;
        while (cap < st->hdr_len + n)
            cap *= 2;
        unsigned char *p = realloc(st->hdr, cap);
        if (!p)
            return -ENOMEM;
        st->hdr = p;
        st->hdr_cap = cap;
    }
    memcpy(st->hdr + st->hdr_len, pg->header, (size_t)pg->header_len);
    memcpy(st->hdr + st->hdr_len + pg->header_len, pg->body, (size_t)pg->body_len);
    if (st->emitted_data) {
        block_t *b = block_new_copy(st->hdr + st->hdr_len, n);
        if (!b)
            return -ENOMEM;
        b->flags = BLOCK_HEADER;
        st->f->sink.emit(st->f->sink.ctx, b);
    }
    st->hdr_len += n;
    return 0;
}

static int ogg_send_headers(ogg_state_t *st)
{
    char names[256];
    size_t pos = 0;
    names[0] = '\0';
    for (int i = 0; i < st->nstreams && pos < sizeof(names); i++) {
        const ogg_codec_ops_t *ops = st->streams[i].codec.ops;
        pos += (size_t)snprintf(names + pos, sizeof(names) - pos, "%s%s", i ? "+" : "",
                                ops ? ops->name : "unknown");
    }
    st->headers_sent = 1;
    if (st->replaying) /* the mount has them, and their tags */
        return 0;
    block_t *b = block_new_copy(st->hdr, st->hdr_len);
    if (!b)
        return -ENOMEM;
    b->flags = BLOCK_HEADER;
    ogg_logf(st, LOG_INFO, "Ogg: headers complete (%s, %zu bytes)", names, st->hdr_len);
    st->f->sink.set_headers(st->f->sink.ctx, b);
    if (st->f->sink.tags_done)
        st->f->sink.tags_done(st->f->sink.ctx);
    return 0;
}

/* ---- pages ---- */

/* Names an unknown codec by the printable start of its BOS packet. */
static void ogg_unknown_codec(ogg_state_t *st, const ogg_lstream_t *ls, const ogg_packet *op)
{
    char name[17];
    size_t n = 0;
    for (long i = 0; i < op->bytes && n < sizeof(name) - 1; i++) {
        unsigned char c = op->packet[i];
        if (c >= 0x20 && c < 0x7f)
            name[n++] = (char)c;
        else if (n > 0)
            break;
    }
    name[n] = '\0';
    ogg_logf(st, LOG_WARN, "Ogg: unknown codec \"%s\" in stream %u, passed through", name,
             ls->serial);
}

static void ogg_identify(ogg_state_t *st, ogg_lstream_t *ls, const ogg_packet *op)
{
    size_t len = (size_t)op->bytes;
    for (size_t i = 0; i < sizeof(ogg_codecs) / sizeof(ogg_codecs[0]); i++) {
        int m = ogg_codecs[i]->bos_matches(op->packet, len);
        if (m == OGG_BOS_MALFORMED) {
            ogg_logf(st, LOG_WARN,
                     "Ogg: %s BOS header of stream %u malformed (%zu bytes), passed through "
                     "as an unknown codec", ogg_codecs[i]->name, ls->serial, len);
            return;
        }
        if (m == OGG_BOS_YES) {
            ls->codec.ops = ogg_codecs[i];
            return;
        }
    }
    ogg_unknown_codec(st, ls, op);
}

static int ogg_bos_page(ogg_state_t *st, ogg_page *pg)
{
    uint32_t serial = (uint32_t)ogg_page_serialno(pg);
    if (!st->group_open || ogg_find(st, serial))
        ogg_group_start(st);
    if (st->nstreams == OGG_STREAMS_MAX) {
        if (!st->overflow_logged)
            ogg_logf(st, LOG_WARN, "Ogg: more than %d logical streams, extra ones dropped",
                     OGG_STREAMS_MAX);
        st->overflow_logged = 1;
        return 0;
    }
    ogg_lstream_t *ls = &st->streams[st->nstreams++];
    memset(ls, 0, sizeof(*ls));
    ls->serial = serial;
    ls->codec.owner = st;
    if (ogg_stream_init(&ls->os, (int)serial) != 0)
        return -ENOMEM;
    ls->os_live = 1;
    ogg_packet op;
    if (ogg_stream_pagein(&ls->os, pg) != 0 || ogg_stream_packetout(&ls->os, &op) != 1) {
        ogg_logf(st, LOG_WARN, "Ogg: BOS page of stream %u holds no complete packet", serial);
        st->kept_all = 0;
    } else {
        ogg_identify(st, ls, &op);
        if (st->nstreams > 1)
            st->kept_all = 0; /* updates are carried into one-stream groups only */
        ogg_keep_packet(st, &op);
        if (ls->codec.ops) {
            int r = ls->codec.ops->header_packet(&ls->codec, op.packet, (size_t)op.bytes);
            ls->codec.packets = 1;
            if (r != OGG_HDR_MORE)
                ogg_lstream_headers_done(ls);
            if (ls->codec.ops->page_is_sync)
                st->has_video = 1;
        }
    }
    if (!ls->codec.ops)
        ogg_lstream_headers_done(ls);
    return ogg_keep_header_page(st, pg);
}

/* Feeds a page of a stream still in its headers to the codec. Returns 1 if the page belongs to
 * the headers: its first packet completed on it is a header, or no packet completes on it (the
 * middle of a long header packet). The stream's EOS ends its headers too. */
static int ogg_feed_headers(ogg_state_t *st, ogg_lstream_t *ls, ogg_page *pg)
{
    int header = 1, first = 1;
    ogg_packet op;
    ogg_stream_pagein(&ls->os, pg);
    while (!ls->hdr_done) {
        int r = ogg_stream_packetout(&ls->os, &op);
        if (r == 0)
            break;
        if (r < 0) {
            st->kept_all = 0; /* a hole: pages were lost, so were header packets */
            continue;
        }
        int h = ls->codec.ops->header_packet(&ls->codec, op.packet, (size_t)op.bytes);
        if (h == OGG_HDR_NOT) {
            header = !first;
            ogg_lstream_headers_done(ls);
            break;
        }
        ogg_keep_packet(st, &op);
        first = 0;
        ls->codec.packets++;
        if (h == OGG_HDR_DONE)
            ogg_lstream_headers_done(ls);
    }
    if (ogg_page_eos(pg))
        ogg_lstream_headers_done(ls);
    return header;
}

/* ---- metadata updates carried into the stream ---- */

static void ogg_emit_copy(ogg_state_t *st, const unsigned char *p, size_t n, uint32_t flags,
                          int *rc)
{
    block_t *b = *rc == 0 ? block_new_copy(p, n) : NULL;
    if (!b) {
        *rc = -ENOMEM;
        return;
    }
    b->flags = flags;
    st->f->sink.emit(st->f->sink.ctx, b);
}

/* The kept header packets with the comment packet rewritten: fills pk, returns the index of
 * the rewritten packet (its data malloc'd), or -1 when the group cannot carry the update. */
static int ogg_new_head(ogg_state_t *st, ogg_head_packet_t *pk)
{
    const ogg_codec_ops_t *ops = st->nstreams == 1 ? st->streams[0].codec.ops : NULL;
    if (!ops || !ops->comment_rewrite || !st->kept_all || st->nkept == 0)
        return -1;
    if (ops == &ogg_opus_ops && !st->f->opus_title_updates)
        return -1;
    int at = -1;
    for (int i = 0; i < st->nkept; i++) {
        pk[i] = st->kept[i];
        unsigned char *out;
        size_t len;
        int r = at < 0 ? ops->comment_rewrite(st->kept[i].data, st->kept[i].len, st->upd_title,
                                               st->upd_artist, &out, &len) : 0;
        if (r < 0)
            return -1;
        if (r == 1) {
            pk[i].data = out;
            pk[i].len = len;
            at = i;
        }
    }
    return at;
}

/* Ends the link playing with an EOS page and starts ours: the header pages under a new serial,
 * inline for listeners playing and as the headers of new listeners. */
static int ogg_relink(ogg_state_t *st, const ogg_lstream_t *ls)
{
    ogg_head_packet_t pk[OGG_KEPT_MAX];
    st->upd_pending = 0;
    int at = ogg_new_head(st, pk);
    if (at < 0) {
        if (!st->meta_logged)
            ogg_logf(st, LOG_WARN, "Ogg: metadata updates are not carried into this stream "
                     "(%s): listeners keep the stream's own comments",
                     st->nstreams != 1 ? "several logical streams" :
                     st->streams[0].codec.ops == &ogg_opus_ops ? "Opus, without "
                     "<opus-title-updates> in its <mount>" : "its codec's comments");
        st->meta_logged = 1;
        return 0;
    }
    uint32_t serial = ls->serial ^ (0x9E3779B9u * (++st->links));
    if (serial == ls->serial || (st->relinked && serial == st->out_serial))
        serial++;
    int pages, rc = 0;
    block_t *head = ogg_head_pages(serial, pk, st->nkept, &pages);
    free((void *)pk[at].data);
    if (!head)
        return -ENOMEM;
    head->flags = BLOCK_HEADER;
    unsigned char eos[OGG_EOS_PAGE_LEN];
    if (st->relinked)
        ogg_eos_page(eos, st->out_serial, st->out_seq, st->out_granule);
    else
        ogg_eos_page(eos, ls->serial, st->src_seq + 1, st->src_granule < 0 ? 0 : st->src_granule);
    ogg_emit_copy(st, eos, sizeof(eos), 0, &rc);
    ogg_emit_copy(st, head->data, head->len, BLOCK_HEADER, &rc);
    if (rc < 0) {
        block_unref(head);
        return rc;
    }
    st->f->sink.set_headers(st->f->sink.ctx, head);
    st->relinked = 1;
    st->out_serial = serial;
    st->out_seq = (uint32_t)pages;
    st->base = st->src_granule < 0 ? 0 : st->src_granule;
    st->out_granule = 0;
    ogg_logf(st, LOG_INFO, "Ogg: metadata update carried into the stream as a new chain link "
             "(serial %u)", serial);
    return 0;
}

/* A source page of a relinked group goes out as a page of our link. */
static void ogg_relabel(ogg_state_t *st, block_t *b, const ogg_page *pg)
{
    int64_t g = ogg_page_granulepos(pg);
    if (g != -1) {
        g = g > st->base ? g - st->base : 0;
        st->out_granule = g;
    }
    ogg_page_relabel(b->data, (size_t)pg->header_len, (size_t)pg->body_len, st->out_serial,
                     st->out_seq++, g, pg->header[5] & ~0x02);
}

static int ogg_emit_data(ogg_state_t *st, ogg_lstream_t *ls, const ogg_page *pg)
{
    size_t n = (size_t)pg->header_len + (size_t)pg->body_len;
    int sync;
    if (st->has_video)
        sync = ls->codec.ops && ls->codec.ops->page_is_sync &&
               ls->codec.ops->page_is_sync(&ls->codec, pg);
    else
        sync = !ogg_page_continued(pg) && pg->header[26] > 0;
    if (st->upd_pending && sync) {
        int rc = ogg_relink(st, ls);
        if (rc < 0)
            return rc;
    }
    block_t *b = block_new(n);
    if (!b)
        return -ENOMEM;
    memcpy(b->data, pg->header, (size_t)pg->header_len);
    memcpy(b->data + pg->header_len, pg->body, (size_t)pg->body_len);
    b->len = (uint32_t)n;
    if (st->relinked)
        ogg_relabel(st, b, pg);
    if (ogg_page_granulepos(pg) != -1)
        st->src_granule = ogg_page_granulepos(pg);
    b->flags = sync ? BLOCK_SYNC : 0;
    st->emitted_data = 1;
    st->f->sink.emit(st->f->sink.ctx, b);
    return 0;
}

static void ogg_set_meta(format_t *f, const char *title, const char *artist)
{
    ogg_state_t *st = f->state;
    free(st->upd_title);
    free(st->upd_artist);
    st->upd_title = title ? strdup(title) : NULL;
    st->upd_artist = artist ? strdup(artist) : NULL;
    st->upd_pending = (!title || st->upd_title) && (!artist || st->upd_artist);
}

/* A page while the group's headers are incomplete: header pages (and, in a badly ordered
 * multiplex, early data pages of streams already done) are kept for new listeners. */
static int ogg_header_phase_page(ogg_state_t *st, ogg_lstream_t *ls, ogg_page *pg)
{
    int header = ls->hdr_done ? 0 : ogg_feed_headers(st, ls, pg);
    int done = ogg_all_headers_done(st);
    int rc;
    if (header || !done) {
        rc = ogg_keep_header_page(st, pg);
        if (rc == 0 && done)
            rc = ogg_send_headers(st);
        return rc;
    }
    rc = ogg_send_headers(st);
    return rc < 0 ? rc : ogg_emit_data(st, ls, pg);
}

static int ogg_page_in(ogg_state_t *st, ogg_page *pg)
{
    if (ogg_page_bos(pg))
        return ogg_bos_page(st, pg);
    uint32_t serial = (uint32_t)ogg_page_serialno(pg);
    ogg_lstream_t *ls = ogg_find(st, serial);
    if (!ls) {
        if (!st->orphan_logged)
            ogg_logf(st, LOG_WARN, "Ogg: skipping pages of stream %u at byte %llu: no BOS page "
                     "seen for it", serial, (unsigned long long)st->offset);
        st->orphan_logged = 1;
        return 0;
    }
    st->orphan_logged = 0;
    st->group_open = 0;
    int rc = st->headers_sent ? ogg_emit_data(st, ls, pg) : ogg_header_phase_page(st, ls, pg);
    st->src_seq = (uint32_t)ogg_page_pageno(pg); /* an EOS page of ours would follow it */
    return rc;
}

/* ---- sync and garbage ---- */

static void ogg_garbage(ogg_state_t *st, uint64_t n, int corrupt)
{
    if (!st->in_garbage) {
        st->in_garbage = 1;
        st->garbage_logged = 0;
        st->garbage_corrupt = corrupt;
        st->garbage_start = st->offset;
        st->garbage_bytes = 0;
    }
    st->garbage_bytes += n;
    st->offset += n;
    if (!st->garbage_logged && st->garbage_bytes >= OGG_GARBAGE_LOG_AFTER) {
        ogg_logf(st, LOG_WARN, "Ogg: no valid page in %llu bytes from byte %llu, searching",
                 (unsigned long long)st->garbage_bytes, (unsigned long long)st->garbage_start);
        st->garbage_logged = 1;
    }
}

static void ogg_garbage_end(ogg_state_t *st, const char *why)
{
    if (st->in_garbage && !st->garbage_logged)
        ogg_logf(st, LOG_WARN, "Ogg: skipped %llu bytes at byte %llu (%s)%s",
                 (unsigned long long)st->garbage_bytes, (unsigned long long)st->garbage_start,
                 st->garbage_corrupt ? "corrupt page or bad CRC" : "not an Ogg page", why);
    st->in_garbage = 0;
}

static int ogg_drain(ogg_state_t *st)
{
    for (;;) {
        ogg_page pg;
        const unsigned char *at = st->sync.data + st->sync.returned;
        int oggs = st->sync.fill - st->sync.returned >= 4 && memcmp(at, "OggS", 4) == 0;
        long n = ogg_sync_pageseek(&st->sync, &pg);
        if (n == 0)
            return 0;
        if (n < 0) {
            ogg_garbage(st, (uint64_t)-n, oggs);
            continue;
        }
        if (ogg_page_version(&pg) != 0) {
            ogg_garbage(st, (uint64_t)n, 1);
            continue;
        }
        ogg_garbage_end(st, "");
        st->offset += (uint64_t)n;
        int rc = ogg_page_in(st, &pg);
        if (rc < 0)
            return rc;
    }
}

static int ogg_ingest(format_t *f, const unsigned char *data, size_t len)
{
    ogg_state_t *st = f->state;
    while (len > 0 && !st->failed) {
        size_t n = len < OGG_FEED_CHUNK ? len : OGG_FEED_CHUNK;
        char *buf = ogg_sync_buffer(&st->sync, (long)n);
        if (!buf)
            return -ENOMEM;
        memcpy(buf, data, n);
        ogg_sync_wrote(&st->sync, (long)n);
        data += n;
        len -= n;
        st->failed = ogg_drain(st);
    }
    return st->failed;
}

/* The first "OggS" wholly inside p[0..len), or NULL. */
static const unsigned char *ogg_find_capture(const unsigned char *p, size_t len)
{
    const unsigned char *end = p + len;
    while ((size_t)(end - p) >= 4) {
        const unsigned char *o = memchr(p, 'O', (size_t)(end - p) - 3);
        if (!o)
            return NULL;
        if (memcmp(o, "OggS", 4) == 0)
            return o;
        p = o + 1;
    }
    return NULL;
}

/* At the end of the stream, data held back behind a capture pattern whose page never completed
 * (garbage that happened to contain "OggS") may still hide real pages: look past it. */
static void ogg_rescan_tail(ogg_state_t *st)
{
    for (int tries = 0; tries < OGG_FLUSH_RESCANS && !st->failed; tries++) {
        if (!st->sync.data || st->sync.fill - st->sync.returned < 5)
            return;
        size_t left = (size_t)(st->sync.fill - st->sync.returned);
        const unsigned char *at = st->sync.data + st->sync.returned;
        const unsigned char *next = ogg_find_capture(at + 1, left - 1);
        if (!next)
            return;
        size_t skip = (size_t)(next - at), rest = left - skip;
        unsigned char *copy = malloc(rest);
        if (!copy)
            return;
        memcpy(copy, next, rest);
        ogg_garbage(st, skip, 1);
        ogg_sync_reset(&st->sync);
        char *buf = ogg_sync_buffer(&st->sync, (long)rest);
        if (buf) {
            memcpy(buf, copy, rest);
            ogg_sync_wrote(&st->sync, (long)rest);
            st->failed = ogg_drain(st);
        }
        free(copy);
    }
}

static void ogg_flush(format_t *f)
{
    ogg_state_t *st = f->state;
    ogg_rescan_tail(st);
    long left = st->sync.fill - st->sync.returned;
    if (st->in_garbage) {
        st->garbage_bytes += (uint64_t)left;
        ogg_garbage_end(st, " at end of stream");
    } else if (left > 0) {
        ogg_logf(st, LOG_WARN, "Ogg: %ld bytes of an incomplete page at end of stream dropped",
                 left);
    }
    if (st->nstreams > 0 && !st->headers_sent)
        ogg_logf(st, LOG_WARN, "Ogg: stream ended before its codec headers were complete");
    ogg_sync_reset(&st->sync);
}

static int ogg_init(format_t *f)
{
    ogg_state_t *st = calloc(1, sizeof(*st));
    if (!st)
        return -ENOMEM;
    st->f = f;
    st->group_open = 1;
    st->kept_all = 1;
    st->src_granule = -1;
    ogg_sync_init(&st->sync);
    f->state = st;
    return 0;
}

static void ogg_destroy(format_t *f)
{
    ogg_state_t *st = f->state;
    if (!st)
        return;
    for (int i = 0; i < st->nstreams; i++)
        ogg_lstream_headers_done(&st->streams[i]);
    ogg_sync_clear(&st->sync);
    ogg_forget_kept(st);
    free(st->upd_title);
    free(st->upd_artist);
    free(st->hdr);
    free(st);
    f->state = NULL;
}

/* An upgrade: the group's header pages (read again on restore, to know its streams and keep
 * its header packets, with nothing sent: the mount has them), where our own chain link is,
 * an update not yet carried, and the bytes of a page not complete yet. */
static void ogg_save(format_t *f, buf_t *out)
{
    ogg_state_t *st = f->state;
    rec_bytes(out, st->hdr, st->hdr_len);
    rec_u8(out, (uint8_t)st->emitted_data);
    rec_u64(out, st->offset);
    rec_u8(out, (uint8_t)st->relinked);
    rec_u32(out, st->out_serial);
    rec_u32(out, st->out_seq);
    rec_u32(out, st->links);
    rec_i64(out, st->base);
    rec_i64(out, st->src_granule);
    rec_i64(out, st->out_granule);
    rec_u32(out, st->src_seq);
    rec_u8(out, (uint8_t)st->meta_logged);
    rec_u8(out, (uint8_t)st->upd_pending);
    rec_str(out, st->upd_title);
    rec_str(out, st->upd_artist);
    rec_bytes(out, st->sync.data ? st->sync.data + st->sync.returned : NULL,
              st->sync.data ? (size_t)(st->sync.fill - st->sync.returned) : 0);
}

static int ogg_restore(format_t *f, rec_reader_t *in)
{
    ogg_state_t *st = f->state;
    size_t hdr_len, left;
    const unsigned char *hdr = rec_get_bytes(in, &hdr_len);
    int emitted = rec_get_u8(in);
    uint64_t offset = rec_get_u64(in);
    st->relinked = rec_get_u8(in);
    st->out_serial = rec_get_u32(in);
    st->out_seq = rec_get_u32(in);
    st->links = rec_get_u32(in);
    st->base = rec_get_i64(in);
    int64_t src_granule = rec_get_i64(in);
    st->out_granule = rec_get_i64(in);
    uint32_t src_seq = rec_get_u32(in);
    st->meta_logged = rec_get_u8(in);
    int pending = rec_get_u8(in);
    char *title = rec_get_str(in), *artist = rec_get_str(in);
    const unsigned char *rest = rec_get_bytes(in, &left);
    if (in->error || hdr_len > OGG_HEADERS_MAX) {
        free(title);
        free(artist);
        return -EINVAL;
    }
    int relinked = st->relinked;
    st->replaying = 1;
    int rc = hdr_len ? ogg_ingest(f, hdr, hdr_len) : 0;
    st->replaying = 0;
    st->relinked = relinked;
    st->emitted_data = emitted;
    st->offset = offset;
    st->src_granule = src_granule;
    st->src_seq = src_seq;
    st->upd_pending = pending;
    st->upd_title = title;
    st->upd_artist = artist;
    return rc < 0 ? rc : left ? ogg_ingest(f, rest, left) : 0;
}

const format_ops_t format_ogg_ops = {
    .name = "ogg",
    .init = ogg_init,
    .ingest = ogg_ingest,
    .flush = ogg_flush,
    .destroy = ogg_destroy,
    .set_meta = ogg_set_meta,
    .save = ogg_save,
    .restore = ogg_restore,
};
