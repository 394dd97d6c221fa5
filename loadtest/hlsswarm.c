/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hlsswarm: the HLS load generator. N clients that poll a mount's HLS, in one
 * edge-triggered epoll loop, HTTP/1.1 keep-alive connections and one request at a time on each.
 * Each client first asks for the multivariant playlist and follows its own session URL.
 *  classic: reloads the media playlist every target duration (half of one when nothing was new),
 *           fetches each new segment; it starts three target durations behind the live edge;
 *  ll:      holds the part the preload hint names open (chunked, until it is complete), then
 *           asks for a blocking reload of that part (_HLS_msn/_HLS_part, answered at once since
 *           the part exists) for the next hint, and so on (players that use the preload hint);
 *  hlsjs:   as hls.js in low-latency mode: the moment a playlist arrives it asks for the
 *           blocking reload of the part after the last one listed, and meanwhile fetches the
 *           listed parts it does not have, one at a time, on a second connection; it never asks
 *           for the hinted part, and starts with the listed parts within PART-HOLD-BACK of the
 *           live edge.
 * It counts bytes, requests and errors, the latency from a piece's availability at the server
 * (its segment's PROGRAM-DATE-TIME plus the end of the piece in it) to its last byte here, the
 * same from the newest piece a playlist lists to the playlist's arrival here, and starving
 * clients: those whose newest piece is older than the player's hold-back (three target
 * durations, or PART-HOLD-BACK), so that a player at that distance from live would stall.
 * It owns its sockets only; it does not decode audio nor judge the server. See loadtest/README.md.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_BUF_SIZE (256 * 1024)
#define TEXT_MAX 16384          /* a response head, or a head and a playlist */
#define LAT_MIN_MS (-10000)      /* histogram of latencies, 1 ms buckets, -10 s .. +60 s */
#define LAT_BUCKETS 70001
#define QUEUE_MAX 16             /* segments a classic client has yet to fetch */
#define MAX_STEPS 16

enum cstate { C_IDLE, C_CONNECTING, C_OPEN, C_CLOSED };
enum mode { M_CLASSIC, M_LL, M_HLSJS };
static const char *const mode_names[] = {"classic", "ll", "hlsjs"};
enum req { Q_MULTI, Q_PLAYLIST, Q_PIECE };
enum body { B_HEAD, B_LENGTH, B_CHUNK_SIZE, B_CHUNK_DATA, B_CHUNK_CRLF, B_TRAILER, B_DONE };

/* One HTTP/1.1 keep-alive connection of a client, one request at a time on it. */
typedef struct {
    int fd;
    uint8_t state, req, want, body, keep, busy; /* busy: a request is outstanding */
    int status;
    char *text;            /* head (and playlist body) being received */
    size_t text_len, hdr_len;
    uint64_t left;         /* body bytes (or chunk bytes) still to come */
    double req_at, retry_at; /* request sent (or connect begun); when to connect again */
} conn_t;

/* cn[0] carries the playlists (and, but for hlsjs, the pieces); hlsjs fetches parts on cn[1] */
typedef struct {
    conn_t cn[2];
    uint8_t catchup;        /* classic, hlsjs: pieces of the first playlist still to fetch (no latency) */
    char session[48];      /* the token in the session's playlist URL */
    uint64_t msn;          /* ll: the part asked for / just received; hlsjs: the reload's part */
    int part;              /* (hlsjs: msn 0 is a reload without directives) */
    uint64_t queue[QUEUE_MAX], last_seq; /* classic, hlsjs: pieces to fetch, newest queued */
    int queue_part[QUEUE_MAX], last_part; /* hlsjs: their part numbers */
    int64_t queue_avail[QUEUE_MAX];
    unsigned nqueue;
    int64_t newest_ms;      /* availability of the newest piece received (0: none yet) */
    int64_t listed_ms;      /* availability of the newest piece a playlist listed (0: none yet) */
    int64_t pending_rx_ms;  /* ll: receipt of the part whose availability the next playlist says */
    double next_at, active_at; /* classic (hlsjs after a miss): the next reload */
    int target;             /* target duration, s */
    double part_target;
} client_t;

static struct {
    const char *host, *mount, *status_path, *ext;
    int port, mode;
    unsigned steps[MAX_STEPS], nsteps, max_pending;
    double connect_rate, hold, duration, req_timeout;
} opt = {.host = "127.0.0.1", .port = 8000, .connect_rate = 500, .max_pending = 64,
         .req_timeout = 30, .ext = "mp3"};

/* A latency histogram, 1 ms buckets: the last second's and the step's. */
typedef struct {
    uint32_t *win, *step;
    uint64_t win_n, step_n;
} hist_t;

static struct {
    int ep;
    FILE *status;
    client_t *c;
    unsigned nc, launched, active, pending, step, starving, eligible;
    double t0, next_status, step_full_at, credit, credit_at, loop_max, cpu_prev;
    uint64_t bytes, requests, errors, reconnects, pieces, bytes_step0, requests_step0;
    uint64_t errors_by[4]; /* connect, status != 2xx, closed by the server, timeout */
    hist_t lat, pl; /* piece available to its last byte here; to the playlist listing it */
    unsigned starving_max;
    double step_t0;
    unsigned char *rbuf;
    struct sockaddr_in addr;
} g;

static volatile sig_atomic_t stop_signals, next_signals;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9 - g.t0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        next_signals++;
    else
        stop_signals++;
}

/* ---- figures ---- */

static void hist_add(hist_t *h, int64_t ms)
{
    int64_t b = ms - LAT_MIN_MS;
    b = b < 0 ? 0 : b >= LAT_BUCKETS ? LAT_BUCKETS - 1 : b;
    h->win[b]++;
    h->step[b]++;
    h->win_n++;
    h->step_n++;
}

static void latency_add(int64_t ms)
{
    hist_add(&g.lat, ms);
    g.pieces++;
}

/* A playlist arrived listing pieces up to one available at `newest` (server clock): when it
 * lists one newer than the client's last playlist did, the time that piece took to be listed
 * here (the first playlist, which lists what was there before the client came, is not
 * counted). */
static void listed_add(client_t *c, int64_t newest)
{
    if (c->listed_ms && newest > c->listed_ms)
        hist_add(&g.pl, wall_ms() - newest);
    if (newest > c->listed_ms)
        c->listed_ms = newest;
}

static double percentile(const uint32_t *h, uint64_t n, double p)
{
    if (!n)
        return -1;
    uint64_t want = (uint64_t)(p * (double)n), seen = 0;
    if (want >= n)
        want = n - 1;
    for (int b = 0; b < LAT_BUCKETS; b++) {
        seen += h[b];
        if (seen > want)
            return b + LAT_MIN_MS;
    }
    return LAT_BUCKETS - 1 + LAT_MIN_MS;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

/* ---- connections ---- */

static void client_send(client_t *c, conn_t *k, enum req r);

static unsigned conn_no(const client_t *c, const conn_t *k)
{
    return (unsigned)(c - g.c) * 2 + (unsigned)(k - c->cn);
}

static void client_fail(client_t *c, conn_t *k, int kind)
{
    g.errors++;
    g.errors_by[kind]++;
    if (k->state == C_CONNECTING)
        g.pending--;
    if (k->fd >= 0)
        close(k->fd);
    k->fd = -1;
    if (k->state == C_OPEN) /* else what it was to send when connected */
        k->want = k->req;
    k->state = C_CLOSED;
    k->busy = 0;
    k->retry_at = now_s() + 1; /* starts again (a new connection, same session) in a second */
    (void)c;
}

static int client_connect(client_t *c, conn_t *k)
{
    k->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (k->fd < 0)
        return -errno;
    int r = connect(k->fd, (struct sockaddr *)&g.addr, sizeof(g.addr));
    if (r < 0 && errno != EINPROGRESS) {
        close(k->fd);
        k->fd = -1;
        return -errno;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP,
                             .data.u32 = conn_no(c, k)};
    epoll_ctl(g.ep, EPOLL_CTL_ADD, k->fd, &ev);
    k->state = C_CONNECTING;
    k->req_at = now_s();
    k->retry_at = 0;
    g.pending++;
    return 0;
}

/* Sends request r on k, or when the connection is gone (or not made yet), makes a new one that
 * will send it. */
static void client_send(client_t *c, conn_t *k, enum req r)
{
    char path[256], line[512];
    if (k->state != C_OPEN) {
        k->want = (uint8_t)r;
        if (k->state != C_CONNECTING)
            k->retry_at = now_s();
        return;
    }
    if (r == Q_MULTI)
        snprintf(path, sizeof(path), "%s/hls.m3u8", opt.mount);
    else if (r == Q_PLAYLIST && opt.mode != M_CLASSIC && c->msn)
        snprintf(path, sizeof(path), "%s/hls.m3u8?session=%s&_HLS_msn=%llu&_HLS_part=%d", opt.mount,
                 c->session, (unsigned long long)c->msn, c->part);
    else if (r == Q_PLAYLIST)
        snprintf(path, sizeof(path), "%s/hls.m3u8?session=%s", opt.mount, c->session);
    else if (opt.mode == M_LL)
        snprintf(path, sizeof(path), "%s/hls/%llu.%d.%s", opt.mount, (unsigned long long)c->msn,
                 c->part, opt.ext);
    else if (opt.mode == M_HLSJS)
        snprintf(path, sizeof(path), "%s/hls/%llu.%d.%s", opt.mount,
                 (unsigned long long)c->queue[0], c->queue_part[0], opt.ext);
    else
        snprintf(path, sizeof(path), "%s/hls/%llu.%s", opt.mount, (unsigned long long)c->queue[0],
                 opt.ext);
    int n = snprintf(line, sizeof(line), "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: hlsswarm\r\n"
                     "Accept: */*\r\n\r\n", path, opt.host, opt.port);
    k->req = (uint8_t)r;
    k->body = B_HEAD;
    k->text_len = k->hdr_len = 0;
    k->status = 0;
    k->req_at = now_s();
    k->busy = 1;
    g.requests++;
    /* a request of a few hundred bytes on an idle connection: the socket buffer takes it */
    if (write(k->fd, line, (size_t)n) != n)
        client_fail(c, k, 2);
}

/* The connection a client's pieces go on. */
static conn_t *piece_conn(client_t *c)
{
    return &c->cn[opt.mode == M_HLSJS];
}

/* ---- playlists ---- */

/* "2026-11-26T00:10:00.123Z" -> ms since the epoch */
static int64_t parse_pdt(const char *s)
{
    struct tm tm = {0};
    int ms = 0;
    const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (rest && *rest == '.')
        ms = atoi(rest + 1);
    return (int64_t)timegm(&tm) * 1000 + ms;
}

/* Whether piece (seq, part) comes after (last_seq, last_part). */
static int piece_after(uint64_t seq, int part, uint64_t last_seq, int last_part)
{
    return seq > last_seq || (seq == last_seq && part > last_part);
}

/* Drops the d oldest pieces of the queue. */
static void queue_drop(client_t *c, unsigned d)
{
    c->nqueue -= d;
    memmove(c->queue, c->queue + d, c->nqueue * sizeof(c->queue[0]));
    memmove(c->queue_part, c->queue_part + d, c->nqueue * sizeof(c->queue_part[0]));
    memmove(c->queue_avail, c->queue_avail + d, c->nqueue * sizeof(c->queue_avail[0]));
}

static void queue_piece(client_t *c, uint64_t seq, int part, int64_t avail)
{
    if (c->nqueue == QUEUE_MAX) /* a client this far behind keeps the newest */
        queue_drop(c, 1);
    c->queue[c->nqueue] = seq;
    c->queue_part[c->nqueue] = part;
    c->queue_avail[c->nqueue++] = avail;
    c->last_seq = seq;
    c->last_part = part;
}

/* The first playlist: keep the newest `keep` pieces queued, fetched without latency (they were
 * there before the client came). */
static void queue_start(client_t *c, unsigned keep)
{
    if (c->nqueue > keep)
        queue_drop(c, c->nqueue - keep);
    c->catchup = (uint8_t)c->nqueue;
}

/* Reads a media playlist: the classic client queues the segments it has not fetched, the ll
 * client learns the hint and the availability of the part it last received, the hlsjs client
 * queues the parts it has not fetched and learns the part its reload asks for. 0, 1 (hlsjs: the
 * playlist advanced) or -EINVAL. */
static int playlist_read(client_t *c, char *text)
{
    uint64_t seq = 0, hint_msn = 0, lp_seq = 0;
    int have_seq = 0, hint_part = -1, part_no = 0, news = 0, lp_part = -1, lp_complete = 0;
    int first = !c->last_seq && !c->catchup;
    int64_t pdt = 0, part_end_ms = 0, newest = 0;
    double extinf = 0, part_hold_back = 0;
    for (char *save = NULL, *ln = strtok_r(text, "\r\n", &save); ln; ln = strtok_r(NULL, "\r\n", &save)) {
        if (!strncmp(ln, "#EXT-X-TARGETDURATION:", 22))
            c->target = atoi(ln + 22);
        else if (!strncmp(ln, "#EXT-X-PART-INF:PART-TARGET=", 28))
            c->part_target = atof(ln + 28);
        else if (!strncmp(ln, "#EXT-X-SERVER-CONTROL:", 22)) {
            const char *h = strstr(ln, "PART-HOLD-BACK=");
            part_hold_back = h ? atof(h + 15) : 0;
        } else if (!strncmp(ln, "#EXT-X-MEDIA-SEQUENCE:", 22)) {
            seq = strtoull(ln + 22, NULL, 10);
            have_seq = 1;
        } else if (!strncmp(ln, "#EXT-X-PROGRAM-DATE-TIME:", 25)) {
            pdt = parse_pdt(ln + 25);
            part_no = 0;
            part_end_ms = 0;
        } else if (!strncmp(ln, "#EXT-X-PART:DURATION=", 21)) {
            part_end_ms += (int64_t)(atof(ln + 21) * 1000 + 0.5);
            if (opt.mode != M_CLASSIC && pdt + part_end_ms > newest)
                newest = pdt + part_end_ms;
            if (opt.mode == M_LL && c->pending_rx_ms && seq == c->msn && part_no == c->part) {
                latency_add(c->pending_rx_ms - (pdt + part_end_ms));
                c->newest_ms = pdt + part_end_ms;
                c->pending_rx_ms = 0;
            }
            if (opt.mode == M_HLSJS) {
                if (piece_after(seq, part_no, c->last_seq, c->last_part)) {
                    queue_piece(c, seq, part_no, pdt + part_end_ms);
                    news = 1;
                }
                lp_seq = seq, lp_part = part_no, lp_complete = 0;
            }
            part_no++;
        } else if (!strncmp(ln, "#EXTINF:", 8))
            extinf = atof(ln + 8);
        else if (!strncmp(ln, "#EXT-X-PRELOAD-HINT:", 20)) {
            const char *u = strstr(ln, "URI=\"hls/");
            unsigned long long m;
            if (!u || sscanf(u + 9, "%llu.%d.", &m, &hint_part) != 2)
                return -EINVAL;
            hint_msn = m;
        } else if (ln[0] != '#' && have_seq) {
            /* a complete segment's URI: segment `seq` */
            int64_t avail = pdt + (int64_t)(extinf * 1000 + 0.5);
            if (opt.mode == M_CLASSIC && avail > newest)
                newest = avail;
            if (opt.mode == M_CLASSIC && seq > c->last_seq && c->nqueue < QUEUE_MAX) {
                queue_piece(c, seq, 0, avail);
                news = 1;
            }
            if (lp_part >= 0 && lp_seq == seq)
                lp_complete = 1;
            seq++;
        }
    }
    if (!have_seq || c->target <= 0)
        return -EINVAL;
    listed_add(c, newest);
    if (opt.mode == M_LL) {
        if (hint_part < 0)
            return -EINVAL;
        c->msn = hint_msn;
        c->part = hint_part;
        return 0;
    }
    if (opt.mode == M_HLSJS) {
        if (lp_part < 0)
            return -EINVAL;
        if (first && c->nqueue) { /* start PART-HOLD-BACK behind the edge: the part it
                                   * falls in and those after it */
            int64_t from = c->queue_avail[c->nqueue - 1] - (int64_t)(part_hold_back * 1000 + 0.5);
            unsigned keep = 1;
            while (keep < c->nqueue && c->queue_avail[c->nqueue - 1 - keep] > from)
                keep++;
            queue_start(c, keep);
        }
        if (!news) { /* no new part (a blocking reload that gave up): again in half a target */
            c->msn = 0;
            c->next_at = now_s() + c->target / 2.0;
            return 0;
        }
        /* the part after the last listed: the next segment's first once that segment is complete */
        c->msn = lp_complete ? lp_seq + 1 : lp_seq;
        c->part = lp_complete ? 0 : lp_part + 1;
        c->next_at = 0;
        return 1;
    }
    /* the first playlist: start three target durations behind the live edge, as hls.js does */
    if (first)
        queue_start(c, 3);
    c->next_at = c->cn[0].req_at + (news ? c->target : c->target / 2.0);
    return 0;
}

/* ---- responses ---- */

/* A piece is complete: its latency (but for the pieces a client starts with), the next. */
static void piece_done(client_t *c, int64_t now)
{
    if (c->catchup)
        c->catchup--; /* it was there before the client came: no latency */
    else
        latency_add(now - c->queue_avail[0]);
    c->newest_ms = c->queue_avail[0];
    queue_drop(c, 1);
    if (c->nqueue)
        client_send(c, piece_conn(c), Q_PIECE);
}

static void client_next(client_t *c, conn_t *k)
{
    k->text[k->text_len] = '\0';
    if (k->req == Q_MULTI) {
        /* the variant's URL is the last line: hls.m3u8?session=TOKEN */
        char *s = strstr(k->text + k->hdr_len, "session=");
        if (!s || sscanf(s + 8, "%40[0-9a-fA-F]", c->session) != 1) {
            client_fail(c, k, 1);
            return;
        }
        client_send(c, k, Q_PLAYLIST);
    } else if (k->req == Q_PLAYLIST) {
        int r = playlist_read(c, k->text + k->hdr_len);
        if (r < 0) {
            client_fail(c, k, 1);
            return;
        }
        if (opt.mode == M_HLSJS) { /* the reload at once, the parts meanwhile on the other */
            if (r > 0)
                client_send(c, k, Q_PLAYLIST);
            if (c->nqueue && !piece_conn(c)->busy)
                client_send(c, piece_conn(c), Q_PIECE);
        } else if (opt.mode == M_LL || c->nqueue)
            client_send(c, k, Q_PIECE); /* else the reload waits for next_at */
    } else {
        int64_t now = wall_ms();
        if (!c->active_at) {
            c->active_at = now_s();
            g.active++;
        }
        if (opt.mode == M_LL) { /* the part is complete: its reload names the next one */
            c->pending_rx_ms = now;
            client_send(c, k, Q_PLAYLIST);
            return;
        }
        piece_done(c, now);
        if (opt.mode == M_CLASSIC && !c->nqueue && c->next_at <= now_s())
            client_send(c, k, Q_PLAYLIST);
    }
}

/* The head is in k->text: status, length or chunked, keep-alive. */
static int head_read(conn_t *k)
{
    k->text[k->hdr_len] = '\0';
    if (sscanf(k->text, "HTTP/1.%*d %d", &k->status) != 1)
        return -EINVAL;
    k->keep = !strcasestr(k->text, "\r\nConnection: close");
    const char *cl = strcasestr(k->text, "\r\nContent-Length:");
    if (strcasestr(k->text, "\r\nTransfer-Encoding: chunked"))
        k->body = B_CHUNK_SIZE, k->left = 0;
    else if (cl)
        k->body = B_LENGTH, k->left = strtoull(cl + 17, NULL, 10);
    else
        return -EINVAL; /* no length: nothing here needs to read to the end */
    if (k->status < 200 || k->status > 299)
        return -EPROTO;
    return 0;
}

/* Feeds received bytes through the response parser. 0, or -1 when the connection failed or
 * closed. */
static int client_feed(client_t *c, conn_t *k, const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (k->body == B_HEAD) {
            char ch = (char)p[i++];
            if (k->text_len + 1 >= TEXT_MAX)
                return client_fail(c, k, 1), -1;
            k->text[k->text_len++] = ch;
            if (k->text_len >= 4 && !memcmp(k->text + k->text_len - 4, "\r\n\r\n", 4)) {
                k->hdr_len = k->text_len;
                int r = head_read(k);
                if (r < 0)
                    return client_fail(c, k, 1), -1;
                if (k->body == B_LENGTH && !k->left)
                    k->body = B_DONE;
            }
        } else if (k->body == B_LENGTH || k->body == B_CHUNK_DATA) {
            size_t take = n - i < k->left ? n - i : (size_t)k->left;
            if (k->req != Q_PIECE) {
                if (k->text_len + take + 1 >= TEXT_MAX)
                    return client_fail(c, k, 1), -1;
                memcpy(k->text + k->text_len, p + i, take);
                k->text_len += take;
            }
            g.bytes += take;
            i += take;
            k->left -= take;
            if (!k->left)
                k->body = k->body == B_LENGTH ? B_DONE : B_CHUNK_CRLF;
        } else if (k->body == B_CHUNK_SIZE) {
            char ch = (char)p[i++];
            if (ch == '\n')
                k->body = k->left ? B_CHUNK_DATA : B_TRAILER;
            else if (ch >= '0' && ch <= '9')
                k->left = k->left * 16 + (uint64_t)(ch - '0');
            else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
                k->left = k->left * 16 + (uint64_t)((ch | 0x20) - 'a' + 10);
        } else if (k->body == B_CHUNK_CRLF) {
            if (p[i++] == '\n')
                k->body = B_CHUNK_SIZE, k->left = 0;
        } else if (k->body == B_TRAILER) {
            if (p[i++] == '\n')
                k->body = B_DONE; /* no trailer fields: the empty line ends the body */
        }
        if (k->body == B_DONE) {
            k->busy = 0;
            if (i < n) /* nothing is pipelined: bytes after a response are a protocol error */
                return client_fail(c, k, 1), -1;
            if (!k->keep) { /* the server ends the connection: the next request on a new one */
                close(k->fd);
                k->fd = -1;
                k->state = C_CLOSED;
                k->want = Q_PLAYLIST;
                g.reconnects++;
            }
            client_next(c, k);
            if (k->state != C_OPEN)
                return -1;
        }
    }
    return 0;
}

static void client_event(client_t *c, conn_t *k, uint32_t events)
{
    if (k->state == C_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err || (events & (EPOLLERR | EPOLLHUP))) {
            client_fail(c, k, 0);
            return;
        }
        if (!(events & EPOLLOUT))
            return;
        g.pending--;
        k->state = C_OPEN;
        client_send(c, k, k->want);
        return;
    }
    if (k->state != C_OPEN || !(events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)))
        return;
    for (;;) {
        ssize_t r = read(k->fd, g.rbuf, READ_BUF_SIZE);
        if (r > 0) {
            if (client_feed(c, k, g.rbuf, (size_t)r) < 0)
                return;
            if ((size_t)r < READ_BUF_SIZE && !(events & (EPOLLRDHUP | EPOLLHUP)))
                return;
            continue;
        }
        if (r < 0 && errno == EAGAIN)
            return;
        client_fail(c, k, 2); /* EOF or reset in the middle of an exchange */
        return;
    }
}

/* ---- the loop ---- */

static void clients_launch(double t)
{
    unsigned target = opt.steps[g.step];
    g.credit += (t - g.credit_at) * opt.connect_rate;
    g.credit_at = t;
    if (g.credit > opt.connect_rate)
        g.credit = opt.connect_rate;
    while (g.launched < target && g.launched < g.nc && g.credit >= 1 && g.pending < opt.max_pending) {
        client_t *c = &g.c[g.launched++];
        g.credit -= 1;
        if (client_connect(c, &c->cn[0]) < 0)
            client_fail(c, &c->cn[0], 0);
    }
}

/* Timers: reloads due, connections to make (again), requests that took too long. */
static void clients_tick(double t)
{
    for (unsigned i = 0; i < g.launched; i++) {
        client_t *c = &g.c[i];
        for (conn_t *k = c->cn; k < c->cn + 1 + (opt.mode == M_HLSJS); k++) {
            if ((k->state == C_CLOSED || k->state == C_IDLE) && k->retry_at && k->retry_at <= t &&
                g.pending < opt.max_pending) {
                if (client_connect(c, k) < 0)
                    client_fail(c, k, 0);
            } else if (k->state == C_OPEN && k == c->cn && !k->busy && c->next_at &&
                       c->next_at <= t) {
                client_send(c, k, Q_PLAYLIST);
            } else if (k->state == C_OPEN && k->busy && t - k->req_at > opt.req_timeout) {
                client_fail(c, k, 3);
            } else if (k->state == C_CONNECTING && t - k->req_at > opt.req_timeout) {
                client_fail(c, k, 0);
            }
        }
    }
}

/* A client starves when the newest piece it holds became available longer ago than the
 * player's hold-back from the live edge: a player that far behind live would have nothing to
 * play. Judged among the clients that received a piece and have run for a hold-back since. */
static void starving_count(double t)
{
    int64_t now = wall_ms();
    g.starving = g.eligible = 0;
    for (unsigned i = 0; i < g.launched; i++) {
        client_t *c = &g.c[i];
        double hold = opt.mode != M_CLASSIC ? 3 * c->part_target : 3.0 * c->target;
        if (!c->active_at || t - c->active_at < hold || !c->newest_ms)
            continue;
        g.eligible++;
        if ((double)(now - c->newest_ms) > hold * 1000)
            g.starving++;
    }
    if (g.starving > g.starving_max)
        g.starving_max = g.starving;
}

static void step_report(double t, const char *what)
{
    double secs = t - g.step_t0 > 0 ? t - g.step_t0 : 1;
    unsigned n = g.active ? g.active : 1;
    fprintf(g.status, "%s mode=%s clients=%u active=%u secs=%.1f bytes_per_client_s=%.0f "
            "requests_per_client_s=%.3f errors=%llu err_connect=%llu err_status=%llu "
            "err_closed=%llu err_timeout=%llu reconnects=%llu starving_max=%u pieces=%llu "
            "lat_p50_ms=%.0f lat_p90_ms=%.0f lat_p99_ms=%.0f lat_max_ms=%.0f playlists=%llu "
            "pl_lat_p50_ms=%.0f pl_lat_p99_ms=%.0f pl_lat_max_ms=%.0f\n",
            what, mode_names[opt.mode], opt.steps[g.step], g.active, secs,
            (double)(g.bytes - g.bytes_step0) / n / secs,
            (double)(g.requests - g.requests_step0) / n / secs, (unsigned long long)g.errors,
            (unsigned long long)g.errors_by[0], (unsigned long long)g.errors_by[1],
            (unsigned long long)g.errors_by[2], (unsigned long long)g.errors_by[3],
            (unsigned long long)g.reconnects, g.starving_max, (unsigned long long)g.lat.step_n,
            percentile(g.lat.step, g.lat.step_n, 0.5), percentile(g.lat.step, g.lat.step_n, 0.9),
            percentile(g.lat.step, g.lat.step_n, 0.99), percentile(g.lat.step, g.lat.step_n, 1.0),
            (unsigned long long)g.pl.step_n, percentile(g.pl.step, g.pl.step_n, 0.5),
            percentile(g.pl.step, g.pl.step_n, 0.99), percentile(g.pl.step, g.pl.step_n, 1.0));
    fflush(g.status);
}

/* The figures of a step count from the moment all its clients are active. */
static void step_reset(double t)
{
    g.step_t0 = t;
    g.bytes_step0 = g.bytes;
    g.requests_step0 = g.requests;
    g.starving_max = 0;
    memset(g.lat.step, 0, LAT_BUCKETS * sizeof(*g.lat.step));
    memset(g.pl.step, 0, LAT_BUCKETS * sizeof(*g.pl.step));
    g.lat.step_n = g.pl.step_n = 0;
}

static void status_tick(double t)
{
    starving_count(t);
    double cpu = cpu_s();
    fprintf(g.status, "t=%.0f listeners=%u connected=%u pending=%u bytes=%llu requests=%llu "
            "errors=%llu starving=%u eligible=%u lat_n=%llu lat_p50_ms=%.0f lat_p99_ms=%.0f "
            "pl_lat_p50_ms=%.0f swarm_cpu_pct=%.1f swarm_loop_max_ms=%.1f\n", t,
            opt.steps[g.step], g.active,
            g.pending, (unsigned long long)g.bytes, (unsigned long long)g.requests,
            (unsigned long long)g.errors, g.starving, g.eligible, (unsigned long long)g.lat.win_n,
            percentile(g.lat.win, g.lat.win_n, 0.5), percentile(g.lat.win, g.lat.win_n, 0.99),
            percentile(g.pl.win, g.pl.win_n, 0.5), (cpu - g.cpu_prev) * 100, g.loop_max * 1000);
    fflush(g.status);
    g.cpu_prev = cpu;
    g.loop_max = 0;
    memset(g.lat.win, 0, LAT_BUCKETS * sizeof(*g.lat.win));
    memset(g.pl.win, 0, LAT_BUCKETS * sizeof(*g.pl.win));
    g.lat.win_n = g.pl.win_n = 0;
    if (g.step_full_at < 0 && g.active >= opt.steps[g.step]) {
        g.step_full_at = t;
        step_reset(t);
        fprintf(g.status, "all_active clients=%u t=%.0f\n", opt.steps[g.step], t);
    }
}

static void step_next(double t)
{
    step_report(t, "step");
    if (g.step + 1 < opt.nsteps) {
        g.step++;
        g.step_full_at = -1;
    } else {
        stop_signals++;
    }
}

static void run(void)
{
    struct epoll_event evs[1024];
    g.step_full_at = -1;
    while (!stop_signals) {
        double t = now_s();
        if (opt.duration > 0 && t >= opt.duration)
            break;
        if (next_signals) {
            next_signals = 0;
            step_next(t);
        }
        if (opt.hold > 0 && g.step_full_at >= 0 && t - g.step_full_at >= opt.hold)
            step_next(t);
        if (t >= g.next_status) {
            status_tick(t);
            clients_tick(t);
            g.next_status += 1;
        }
        clients_launch(t);
        double busy = now_s() - t;
        g.loop_max = busy > g.loop_max ? busy : g.loop_max;
        int n = epoll_wait(g.ep, evs, 1024, 10);
        double t1 = now_s();
        for (int i = 0; i < n; i++) {
            client_t *c = &g.c[evs[i].data.u32 / 2];
            client_event(c, &c->cn[evs[i].data.u32 % 2], evs[i].events);
        }
        /* classic reloads are due at their own times: look every 100 ms, not only once a second */
        static double last_tick;
        if (t1 - last_tick >= 0.1) {
            clients_tick(t1);
            last_tick = t1;
        }
        busy = now_s() - t1;
        g.loop_max = busy > g.loop_max ? busy : g.loop_max;
    }
    step_report(now_s(), "final");
    for (unsigned i = 0; i < g.launched; i++)
        for (int j = 0; j < 2; j++)
            if (g.c[i].cn[j].fd >= 0)
                close(g.c[i].cn[j].fd);
}

/* ---- set-up ---- */

static void usage(void)
{
    fputs("usage: hlsswarm --mount M [--ll | --hlsjs] [--clients N[,N2,...]] [--hold SEC] [--host H]\n"
          "       [--port P] [--connect-rate R/s] [--max-pending N] [--duration SEC]\n"
          "       [--request-timeout SEC] [--status FILE]\n"
          "  --clients 1000,5000,10000: a step each; the next starts after --hold seconds once\n"
          "  all of a step are active, or on SIGUSR1; after the last, it ends\n", stderr);
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    static const struct option lo[] = {
        {"host", 1, 0, 'h'}, {"port", 1, 0, 'p'}, {"mount", 1, 0, 'm'}, {"ll", 0, 0, 'l'}, {"hlsjs", 0, 0, 'j'},
        {"clients", 1, 0, 'n'}, {"hold", 1, 0, 'H'}, {"connect-rate", 1, 0, 'c'},
        {"max-pending", 1, 0, 'X'}, {"duration", 1, 0, 'd'}, {"request-timeout", 1, 0, 'T'},
        {"status", 1, 0, 's'}, {0, 0, 0, 0}};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (ch) {
        case 'h': opt.host = optarg; break;
        case 'p': opt.port = atoi(optarg); break;
        case 'm': opt.mount = optarg; break;
        case 'l': opt.mode = M_LL; break;
        case 'j': opt.mode = M_HLSJS; break;
        case 'n':
            for (char *save = NULL, *s = strtok_r(optarg, ",", &save); s && opt.nsteps < MAX_STEPS;
                 s = strtok_r(NULL, ",", &save))
                opt.steps[opt.nsteps++] = (unsigned)atoi(s);
            break;
        case 'H': opt.hold = atof(optarg); break;
        case 'c': opt.connect_rate = atof(optarg); break;
        case 'X': opt.max_pending = (unsigned)atoi(optarg); break;
        case 'd': opt.duration = atof(optarg); break;
        case 'T': opt.req_timeout = atof(optarg); break;
        case 's': opt.status_path = optarg; break;
        default: usage();
        }
    }
    if (!opt.mount || !opt.nsteps || optind != argc || opt.connect_rate <= 0)
        usage();
    for (unsigned i = 0; i < opt.nsteps; i++) {
        if (!opt.steps[i] || (i && opt.steps[i] < opt.steps[i - 1]))
            usage();
        g.nc = opt.steps[i];
    }
    const char *dot = strrchr(opt.mount, '.');
    if (dot && !strcmp(dot, ".aac"))
        opt.ext = "aac";
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
    g.c = calloc(g.nc, sizeof(*g.c));
    g.rbuf = malloc(READ_BUF_SIZE);
    hist_t *hs[] = {&g.lat, &g.pl};
    for (int i = 0; i < 2; i++) {
        hs[i]->win = calloc(LAT_BUCKETS, sizeof(*hs[i]->win));
        hs[i]->step = calloc(LAT_BUCKETS, sizeof(*hs[i]->step));
        if (!hs[i]->win || !hs[i]->step)
            return -ENOMEM;
    }
    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (!g.c || !g.rbuf || g.ep < 0)
        return -ENOMEM;
    for (unsigned i = 0; i < g.nc; i++) {
        for (int j = 0; j < 2; j++) {
            g.c[i].cn[j].fd = -1;
            if (j <= (opt.mode == M_HLSJS) && !(g.c[i].cn[j].text = malloc(TEXT_MAX)))
                return -ENOMEM;
        }
    }
    g.status = opt.status_path ? fopen(opt.status_path, "w") : stdout;
    if (!g.status)
        return -errno;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    g.t0 = ts.tv_sec + ts.tv_nsec / 1e9;
    g.next_status = 1;
    return 0;
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGUSR1, on_signal);
    int r = setup();
    if (r < 0) {
        fprintf(stderr, "hlsswarm: set-up failed: %s\n", strerror(-r));
        return 1;
    }
    run();
    return 0;
}
