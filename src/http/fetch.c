/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fetch: outbound HTTP POSTs (and small GETs) on one thread with libcurl's multi interface (see fetch.h).
 *
 * The queue (FIFO, bounded) is shared with the submitters under one mutex; the multi handle,
 * the easy handles and the list of running jobs belong to the fetch thread alone. Submitting
 * wakes the thread with curl_multi_wakeup(). A finished job is handed to its requester's
 * worker with worker_post() and freed there after its callback ran.
 */
#include "http/fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "core/buf.h"
#include "core/cidr.h"
#include "core/list.h"
#include "core/log.h"
#include "net/server.h"
#include "net/tls.h"
#include "net/worker.h"

typedef struct fetch_job fetch_job_t;
struct fetch_job {
    char *url, *body, *userpwd;
    unsigned timeout_ms;
    worker_t *reply_to;
    fetch_done_fn done;
    void *arg;
    CURL *easy;
    buf_t hdr;       /* header lines of the response being received */
    size_t max_body; /* a GET keeping up to this much of the body */
    int public_only; /* refuse internal addresses (fetch_request_t) */
    int self_bounded; /* outside the counts and the queue (fetch_request_t) */
    int refused;     /* ... and one was refused */
    buf_t resp;      /* that body */
    fetch_result_t res;
    char errbuf[CURL_ERROR_SIZE];
    list_t link; /* in fetch_state.queue (queued) or fetch_state.active (running) */
};

static struct {
    pthread_mutex_t lock;
    pthread_t thread;
    int running;  /* the thread exists */
    int stopping; /* fetch_stop was called */
    CURLM *multi;
    list_t queue;             /* queued, oldest first (lock) */
    list_t direct;            /* self-bounded, to start at once (lock) */
    unsigned queued;          /* (lock) */
    list_t active;            /* running (fetch thread only) */
    unsigned nactive;         /* (lock for readers) */
    unsigned max_active_seen;
    unsigned long long done, failed, refused;
} fetch_state = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .queue = LIST_INIT(fetch_state.queue),
       .direct = LIST_INIT(fetch_state.direct),
       .active = LIST_INIT(fetch_state.active)};

static void job_free(fetch_job_t *j)
{
    if (j->easy)
        curl_easy_cleanup(j->easy);
    free(j->url);
    free(j->body);
    if (j->userpwd) {
        memset(j->userpwd, 0, strlen(j->userpwd));
        free(j->userpwd);
    }
    buf_free(&j->hdr);
    buf_free(&j->resp);
    free(j);
}

/* ---- completion ---- */

static void deliver(worker_t *w, void *arg)
{
    fetch_job_t *j = arg;
    if (j->done)
        j->done(w, &j->res, j->arg);
    job_free(j);
}

static void complete(fetch_job_t *j, int error)
{
    j->res.error = error;
    j->res.headers = j->hdr.data ? j->hdr.data : "";
    j->res.headers_len = j->hdr.len;
    j->res.body = j->resp.data ? j->resp.data : "";
    j->res.body_len = j->resp.len;
    if (!j->res.error_text)
        j->res.error_text = error == -ECANCELED ? "shutting down" : j->errbuf[0] ? j->errbuf : "";
    pthread_mutex_lock(&fetch_state.lock);
    if (error)
        fetch_state.failed++;
    else
        fetch_state.done++;
    pthread_mutex_unlock(&fetch_state.lock);
    if (!j->reply_to || !j->done) {
        deliver(NULL, j);
        return;
    }
    int rc = worker_post(j->reply_to, deliver, j);
    if (rc < 0) {
        /* done frees its argument only; the requester's own deadline answers the client.
         * -ESHUTDOWN: a drained worker, whose requester has long gone */
        if (rc != -ESHUTDOWN)
            log_error("fetch: cannot hand an answer back to its worker (out of memory)");
        deliver(NULL, j);
    }
}

static int map_error(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK:
        return 0;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT:
        return -ECONNREFUSED;
    default:
        return -EIO;
    }
}

/* ---- one transfer ---- */

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
    fetch_job_t *j = arg;
    size_t len = size * n;
    if (len >= 5 && strncmp(data, "HTTP/", 5) == 0 && j->hdr.data) {
        j->hdr.len = 0; /* a new response (after 100 Continue or a redirect): start again */
        j->hdr.data[0] = '\0';
    }
    if (j->hdr.len + len + 1 > FETCH_MAX_HEADER_BYTES)
        return len; /* past the limit: dropped, the transfer goes on */
    return buf_append(&j->hdr, data, len) == 0 ? len : 0;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    fetch_job_t *j = arg;
    size_t len = size * n; /* a POST's answer is in its headers: its body is dropped */
    if (j->max_body == 0 || j->resp.len >= j->max_body)
        return len;
    size_t take = len < j->max_body - j->resp.len ? len : j->max_body - j->resp.len;
    return buf_append(&j->resp, data, take) == 0 ? len : 0;
}

/* public_only: the address libcurl is about to connect to (the host's, or a proxy's) must not
 * be internal; a refusal ends the transfer with -EACCES. */
static curl_socket_t open_public(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    fetch_job_t *j = arg;
    unsigned char addr[16] = {0};
    (void)purpose;
    if (a->family == AF_INET) {
        addr[10] = addr[11] = 0xff;
        memcpy(addr + 12, &((const struct sockaddr_in *)&a->addr)->sin_addr, 4);
    } else if (a->family == AF_INET6) {
        memcpy(addr, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, 16);
    }
    if ((a->family != AF_INET && a->family != AF_INET6) || cidr_is_internal(addr)) {
        j->refused = 1;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* libcurl's OpenSSL context of an https:// request: <ssl-cafile>'s CAs added to its trust
 * store, as the relays' (net/tls.h). */
static CURLcode trust_cafile(CURL *e, void *ssl_ctx, void *arg)
{
    (void)e;
    (void)arg;
    return tls_client_trust(ssl_ctx) == 0 ? CURLE_OK : CURLE_SSL_CACERT_BADFILE;
}

static int job_begin(fetch_job_t *j)
{
    CURL *e = j->easy = curl_easy_init();
    if (!e)
        return -ENOMEM;
    curl_easy_setopt(e, CURLOPT_URL, j->url);
    if (j->max_body) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        /* an occasional poll (a sibling's room): no idle connection left holding one of the
         * other server's <clients> slots between polls; the ad layer's many GETs to few hosts
         * keep theirs, when they were to a public address (a connection is reused by a later
         * request whatever it may reach: one allowed internal addresses leaves none behind) */
        curl_easy_setopt(e, CURLOPT_FORBID_REUSE, j->self_bounded && j->public_only ? 0L : 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, j->body);
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(j->body));
    }
    curl_easy_setopt(e, CURLOPT_USERAGENT, server_ident());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)j->timeout_ms);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)j->timeout_ms);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, j);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
    curl_easy_setopt(e, CURLOPT_PRIVATE, j);
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(e, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    if (tls_client_has_cas())
        curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, trust_cafile);
    if (j->public_only) {
        curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, open_public);
        curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, j);
    }
    if (j->userpwd) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERPWD, j->userpwd);
    }
    if (curl_multi_add_handle(fetch_state.multi, e) != CURLM_OK)
        return -EIO;
    list_insert_head(&fetch_state.active, &j->link);
    return 0;
}

static void unlink_active(fetch_job_t *j)
{
    list_remove(&j->link);
    curl_multi_remove_handle(fetch_state.multi, j->easy);
    if (j->self_bounded)
        return;
    pthread_mutex_lock(&fetch_state.lock);
    fetch_state.nactive--;
    pthread_mutex_unlock(&fetch_state.lock);
}

/* Starts the self-bounded jobs submitted since the last turn. */
static void start_direct(void)
{
    pthread_mutex_lock(&fetch_state.lock);
    list_t q;
    list_take_all(&q, &fetch_state.direct);
    pthread_mutex_unlock(&fetch_state.lock);
    fetch_job_t *j, *n;
    list_foreach_safe(j, n, &q, fetch_job_t, link) {
        list_remove(&j->link);
        if (job_begin(j) < 0) {
            j->res.error_text = "cannot start the request";
            complete(j, -ENOMEM);
        }
    }
}

/* Moves queued jobs into the multi handle while fewer than FETCH_MAX_ACTIVE run. */
static void start_queued(void)
{
    for (;;) {
        pthread_mutex_lock(&fetch_state.lock);
        fetch_job_t *j = NULL;
        if (fetch_state.nactive < FETCH_MAX_ACTIVE && !list_empty(&fetch_state.queue)) {
            j = list_first_entry(&fetch_state.queue, fetch_job_t, link);
            list_remove(&j->link);
            fetch_state.queued--;
            fetch_state.nactive++;
            if (fetch_state.nactive > fetch_state.max_active_seen)
                fetch_state.max_active_seen = fetch_state.nactive;
        }
        pthread_mutex_unlock(&fetch_state.lock);
        if (!j)
            return;
        if (job_begin(j) < 0) {
            pthread_mutex_lock(&fetch_state.lock);
            fetch_state.nactive--;
            pthread_mutex_unlock(&fetch_state.lock);
            j->res.error_text = "cannot start the request";
            complete(j, -ENOMEM);
        }
    }
}

static void collect_finished(void)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(fetch_state.multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        fetch_job_t *j = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&j);
        CURLcode rc = msg->data.result;
        unlink_active(j);
        curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &j->res.status);
        if (rc != CURLE_OK && !j->errbuf[0])
            snprintf(j->errbuf, sizeof(j->errbuf), "%s", curl_easy_strerror(rc));
        if (j->refused) {
            snprintf(j->errbuf, sizeof(j->errbuf), "an internal address is not reached");
            complete(j, -EACCES);
        } else {
            complete(j, map_error(rc));
        }
    }
}

static void cancel_all(void)
{
    while (!list_empty(&fetch_state.active)) {
        fetch_job_t *j = list_first_entry(&fetch_state.active, fetch_job_t, link);
        unlink_active(j);
        complete(j, -ECANCELED);
    }
    pthread_mutex_lock(&fetch_state.lock);
    list_t q;
    list_take_all(&q, &fetch_state.queue);
    while (!list_empty(&fetch_state.direct)) {
        list_t *d = fetch_state.direct.next;
        list_remove(d);
        list_insert_tail(&q, d);
    }
    fetch_state.queued = 0;
    pthread_mutex_unlock(&fetch_state.lock);
    fetch_job_t *j, *n;
    list_foreach_safe(j, n, &q, fetch_job_t, link) {
        list_remove(&j->link);
        complete(j, -ECANCELED);
    }
}

static void *fetch_main(void *arg)
{
    for (;;) {
        pthread_mutex_lock(&fetch_state.lock);
        int stop = fetch_state.stopping;
        pthread_mutex_unlock(&fetch_state.lock);
        if (stop)
            break;
        start_direct();
        start_queued();
        int still;
        curl_multi_perform(fetch_state.multi, &still);
        collect_finished();
        start_queued(); /* slots freed by finished jobs */
        curl_multi_poll(fetch_state.multi, NULL, 0, 1000, NULL);
    }
    cancel_all();
    return NULL;
}

/* ---- API ---- */

int fetch_start(void)
{
    if (!(fetch_state.multi = curl_multi_init()))
        return -ENOMEM;
    int rc = pthread_create(&fetch_state.thread, NULL, fetch_main, NULL);
    if (rc) {
        curl_multi_cleanup(fetch_state.multi);
        fetch_state.multi = NULL;
        return -rc;
    }
    pthread_mutex_lock(&fetch_state.lock);
    fetch_state.running = 1;
    pthread_mutex_unlock(&fetch_state.lock);
    return 0;
}

int fetch_submit(const fetch_request_t *req)
{
    fetch_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return -ENOMEM;
    j->url = strdup(req->url);
    j->body = strdup(req->body ? req->body : "");
    j->userpwd = req->userpwd ? strdup(req->userpwd) : NULL;
    j->timeout_ms = req->timeout_ms ? req->timeout_ms : 15000;
    j->max_body = req->max_body;
    j->public_only = req->public_only;
    j->self_bounded = req->self_bounded;
    j->reply_to = req->reply_to;
    j->done = req->done;
    j->arg = req->arg;
    if (!j->url || !j->body || (req->userpwd && !j->userpwd)) {
        job_free(j);
        return -ENOMEM;
    }
    int rc = 0;
    pthread_mutex_lock(&fetch_state.lock);
    if (!fetch_state.running || fetch_state.stopping)
        rc = -ESHUTDOWN;
    else if (!j->self_bounded && fetch_state.queued >= FETCH_MAX_QUEUED)
        rc = -EBUSY;
    if (rc == 0 && j->self_bounded) {
        list_insert_tail(&fetch_state.direct, &j->link);
    } else if (rc == 0) {
        list_insert_tail(&fetch_state.queue, &j->link);
        fetch_state.queued++;
    } else if (rc == -EBUSY) {
        fetch_state.refused++;
    }
    pthread_mutex_unlock(&fetch_state.lock);
    if (rc) {
        job_free(j);
        return rc;
    }
    curl_multi_wakeup(fetch_state.multi);
    return 0;
}

void fetch_stop(void)
{
    pthread_mutex_lock(&fetch_state.lock);
    int was = fetch_state.running;
    fetch_state.stopping = 1;
    pthread_mutex_unlock(&fetch_state.lock);
    if (!was)
        return;
    curl_multi_wakeup(fetch_state.multi);
    pthread_join(fetch_state.thread, NULL);
    curl_multi_cleanup(fetch_state.multi);
    fetch_state.multi = NULL;
    pthread_mutex_lock(&fetch_state.lock);
    fetch_state.running = 0;
    pthread_mutex_unlock(&fetch_state.lock);
}

void fetch_get_counters(fetch_counters_t *out)
{
    pthread_mutex_lock(&fetch_state.lock);
    *out = (fetch_counters_t){fetch_state.nactive, fetch_state.queued,
                              fetch_state.max_active_seen, fetch_state.done,
                              fetch_state.failed, fetch_state.refused};
    pthread_mutex_unlock(&fetch_state.lock);
}
