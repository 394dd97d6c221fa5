/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fetch: the one libcurl HTTP client of the process (URL authentication, YP directories, the
 * redirect siblings' room documents): libcurl's multi interface on a thread of its own, so no
 * worker ever waits for a remote server. Requests are form POSTs (or GETs whose body is kept,
 * for small documents); at most FETCH_MAX_ACTIVE run at once, up to FETCH_MAX_QUEUED more wait
 * in a queue, and beyond that fetch_submit() refuses (-EBUSY); a caller that bounds its own
 * requests (self_bounded) is started at once beside them. It sits in http/, above the
 * worker loops it posts answers to (net/worker.h), below its users (auth/, stream/, yp/).
 *
 * Lifecycle: fetch_start() once at start-up (after curl_global_init), fetch_submit() from any
 * thread, fetch_stop() at shutdown: it joins the thread and completes every request still
 * queued or running with -ECANCELED. It does not parse answers beyond collecting the header
 * lines of the final response (fetch_header).
 */
#ifndef RIMECAST_FETCH_H
#define RIMECAST_FETCH_H

#include <stddef.h>

typedef struct worker worker_t;

#define FETCH_MAX_ACTIVE 16
#define FETCH_MAX_QUEUED 1000
#define FETCH_MAX_HEADER_BYTES 16384

typedef struct fetch_result {
    /* 0: an HTTP answer came (any status); else -ETIMEDOUT, -ECONNREFUSED, -ECANCELED (shut
     * down), -EACCES (public_only: the address is internal), -EIO (anything else: error_text
     * says what) */
    int error;
    long status;
    const char *headers; /* the final response's header lines, "\r\n"-separated, NUL-ended */
    size_t headers_len;
    const char *error_text; /* for logs (not escaped; from libcurl) */
    const char *body;       /* a GET's response body (NUL-ended, cut at max_body), else "" */
    size_t body_len;
} fetch_result_t;

/* Runs once per request, on worker `reply_to` (through worker_post), or on the fetch thread
 * when reply_to is NULL (then it must be quick and must not block). The result is only valid
 * during the call. If the answer cannot be posted to the worker (out of memory), done runs on
 * the fetch thread with w NULL: it must then only free arg. */
typedef void (*fetch_done_fn)(worker_t *w, const fetch_result_t *r, void *arg);

typedef struct fetch_request {
    const char *url;
    const char *body;      /* application/x-www-form-urlencoded, copied; NULL with max_body: GET */
    size_t max_body;       /* 0: a POST whose body is dropped; else a GET keeping this much */
    const char *userpwd;   /* "user:password" for HTTP Basic, or NULL; copied */
    unsigned timeout_ms;   /* the whole exchange, connect included */
    int public_only;       /* 1: never connect to an internal address (cidr_is_internal):
                            * the URL came from an untrusted party; the answer is -EACCES */
    int self_bounded;      /* 1: not counted in FETCH_MAX_ACTIVE or FETCH_MAX_QUEUED, started
                            * at once: the caller bounds how many it has going (the ad layer,
                            * ads/ads_http.c); a public_only GET then keeps its connection for
                            * the next */
    worker_t *reply_to;    /* NULL: done runs on the fetch thread */
    fetch_done_fn done;    /* may be NULL (fire and forget) */
    void *arg;
} fetch_request_t;

/* Starts the fetch thread. 0 or -errno. */
int fetch_start(void);
/* Queues a request (everything is copied). 0, or -EBUSY (the queue is full), -ESHUTDOWN
 * (not running), -ENOMEM: then done is never called. Thread-safe. */
int fetch_submit(const fetch_request_t *req);
/* Stops the thread: requests still queued or running complete with -ECANCELED (their done
 * runs, posted to their worker, which must still be running). */
void fetch_stop(void);

/* The value of header `name` (case-insensitive, without the colon) in r, trimmed, copied into
 * buf (cut to len - 1 bytes); NULL if absent. The last occurrence wins. */
const char *fetch_header(const fetch_result_t *r, const char *name, char *buf, size_t len);
/* 1 if r has the header line `line` ("name: value"; name case-insensitive, value compared
 * exactly after trimming blanks), as Icecast's auth_header option is matched. */
int fetch_has_header_line(const fetch_result_t *r, const char *line);

/* Counters for tests and stats (self-bounded requests are not among active and queued). */
typedef struct fetch_counters {
    unsigned active, queued, max_active_seen;
    unsigned long long done, failed, refused;
} fetch_counters_t;
void fetch_get_counters(fetch_counters_t *out);

#endif
