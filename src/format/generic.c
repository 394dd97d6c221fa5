/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * generic: pass-through handler for MP3, AAC and every type without a parser of its own.
 * Each ingest call becomes one block, every block a sync point; audio bytes are never altered.
 * When the source declared icy-metaint: N, the metadata blocks it interleaves every N bytes
 * are cut out of the stream (across any split of the input) and their StreamTitle/StreamUrl
 * reported as the "title"/"url" tags, converted to UTF-8. No frame parsing.
 */
#include "format/format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/str.h"
#include "format/icy.h"

#define GENERIC_META_MAX (255 * 16)

enum { GENERIC_AUDIO, GENERIC_META_LEN, GENERIC_META };

typedef struct generic_state {
    int started;
    size_t metaint;    /* 0: no inbound ICY metadata */
    int phase;
    size_t audio_left; /* audio bytes before the next length byte */
    size_t meta_need, meta_have;
    unsigned char meta[GENERIC_META_MAX];
    unsigned char last[GENERIC_META_MAX]; /* previous metadata, to report changes only */
    size_t last_len;
    int url_set;
} generic_state_t;

static int generic_init(format_t *f)
{
    f->state = calloc(1, sizeof(generic_state_t));
    return f->state ? 0 : -ENOMEM;
}

static void generic_destroy(format_t *f)
{
    free(f->state);
    f->state = NULL;
}

static int generic_report(format_t *f, const char *tag, const char *raw)
{
    char *v = str_text_to_utf8(raw, strlen(raw), f->charset);
    if (!v)
        return -ENOMEM;
    if (f->sink.set_tag)
        f->sink.set_tag(f->sink.ctx, tag, v);
    free(v);
    return 0;
}

/* A complete metadata body arrived: report its fields if it changed. */
static int generic_metadata(format_t *f, generic_state_t *st)
{
    if (st->meta_have == st->last_len && memcmp(st->meta, st->last, st->last_len) == 0)
        return 0;
    memcpy(st->last, st->meta, st->meta_have);
    st->last_len = st->meta_have;
    char *title, *url;
    if (icy_parse((const char *)st->meta, st->meta_have, &title, &url) < 0)
        return -ENOMEM;
    int rc = 0, changed = title || url || st->url_set;
    if (title)
        rc = generic_report(f, "title", title);
    if (rc == 0 && url)
        rc = generic_report(f, "url", url);
    else if (rc == 0 && st->url_set && f->sink.set_tag)
        f->sink.set_tag(f->sink.ctx, "url", NULL);
    st->url_set = url != NULL;
    if (rc == 0 && changed && f->sink.tags_done)
        f->sink.tags_done(f->sink.ctx);
    free(title);
    free(url);
    return rc;
}

/* Splits data into audio (copied to out) and metadata (collected in st). */
static int generic_demux(format_t *f, generic_state_t *st, const unsigned char *data,
                         size_t len, block_t *out)
{
    size_t i = 0;
    while (i < len) {
        if (st->phase == GENERIC_AUDIO) {
            size_t n = len - i < st->audio_left ? len - i : st->audio_left;
            memcpy(out->data + out->len, data + i, n);
            out->len += (uint32_t)n;
            i += n;
            st->audio_left -= n;
            if (st->audio_left == 0)
                st->phase = GENERIC_META_LEN;
        } else if (st->phase == GENERIC_META_LEN) {
            st->meta_need = (size_t)data[i++] * 16;
            st->meta_have = 0;
            st->phase = st->meta_need ? GENERIC_META : GENERIC_AUDIO;
            st->audio_left = st->metaint;
        } else {
            size_t n = st->meta_need - st->meta_have;
            if (n > len - i)
                n = len - i;
            memcpy(st->meta + st->meta_have, data + i, n);
            st->meta_have += n;
            i += n;
            if (st->meta_have < st->meta_need)
                continue;
            st->phase = GENERIC_AUDIO;
            int rc = generic_metadata(f, st);
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

static int generic_ingest(format_t *f, const unsigned char *data, size_t len)
{
    generic_state_t *st = f->state;
    if (!st->started) {
        /* icy_metaint is set by the caller after format_new(), so it is read here. */
        st->started = 1;
        st->metaint = f->icy_metaint > 0 ? (size_t)f->icy_metaint : 0;
        st->audio_left = st->metaint;
    }
    if (len == 0)
        return 0;
    block_t *b = block_new(len);
    if (!b)
        return -ENOMEM;
    if (st->metaint == 0) {
        memcpy(b->data, data, len);
        b->len = (uint32_t)len;
    } else {
        int rc = generic_demux(f, st, data, len, b);
        if (rc < 0 || b->len == 0) {
            block_unref(b);
            return rc;
        }
    }
    b->flags = BLOCK_SYNC;
    f->sink.emit(f->sink.ctx, b);
    return 0;
}

const format_ops_t format_generic_ops = {
    .name = "generic",
    .init = generic_init,
    .ingest = generic_ingest,
    .flush = NULL,
    .destroy = generic_destroy,
};
