/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swarm: the load generator. One process, one edge-triggered epoll loop, three roles that combine
 * in one run: N HTTP listeners spread over mounts (read and discard into one shared buffer, byte
 * counters per listener), M paced sources (libshout, non-blocking, driven by a timer tick because
 * libshout hides its socket) and a latency probe (one source embedding CLOCK_MONOTONIC markers,
 * P listeners scanning for them). Once a second it prints one "key=value" status line.
 * It owns every socket it opens; it does not decode audio, reconnect, or judge the server:
 * sample.py and plot.py turn its lines into figures. See loadtest/README.md for the fields.
 * With --tls the listeners (the probe's included) speak TLS through OpenSSL: no certificate
 * check, one client session kept and offered again (resumption) unless --tls-no-resume.
 * With --churn R, once all N listeners are launched, R of them a second leave and connect again
 * (N stay connected), each new session with a user agent and referer of its own.
 * A listener is judged on the bytes the server delivered to it (read, plus unread in its socket
 * at the status tick), so that when the swarm reads does not decide it. With --trace FILE it
 * writes a timeline: a sample of listeners' reads and byte counts, and its own loop turns.
 * With --time-listeners K, K of the N listeners (all, or a random sample spread over them) time
 * the probe source's markers on their own mount, as the probe listeners do on theirs: the
 * latency of the loaded mount itself, at the read (lat_*) and at the data's arrival in the
 * socket (arr_*, the kernel's receive timestamp), which leaves out when the swarm got to read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <shout/shout.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "probe_marker.h"

#define READ_BUF_SIZE (256 * 1024)
#define WINDOW_MAX 8
#define LAT_BUCKET_US 20
#define LAT_BUCKETS 100000 /* 20 us x 100000 = 2 s, last bucket = overflow */

enum lstate { L_IDLE, L_CONNECTING, L_HANDSHAKE, L_HEADER, L_STREAM, L_CLOSED };
enum sstate { S_IDLE, S_CONNECTING, S_UP, S_FAILED, S_CLOSED };

typedef struct {
    int fd;
    uint8_t state;
    uint8_t probe;
    uint8_t timed;       /* scans for markers (probe listeners, and --time-listeners) */
    uint8_t hdr_match;   /* how much of "\r\n\r\n" has been seen */
    uint8_t status_len;
    char status[12];     /* "HTTP/1.x NNN" */
    uint32_t mount;
    double t_start, t_stream;
    double play_t0;      /* its player model: where its play-out timeline began (see dry) */
    uint64_t bytes, hdr_bytes;
    uint64_t win[WINDOW_MAX + 1]; /* body bytes at the last status ticks */
    uint64_t dwin[WINDOW_MAX + 1]; /* the same plus the bytes unread in the socket then */
    uint32_t first_tick;
    uint8_t carry_len;
    uint8_t carry[MARKER_LEN - 1];
    SSL *ssl; /* --tls */
} listener_t;

typedef struct {
    shout_t *sh;
    int state;
    const char *mount;
    double t_up;
    uint64_t sent;
} source_t;

typedef struct {
    char **v;
    unsigned n;
} mountlist_t;

static struct {
    const char *host, *src_ip, *password, *user, *content_type, *source_file, *status_path;
    const char *per_mount_path;
    int port;
    unsigned listeners, step, probe_listeners, sources, source_step, time_listeners;
    int probe_listeners_set;
    double hold, source_hold, connect_rate, source_rate, duration, drain, window;
    double connect_timeout, bitrate_kbps, source_tick, probe_tick;
    double churn; /* listeners a second that leave and are replaced, once all are launched */
    int random_choice, rcvlowat, rcvbuf, retry, slack;
    int tls, tls_no_resume;
    int judge_read;         /* judge on bytes read only, not on bytes delivered (read + unread) */
    const char *trace_path; /* per-read and per-turn timeline of a sample of listeners */
    unsigned trace_every;
    int probe_listen_only; /* probe listeners without the probe source (another process sends
                            * the markers, e.g. to a relay tree's origin) */
    unsigned max_pending;
    unsigned seed;
    mountlist_t mounts, source_mounts;
    const char *probe_mount;
} opt = {
    .host = "127.0.0.1", .password = "hackme", .user = "source", .content_type = "audio/mpeg",
    .port = 8000, .hold = 0, .source_hold = 0, .duration = 0, .drain = 10, .window = 4, .slack = 8192, .rcvlowat = -1,
    .max_pending = 1000000, .connect_timeout = 20, .bitrate_kbps = 128, .source_tick = 0.1, .probe_tick = 0.026, .seed = 1,
    .trace_every = 10,
};

static struct {
    int ep;
    FILE *status;
    listener_t *l;
    unsigned nl, launched, connected, pending, starving, starving_read;
    unsigned dry;        /* players whose buffer ran dry at this status line */
    uint64_t stalls;     /* times a player's buffer ran dry, all listeners, so far */
    FILE *trace;
    double loop_max; /* longest loop iteration away from epoll_wait in this status second (s) */
    unsigned *retry, nretry; /* listeners whose connect failed, to start again (--retry) */
    uint64_t server_closed, server_reset, conn_err, rejected, closed_by_us;
    uint64_t tls_full, tls_resumed, tls_err; /* handshakes done (new session, resumed), failed */
    uint64_t total_bytes, total_hdr_bytes, closed_body_bytes;
    source_t *s;
    unsigned ns, sources_started, sources_up, src_err;
    uint64_t src_bytes;
    unsigned char *rbuf, *src_data;
    size_t src_data_len;
    double t0, next_status, next_src_tick, next_probe_tick, stop_at, all_connected_at;
    uint32_t tick;
    double tick_time[WINDOW_MAX + 1];
    uint32_t *lat_win, *lat_all;
    uint64_t lat_win_n, lat_all_n;
    uint32_t *arr_win, *arr_all; /* the same markers at their arrival in the socket */
    uint64_t arr_win_n, arr_all_n;
    int64_t real_minus_mono;     /* CLOCK_REALTIME - CLOCK_MONOTONIC, ns (receive timestamps) */
    double rate_min, rate_p50;
    float *rates;
    double cpu_prev, cpu_pct;
    unsigned rr_next;
    double t_listen0; /* listeners ramp from here: once this process's own sources are up */
    unsigned step_target;
    double step_full_at, launch_credit, credit_at;
    double churn_credit, churn_at; /* --churn: token bucket like the connect rate's */
    unsigned churn_next;           /* where the search for the next listener to leave goes on */
    uint64_t churned;              /* sessions ended by --churn */
    struct sockaddr_in addr;
    struct {
        int fd;
        double t_up;
        uint64_t sent;
        size_t off, len;
        unsigned char piece[256 * 1024];
    } probe;
} g;

static volatile sig_atomic_t stop_signals;

static void begin_stop(double t);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Receive timestamps are on CLOCK_REALTIME, markers on CLOCK_MONOTONIC: the offset between
 * them, taken again each second (the narrowest of three readings) */
static void clock_offset(void)
{
    int64_t best = 0, span = INT64_MAX;
    for (int i = 0; i < 3; i++) {
        struct timespec a, r, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t ma = (int64_t)a.tv_sec * 1000000000 + a.tv_nsec;
        int64_t mb = (int64_t)b.tv_sec * 1000000000 + b.tv_nsec;
        if (mb - ma < span) {
            span = mb - ma;
            best = (int64_t)r.tv_sec * 1000000000 + r.tv_nsec - (ma + mb) / 2;
        }
    }
    g.real_minus_mono = best;
}

/* --trace: is listener idx one of the sample whose reads are written down */
static int traced(unsigned idx)
{
    return g.trace && idx % opt.trace_every == 0;
}

static long long trace_us(double t)
{
    return (long long)((t - g.t0) * 1e6);
}

static void on_signal(int sig)
{
    (void)sig;
    stop_signals++;
}

/* "/a,/b,/load%d:1-200" -> list of mount names. Returns 0 or -EINVAL. */
static int mountlist_parse(mountlist_t *ml, const char *spec)
{
    char *copy = strdup(spec), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        unsigned a = 0, b = 0;
        if (colon) {
            *colon = '\0';
            if (sscanf(colon + 1, "%u-%u", &a, &b) != 2 || b < a || !strstr(tok, "%d"))
                goto fail;
        }
        for (unsigned i = a; i <= b; i++) {
            char name[256];
            snprintf(name, sizeof(name), tok, i);
            ml->v = realloc(ml->v, (ml->n + 1) * sizeof(*ml->v));
            ml->v[ml->n++] = strdup(name);
        }
    }
    free(copy);
    return ml->n ? 0 : -EINVAL;
fail:
    free(copy);
    return -EINVAL;
}

/* ---- listeners ---- */

enum close_why { BY_US, BY_SERVER, REJECTED };

static void listener_close(listener_t *l, enum close_why why)
{
    if (l->state == L_CLOSED || l->state == L_IDLE)
        return;
    if (l->state == L_STREAM) {
        g.connected--;
        g.closed_body_bytes += l->bytes;
        if (why == BY_SERVER)
            g.server_closed++;
        else
            g.closed_by_us++;
    } else {
        g.pending--;
        if (why == BY_US)
            g.closed_by_us++;
        else if (why == REJECTED)
            g.rejected++;
        else
            g.conn_err++;
    }
    if (l->ssl) {
        SSL_free(l->ssl);
        l->ssl = NULL;
    }
    close(l->fd);
    l->fd = -1;
    l->state = L_CLOSED;
    if (why == BY_SERVER && opt.retry && g.stop_at <= 0 && !l->t_stream && !l->probe) {
        l->state = L_IDLE; /* a failed connect, not a dropped stream: try again later */
        l->hdr_match = l->status_len = 0;
        l->hdr_bytes = 0;
        g.retry[g.nretry++] = (unsigned)(l - g.l);
    }
}

static int listener_start(unsigned idx)
{
    listener_t *l = &g.l[idx];
    int one = 1;
    l->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0)
        goto fail;
    if (opt.rcvbuf)
        setsockopt(l->fd, SOL_SOCKET, SO_RCVBUF, &opt.rcvbuf, sizeof(opt.rcvbuf));
    if (opt.rcvlowat && !l->timed && !opt.tls) /* TLS: once the handshake's small records passed */
        setsockopt(l->fd, SOL_SOCKET, SO_RCVLOWAT, &opt.rcvlowat, sizeof(opt.rcvlowat));
    if (l->timed && !opt.tls) /* the time each read's last segment arrived in the socket */
        setsockopt(l->fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    if (opt.src_ip) {
        struct sockaddr_in local = { .sin_family = AF_INET };
        inet_pton(AF_INET, opt.src_ip, &local.sin_addr);
        setsockopt(l->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
        if (bind(l->fd, (struct sockaddr *)&local, sizeof(local)) < 0)
            goto fail;
    }
    if (connect(l->fd, (struct sockaddr *)&g.addr, sizeof(g.addr)) < 0 && errno != EINPROGRESS)
        goto fail;
    struct epoll_event ev = { .events = EPOLLOUT | EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = idx };
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, l->fd, &ev) < 0)
        goto fail;
    l->state = L_CONNECTING;
    l->t_start = now_s();
    g.pending++;
    return 0;
fail:
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    l->state = L_CLOSED;
    g.conn_err++;
    return -errno;
}

/* --churn: the user agents and referers of real players, so that session records carry text of
 * the lengths and characters they meet in a station's audience (no referer: a stand-alone player) */
static const char *const agents[] = {
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
    "VLC/3.0.20 LibVLC/3.0.20",
    "iTunes/12.12 (Macintosh; OS X 14.1) AppleWebKit/605.1.15",
    "Lavf/60.16.100",
    "foobar2000/2.0",
    "Winamp/5.9 (compatible)",
    "NSPlayer/12.0.19041.3636 WMFSDK/12.00.19041.3636",
    "AppleCoreMedia/1.0.0.21B101 (iPhone; U; CPU OS 17_1 like Mac OS X; de_de)",
    "Dalvik/2.1.0 (Linux; U; Android 14; Pixel 7 Build/UQ1A.231205.015) \"Radio \\ App\" <3>",
    "Sonos/79.1-52020 (ZPS27)",
};
static const char *const referers[] = {
    NULL, NULL,
    "https://www.example-radio.de/player?station=live&autoplay=1",
    "https://m.example.com/radio/",
    "https://www.google.com/",
    "https://radio.example.org/listen.html#stream",
    "android-app://com.example.radio/",
};

static void listener_send_request(unsigned idx)
{
    listener_t *l = &g.l[idx];
    char req[1024], ref[256] = "";
    const char *mount = l->probe ? opt.probe_mount : opt.mounts.v[l->mount];
    const char *agent = "swarm/1";
    if (opt.churn > 0 && !l->probe) {
        unsigned r = (unsigned)rand_r(&opt.seed);
        const char *referer = referers[(r / 16) % (sizeof(referers) / sizeof(referers[0]))];
        agent = agents[r % (sizeof(agents) / sizeof(agents[0]))];
        if (referer)
            snprintf(ref, sizeof(ref), "Referer: %s\r\n", referer);
    }
    int n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s:%d\r\nUser-Agent: %s\r\n%s"
                     "Accept: */*\r\n\r\n", mount, opt.host, opt.port, agent, ref);
    if (l->ssl ? SSL_write(l->ssl, req, n) != n : write(l->fd, req, (size_t)n) != n) {
        listener_close(l, BY_SERVER);
        return;
    }
    struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u64 = idx };
    epoll_ctl(g.ep, EPOLL_CTL_MOD, l->fd, &ev);
    l->state = L_HEADER;
}

static void latency_add(uint32_t *win, uint32_t *all, uint64_t *win_n, uint64_t *all_n,
                        uint64_t delay_ns)
{
    uint64_t b = delay_ns / 1000 / LAT_BUCKET_US;
    if (b >= LAT_BUCKETS)
        b = LAT_BUCKETS - 1;
    win[b]++;
    all[b]++;
    (*win_n)++;
    (*all_n)++;
}

/* arr_ns: when the read's last segment arrived in the socket (0: not known) */
static void probe_marker(listener_t *l, const unsigned char *at, uint64_t recv_ns, uint64_t arr_ns)
{
    uint64_t sent_ns;
    memcpy(&sent_ns, at + 8, sizeof(sent_ns));
    /* markers written before the response header arrived came from the burst, not live */
    if (sent_ns < (uint64_t)(l->t_stream * 1e9) || sent_ns > recv_ns)
        return;
    latency_add(g.lat_win, g.lat_all, &g.lat_win_n, &g.lat_all_n, recv_ns - sent_ns);
    if (arr_ns >= sent_ns)
        latency_add(g.arr_win, g.arr_all, &g.arr_win_n, &g.arr_all_n, arr_ns - sent_ns);
}

/* Finds markers in carry+data without copying data; a marker starting in data is found once. */
static void probe_scan(listener_t *l, const unsigned char *p, size_t n, uint64_t arr)
{
    uint64_t t = now_ns();
    unsigned char edge[2 * MARKER_LEN];
    size_t head = n < MARKER_LEN - 1 ? n : MARKER_LEN - 1;
    memcpy(edge, l->carry, l->carry_len);
    memcpy(edge + l->carry_len, p, head);
    size_t elen = l->carry_len + head;
    for (size_t i = 0; i < l->carry_len && i + MARKER_LEN <= elen; i++)
        if (!memcmp(edge + i, PROBE_MAGIC, 8))
            probe_marker(l, edge + i, t, arr);
    const unsigned char *q = p, *end = p + n;
    while ((q = memmem(q, (size_t)(end - q), PROBE_MAGIC, 8)) && q + MARKER_LEN <= end) {
        probe_marker(l, q, t, arr);
        q += MARKER_LEN;
    }
    if (n >= MARKER_LEN - 1) {
        l->carry_len = MARKER_LEN - 1;
        memcpy(l->carry, end - l->carry_len, l->carry_len);
    } else {
        size_t keep = elen < MARKER_LEN - 1 ? elen : MARKER_LEN - 1;
        memmove(l->carry, edge + elen - keep, keep);
        l->carry_len = (uint8_t)keep;
    }
}

/* Header phase: status line check and "\r\n\r\n" search; returns body offset, or -1 when closed. */
static ssize_t listener_header(listener_t *l, const unsigned char *p, size_t n)
{
    static const char crlf2[] = "\r\n\r\n";
    size_t i;
    for (i = 0; i < n && l->hdr_match < 4; i++) {
        if (l->status_len < sizeof(l->status))
            l->status[l->status_len++] = (char)p[i];
        if (p[i] == (unsigned char)crlf2[l->hdr_match])
            l->hdr_match++;
        else
            l->hdr_match = p[i] == '\r' ? 1 : 0;
    }
    l->hdr_bytes += i;
    if (l->hdr_match < 4)
        return (ssize_t)n;
    if (l->status_len < 12 || memcmp(l->status + 8, " 200", 4)) {
        listener_close(l, REJECTED);
        return -1;
    }
    l->state = L_STREAM;
    l->t_stream = now_s();
    l->play_t0 = l->t_stream;
    l->first_tick = g.tick + 1;
    g.pending--;
    g.connected++;
    g.total_hdr_bytes += l->hdr_bytes;
    if (g.connected == opt.listeners + opt.probe_listeners && g.all_connected_at < 0)
        g.all_connected_at = l->t_stream - g.t0;
    return (ssize_t)i;
}

static void listener_data(listener_t *l, const unsigned char *p, size_t n, uint64_t arr)
{
    if (l->state == L_HEADER) {
        ssize_t off = listener_header(l, p, n);
        if (off < 0 || (size_t)off >= n)
            return;
        p += off;
        n -= (size_t)off;
    }
    l->bytes += n;
    g.total_bytes += n;
    if (l->timed)
        probe_scan(l, p, n, arr);
}

/* ---- TLS listeners (--tls) ---- */

static SSL_CTX *tls_ctx;
static SSL_SESSION *tls_session; /* the newest session the server gave us, offered again */

static int tls_new_session(SSL *ssl, SSL_SESSION *sess)
{
    (void)ssl;
    if (opt.tls_no_resume)
        return 0;
    if (tls_session)
        SSL_SESSION_free(tls_session);
    tls_session = sess;
    return 1; /* we keep the reference */
}

static int tls_setup(void)
{
    tls_ctx = SSL_CTX_new(TLS_client_method());
    if (!tls_ctx)
        return -1;
    SSL_CTX_set_verify(tls_ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_session_cache_mode(tls_ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(tls_ctx, tls_new_session);
    SSL_CTX_set_mode(tls_ctx, SSL_MODE_RELEASE_BUFFERS);
    return 0;
}

static void tls_handshake(listener_t *l)
{
    int rc = SSL_do_handshake(l->ssl);
    if (rc == 1) {
        if (SSL_session_reused(l->ssl))
            g.tls_resumed++;
        else
            g.tls_full++;
        if (opt.rcvlowat && !l->timed)
            setsockopt(l->fd, SOL_SOCKET, SO_RCVLOWAT, &opt.rcvlowat, sizeof(opt.rcvlowat));
        listener_send_request((unsigned)(l - g.l));
        return;
    }
    int e = SSL_get_error(l->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return; /* the socket's next edge brings us back */
    ERR_clear_error();
    g.tls_err++;
    listener_close(l, BY_SERVER);
}

/* The TCP connect completed: start the handshake. -1 when l was closed. */
static int tls_begin(listener_t *l)
{
    l->ssl = SSL_new(tls_ctx);
    if (!l->ssl || !SSL_set_fd(l->ssl, l->fd)) {
        listener_close(l, BY_SERVER);
        return -1;
    }
    SSL_set_connect_state(l->ssl);
    if (tls_session && !opt.tls_no_resume)
        SSL_set_session(l->ssl, tls_session);
    l->state = L_HANDSHAKE;
    tls_handshake(l);
    return l->state == L_CLOSED ? -1 : 0;
}

/* Reads until OpenSSL wants more from the socket (it may hold decrypted bytes we must drain
 * now: edge-triggered epoll would not tell us again). */
static void tls_readable(listener_t *l)
{
    for (;;) {
        int n = SSL_read(l->ssl, g.rbuf, READ_BUF_SIZE);
        if (n > 0) {
            listener_data(l, g.rbuf, (size_t)n, 0);
            if (l->state == L_CLOSED)
                return;
            continue;
        }
        int e = SSL_get_error(l->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
            return;
        ERR_clear_error();
        listener_close(l, BY_SERVER);
        return;
    }
}

/* read(), and for a timed listener recvmsg() with the receive timestamp of the last segment
 * read, on CLOCK_MONOTONIC in *arr (0 when there is none) */
static ssize_t listener_read(listener_t *l, uint64_t *arr)
{
    *arr = 0;
    if (!l->timed)
        return read(l->fd, g.rbuf, READ_BUF_SIZE);
    union {
        char buf[CMSG_SPACE(sizeof(struct timespec))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {g.rbuf, READ_BUF_SIZE};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                        .msg_controllen = sizeof(ctl.buf)};
    ssize_t n = recvmsg(l->fd, &mh, 0);
    for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof(ts));
            int64_t real = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
            *arr = real > g.real_minus_mono ? (uint64_t)(real - g.real_minus_mono) : 0;
        }
    return n;
}

/* A short read drained the socket and the next arrival fires a new edge, so one read usually
 * suffices; but once the peer's FIN is queued (EPOLLRDHUP) nothing new will arrive: read to EOF. */
static void listener_readable(unsigned idx, uint32_t events)
{
    listener_t *l = &g.l[idx];
    int to_eof = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
    if (l->ssl) {
        tls_readable(l);
        return;
    }
    for (;;) {
        uint64_t arr;
        ssize_t n = listener_read(l, &arr);
        if (n > 0 && traced(idx))
            fprintf(g.trace, "r,%lld,%u,%zd\n", trace_us(now_s()), idx, n);
        if (n > 0) {
            listener_data(l, g.rbuf, (size_t)n, arr);
            if (l->state == L_CLOSED || (n < READ_BUF_SIZE && !to_eof))
                return;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        if (n < 0 && errno == ECONNRESET && l->state == L_STREAM)
            g.server_reset++; /* a reset rather than a clean end of stream */
        listener_close(l, BY_SERVER);
        return;
    }
}

static void listener_event(unsigned idx, uint32_t events)
{
    listener_t *l = &g.l[idx];
    if (l->state == L_CONNECTING) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
            listener_close(l, BY_SERVER);
            return;
        }
        if (opt.tls) {
            if (tls_begin(l) < 0)
                return;
        } else {
            listener_send_request(idx);
        }
        if (l->state != L_HEADER)
            return;
    }
    if (l->state == L_HANDSHAKE) {
        tls_handshake(l);
        if (l->state != L_HEADER)
            return;
    }
    if (l->state == L_HEADER || l->state == L_STREAM)
        listener_readable(idx, events);
}

/* How many listeners should have been started by now: step ramp capped by the connect rate. */
/*
 * The step ramp is closed-loop: the next step starts --hold seconds after every listener of the
 * current one is streaming or has finally failed, so a server that admits slowly still gets
 * plateaus of the intended size. After the last step's hold the run ends (unless --duration).
 */
static void ramp_advance(double t)
{
    if (!opt.step || g.launched < g.step_target || g.pending || g.nretry)
        return;
    if (g.step_full_at < 0)
        g.step_full_at = t;
    if (t - g.step_full_at < opt.hold)
        return;
    if (g.step_target >= opt.listeners) {
        if (g.stop_at <= 0)
            begin_stop(t);
        return;
    }
    g.step_target = g.step_target + opt.step < opt.listeners ? g.step_target + opt.step : opt.listeners;
    g.step_full_at = -1;
}

/* Connect-rate limiter: a token bucket holding at most one second of connects. */
static int launch_allowed(double t)
{
    if (opt.connect_rate <= 0)
        return 1;
    g.launch_credit += (t - g.credit_at) * opt.connect_rate;
    if (g.launch_credit > opt.connect_rate)
        g.launch_credit = opt.connect_rate;
    g.credit_at = t;
    if (g.launch_credit < 1)
        return 0;
    g.launch_credit -= 1;
    return 1;
}

static int launching(void)
{
    return g.stop_at <= 0 && (g.t_listen0 < 0 || g.nretry || g.launched < g.step_target);
}

static void listeners_launch(double t)
{
    unsigned batch = 0;
    if (g.stop_at > 0)
        return;
    if (g.t_listen0 < 0) {
        if (g.sources_up < opt.sources && t < 10)
            return; /* give our own sources a head start, so listeners do not meet a 404 */
        g.t_listen0 = g.credit_at = t;
        g.step_target = opt.step ? (opt.step < opt.listeners ? opt.step : opt.listeners) : opt.listeners;
    }
    /* probe listeners go first */
    for (unsigned i = opt.listeners; i < g.nl; i++)
        if (g.l[i].state == L_IDLE && (g.probe.fd >= 0 || opt.probe_listen_only))
            listener_start(i);
    while (g.nretry && g.pending < opt.max_pending && batch++ < 2000 && launch_allowed(t))
        listener_start(g.retry[--g.nretry]);
    while (g.launched < g.step_target && g.pending < opt.max_pending && batch++ < 2000 &&
           launch_allowed(t)) {
        listener_t *l = &g.l[g.launched];
        l->mount = opt.random_choice ? (uint32_t)(rand_r(&opt.seed) % opt.mounts.n)
                                     : g.rr_next++ % opt.mounts.n;
        listener_start(g.launched++);
    }
    ramp_advance(t);
}

/* --churn: once all listeners are launched, R streaming listeners a second (round-robin) leave
 * and connect again in the same slot, so N stay connected; their byte counts go on. */
static void listeners_churn(double t)
{
    if (opt.churn <= 0 || g.stop_at > 0 || g.launched < opt.listeners || !opt.listeners) {
        g.churn_at = t;
        return;
    }
    g.churn_credit += (t - g.churn_at) * opt.churn;
    g.churn_at = t;
    if (g.churn_credit > opt.churn)
        g.churn_credit = opt.churn;
    for (unsigned tries = 0; g.churn_credit >= 1 && tries < opt.listeners; tries++) {
        unsigned idx = g.churn_next++ % opt.listeners;
        listener_t *l = &g.l[idx];
        if (l->state != L_STREAM)
            continue;
        listener_close(l, BY_US);
        l->hdr_match = l->status_len = l->carry_len = 0;
        l->t_stream = 0;
        g.churned++;
        g.churn_credit -= 1;
        listener_start(idx);
    }
}

/* ---- sources (libshout) ---- */

static int source_start(source_t *s)
{
    s->sh = shout_new();
    if (!s->sh)
        goto fail;
    if (shout_set_host(s->sh, opt.host) || shout_set_port(s->sh, (unsigned short)opt.port) ||
        shout_set_user(s->sh, opt.user) || shout_set_password(s->sh, opt.password) ||
        shout_set_mount(s->sh, s->mount) || shout_set_protocol(s->sh, SHOUT_PROTOCOL_HTTP) ||
        shout_set_content_format(s->sh, SHOUT_FORMAT_MP3, SHOUT_USAGE_AUDIO, NULL) ||
        shout_set_agent(s->sh, "swarm/1") || shout_set_nonblocking(s->sh, SHOUT_BLOCKING_NONE))
        goto fail;
    int r = shout_open(s->sh);
    if (r != SHOUTERR_SUCCESS && r != SHOUTERR_BUSY && r != SHOUTERR_CONNECTED &&
        r != SHOUTERR_RETRY)
        goto fail;
    s->state = S_CONNECTING;
    return 0;
fail:
    fprintf(stderr, "swarm: source %s: %s\n", s->mount, s->sh ? shout_get_error(s->sh) : "oom");
    if (s->sh)
        shout_free(s->sh);
    s->sh = NULL;
    s->state = S_FAILED;
    g.src_err++;
    return -EIO;
}

static void source_close(source_t *s, int failed)
{
    if (s->state == S_UP)
        g.sources_up--;
    if (s->sh) {
        if (failed)
            fprintf(stderr, "swarm: source %s: %s\n", s->mount, shout_get_error(s->sh));
        shout_close(s->sh);
        shout_free(s->sh);
    }
    s->sh = NULL;
    g.src_err += failed ? 1 : 0;
    s->state = failed ? S_FAILED : S_CLOSED;
}

/* Stream bytes owed by now at the configured bitrate, capped so a late source catches up gently. */
static size_t bytes_due(double t_up, uint64_t sent, double t)
{
    uint64_t target = (uint64_t)((t - t_up) * opt.bitrate_kbps * 1000 / 8);
    uint64_t due = target > sent ? target - sent : 0;
    return due > 256 * 1024 ? 256 * 1024 : (size_t)due;
}

static int source_pump(source_t *s, double t)
{
    size_t due = bytes_due(s->t_up, s->sent, t);
    while (due > 0) {
        size_t off = (size_t)(s->sent % g.src_data_len);
        size_t n = g.src_data_len - off < due ? g.src_data_len - off : due;
        ssize_t w = shout_send_raw(s->sh, g.src_data + off, n);
        if (w < 0)
            return shout_get_errno(s->sh) == SHOUTERR_BUSY ? 0 : -1;
        s->sent += (uint64_t)w;
        g.src_bytes += (uint64_t)w;
        if ((size_t)w < n)
            break;
        due -= n;
    }
    return 0;
}

static void sources_tick(double t)
{
    unsigned due = opt.sources;
    if (opt.source_step && opt.source_hold > 0)
        due = (unsigned)(1 + t / opt.source_hold) * opt.source_step;
    if (opt.source_rate > 0 && t * opt.source_rate + 1 < due)
        due = (unsigned)(t * opt.source_rate + 1);
    while (g.stop_at <= 0 && g.sources_started < due && g.sources_started < opt.sources)
        source_start(&g.s[g.sources_started++]);
    for (unsigned i = 0; i < g.sources_started; i++) {
        source_t *s = &g.s[i];
        if (s->state == S_CONNECTING) {
            int r = shout_get_connected(s->sh);
            if (r == SHOUTERR_CONNECTED) {
                s->state = S_UP;
                s->t_up = now_s();
                g.sources_up++;
            } else if (r != SHOUTERR_BUSY && r != SHOUTERR_RETRY) {
                source_close(s, 1);
            }
        } else if (s->state == S_UP && source_pump(s, now_s()) < 0) {
            source_close(s, 1);
        }
    }
}

/* ---- latency probe source: raw PUT with TCP_NODELAY, so no Nagle delay hides in the figures ---- */

static void base64(const char *in, char *out)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(in), i;
    for (i = 0; i + 2 < n; i += 3, out += 4) {
        unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
        out[0] = tab[v >> 18], out[1] = tab[(v >> 12) & 63], out[2] = tab[(v >> 6) & 63], out[3] = tab[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned char)in[i] << 16 | (i + 1 < n ? (unsigned char)in[i + 1] << 8 : 0);
        out[0] = tab[v >> 18], out[1] = tab[(v >> 12) & 63];
        out[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=', out[3] = '=';
        out += 4;
    }
    *out = '\0';
}

/* Connects and logs in (blocking, once, before the listeners start); then the socket is non-blocking. */
static int probe_src_open(void)
{
    char cred[256], b64[400], req[1024], resp[512];
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = { .tv_sec = 5 };
    if (fd < 0)
        return -errno;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    snprintf(cred, sizeof(cred), "%s:%s", opt.user, opt.password);
    base64(cred, b64);
    int n = snprintf(req, sizeof(req), "PUT %s HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Basic %s\r\n"
                     "Content-Type: audio/mpeg\r\nUser-Agent: swarm/1\r\nIce-Name: latency probe\r\n\r\n",
                     opt.probe_mount, opt.host, opt.port, b64);
    if (connect(fd, (struct sockaddr *)&g.addr, sizeof(g.addr)) < 0 || write(fd, req, (size_t)n) != n)
        goto fail;
    ssize_t r = read(fd, resp, sizeof(resp) - 1);
    if (r < 12 || memcmp(resp + 8, " 200", 4))
        goto fail;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    g.probe.fd = fd;
    g.probe.t_up = now_s();
    return 0;
fail:
    fprintf(stderr, "swarm: probe source %s could not log in\n", opt.probe_mount);
    close(fd);
    return -EIO;
}

/* Writes pieces of one tick's worth of bytes, each opening with a 16-byte marker (magic, send time). */
static void probe_src_tick(double t)
{
    if (g.probe.fd < 0)
        return;
    if (!g.probe.len) {
        size_t n = bytes_due(g.probe.t_up, g.probe.sent, t);
        if (n < MARKER_LEN)
            return;
        uint64_t ns = now_ns();
        memset(g.probe.piece, 0, n);
        memcpy(g.probe.piece, PROBE_MAGIC, 8);
        memcpy(g.probe.piece + 8, &ns, 8);
        g.probe.off = 0;
        g.probe.len = n;
    }
    ssize_t w = write(g.probe.fd, g.probe.piece + g.probe.off, g.probe.len - g.probe.off);
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
        fprintf(stderr, "swarm: probe source write: %s\n", strerror(errno));
        close(g.probe.fd);
        g.probe.fd = -1;
        g.src_err++;
        return;
    }
    if (w > 0) {
        g.probe.off += (size_t)w;
        g.probe.sent += (uint64_t)w;
        g.src_bytes += (uint64_t)w;
    }
    if (g.probe.off == g.probe.len)
        g.probe.len = 0;
}

/* ---- status ---- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* q = 1: the largest */
static double lat_percentile(const uint32_t *hist, uint64_t n, double q)
{
    uint64_t want = q >= 1 ? n - 1 : (uint64_t)(q * (double)n), seen = 0;
    if (!n)
        return -1;
    for (unsigned b = 0; b < LAT_BUCKETS; b++) {
        seen += hist[b];
        if (seen > want)
            return (b + 0.5) * LAT_BUCKET_US / 1000.0;
    }
    return LAT_BUCKETS * LAT_BUCKET_US / 1000.0;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Judges one streaming listener over the last window from its byte count now and at the last
 * ticks (win); returns its rate or -1 if too young. */
static double listener_window_rate(listener_t *l, uint64_t *win, uint64_t now, unsigned w,
                                   unsigned slot, double t)
{
    win[slot] = now;
    if (g.tick < l->first_tick + w)
        return -1;
    unsigned old = (g.tick - w) % (w + 1);
    double dt = t - g.tick_time[old];
    return dt > 0 ? (double)(now - win[old]) / dt : -1;
}

/* Body bytes the server has delivered to l: read, plus what waits unread in its socket (a
 * listener woken only for --rcvlowat bytes may hold most of a write there). */
static uint64_t listener_delivered(const listener_t *l)
{
    int q = 0;
    if (l->ssl || ioctl(l->fd, FIONREAD, &q) < 0 || q < 0)
        q = 0;
    return l->bytes + (uint64_t)q;
}

static void status_tick(double t)
{
    unsigned w = (unsigned)opt.window, slot = g.tick % (w + 1), nr = 0;
    /* starving: under 90 % of the stream over the window, less --slack bytes so that a server
     * writing in coarse chunks (e.g. 4 KB every 256 ms) is not judged by where the window cuts */
    double expect = (0.9 * opt.bitrate_kbps * 1000 / 8 * w - opt.slack) / w;
    g.tick_time[slot] = t;
    g.starving = g.starving_read = g.dry = 0;
    for (unsigned i = 0; i < g.nl; i++) {
        listener_t *l = &g.l[i];
        if ((l->state == L_CONNECTING || l->state == L_HEADER) &&
            t + g.t0 - l->t_start > opt.connect_timeout)
            listener_close(l, BY_SERVER);
        if (l->state != L_STREAM || g.stop_at > 0)
            continue; /* while stopping, windows are cut short: no verdicts */
        /* judged on what the server delivered: a listener woken only for --rcvlowat bytes
         * leaves a write smaller than that unread for one more write interval, a second at
         * the default write window, which the window's slack does not cover */
        uint64_t d = opt.judge_read && !traced(i) ? l->bytes : listener_delivered(l);
        if (traced(i))
            fprintf(g.trace, "k,%lld,%u,%llu,%llu\n", trace_us(t + g.t0), i,
                    (unsigned long long)l->bytes, (unsigned long long)(d - l->bytes));
        /* dry: a player that plays at the stream's bitrate from its first byte (no buffering
         * before it starts) has played all it was delivered; it pauses until more comes, and
         * plays on from there. Unlike `starving`, bytes that came early (a burst, an ad sent
         * faster than it plays) count as the player's buffer. */
        double audio = (double)d / (opt.bitrate_kbps * 125.0);
        if (audio < t + g.t0 - l->play_t0) {
            l->play_t0 = t + g.t0 - audio;
            g.dry++;
            g.stalls++;
        }
        double rr = listener_window_rate(l, l->win, l->bytes, w, slot, t);
        double r = opt.judge_read ? rr : listener_window_rate(l, l->dwin, d, w, slot, t);
        if (r < 0)
            continue;
        g.rates[nr++] = (float)r;
        g.starving += r < expect;
        g.starving_read += rr < expect;
    }
    g.rate_min = g.rate_p50 = -1;
    if (nr) {
        qsort(g.rates, nr, sizeof(*g.rates), cmp_float);
        g.rate_min = g.rates[0] * 8 / 1000;
        g.rate_p50 = g.rates[nr / 2] * 8 / 1000;
    }
    double cpu = cpu_seconds();
    double dt = t - g.tick_time[(slot + w) % (w + 1)];
    if (g.tick && dt > 0.5) {
        g.cpu_pct = 100 * (cpu - g.cpu_prev) / dt;
        g.cpu_prev = cpu;
    }
    fprintf(g.status, "t=%.3f listeners=%u connected=%u pending=%u bytes=%llu starving=%u eligible=%u "
            "rate_min_kbps=%.1f rate_p50_kbps=%.1f server_closed=%llu server_reset=%llu conn_err=%llu "
            "rejected=%llu sources=%u sources_up=%u src_err=%u src_bytes=%llu lat_n=%llu lat_p50_ms=%.2f "
            "lat_p99_ms=%.2f swarm_cpu_pct=%.1f swarm_loop_max_ms=%.1f churned=%llu starving_read=%u "
            "lat_max_ms=%.2f arr_p50_ms=%.2f arr_p99_ms=%.2f arr_max_ms=%.2f dry=%u stalls=%llu\n",
            t, g.launched, g.connected, g.pending, (unsigned long long)g.total_bytes, g.starving, nr,
            g.rate_min, g.rate_p50, (unsigned long long)g.server_closed,
            (unsigned long long)g.server_reset, (unsigned long long)g.conn_err,
            (unsigned long long)g.rejected, g.sources_started,
            g.sources_up + (g.probe.fd >= 0), g.src_err, (unsigned long long)g.src_bytes,
            (unsigned long long)g.lat_win_n, lat_percentile(g.lat_win, g.lat_win_n, 0.5),
            lat_percentile(g.lat_win, g.lat_win_n, 0.99), g.cpu_pct, g.loop_max * 1000,
            (unsigned long long)g.churned, g.starving_read, lat_percentile(g.lat_win, g.lat_win_n, 1),
            lat_percentile(g.arr_win, g.arr_win_n, 0.5), lat_percentile(g.arr_win, g.arr_win_n, 0.99),
            lat_percentile(g.arr_win, g.arr_win_n, 1), g.dry, (unsigned long long)g.stalls);
    if (g.trace)
        fflush(g.trace);
    g.loop_max = 0;
    fflush(g.status);
    memset(g.lat_win, 0, LAT_BUCKETS * sizeof(*g.lat_win));
    memset(g.arr_win, 0, LAT_BUCKETS * sizeof(*g.arr_win));
    g.lat_win_n = g.arr_win_n = 0;
    clock_offset();
    g.tick++;
}

static void final_report(double t)
{
    uint64_t body = 0, hdr = 0;
    for (unsigned i = 0; i < g.nl; i++)
        if (g.l[i].state != L_IDLE) {
            body += g.l[i].bytes;
            hdr += g.l[i].hdr_bytes;
        }
    fprintf(g.status, "final t=%.3f listeners=%u body_bytes=%llu hdr_bytes=%llu server_closed=%llu "
            "server_reset=%llu closed_by_us=%llu conn_err=%llu rejected=%llu sources=%u src_err=%u "
            "src_bytes=%llu all_connected_s=%.3f lat_n=%llu lat_p50_ms=%.2f lat_p99_ms=%.2f "
            "tls_full=%llu tls_resumed=%llu tls_err=%llu churned=%llu arr_n=%llu arr_p50_ms=%.2f "
            "arr_p99_ms=%.2f\n",
            t, g.launched + opt.probe_listeners, (unsigned long long)body, (unsigned long long)hdr,
            (unsigned long long)g.server_closed, (unsigned long long)g.server_reset,
            (unsigned long long)g.closed_by_us,
            (unsigned long long)g.conn_err, (unsigned long long)g.rejected, g.sources_started,
            g.src_err, (unsigned long long)g.src_bytes, g.all_connected_at,
            (unsigned long long)g.lat_all_n, lat_percentile(g.lat_all, g.lat_all_n, 0.5),
            lat_percentile(g.lat_all, g.lat_all_n, 0.99), (unsigned long long)g.tls_full,
            (unsigned long long)g.tls_resumed, (unsigned long long)g.tls_err,
            (unsigned long long)g.churned, (unsigned long long)g.arr_all_n,
            lat_percentile(g.arr_all, g.arr_all_n, 0.5), lat_percentile(g.arr_all, g.arr_all_n, 0.99));
    fflush(g.status);
}

/* Per mount: listeners that streamed, body bytes, header bytes (for checks against access logs). */
static int per_mount_report(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -errno;
    for (unsigned m = 0; m <= opt.mounts.n; m++) {
        const char *name = m < opt.mounts.n ? opt.mounts.v[m] : opt.probe_mount;
        uint64_t body = 0, hdr = 0;
        unsigned n = 0;
        if (!name)
            continue;
        for (unsigned i = 0; i < g.nl; i++) {
            listener_t *l = &g.l[i];
            int mine = l->probe ? m == opt.mounts.n : l->mount == m;
            if (l->state == L_IDLE || !mine || !l->t_stream)
                continue;
            n++;
            body += l->bytes;
            hdr += l->hdr_bytes;
        }
        fprintf(f, "%s %u %llu %llu\n", name, n, (unsigned long long)body, (unsigned long long)hdr);
    }
    return fclose(f) ? -errno : 0;
}

/* ---- main loop ---- */

static void begin_stop(double t)
{
    g.stop_at = t;
    if (g.probe.fd >= 0)
        close(g.probe.fd);
    g.probe.fd = -1;
    for (unsigned i = 0; i < g.ns; i++)
        if (g.s[i].state == S_UP || g.s[i].state == S_CONNECTING)
            source_close(&g.s[i], 0);
    for (unsigned i = 0; i < g.nl; i++)
        if (g.l[i].state == L_CONNECTING || g.l[i].state == L_HEADER)
            listener_close(&g.l[i], BY_US);
}

static int next_timeout_ms(double t)
{
    double next = g.next_status;
    if (g.ns && g.next_src_tick < next)
        next = g.next_src_tick;
    if (opt.probe_mount && !opt.probe_listen_only && g.next_probe_tick < next)
        next = g.next_probe_tick;
    if (launching())
        next = t + 0.002;
    if (opt.churn > 0 && g.launched >= opt.listeners && t + 1 / opt.churn < next)
        next = t + 1 / opt.churn;
    int ms = (int)((next - t) * 1000) + 1;
    return ms < 0 ? 0 : ms;
}

static void timers_run(double t)
{
    if (g.ns && t >= g.next_src_tick) {
        sources_tick(t);
        g.next_src_tick += opt.source_tick;
        if (g.next_src_tick < t)
            g.next_src_tick = t + opt.source_tick;
    }
    if (opt.probe_mount && !opt.probe_listen_only && t >= g.next_probe_tick) {
        probe_src_tick(now_s());
        g.next_probe_tick += opt.probe_tick;
        if (g.next_probe_tick < t)
            g.next_probe_tick = t + opt.probe_tick;
    }
    if (t >= g.next_status) {
        status_tick(t);
        g.next_status += 1;
        if (g.next_status < t)
            g.next_status = t + 1;
    }
}

static void run(void)
{
    static struct epoll_event evs[4096];
    for (;;) {
        double t = now_s() - g.t0;
        if (g.stop_at <= 0 && (stop_signals || (opt.duration > 0 && t >= opt.duration)))
            begin_stop(t);
        if (g.stop_at > 0 && (g.connected + g.pending == 0 || t >= g.stop_at + opt.drain ||
                              stop_signals > 1))
            break;
        listeners_launch(t);
        listeners_churn(t);
        timers_run(t);
        double busy = now_s() - g.t0 - t;
        if (busy > g.loop_max)
            g.loop_max = busy;
        double t_wait = now_s();
        int n = epoll_wait(g.ep, evs, 4096, next_timeout_ms(t_wait - g.t0));
        double t1 = now_s();
        for (int i = 0; i < n; i++)
            listener_event((unsigned)evs[i].data.u64, evs[i].events);
        busy = now_s() - t1;
        if (busy > g.loop_max)
            g.loop_max = busy;
        if (g.trace) /* a turn: when epoll_wait returned, how long it slept, the pass, events */
            fprintf(g.trace, "e,%lld,%lld,%lld,%d\n", trace_us(t1), (long long)((t1 - t_wait) * 1e6),
                    (long long)(busy * 1e6), n);
    }
    double t = now_s() - g.t0;
    for (unsigned i = 0; i < g.nl; i++)
        listener_close(&g.l[i], BY_US);
    status_tick(t);
    final_report(t);
    if (g.trace)
        fclose(g.trace);
}

/* ---- set-up ---- */

static void usage(void)
{
    fputs("usage: swarm [--host H] [--port P] [--src-ip A]\n"
          "  listeners: --listeners N --mounts SPEC [--random] [--connect-rate R/s]\n"
          "             [--step S --hold SEC] [--window SEC] [--rcvlowat B] [--rcvbuf B] [--churn R/s]\n"
          "  sources:   --sources M --source-mounts SPEC [--source-rate R/s]\n"
          "             [--source-step K --source-hold SEC] [--source-file F] [--source-tick SEC]\n"
          "             [--user U] [--password P]\n"
          "  probe:     --probe-mount M [--probe-listeners P] [--probe-tick SEC] [--probe-listen-only]\n"
          "             [--time-listeners K]   (K of the N listeners time the markers on their mount)\n"
          "  tls:       [--tls] [--tls-no-resume]   (listeners and probe listeners)\n"
          "  common:    [--bitrate KBPS] [--duration SEC] [--drain SEC] [--status FILE]\n"
          "             [--per-mount FILE] [--connect-timeout SEC] [--seed N]\n"
          "  timeline:  [--judge-read] [--trace FILE [--trace-every K]]\n"
          "SPEC: comma list of mounts; an item /name%d:A-B expands to /nameA../nameB\n", stderr);
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"host", 1, 0, 'h'}, {"port", 1, 0, 'p'}, {"src-ip", 1, 0, 'I'}, {"listeners", 1, 0, 'n'},
        {"mounts", 1, 0, 'm'}, {"random", 0, 0, 'r'}, {"connect-rate", 1, 0, 'c'},
        {"step", 1, 0, 'S'}, {"hold", 1, 0, 'H'}, {"window", 1, 0, 'w'}, {"rcvlowat", 1, 0, 'L'},
        {"rcvbuf", 1, 0, 'B'}, {"sources", 1, 0, 'M'}, {"source-mounts", 1, 0, 'o'},
        {"source-rate", 1, 0, 'R'}, {"source-step", 1, 0, 'k'}, {"source-hold", 1, 0, 'D'},
        {"source-file", 1, 0, 'f'}, {"source-tick", 1, 0, 'T'}, {"user", 1, 0, 'u'},
        {"password", 1, 0, 'P'}, {"probe-mount", 1, 0, 'q'}, {"probe-listeners", 1, 0, 'Q'},
        {"probe-tick", 1, 0, 'K'}, {"probe-listen-only", 0, 0, 'O'},
        {"tls", 0, 0, '1'}, {"tls-no-resume", 0, 0, '2'}, {"bitrate", 1, 0, 'b'}, {"duration", 1, 0, 'd'},
        {"drain", 1, 0, 'x'}, {"status", 1, 0, 's'}, {"per-mount", 1, 0, 'F'},
        {"connect-timeout", 1, 0, 'C'}, {"seed", 1, 0, 'e'}, {"max-pending", 1, 0, 'X'},
        {"retry", 0, 0, 'y'}, {"slack", 1, 0, 'Y'}, {"churn", 1, 0, 'Z'}, {"judge-read", 0, 0, 'i'},
        {"trace", 1, 0, 't'}, {"trace-every", 1, 0, 'E'}, {"time-listeners", 1, 0, 'j'},
        {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'h': opt.host = optarg; break;
        case 'p': opt.port = atoi(optarg); break;
        case 'I': opt.src_ip = optarg; break;
        case 'n': opt.listeners = (unsigned)atoi(optarg); break;
        case 'm': if (mountlist_parse(&opt.mounts, optarg)) usage(); break;
        case 'r': opt.random_choice = 1; break;
        case 'c': opt.connect_rate = atof(optarg); break;
        case 'S': opt.step = (unsigned)atoi(optarg); break;
        case 'H': opt.hold = atof(optarg); break;
        case 'w': opt.window = atof(optarg); break;
        case 'L': opt.rcvlowat = atoi(optarg); break;
        case 'B': opt.rcvbuf = atoi(optarg); break;
        case 'M': opt.sources = (unsigned)atoi(optarg); break;
        case 'o': if (mountlist_parse(&opt.source_mounts, optarg)) usage(); break;
        case 'R': opt.source_rate = atof(optarg); break;
        case 'k': opt.source_step = (unsigned)atoi(optarg); break;
        case 'D': opt.source_hold = atof(optarg); break;
        case 'f': opt.source_file = optarg; break;
        case 'T': opt.source_tick = atof(optarg); break;
        case 'u': opt.user = optarg; break;
        case 'P': opt.password = optarg; break;
        case 'q': opt.probe_mount = optarg; break;
        case 'Q': opt.probe_listeners = (unsigned)atoi(optarg); opt.probe_listeners_set = 1; break;
        case 'j': opt.time_listeners = (unsigned)atoi(optarg); break;
        case 'K': opt.probe_tick = atof(optarg); break;
        case 'O': opt.probe_listen_only = 1; break;
        case '1': opt.tls = 1; break;
        case '2': opt.tls_no_resume = 1; break;
        case 'b': opt.bitrate_kbps = atof(optarg); break;
        case 'd': opt.duration = atof(optarg); break;
        case 'x': opt.drain = atof(optarg); break;
        case 's': opt.status_path = optarg; break;
        case 'F': opt.per_mount_path = optarg; break;
        case 'C': opt.connect_timeout = atof(optarg); break;
        case 'e': opt.seed = (unsigned)atoi(optarg); break;
        case 'X': opt.max_pending = (unsigned)atoi(optarg); break;
        case 'y': opt.retry = 1; break;
        case 'Y': opt.slack = atoi(optarg); break;
        case 'Z': opt.churn = atof(optarg); break;
        case 'i': opt.judge_read = 1; break;
        case 't': opt.trace_path = optarg; break;
        case 'E': opt.trace_every = (unsigned)atoi(optarg); break;
        default: usage();
        }
    }
    opt.window = opt.window < 1 ? 1 : opt.window > WINDOW_MAX ? WINDOW_MAX : (int)opt.window;
    if ((opt.listeners && !opt.mounts.n) || (opt.sources && opt.source_mounts.n < opt.sources) ||
        (opt.probe_listeners && !opt.probe_mount) || !opt.trace_every || optind != argc)
        usage();
    if (opt.probe_mount && !opt.probe_listeners_set)
        opt.probe_listeners = 10;
    /* wake a listener for half a second of stream at a time, not for every server write: halves
     * the generator's CPU; probe listeners always wake at once */
    if (opt.rcvlowat < 0)
        opt.rcvlowat = (int)(opt.bitrate_kbps * 1000 / 8 / 2);
}

static int load_source_data(void)
{
    if (!opt.source_file) {
        g.src_data_len = 65536; /* generated: a byte pattern the generic format passes through */
        g.src_data = malloc(g.src_data_len);
        for (size_t i = 0; g.src_data && i < g.src_data_len; i++)
            g.src_data[i] = (unsigned char)(i * 7 + (i >> 8));
        return g.src_data ? 0 : -ENOMEM;
    }
    FILE *f = fopen(opt.source_file, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) < 0 || st.st_size <= 0)
        goto fail;
    g.src_data_len = (size_t)st.st_size;
    g.src_data = malloc(g.src_data_len);
    if (!g.src_data || fread(g.src_data, 1, g.src_data_len, f) != g.src_data_len)
        goto fail;
    fclose(f);
    return 0;
fail:
    fprintf(stderr, "swarm: cannot read %s\n", opt.source_file);
    if (f)
        fclose(f);
    return -EIO;
}

static int setup(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    g.addr.sin_family = AF_INET;
    g.addr.sin_port = htons((uint16_t)opt.port);
    if (inet_pton(AF_INET, opt.host, &g.addr.sin_addr) != 1)
        return -EINVAL;
    g.nl = opt.listeners + (opt.probe_mount ? opt.probe_listeners : 0);
    g.ns = opt.sources;
    g.l = calloc(g.nl + 1, sizeof(*g.l));
    g.rates = calloc(g.nl + 1, sizeof(*g.rates));
    g.retry = calloc(g.nl + 1, sizeof(*g.retry));
    g.s = calloc(g.ns + 1, sizeof(*g.s));
    g.rbuf = malloc(READ_BUF_SIZE);
    g.lat_win = calloc(LAT_BUCKETS, sizeof(*g.lat_win));
    g.lat_all = calloc(LAT_BUCKETS, sizeof(*g.lat_all));
    g.arr_win = calloc(LAT_BUCKETS, sizeof(*g.arr_win));
    g.arr_all = calloc(LAT_BUCKETS, sizeof(*g.arr_all));
    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (opt.tls && tls_setup() < 0)
        return -ENOMEM;
    if (!g.l || !g.rates || !g.retry || !g.s || !g.rbuf || !g.lat_win || !g.lat_all ||
        !g.arr_win || !g.arr_all || g.ep < 0)
        return -ENOMEM;
    /* --time-listeners K: K of the N chosen at random, each subset of K as likely (selection
     * sampling), so that they spread over the whole mount and the server's write order */
    unsigned want = opt.time_listeners < opt.listeners ? opt.time_listeners : opt.listeners;
    unsigned seed = opt.seed;
    for (unsigned i = 0; i < g.nl; i++) {
        g.l[i].fd = -1;
        g.l[i].probe = i >= opt.listeners;
        if (g.l[i].probe)
            g.l[i].timed = 1;
        else if (want && (double)rand_r(&seed) / ((double)RAND_MAX + 1) * (opt.listeners - i) < want) {
            g.l[i].timed = 1;
            want--;
        }
    }
    clock_offset();
    for (unsigned i = 0; i < opt.sources; i++)
        g.s[i].mount = opt.source_mounts.v[i];
    g.probe.fd = -1;
    g.t_listen0 = -1;
    g.step_full_at = -1;
    if (opt.probe_mount && !opt.probe_listen_only && probe_src_open() < 0)
        return -EIO;
    g.status = opt.status_path ? fopen(opt.status_path, "w") : stdout;
    if (!g.status)
        return -errno;
    if (opt.trace_path && !(g.trace = fopen(opt.trace_path, "w")))
        return -errno;
    if (g.trace)
        setvbuf(g.trace, NULL, _IOFBF, 1 << 20);
    g.all_connected_at = -1;
    g.t0 = now_s();
    g.next_status = 1;
    if (g.trace) /* the clock the trace's times count from: CLOCK_MONOTONIC, us */
        fprintf(g.trace, "h,%lld\n", (long long)(g.t0 * 1e6));
    return load_source_data();
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    shout_init();
    if (setup() < 0) {
        fprintf(stderr, "swarm: set-up failed: %s\n", strerror(errno));
        return 1;
    }
    run();
    if (opt.per_mount_path && per_mount_report(opt.per_mount_path) < 0)
        fprintf(stderr, "swarm: cannot write %s\n", opt.per_mount_path);
    shout_shutdown();
    return 0;
}
