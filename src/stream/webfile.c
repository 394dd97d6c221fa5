/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * webfile: webroot audio files read once and shared (see webfile.h).
 *
 * The cache is a short list (only the files named by <intro>, <fallback-mount> and runtime
 * fallbacks ever enter it) under one mutex, used on cold paths only.
 */
#include "stream/webfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "http/files.h"
#include "net/server.h"

#define WEBFILE_BLOCK (64 * 1024)

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static webfile_t *cache;

webfile_t *webfile_ref(webfile_t *f)
{
    atomic_fetch_add(&f->refcount, 1);
    return f;
}

void webfile_unref(webfile_t *f)
{
    if (!f || atomic_fetch_sub(&f->refcount, 1) != 1)
        return;
    if (f->blocks)
        block_unref(f->blocks);
    free(f->data);
    free(f->real);
    free(f);
}

void webfile_cache_clear(void)
{
    pthread_mutex_lock(&cache_lock);
    webfile_t *f = cache;
    cache = NULL;
    pthread_mutex_unlock(&cache_lock);
    while (f) {
        webfile_t *next = f->next;
        webfile_unref(f);
        f = next;
    }
}

/* ---- MP3 frames ---- */

static const short mp3_kbps[2][16] = {
    {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160, 0},     /* MPEG-2/2.5 */
    {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 0}, /* MPEG-1 */
};
static const int mp3_hz[4][3] = {
    {11025, 12000, 8000}, {0, 0, 0}, {22050, 24000, 16000}, {44100, 48000, 32000},
};

/* Length of the Layer III frame at p (and its samples and rate), or 0 if there is none. */
static size_t mp3_frame(const unsigned char *p, size_t avail, int *samples, int *hz)
{
    if (avail < 4 || p[0] != 0xFF || (p[1] & 0xE0) != 0xE0)
        return 0;
    int version = (p[1] >> 3) & 3, layer = (p[1] >> 1) & 3;
    int br = p[2] >> 4, sr = (p[2] >> 2) & 3, pad = (p[2] >> 1) & 1;
    if (version == 1 || layer != 1 || br == 0 || br == 15 || sr == 3)
        return 0;
    int mpeg1 = version == 3;
    *hz = mp3_hz[version][sr];
    *samples = mpeg1 ? 1152 : 576;
    return (size_t)((mpeg1 ? 144 : 72) * mp3_kbps[mpeg1][br] * 1000 / *hz + pad);
}

long webfile_mp3_bitrate(const unsigned char *data, size_t *start, size_t *end)
{
    size_t pos = *start;
    if (*end - pos >= 10 && memcmp(data + pos, "ID3", 3) == 0)
        pos += 10 + (((size_t)data[pos + 6] & 0x7f) << 21 | ((size_t)data[pos + 7] & 0x7f) << 14 |
                     ((size_t)data[pos + 8] & 0x7f) << 7 | ((size_t)data[pos + 9] & 0x7f));
    for (; pos + 4 <= *end; pos++) {
        int samples, hz, n = 0;
        size_t p = pos, len;
        double seconds = 0;
        while ((len = mp3_frame(data + p, *end - p, &samples, &hz)) && p + len <= *end) {
            p += len;
            seconds += (double)samples / hz;
            n++;
        }
        if (n >= 4) {
            *start = pos;
            *end = p;
            return (long)((double)(p - pos) * 8 / seconds);
        }
    }
    return 0;
}

size_t webfile_mp3_frames(const unsigned char *data, size_t pos, size_t end, size_t want)
{
    size_t p = pos, len;
    int samples, hz;
    while (p - pos < want && (len = mp3_frame(data + p, end - p, &samples, &hz)) &&
           p + len <= end)
        p += len;
    return p > pos ? p - pos : (want < end - pos ? want : end - pos);
}

/* ---- loading ---- */

static int read_all(const char *real, size_t len, unsigned char *buf)
{
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got == len ? 0 : -EIO;
}

static webfile_t *load(char *real, const struct stat *st)
{
    webfile_t *f = calloc(1, sizeof(*f));
    size_t len = (size_t)st->st_size;
    if (!f || !(f->data = malloc(len ? len : 1)) || read_all(real, len, f->data) < 0)
        goto fail;
    atomic_init(&f->refcount, 1);
    f->real = real;
    f->mtime = st->st_mtime;
    f->len = len;
    block_t *tail = NULL;
    for (size_t off = 0; off < len; off += WEBFILE_BLOCK) {
        size_t n = len - off < WEBFILE_BLOCK ? len - off : WEBFILE_BLOCK;
        block_t *b = block_new_copy(f->data + off, n);
        if (!b)
            goto fail;
        b->offset = off;
        b->flags = off == 0 ? BLOCK_SYNC : 0;
        if (tail)
            block_link(tail, b);
        else
            f->blocks = b;
        tail = b;
    }
    f->content_type = files_mime_type(real);
    f->audio_start = 0;
    f->audio_end = len;
    if (strcmp(f->content_type, "audio/mpeg") == 0)
        f->bitrate = webfile_mp3_bitrate(f->data, &f->audio_start, &f->audio_end);
    return f;
fail:
    if (f) {
        f->real = NULL;
        atomic_init(&f->refcount, 1);
        webfile_unref(f);
    }
    free(real);
    return NULL;
}

/* Icecast-KH opens an <intro> (or a fallback file) at the webroot followed by its name, so a
 * name with a ".." segment reaches outside the webroot: AzuraCast's intros sit in the
 * station's directory ("../../../../var/azuracast/stations/x/config/intro.mp3"). Such names
 * come from the config or the admin only (auth_url.c refuses ".." in a preroll an auth server
 * names; an HLS intro request may only name one its session has), so a name with ".." is
 * opened where it leads: a regular file, not through a symbolic link at its last name. 0 with
 * *real set, or -errno. */
static int resolve_outside(const char *path, char **real)
{
    const char *root = server_config()->webroot;
    char full[PATH_MAX], resolved[PATH_MAX];
    struct stat st;
    if (!strstr(path, "/../") || !root)
        return -EACCES;
    if (snprintf(full, sizeof(full), "%s%s", root, path) >= (int)sizeof(full))
        return -ENAMETOOLONG;
    if (lstat(full, &st) < 0 || !S_ISREG(st.st_mode) || !realpath(full, resolved))
        return -ENOENT;
    return (*real = strdup(resolved)) ? 0 : -ENOMEM;
}

webfile_t *webfile_get(const char *path)
{
    char *real = NULL;
    struct stat st;
    int rc = files_resolve(path, &real);
    if (rc == -EACCES)
        rc = resolve_outside(path, &real);
    if (rc < 0)
        return NULL;
    if (stat(real, &st) < 0 || (size_t)st.st_size > WEBFILE_MAX) {
        char esc[512];
        log_warn("file %s cannot be used as a stream file (unreadable or over 16 MB)",
                 escape_log(esc, sizeof(esc), path, strlen(path)));
        free(real);
        return NULL;
    }
    pthread_mutex_lock(&cache_lock);
    webfile_t **pp = &cache;
    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->real, real) == 0)
            break;
    webfile_t *f = *pp;
    if (f && f->mtime == st.st_mtime && f->len == (size_t)st.st_size) {
        webfile_ref(f);
        pthread_mutex_unlock(&cache_lock);
        free(real);
        return f;
    }
    webfile_t *nf = load(real, &st); /* takes real */
    if (nf) {
        if (f) {
            nf->next = f->next;
            *pp = nf;
            webfile_unref(f); /* the cache's reference; users keep theirs */
        } else {
            nf->next = cache;
            cache = nf;
        }
        webfile_ref(nf);
    }
    pthread_mutex_unlock(&cache_lock);
    return nf;
}
