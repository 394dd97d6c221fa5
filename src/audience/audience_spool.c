/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_spool: records waiting in a file while the database is away (see audience_spool.h).
 */
#include "audience/audience_spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audience/audience_ads.h"
#include "core/escape.h"

/* R3: R2's fields, why the session is invalid ("" valid) and 1 for an HLS session; R2: R1's
 * fields and the listener key (\N: none); R2 and R1 lines (written before records had the
 * reason, or the key) are still read: valid streams */
#define SPOOL_TAG "R3"
#define SPOOL_TAG_R2 "R2"
#define SPOOL_TAG_R1 "R1"
#define SPOOL_FIELDS 19
/* A1: an ad decision (audience_ads.h): its id, server, session, mount, kind (1 HLS), asked and
 * ended (ms), outcome (its name), VAST code, break (ms), the ads placed, then for each ad its
 * id, creative id, title, duration and delivered (ms) and events (ADS_FIRED_* bits) */
#define SPOOL_TAG_AD "A1"
#define SPOOL_AD_HEAD 12
#define SPOOL_AD_EACH 6
#define SPOOL_AD_FIELDS (SPOOL_AD_HEAD + SPOOL_AD_EACH * ADS_POD_MAX)
#define SPOOL_CHUNK 65536

/* ---- one line ---- */

static int put_text(buf_t *b, const char *s)
{
    buf_append_char(b, '\t');
    return escape_tsv_buf(b, s);
}

static void put_uid(buf_t *b, const uint8_t uid[16])
{
    for (int i = 0; i < 16; i++)
        buf_appendf(b, "%02x", uid[i]);
}

static int encode_ad(buf_t *b, const audience_record_t *e)
{
    const ads_record_t *a = e->ad;
    buf_append_str(b, SPOOL_TAG_AD "\t");
    put_uid(b, e->uid);
    put_text(b, e->server);
    buf_appendf(b, "\t%llu", (unsigned long long)a->session);
    put_text(b, a->mount);
    buf_appendf(b, "\t%d\t%lld\t%lld\t%s\t%d\t%u\t%d", a->hls ? 1 : 0, (long long)a->asked_ms,
                (long long)a->ended_ms, ads_outcome_name(a->outcome), a->vast_code, a->break_ms,
                a->n);
    for (int i = 0; i < a->n; i++) {
        const ads_record_ad_t *d = &a->ad[i];
        put_text(b, d->ad_id);
        put_text(b, d->creative_id);
        put_text(b, d->title);
        buf_appendf(b, "\t%u\t%u\t%u", d->duration_ms, d->delivered_ms, d->events);
    }
    return buf_append_char(b, '\n');
}

int audience_spool_encode(buf_t *b, const audience_record_t *e)
{
    if (e->ad)
        return encode_ad(b, e);
    const session_record_t *r = &e->r;
    buf_append_str(b, SPOOL_TAG "\t");
    put_uid(b, e->uid);
    put_text(b, e->server);
    buf_appendf(b, "\t%llu", (unsigned long long)r->id);
    put_text(b, r->mount);
    put_text(b, r->served);
    buf_appendf(b, "\t%lld\t%lld\t%llu", (long long)r->start_ms, (long long)r->end_ms,
                (unsigned long long)r->bytes);
    put_text(b, r->address);
    put_text(b, r->agent);
    put_text(b, r->referer);
    put_text(b, r->user);
    put_text(b, r->country);
    buf_appendf(b, "\t%d\t%d", (int)r->end, r->preroll ? 1 : 0);
    put_text(b, r->key);
    put_text(b, r->invalid ? r->invalid : "");
    buf_appendf(b, "\t%d", r->hls ? 1 : 0);
    return buf_append_char(b, '\n');
}

/* Field f unescaped into out (NUL-terminated; out has room for f's length + 1); 0, 1 when it
 * is \N (none), -1 when malformed. */
static int unescape(const char *f, size_t len, char *out)
{
    if (len == 2 && f[0] == '\\' && f[1] == 'N')
        return 1;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (f[i] != '\\') {
            if (f[i] == '\0')
                return -1;
            out[o++] = f[i];
            continue;
        }
        if (++i == len)
            return -1;
        switch (f[i]) {
        case '\\': out[o++] = '\\'; break;
        case 't': out[o++] = '\t'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        default: return -1;
        }
    }
    out[o] = '\0';
    return 0;
}

/* A decimal integer filling the field, within [lo, hi]. */
static int number(const char *f, size_t len, long long lo, long long hi, long long *out)
{
    char tmp[24];
    if (len == 0 || len >= sizeof(tmp))
        return -1;
    memcpy(tmp, f, len);
    tmp[len] = '\0';
    size_t skip = tmp[0] == '-' ? 1 : 0;
    if (!tmp[skip] || strspn(tmp + skip, "0123456789") != len - skip)
        return -1;
    errno = 0;
    long long v = strtoll(tmp, NULL, 10);
    if (errno || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static int hex_uid(const char *f, size_t len, uint8_t uid[16])
{
    if (len != 32)
        return -1;
    for (int i = 0; i < 16; i++) {
        int hi = hex_digit(f[2 * i]), lo = hex_digit(f[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        uid[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

/* Text field k of f unescaped into *p (which moves on past it): 0, 1 for \N, -1 malformed. */
static int text_at(const char *const *f, const size_t *flen, size_t k, char **p, char **out)
{
    int rc = unescape(f[k], flen[k], *p);
    *out = rc == 0 ? *p : NULL;
    *p += flen[k] + 1;
    return rc;
}

/* An id of an ad (at most 63 bytes once unescaped) into out. */
static int id_at(const char *const *f, const size_t *flen, size_t k, char **p, char out[64])
{
    char *t;
    if (text_at(f, flen, k, p, &t) != 0 || strlen(t) >= 64)
        return -1;
    memcpy(out, t, strlen(t) + 1);
    return 0;
}

/* An A1 line's n fields (len bytes in all): the ad decision they hold, or NULL. */
static audience_record_t *decode_ad(const char *const *f, const size_t *flen, size_t n,
                                    size_t len)
{
    long long session, hls, asked, ended, code, brk, nads;
    char outcome[16];
    uint8_t uid[16];
    if (n < SPOOL_AD_HEAD || hex_uid(f[1], flen[1], uid) < 0 || flen[8] >= sizeof(outcome) ||
        number(f[3], flen[3], 0, INT64_MAX, &session) < 0 ||
        number(f[5], flen[5], 0, 1, &hls) < 0 ||
        number(f[6], flen[6], INT64_MIN + 1, INT64_MAX, &asked) < 0 ||
        number(f[7], flen[7], INT64_MIN + 1, INT64_MAX, &ended) < 0 ||
        unescape(f[8], flen[8], outcome) != 0 || ads_outcome_of(outcome) < 0 ||
        number(f[9], flen[9], 0, 999, &code) < 0 ||
        number(f[10], flen[10], 0, UINT32_MAX, &brk) < 0 ||
        number(f[11], flen[11], 0, ADS_POD_MAX, &nads) < 0 ||
        n != SPOOL_AD_HEAD + (size_t)nads * SPOOL_AD_EACH)
        return NULL;
    char *scratch = malloc(len + n), *p = scratch, *server, *mount;
    ads_record_t a = {.session = (uint64_t)session, .hls = (int)hls, .asked_ms = asked,
                      .ended_ms = ended, .outcome = (ads_outcome_t)ads_outcome_of(outcome),
                      .vast_code = (int)code, .break_ms = (uint32_t)brk, .n = (int)nads};
    int bad = !scratch || text_at(f, flen, 2, &p, &server) < 0 ||
              text_at(f, flen, 4, &p, &mount) != 0;
    a.mount = mount;
    for (int i = 0; !bad && i < a.n; i++) {
        size_t at = SPOOL_AD_HEAD + (size_t)i * SPOOL_AD_EACH;
        ads_record_ad_t *d = &a.ad[i];
        long long dur, got, ev;
        bad = id_at(f, flen, at, &p, d->ad_id) < 0 || id_at(f, flen, at + 1, &p,
                                                            d->creative_id) < 0 ||
              text_at(f, flen, at + 2, &p, &d->title) < 0 ||
              number(f[at + 3], flen[at + 3], 0, UINT32_MAX, &dur) < 0 ||
              number(f[at + 4], flen[at + 4], 0, UINT32_MAX, &got) < 0 ||
              number(f[at + 5], flen[at + 5], 0, 63, &ev) < 0;
        d->duration_ms = (uint32_t)dur;
        d->delivered_ms = (uint32_t)got;
        d->events = (unsigned)ev;
    }
    audience_record_t *e = bad ? NULL : audience_record_copy_ad(&a, server);
    if (e)
        memcpy(e->uid, uid, sizeof(uid));
    free(scratch);
    return e;
}

static audience_record_t *decode_ad_line(const char *line, size_t len)
{
    const char *f[SPOOL_AD_FIELDS];
    size_t flen[SPOOL_AD_FIELDS], n = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && line[i] != '\t')
            continue;
        if (n == SPOOL_AD_FIELDS)
            return NULL;
        f[n] = line + start;
        flen[n++] = i - start;
        start = i + 1;
    }
    return decode_ad(f, flen, n, len);
}

audience_record_t *audience_spool_decode(const char *line, size_t len)
{
    if (len >= 3 && memcmp(line, SPOOL_TAG_AD "\t", 3) == 0)
        return decode_ad_line(line, len);
    const char *f[SPOOL_FIELDS];
    size_t flen[SPOOL_FIELDS], n = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && line[i] != '\t')
            continue;
        if (n == SPOOL_FIELDS)
            return NULL;
        f[n] = line + start;
        flen[n++] = i - start;
        start = i + 1;
    }
    int r1 = n == SPOOL_FIELDS - 3 && flen[0] == 2 && memcmp(f[0], SPOOL_TAG_R1, 2) == 0;
    int r2 = n == SPOOL_FIELDS - 2 && flen[0] == 2 && memcmp(f[0], SPOOL_TAG_R2, 2) == 0;
    if (!r1 && !r2 && (n != SPOOL_FIELDS || flen[0] != 2 || memcmp(f[0], SPOOL_TAG, 2) != 0))
        return NULL;
    /* R3: the reason (a short word of lower-case letters: nothing to unescape) and the kind */
    char invalid[16] = "";
    long long hls = 0;
    if (n == SPOOL_FIELDS) {
        if (flen[17] >= sizeof(invalid) || strspn(f[17], "abcdefghijklmnopqrstuvwxyz_") <
                                                 flen[17] ||
            number(f[18], flen[18], 0, 1, &hls) < 0)
            return NULL;
        memcpy(invalid, f[17], flen[17]);
        invalid[flen[17]] = '\0';
    }
    /* the key: SESSION_KEY_LEN lower-case hex digits, or \N */
    char key[SESSION_KEY_LEN + 1];
    const char *kf = r1 ? NULL : f[16];
    size_t klen = r1 ? 0 : flen[16];
    int has_key = kf && !(klen == 2 && kf[0] == '\\' && kf[1] == 'N');
    if (has_key) {
        if (klen != SESSION_KEY_LEN)
            return NULL;
        for (size_t i = 0; i < klen; i++)
            if (hex_digit(kf[i]) < 0)
                return NULL;
        memcpy(key, kf, klen);
        key[klen] = '\0';
    }
    /* the texts, unescaped into one scratch copy: server, mount, served, address, agent,
     * referer, user, country */
    static const int text_at[] = {2, 4, 5, 9, 10, 11, 12, 13};
    char *scratch = malloc(len + sizeof(text_at) / sizeof(text_at[0]));
    if (!scratch)
        return NULL;
    const char *texts[8];
    char *p = scratch;
    int bad = 0;
    for (size_t k = 0; k < 8 && !bad; k++) {
        int rc = unescape(f[text_at[k]], flen[text_at[k]], p);
        bad = rc < 0;
        texts[k] = rc == 0 ? p : NULL;
        p += flen[text_at[k]] + 1;
    }
    long long id, start_ms, end_ms, bytes, end, preroll;
    session_record_t r = {0};
    uint8_t uid[16];
    audience_record_t *e = NULL;
    if (!bad && hex_uid(f[1], flen[1], uid) == 0 &&
        number(f[3], flen[3], 0, INT64_MAX, &id) == 0 &&
        number(f[6], flen[6], INT64_MIN + 1, INT64_MAX, &start_ms) == 0 &&
        number(f[7], flen[7], INT64_MIN + 1, INT64_MAX, &end_ms) == 0 &&
        number(f[8], flen[8], 0, INT64_MAX, &bytes) == 0 &&
        number(f[14], flen[14], SESSION_END_CLIENT, SESSION_END_SHUTDOWN, &end) == 0 &&
        number(f[15], flen[15], 0, 1, &preroll) == 0 && texts[1] && texts[3]) {
        r = (session_record_t){.id = (uint64_t)id, .mount = texts[1], .served = texts[2],
                               .start_ms = start_ms, .end_ms = end_ms, .bytes = (uint64_t)bytes,
                               .address = texts[3], .agent = texts[4], .referer = texts[5],
                               .user = texts[6], .country = texts[7],
                               .end = (session_end_t)end, .preroll = (int)preroll,
                               .key = has_key ? key : NULL, .invalid = invalid,
                               .hls = (int)hls};
        e = audience_record_copy(&r, texts[0]);
        if (e)
            memcpy(e->uid, uid, sizeof(uid));
    }
    free(scratch);
    return e;
}

/* ---- the file ---- */

void audience_spool_close(audience_spool_t *s)
{
    if (s->fd >= 0)
        close(s->fd);
    free(s->path);
    *s = (audience_spool_t){.fd = -1};
}

/* Counts the lines of the file; a last one without its newline is cut off. */
static int count_records(audience_spool_t *s)
{
    char buf[SPOOL_CHUNK];
    off_t at = 0, last_end = 0;
    ssize_t got;
    while ((got = pread(s->fd, buf, sizeof(buf), at)) > 0) {
        for (ssize_t i = 0; i < got; i++)
            if (buf[i] == '\n') {
                s->records++;
                last_end = at + i + 1;
            }
        at += got;
    }
    if (got < 0)
        return -errno;
    if (last_end != at && ftruncate(s->fd, last_end) < 0)
        return -errno;
    s->size = last_end;
    return 0;
}

int audience_spool_open(audience_spool_t *s, const char *path, const char **why)
{
    *s = (audience_spool_t){.fd = -1};
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    struct stat sb;
    *why = "it cannot be opened";
    if (fd < 0) {
        *why = errno == ELOOP ? "it is a symbolic link" : strerror(errno);
        return -errno;
    }
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
        *why = "it is not a plain file with a single link";
        close(fd);
        return -EINVAL;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int err = errno == EWOULDBLOCK ? EAGAIN : errno;
        *why = err == EAGAIN ? "another process of the server holds it" : strerror(err);
        close(fd);
        return -err;
    }
    s->fd = fd;
    s->path = strdup(path);
    int rc = s->path ? count_records(s) : -ENOMEM;
    if (rc < 0) {
        *why = "it cannot be read";
        audience_spool_close(s);
    }
    return rc;
}

size_t audience_spool_append(audience_spool_t *s, audience_record_t *const *v, size_t n,
                             long max)
{
    buf_t b = BUF_INIT;
    size_t fit = 0;
    for (size_t i = 0; i < n; i++) {
        size_t before = b.len;
        audience_spool_encode(&b, v[i]);
        if (b.error || s->size + (off_t)b.len > (off_t)max) {
            b.len = before;
            break;
        }
        fit++;
    }
    size_t done = 0;
    while (s->fd >= 0 && !b.error && done < b.len) {
        ssize_t w = pwrite(s->fd, b.data + done, b.len - done, s->size + (off_t)done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (done < b.len) { /* nothing of it kept: a partial line must not stay */
        if (s->fd >= 0 && ftruncate(s->fd, s->size) < 0)
            s->size = lseek(s->fd, 0, SEEK_END); /* what is there is read back as it is */
        fit = 0;
    } else {
        s->size += (off_t)b.len;
        s->records += fit;
    }
    buf_free(&b);
    return fit;
}

audience_record_t *audience_spool_read(audience_spool_t *s, size_t max, size_t *n, off_t *next,
                                       size_t *bad)
{
    audience_record_t *head = NULL, **tail = &head;
    buf_t line = BUF_INIT;
    char chunk[SPOOL_CHUNK];
    off_t at = s->read_at;
    *n = *bad = 0;
    *next = at;
    while (*n < max && at < s->size) {
        ssize_t got = pread(s->fd, chunk, sizeof(chunk), at);
        if (got <= 0)
            break;
        ssize_t i = 0;
        while (i < got && *n < max) {
            char *nl = memchr(chunk + i, '\n', (size_t)(got - i));
            size_t take = nl ? (size_t)(nl - (chunk + i)) : (size_t)(got - i);
            buf_append(&line, chunk + i, take);
            i += (ssize_t)take + (nl ? 1 : 0);
            if (!nl)
                break;
            audience_record_t *e = line.error ? NULL : audience_spool_decode(line.data, line.len);
            *tail = e;
            tail = e ? &e->next : tail;
            *n += e != NULL;
            *bad += e == NULL;
            *next = at + i;
            line.len = 0;
        }
        at += i;
    }
    buf_free(&line);
    return head;
}

void audience_spool_done(audience_spool_t *s, off_t next, size_t n)
{
    s->read_at = next;
    s->records = s->records > n ? s->records - n : 0;
    if (s->read_at >= s->size && ftruncate(s->fd, 0) == 0) /* everything written */
        s->size = s->read_at = 0, s->records = 0;
}
