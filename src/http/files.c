/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * files: static files from the webroot (see files.h).
 *
 * A file being sent is the connection's role state (fd, position, end); the body goes out in
 * chunks through the connection's write buffer: whenever the buffer drains, the next chunk is
 * read. The mime table is loaded once per <mime-types> path and never freed (a reload that
 * changes the path loads a new table; the old one may still be read by another worker).
 */
#include "http/files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "http/parser.h"
#include "http/client.h"
#include "http/reply.h"
#include "net/conn.h"
#include "net/server.h"

#define FILES_CHUNK 65536

/* ---- mime types ---- */

typedef struct mime {
    char *ext, *type;
} mime_t;

typedef struct mime_table {
    char *path;
    mime_t *v;
    size_t n;
    struct mime_table *next; /* singly linked: one per mime file, kept until exit */
} mime_table_t;

static pthread_mutex_t mime_lock = PTHREAD_MUTEX_INITIALIZER;
static mime_table_t *mime_tables;

static const mime_t builtin_types[] = {
    {"html", "text/html"}, {"htm", "text/html"}, {"css", "text/css"},
    {"js", "text/javascript"}, {"mjs", "text/javascript"}, {"json", "application/json"},
    {"txt", "text/plain"}, {"xml", "text/xml"}, {"svg", "image/svg+xml"},
    {"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"},
    {"gif", "image/gif"}, {"webp", "image/webp"}, {"ico", "image/x-icon"},
    {"woff", "font/woff"}, {"woff2", "font/woff2"}, {"m3u", "audio/x-mpegurl"},
    {"pls", "audio/x-scpls"}, {"xspf", "application/xspf+xml"}, {"mp3", "audio/mpeg"},
    {"ogg", "application/ogg"}, {"opus", "audio/ogg"}, {"wasm", "application/wasm"},
};

static void mime_parse_line(mime_table_t *t, char *line)
{
    char *save = NULL, *type = strtok_r(line, " \t\r\n", &save);
    if (!type || type[0] == '#')
        return;
    for (char *ext; (ext = strtok_r(NULL, " \t\r\n", &save));) {
        mime_t *nv = realloc(t->v, (t->n + 1) * sizeof(*nv));
        if (!nv)
            return;
        t->v = nv;
        t->v[t->n].ext = strdup(ext);
        t->v[t->n].type = strdup(type);
        if (t->v[t->n].ext && t->v[t->n].type)
            t->n++;
    }
}

static mime_table_t *mime_table(const char *path)
{
    pthread_mutex_lock(&mime_lock);
    mime_table_t *t = mime_tables;
    while (t && strcmp(t->path, path) != 0)
        t = t->next;
    if (!t && (t = calloc(1, sizeof(*t))) && (t->path = strdup(path))) {
        FILE *f = fopen(path, "r");
        char line[1024];
        while (f && fgets(line, sizeof(line), f))
            mime_parse_line(t, line);
        if (f)
            fclose(f);
        t->next = mime_tables;
        mime_tables = t;
    } else if (t && !t->path) {
        free(t);
        t = NULL;
    }
    pthread_mutex_unlock(&mime_lock);
    return t;
}

const char *files_mime_type(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *dot = strrchr(slash ? slash : name, '.');
    if (!dot || !dot[1])
        return "application/octet-stream";
    const char *ext = dot + 1;
    const config_t *cfg = server_config();
    mime_table_t *t = mime_table(cfg->mime_types ? cfg->mime_types : "/etc/mime.types");
    for (size_t i = 0; t && i < t->n; i++)
        if (strcasecmp(t->v[i].ext, ext) == 0)
            return t->v[i].type;
    for (size_t i = 0; i < sizeof(builtin_types) / sizeof(builtin_types[0]); i++)
        if (strcasecmp(builtin_types[i].ext, ext) == 0)
            return builtin_types[i].type;
    return "application/octet-stream";
}

/* ---- resolving ---- */

static int check_file(const char *full, struct stat *st)
{
    if (lstat(full, st) < 0)
        return -ENOENT;
    return S_ISLNK(st->st_mode) ? -EACCES : 0;
}

int files_resolve(const char *path, char **real)
{
    const config_t *cfg = server_config();
    char root[PATH_MAX], full[PATH_MAX + 16], resolved[PATH_MAX];
    if (!cfg->webroot || !realpath(cfg->webroot, root))
        return -ENOENT;
    size_t plen = strlen(path);
    int n = snprintf(full, sizeof(full), "%s%s%s", root, path,
                     plen && path[plen - 1] == '/' ? "index.html" : "");
    if (n < 0 || (size_t)n >= sizeof(full) - 16)
        return -ENOENT;
    struct stat st;
    int rc = check_file(full, &st);
    if (rc == 0 && S_ISDIR(st.st_mode)) {
        strcat(full, "/index.html");
        rc = check_file(full, &st);
    }
    if (rc < 0)
        return rc;
    if (!S_ISREG(st.st_mode) || !realpath(full, resolved))
        return -ENOENT;
    size_t rlen = strlen(root);
    if (strncmp(resolved, root, rlen) != 0 || (resolved[rlen] != '/' && rlen > 1))
        return -EACCES;
    *real = strdup(resolved);
    return *real ? 0 : -ENOMEM;
}

/* ---- conditional and range requests ---- */

static int not_modified(const http_request_t *req, time_t mtime)
{
    const http_header_t *h = http_find_header(req, "if-modified-since");
    if (!h || h->value_len >= 64)
        return 0;
    char buf[64];
    memcpy(buf, h->value, h->value_len);
    buf[h->value_len] = '\0';
    struct tm tm = {0};
    const char *end = strptime(buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    return end && *end == '\0' && mtime <= timegm(&tm);
}

static int parse_offset(const char **p, const char *end, off_t *out)
{
    if (*p == end || **p < '0' || **p > '9')
        return -1;
    off_t v = 0;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
        if (v > (off_t)(LLONG_MAX / 10 - 10))
            return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

/* "bytes=a-b" | "bytes=a-" | "bytes=-n". 1 with [*start, *end) set, 0 to ignore (absent or
 * several ranges: the whole file is sent), -1 for a bad or unsatisfiable range. */
static int parse_range(const http_request_t *req, off_t size, off_t *start, off_t *end)
{
    const http_header_t *h = http_find_header(req, "range");
    if (!h)
        return 0;
    const char *p = h->value, *e = h->value + h->value_len;
    if (h->value_len < 6 || strncasecmp(p, "bytes=", 6) != 0)
        return -1;
    p += 6;
    if (memchr(p, ',', (size_t)(e - p)))
        return 0;
    off_t a = -1, b = -1;
    if (p < e && *p == '-') {
        p++;
        if (parse_offset(&p, e, &b) < 0 || p != e || b == 0 || size == 0)
            return -1;
        *start = b >= size ? 0 : size - b;
        *end = size;
        return 1;
    }
    if (parse_offset(&p, e, &a) < 0 || p == e || *p++ != '-')
        return -1;
    if (p < e && (parse_offset(&p, e, &b) < 0 || b < a))
        return -1;
    if (p != e || a >= size)
        return -1;
    *start = a;
    *end = b < 0 || b >= size ? size : b + 1;
    return 1;
}

/* ---- sending ---- */

typedef struct fsend {
    int fd;
    off_t pos, end;
    int keep;
} fsend_t;

static void fsend_release(conn_t *c)
{
    fsend_t *f = c->data;
    if (!f)
        return;
    close(f->fd);
    free(f);
    c->data = NULL;
}

static const conn_ops_t file_role = {
    .name = "file",
    .on_close = fsend_release,
};

static __thread char chunk[FILES_CHUNK];

static void file_next(conn_t *c)
{
    fsend_t *f = c->data;
    for (;;) {
        if (f->pos >= f->end) {
            int keep = f->keep;
            fsend_release(c);
            c->role = NULL;
            if (keep)
                reply_next_request(c);
            else
                conn_linger_close(c);
            return;
        }
        size_t want = (size_t)(f->end - f->pos) < sizeof(chunk) ? (size_t)(f->end - f->pos)
                                                                 : sizeof(chunk);
        ssize_t n = pread(f->fd, chunk, want, f->pos);
        if (n <= 0 || conn_queue(c, chunk, (size_t)n) < 0) {
            conn_close(c);
            return;
        }
        f->pos += n;
        int r = conn_flush_wbuf(c);
        if (r < 0)
            return;
        if (r == 0) {
            c->after_write = file_next; /* resumes when the socket drains */
            return;
        }
    }
}

static size_t file_head(char *head, size_t cap, int keep, int status, const char *real,
                        const struct stat *st, off_t start, off_t end)
{
    char extra[512], lm[64], range[128] = "";
    struct tm tm;
    gmtime_r(&st->st_mtime, &tm);
    strftime(lm, sizeof(lm), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (status == 206)
        snprintf(range, sizeof(range), "Content-Range: bytes %lld-%lld/%lld\r\n",
                 (long long)start, (long long)end - 1, (long long)st->st_size);
    snprintf(extra, sizeof(extra),
             "Last-Modified: %s\r\nAccept-Ranges: bytes\r\nCache-Control: no-cache\r\n%s", lm,
             range);
    const char *type = files_mime_type(real);
    char ctype[160];
    snprintf(ctype, sizeof(ctype), "%s%s", type,
             strncmp(type, "text/", 5) == 0 ? "; charset=utf-8" : "");
    return reply_head(head, cap, keep, status, status == 304 ? NULL : ctype,
                       status == 304 ? -1 : (long long)(end - start), extra);
}

void files_serve(conn_t *c, const http_request_t *req, const char *real)
{
    atomic_fetch_add(&server.stats.file_connections, 1);
    int fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        client_send_error(c, 404, "The file you requested could not be found");
        return;
    }
    off_t start = 0, end = st.st_size;
    int status = not_modified(req, st.st_mtime) ? 304 : 200;
    int range = status == 200 ? parse_range(req, st.st_size, &start, &end) : 0;
    if (range < 0) {
        close(fd);
        char extra[96];
        snprintf(extra, sizeof(extra), "Content-Range: bytes */%lld\r\n", (long long)st.st_size);
        static const char msg[] = "Request Range Not Satisfiable";
        reply_send(c, req, 416, "text/plain; charset=utf-8", msg, sizeof(msg) - 1, extra);
        return;
    }
    if (range > 0)
        status = 206;
    int keep = reply_keepalive_wanted(req);
    char head[4096];
    size_t hlen = file_head(head, sizeof(head), keep, status, real, &st, start, end);
    fsend_t *f = calloc(1, sizeof(*f));
    if (!f || hlen == 0) {
        free(f);
        close(fd);
        client_send_error(c, 500, "Internal Server Error");
        return;
    }
    *f = (fsend_t){fd, start, end, keep};
    if (status == 304 || req->method == HTTP_METHOD_HEAD)
        f->end = f->pos; /* head only */
    client_of(c)->status = status;
    c->data = f;
    c->role = &file_role;
    c->ops = &reply_sending_ops;
    conn_send(c, head, hlen, file_next);
}
