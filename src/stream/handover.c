/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * handover: mounts and listeners carried to a new process on an upgrade (see handover.h).
 */
#include "stream/handover.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/auth_url.h"
#include "core/loop.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/worker.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/sub.h"

/* ---- ICY metadata ---- */

uint32_t handover_meta_id(handover_metas_t *t, icy_meta_t *m)
{
    if (!m)
        return 0;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i] == m)
            return (uint32_t)i + 1;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        icy_meta_t **v = realloc(t->v, cap * sizeof(*v));
        if (!v)
            return 0; /* without memory the block goes without a title: nothing breaks */
        t->v = v;
        t->cap = cap;
    }
    t->v[t->n++] = m;
    return (uint32_t)t->n;
}

void handover_meta_save(const handover_metas_t *t, size_t i, buf_t *out)
{
    const icy_meta_t *m = t->v[i];
    rec_bytes(out, m->data, m->len);
    rec_str(out, m->title);
    rec_str(out, m->url);
}

int handover_meta_load(handover_metas_t *t, rec_reader_t *in)
{
    size_t len;
    const unsigned char *data = rec_get_bytes(in, &len);
    char *title = rec_get_str(in), *url = rec_get_str(in);
    icy_meta_t *m = NULL;
    if (!in->error && data && len >= 1 && len == 1 + (size_t)data[0] * 16)
        m = malloc(sizeof(*m) + len);
    icy_meta_t **v = m && t->n == t->cap ? realloc(t->v, (t->cap ? t->cap * 2 : 16) * sizeof(*v))
                                         : NULL;
    if (v) {
        t->v = v;
        t->cap = t->cap ? t->cap * 2 : 16;
    }
    if (!m || t->n == t->cap) {
        free(m);
        free(title);
        free(url);
        return in->error || !data ? -EINVAL : -ENOMEM;
    }
    atomic_init(&m->refcount, 1);
    m->len = (uint32_t)len;
    m->title = title;
    m->url = url;
    memcpy(m->data, data, len);
    t->v[t->n++] = m;
    return 0;
}

icy_meta_t *handover_meta_of(const handover_metas_t *t, uint32_t id)
{
    return id && id <= t->n ? t->v[id - 1] : NULL;
}

void handover_metas_free(handover_metas_t *t, int owned)
{
    for (size_t i = 0; owned && i < t->n; i++)
        icy_meta_unref(t->v[i]);
    free(t->v);
    memset(t, 0, sizeof(*t));
}

/* ---- mounts ---- */

const char *handover_mount_unmovable(mount_t *m)
{
    pthread_mutex_lock(&m->lock);
    const char *why = !m->source_worker ? "no source" : NULL;
    pthread_mutex_unlock(&m->lock);
    return why;
}

static void save_info(const mount_info_t *i, buf_t *out)
{
    const char *s[] = {i->content_type, i->name,      i->description, i->genre,
                       i->url,          i->bitrate,   i->audio_info,  i->subtype,
                       i->source_ip,    i->user_agent};
    for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++)
        rec_str(out, s[k]);
    rec_u32(out, (uint32_t)i->public);
}

static void load_info(mount_info_t *i, rec_reader_t *in)
{
    char **s[] = {&i->content_type, &i->name,      &i->description, &i->genre,
                  &i->url,          &i->bitrate,   &i->audio_info,  &i->subtype,
                  &i->source_ip,    &i->user_agent};
    for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++)
        *s[k] = rec_get_str(in);
    i->public = (int)rec_get_u32(in);
}

static void save_block(const block_t *b, handover_metas_t *t, buf_t *out)
{
    rec_u64(out, b->offset);
    rec_u32(out, b->flags);
    rec_u32(out, handover_meta_id(t, b->meta));
    rec_bytes(out, b->data, b->len);
}

void handover_chain_save(const block_t *b, uint32_t count, handover_metas_t *t, buf_t *out)
{
    uint32_t n = 0;
    for (const block_t *x = b; x && (!count || n < count); x = block_next(x))
        n++;
    rec_u32(out, n);
    for (uint32_t i = 0; i < n; i++, b = block_next(b))
        save_block(b, t, out);
}

block_t *handover_chain_load(rec_reader_t *in, const handover_metas_t *t, block_t **last,
                            int *bad)
{
    uint32_t n = rec_get_u32(in);
    block_t *first = NULL, *prev = NULL;
    *last = NULL;
    for (uint32_t i = 0; i < n && !in->error; i++) {
        uint64_t offset = rec_get_u64(in);
        uint32_t flags = rec_get_u32(in);
        icy_meta_t *meta = handover_meta_of(t, rec_get_u32(in));
        size_t len;
        const unsigned char *data = rec_get_bytes(in, &len);
        block_t *b = in->error || !data ? NULL : block_new_copy(data, len);
        if (!b || (prev && offset != block_end(prev))) {
            if (b)
                block_unref(b);
            *bad = 1;
            break;
        }
        b->offset = offset;
        b->flags = flags;
        b->meta = icy_meta_ref(meta);
        if (prev)
            block_link(prev, b);
        else
            first = b;
        prev = b;
    }
    if (*bad || in->error) {
        if (first)
            block_unref(first);
        return NULL;
    }
    *last = prev;
    return first;
}

void handover_mount_save(mount_t *m, const block_t *from, handover_metas_t *t, buf_t *out)
{
    rec_str(out, m->name);
    save_info(&m->source_info, out);
    rec_u8(out, (uint8_t)atomic_load(&m->is_ogg));
    pthread_mutex_lock(&m->lock);
    rec_u32(out, m->source_worker ? (uint32_t)m->source_worker->id : UINT32_MAX);
    rec_u64(out, m->source_conn_id);
    rec_i64(out, (int64_t)m->start);
    rec_str(out, m->fallback_name);
    rec_str(out, m->relay_url);
    rec_u32(out, handover_meta_id(t, m->meta));
    uint32_t ntags = 0;
    for (const mount_tag_t *g = m->tags; g; g = g->next)
        ntags++;
    rec_u32(out, ntags);
    for (const mount_tag_t *g = m->tags; g; g = g->next) {
        rec_str(out, g->key);
        rec_str(out, g->value);
    }
    rec_u64(out, m->headers_offset);
    handover_chain_save(m->headers, 0, t, out);
    rec_u64(out, m->oldest->offset);
    rec_u64(out, m->next_offset);
    handover_chain_save(from ? from : m->oldest, 0, t, out);
    pthread_mutex_unlock(&m->lock);
    rec_u32(out, (uint32_t)atomic_load(&m->listener_peak));
    rec_u64(out, atomic_load(&m->slow_listeners));
    rec_u64(out, atomic_load(&m->bytes_read));
    rec_u64(out, atomic_load(&m->bytes_sent));
}

/* The carried fields after the name and description, into the new mount m. */
static int restore_fields(mount_t *m, rec_reader_t *in, const handover_metas_t *t,
                          uint64_t *queue_start)
{
    int bad = 0;
    m->start = (time_t)rec_get_i64(in);
    char *fallback = rec_get_str(in), *relay_url = rec_get_str(in);
    icy_meta_t *meta = handover_meta_of(t, rec_get_u32(in));
    if (fallback)
        mount_set_fallback(m, fallback);
    if (relay_url)
        mount_set_relay_url(m, relay_url);
    free(fallback);
    free(relay_url);
    uint32_t ntags = rec_get_u32(in);
    for (uint32_t i = 0; i < ntags && !in->error; i++) {
        char *k = rec_get_str(in), *v = rec_get_str(in);
        if (k && v)
            mount_set_tag(m, k, v);
        free(k);
        free(v);
    }
    uint64_t headers_offset = rec_get_u64(in);
    block_t *last, *headers = handover_chain_load(in, t, &last, &bad);
    *queue_start = rec_get_u64(in);
    uint64_t head = rec_get_u64(in);
    block_t *first = handover_chain_load(in, t, &last, &bad);
    if (!first || bad || in->error || block_end(last) != head) {
        if (first)
            block_unref(first);
        if (headers)
            block_unref(headers);
        return -EINVAL;
    }
    pthread_mutex_lock(&m->lock);
    block_unref(m->oldest); /* the empty block a new mount begins with */
    block_unref(m->newest);
    m->oldest = first;
    m->newest = block_ref(last);
    m->next_offset = head;
    atomic_store(&m->head_end, head);
    m->headers = headers;
    m->headers_offset = headers_offset;
    icy_meta_unref(m->meta);
    m->meta = icy_meta_ref(meta);
    pthread_mutex_unlock(&m->lock);
    atomic_store(&m->listener_peak, (int)rec_get_u32(in));
    atomic_store(&m->slow_listeners, rec_get_u64(in));
    atomic_store(&m->bytes_read, rec_get_u64(in));
    atomic_store(&m->bytes_sent, rec_get_u64(in));
    return in->error ? -EINVAL : 0;
}

mount_t *handover_mount_restore(rec_reader_t *in, const handover_metas_t *t,
                                worker_t *(*worker_of)(int old_id), uint64_t *queue_start,
                                const char **err)
{
    char *name = rec_get_str(in);
    mount_info_t info = {0};
    load_info(&info, in);
    mount_feed_t feed = {.is_ogg = rec_get_u8(in)};
    uint32_t wid = rec_get_u32(in);
    feed.worker = wid == UINT32_MAX ? NULL : worker_of((int)wid);
    feed.conn_id = rec_get_u64(in);
    int e = 0;
    mount_t *m = NULL;
    *err = "unreadable mount record";
    if (!in->error && name && (m = mount_create(name, &info, &feed, &e)) == NULL)
        *err = e == -EEXIST ? "mount already live" : "mount not created";
    if (!m)
        mount_info_free(&info);
    free(name);
    if (m && restore_fields(m, in, t, queue_start) < 0) {
        *err = "unreadable mount queue";
        mount_end(m);
        mount_unref(m);
        m = NULL;
    }
    return m;
}

void handover_mount_settle(mount_t *m, uint64_t queue_start)
{
    pthread_mutex_lock(&m->lock);
    while (m->oldest != m->newest && m->oldest->offset < queue_start) {
        block_t *next = block_ref(block_next(m->oldest));
        block_unref(m->oldest);
        m->oldest = next;
    }
    pthread_mutex_unlock(&m->lock);
}

/* ---- listeners ---- */

void handover_forget(conn_t *c)
{
    listener_t *l = listener_of(c);
    if (l) {
        sub_remove(c->worker, l->sub, &l->link); /* no block goes to it here any more */
        atomic_fetch_sub(&l->mount->listeners, 1); /* those left are the ones served here */
    }
    conn_forget(c);
}

const block_t *handover_listener_block(conn_t *c)
{
    listener_t *l = listener_of(c);
    return l ? l->blk : NULL;
}

/* The place of hdr in m's header chain (0 first), or -1 when it is not in it. */
static long header_index(mount_t *m, const block_t *hdr)
{
    long i = 0;
    for (const block_t *b = m->headers; b; b = block_next(b), i++)
        if (b == hdr)
            return i;
    return -1;
}

/* The listener's login: a URL-authentication session (1, then its fields), else a user-file
 * session or none (0, then auth_session_save's). */
static int login_save(conn_t *c, buf_t *out)
{
    client_t *cl = client_of(c);
    int url = cl->on_end == auth_url_session_end;
    rec_u8(out, (uint8_t)url);
    if (!url)
        return auth_session_save(c, out);
    auth_url_session_save(cl->on_end_arg, out);
    return 0;
}

static int login_restore(conn_t *c, rec_reader_t *in)
{
    if (!rec_get_u8(in))
        return auth_session_restore(c, in);
    auth_url_session_t *s = auth_url_session_restore(in);
    if (!s)
        return -EINVAL;
    client_of(c)->on_end = auth_url_session_end;
    client_of(c)->on_end_arg = s;
    return 0;
}

int handover_listener_save(conn_t *c, handover_metas_t *t, buf_t *out)
{
    listener_t *l = listener_of(c);
    if (!l || l->feed) /* a feed's old process cannot follow: it is closed, and its end too */
        return -ENOTSUP;
    /* A break whose ads are decided is carried (its fields after the listener's, and the rest
     * of the creative block it is in as its tail); one still being decided ends here. */
    int ad = adbreak_carried(l);
    if (!ad)
        adbreak_end(l); /* the rest of an ad's block goes as its tail, then live */
    mount_t *m = l->mount;
    pthread_mutex_lock(&m->lock);
    long hdr = l->hdr ? header_index(m, l->hdr) : -1;
    pthread_mutex_unlock(&m->lock);
    if ((l->hdr && hdr < 0) || login_save(c, out) < 0)
        return -ENOTSUP;
    rec_str(out, m->name);
    rec_u64(out, l->blk->offset);
    rec_u32(out, l->pos);
    rec_u32(out, (uint32_t)hdr);
    rec_u32(out, l->hdr_pos);
    rec_u8(out, (uint8_t)l->need_sync);
    rec_u32(out, l->metaint);
    rec_u32(out, l->since_meta);
    rec_u32(out, handover_meta_id(t, l->last_meta));
    rec_u32(out, handover_meta_id(t, l->meta_cur));
    rec_u32(out, l->meta_off);
    rec_u8(out, (uint8_t)l->meta_zero);
    rec_str(out, l->home);
    rec_str(out, l->asked);
    rec_i64(out, l->start_ms);
    rec_str(out, l->country);
    rec_str(out, l->key);
    uint64_t now = loop_now_ms();
    rec_u64(out, c->deadline_ms > now ? c->deadline_ms - now : c->deadline_ms ? 1 : 0);
    /* the rest of the block it was in before a move, or of an ad's (not in the queue) */
    uint32_t tail_pos = l->tail_pos;
    block_t *tail = ad ? adbreak_carry_tail(l, &tail_pos) : NULL;
    if (!tail) {
        tail = l->tail;
        tail_pos = l->tail_pos;
    }
    handover_chain_save(tail, 1, t, out);
    rec_u32(out, tail_pos);
    if (ad)
        adbreak_save(l, out); /* last: a record without them is a listener out of a break */
    return 0;
}

int handover_listener_carries_break(conn_t *c)
{
    listener_t *l = listener_of(c);
    return l && !l->feed && adbreak_carried(l);
}

/* The block of m's carried chain at offset (a new reference), or NULL. */
static block_t *block_at(mount_t *m, uint64_t offset, long index)
{
    pthread_mutex_lock(&m->lock);
    block_t *b = index < 0 ? m->oldest : m->headers;
    for (long i = 0; b && (index < 0 ? b->offset != offset : i < index); i++)
        b = block_next(b);
    if (b)
        block_ref(b);
    pthread_mutex_unlock(&m->lock);
    return b;
}

/* A listener being restored that cannot be: what it holds is let go. */
static void drop_restored(listener_t *l)
{
    block_t *held[] = {l->blk, l->hdr, l->tail};
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
        if (held[i])
        block_unref(held[i]);
    icy_meta_unref(l->last_meta);
    icy_meta_unref(l->meta_cur);
    free(l->home);
    free(l->asked);
    free(l);
}

int handover_listener_restore(conn_t *c, rec_reader_t *in, const handover_metas_t *t,
                              mount_t *(*find)(const char *name, void *arg), void *arg)
{
    if (login_restore(c, in) < 0)
        return -EINVAL;
    char *name = rec_get_str(in);
    mount_t *m = name && !in->error ? find(name, arg) : NULL;
    free(name);
    listener_t *l = m ? calloc(1, sizeof(*l)) : NULL;
    if (!l)
        return m ? -ENOMEM : -EINVAL;
    uint64_t offset = rec_get_u64(in);
    l->pos = rec_get_u32(in);
    long hdr = (long)(int32_t)rec_get_u32(in);
    l->hdr_pos = rec_get_u32(in);
    l->need_sync = rec_get_u8(in);
    l->metaint = rec_get_u32(in);
    l->since_meta = rec_get_u32(in);
    l->last_meta = icy_meta_ref(handover_meta_of(t, rec_get_u32(in)));
    l->meta_cur = icy_meta_ref(handover_meta_of(t, rec_get_u32(in)));
    l->meta_off = rec_get_u32(in);
    l->meta_zero = rec_get_u8(in);
    l->home = rec_get_str(in);
    l->asked = rec_get_str(in);
    l->start_ms = rec_get_i64(in);
    char *country = rec_get_str(in);
    char *key = rec_get_str(in);
    if (key && strlen(key) == SESSION_KEY_LEN)
        memcpy(l->key, key, SESSION_KEY_LEN + 1);
    free(key);
    uint64_t deadline = rec_get_u64(in);
    snprintf(l->country, sizeof(l->country), "%s", country ? country : "");
    free(country);
    int bad = 0;
    block_t *last;
    l->tail = handover_chain_load(in, t, &last, &bad);
    l->tail_pos = rec_get_u32(in);
    l->blk = in->error ? NULL : block_at(m, offset, -1);
    l->hdr = hdr >= 0 && l->blk ? block_at(m, 0, hdr) : NULL;
    if (!l->blk || l->pos > l->blk->len || (hdr >= 0 && !l->hdr) || bad ||
        (l->tail && l->tail_pos > l->tail->len)) {
        drop_restored(l);
        return -EINVAL;
    }
    l->conn = c;
    l->mount = mount_ref(m);
    if (in->p < in->end && adbreak_restore(l, in) < 0) { /* its break, when one was carried */
        drop_restored(l);
        mount_unref(m);
        return -EINVAL;
    }
    listener_adopt(c, l);
    if (deadline)
        conn_set_deadline(c, deadline);
    return 0;
}
