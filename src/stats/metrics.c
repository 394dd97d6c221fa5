/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metrics: Prometheus text exposition of server_t and mount_t counters (see metrics.h).
 * Metric families are rows of a table: name, type, help, and how to read the value. The names
 * follow Prometheus's conventions (base units, _total on counters); docs/METRICS.md lists them,
 * with the names they replaced.
 */
#include "stats/metrics.h"

#include <stdlib.h>
#include <string.h>

#include "ads/ads.h"
#include "auth/verify.h"
#include "build-config.h"
#include "conf/config.h"
#include "core/buf.h"
#include "hls/hls.h"
#include "net/server.h"
#include "audience/audience.h"
#include "audience/audience_store.h"
#include "stats/stats.h"
#include "stream/mount.h"

/* Label value: \ " and newline escaped, as the exposition format asks (its own rules, not
 * one of the escape_* languages); the text is made valid UTF-8 first. */
static void label_value(buf_t *o, const char *value)
{
    char *clean = stats_clean_text(value);
    const char *s = clean ? clean : "";
    for (; *s; s++) {
        if (*s == '\\')
            buf_append_str(o, "\\\\");
        else if (*s == '"')
            buf_append_str(o, "\\\"");
        else if (*s == '\n')
            buf_append_str(o, "\\n");
        else
            buf_append_char(o, *s);
    }
    free(clean);
}

static void family(buf_t *o, const char *name, const char *type, const char *help)
{
    buf_appendf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- server-wide ---- */

typedef struct server_metric {
    const char *name, *type, *help;
    long long (*read)(void);
} server_metric_t;

#define READ_FN(fn, field) \
    static long long fn(void) { return (long long)atomic_load(&server.stats.field); }
READ_FN(read_clients, clients)
READ_FN(read_sources, sources)
READ_FN(read_hls_sessions, hls_sessions)
READ_FN(read_connections, connections)
READ_FN(read_refused, connections_refused)
READ_FN(read_client_conns, client_connections)
READ_FN(read_listener_conns, listener_connections)
READ_FN(read_source_conns, source_total_connections)
READ_FN(read_file_conns, file_connections)
READ_FN(read_stats_conns, stats_connections)
READ_FN(read_reads_ahead, reads_ahead)
READ_FN(read_read_ahead_enters, read_ahead_enters)
static long long read_workers(void) { return (long long)atomic_load(&server.nworkers); }
READ_FN(read_draining, workers_draining)
static long long read_start(void) { return (long long)server.start_time; }
static long long read_mounts(void) { return mount_count(); }
#define VERIFY_FN(fn, field) \
    static long long fn(void) \
    { \
        verify_counters_t vc; \
        verify_get_counters(&vc); \
        return (long long)vc.field; \
    }
VERIFY_FN(read_verify_queued, queued)
VERIFY_FN(read_verify_running, running)
VERIFY_FN(read_verify_ran, ran)
VERIFY_FN(read_verify_expired, expired)
VERIFY_FN(read_verify_refused, refused)

#define ADS_FN(fn, field) \
    static long long fn(void) \
    { \
        ads_counters_t ac; \
        ads_get_counters(&ac); \
        return (long long)ac.field; \
    }
ADS_FN(read_ads_requests, requests)
ADS_FN(read_ads_fills, fills)
ADS_FN(read_ads_no_fills, no_fills)
ADS_FN(read_ads_impressions, impressions)
ADS_FN(read_ads_completes, completes)
ADS_FN(read_ads_errors, errors)
ADS_FN(read_ads_creatives, creatives)
ADS_FN(read_ads_beacons_sent, beacons_sent)
ADS_FN(read_ads_beacons_failed, beacons_failed)
ADS_FN(read_ads_beacons_dropped, beacons_dropped)

static const server_metric_t server_metrics[] = {
    {"rimecast_start_time_seconds", "gauge", "Start time of the server (Unix time).", read_start},
    {"rimecast_clients", "gauge", "Open client connections of every kind.", read_clients},
    {"rimecast_sources", "gauge", "Connected sources.", read_sources},
    {"rimecast_mounts", "gauge", "Live mountpoints.", read_mounts},
    {"rimecast_workers", "gauge", "Worker threads accepting connections.", read_workers},
    {"rimecast_workers_draining", "gauge",
     "Worker threads past <workers> (after a reload) still serving their connections.",
     read_draining},
    {"rimecast_hls_sessions", "gauge",
     "HLS sessions, pending (no audio fetched yet) or listening, on all mounts (each holds a "
     "place among <clients>).",
     read_hls_sessions},
    {"rimecast_connections_total", "counter", "Accepted connections.", read_connections},
    {"rimecast_connections_refused_total", "counter",
     "Connections closed on arrival (out of descriptors, or over <clients>).", read_refused},
    {"rimecast_client_connections_total", "counter", "Client connections.", read_client_conns},
    {"rimecast_listener_connections_total", "counter", "Listener connections.",
     read_listener_conns},
    {"rimecast_source_connections_total", "counter", "Source connections.", read_source_conns},
    {"rimecast_file_connections_total", "counter", "File requests.", read_file_conns},
    {"rimecast_stats_connections_total", "counter", "Stats connections.", read_stats_conns},
    {"rimecast_worker_reads_ahead_total", "counter",
     "Request reads of a loop turn entered at once through the worker's io_uring.",
     read_reads_ahead},
    {"rimecast_worker_read_ahead_enters_total", "counter",
     "System calls that entered those reads (each took a turn's reads, two or more).",
     read_read_ahead_enters},
    {"rimecast_verifier_queued", "gauge",
     "Password checks and user file changes waiting for a verifier thread.", read_verify_queued},
    {"rimecast_verifier_running", "gauge", "Password checks and user file changes running.",
     read_verify_running},
    {"rimecast_verifier_jobs_total", "counter",
     "Password checks and user file changes done on the verifier threads.", read_verify_ran},
    {"rimecast_verifier_expired_total", "counter",
     "Password checks and user file changes dropped after waiting too long (answered busy).",
     read_verify_expired},
    {"rimecast_verifier_refused_total", "counter",
     "Password checks and user file changes refused: the verifier's queue was full (busy).",
     read_verify_refused},
    {"rimecast_ads_requests_total", "counter",
     "Requests to ad servers for listeners' ad breaks, wrappers' included.", read_ads_requests},
    {"rimecast_ads_fills_total", "counter", "Ads placed in listeners' ad breaks.",
     read_ads_fills},
    {"rimecast_ads_no_fills_total", "counter",
     "Listeners' ad breaks without an ad (none offered, none fit, or a failure).",
     read_ads_no_fills},
    {"rimecast_ads_impressions_total", "counter",
     "Ad impressions counted: two seconds of an ad delivered to a listener.",
     read_ads_impressions},
    {"rimecast_ads_completes_total", "counter", "Ads delivered to a listener to their end.",
     read_ads_completes},
    {"rimecast_ads_errors_total", "counter",
     "Failures of ad servers, wrappers and creatives (VAST errors reported included).",
     read_ads_errors},
    {"rimecast_ads_creatives_total", "counter", "Creatives fetched, checked and kept.",
     read_ads_creatives},
    {"rimecast_ads_beacons_sent_total", "counter", "Tracking and error URLs fired.",
     read_ads_beacons_sent},
    {"rimecast_ads_beacons_failed_total", "counter",
     "Tracking and error URLs given up after their retries.", read_ads_beacons_failed},
    {"rimecast_ads_beacons_dropped_total", "counter",
     "Tracking and error URLs dropped unsent: their queue was full.", read_ads_beacons_dropped},
};

/* ---- per mount ---- */

typedef struct mount_metric {
    const char *name, *type, *help;
    long long (*read)(mount_t *m);
} mount_metric_t;

static long long m_listeners(mount_t *m) { return atomic_load(&m->listeners); }
static long long m_hls_listeners(mount_t *m) { return hls_listeners(m->name); }
static long long m_peak(mount_t *m) { return atomic_load(&m->listener_peak); }
static long long m_slow(mount_t *m) { return (long long)atomic_load(&m->slow_listeners); }
static long long m_received(mount_t *m) { return (long long)atomic_load(&m->bytes_read); }
static long long m_sent(mount_t *m) { return (long long)atomic_load(&m->bytes_sent); }
static long long m_hls_sent(mount_t *m) { return (long long)atomic_load(&m->hls_bytes_sent); }
static long long m_start(mount_t *m) { return (long long)m->start; }
static long long m_ad_asked(mount_t *m) { return (long long)atomic_load(&m->ad_asked); }
static long long m_ad_fills(mount_t *m) { return (long long)atomic_load(&m->ad_fills); }
static long long m_ad_impr(mount_t *m) { return (long long)atomic_load(&m->ad_impressions); }
static long long m_ad_done(mount_t *m) { return (long long)atomic_load(&m->ad_completes); }

static const mount_metric_t mount_metrics[] = {
    {"rimecast_listeners", "gauge",
     "Listeners connected to the mount, streaming or HLS (as the status pages count them).",
     m_listeners},
    {"rimecast_hls_listeners", "gauge",
     "Of rimecast_listeners, the HLS sessions that fetched audio.", m_hls_listeners},
    {"rimecast_listener_peak", "gauge", "Most listeners at once since the source connected.",
     m_peak},
    {"rimecast_slow_listeners_total", "counter", "Listeners dropped for lagging.", m_slow},
    {"rimecast_source_received_bytes_total", "counter", "Bytes received from the source.",
     m_received},
    {"rimecast_sent_bytes_total", "counter",
     "Bytes sent to listeners, streaming and HLS (playlists and pieces).", m_sent},
    {"rimecast_hls_sent_bytes_total", "counter",
     "Of rimecast_sent_bytes_total, the bytes of HLS playlists and pieces.", m_hls_sent},
    {"rimecast_source_start_time_seconds", "gauge", "When the source connected (Unix time).",
     m_start},
    {"rimecast_mount_ad_breaks_total", "counter",
     "Listeners' ad breaks on the mount whose ads were asked for.", m_ad_asked},
    {"rimecast_mount_ad_fills_total", "counter", "Ads placed in the mount's listeners' breaks.",
     m_ad_fills},
    {"rimecast_mount_ad_impressions_total", "counter",
     "Ad impressions on the mount: two seconds of an ad delivered.", m_ad_impr},
    {"rimecast_mount_ad_completes_total", "counter",
     "Ads delivered to the mount's listeners to their end.", m_ad_done},
};

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The mount names the config expects a source on: each <mount> with a plain name (not a
 * pattern, not a default block) and each <relay> started without waiting for a listener,
 * that a source could take. Sorted; a name may repeat. The strings are the config's. */
static int expected_mounts(const config_t *cfg, const char ***out)
{
    int n = 0, cap = 0;
    for (const mount_conf_t *mc = cfg->mounts; mc; mc = mc->next)
        cap++;
    for (const relay_conf_t *rc = cfg->relays; rc; rc = rc->next)
        cap++;
    const char **v = calloc((size_t)cap + 1, sizeof(*v));
    if (!v)
        return -1;
    for (const mount_conf_t *mc = cfg->mounts; mc; mc = mc->next)
        if (!mc->is_default && mc->mount_name && !strpbrk(mc->mount_name, "*?["))
            v[n++] = mc->mount_name;
    for (const relay_conf_t *rc = cfg->relays; rc; rc = rc->next)
        if (!rc->on_demand && rc->local_mount)
            v[n++] = rc->local_mount;
    int kept = 0;
    for (int i = 0; i < n; i++)
        if (!mount_name_refused(v[i], 0))
            v[kept++] = v[i];
    qsort(v, (size_t)kept, sizeof(*v), by_name);
    *out = v;
    return kept;
}

static int is_live(mount_t **live, int nlive, const char *name)
{
    int lo = 0, hi = nlive;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(live[mid]->name, name);
        if (c == 0)
            return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

/* rimecast_source_up: 1 for each live mount, 0 for each mount the config expects a source on
 * that has none now (live: sorted by name, as stats_mounts gives them). */
static int sources_up(buf_t *o, mount_t **live, int nlive)
{
    const char **expected = NULL;
    int n = expected_mounts(server_config(), &expected);
    if (n < 0)
        return -1;
    family(o, "rimecast_source_up", "gauge",
           "1 while a source (or relay) feeds the mount; 0 for a mount named in a <mount> or "
           "<relay> of the config that has none.");
    for (int k = 0; k < nlive; k++) {
        buf_append_str(o, "rimecast_source_up{mount=\"");
        label_value(o, live[k]->name);
        buf_append_str(o, "\"} 1\n");
    }
    for (int i = 0; i < n; i++) {
        if ((i > 0 && strcmp(expected[i], expected[i - 1]) == 0) ||
            is_live(live, nlive, expected[i]))
            continue;
        buf_append_str(o, "rimecast_source_up{mount=\"");
        label_value(o, expected[i]);
        buf_append_str(o, "\"} 0\n");
    }
    free(expected);
    return 0;
}

static void server_families(buf_t *o)
{
    family(o, "rimecast_info", "gauge", "Server identity: its <server-id> and version.");
    buf_append_str(o, "rimecast_info{server_id=\"");
    label_value(o, server_ident());
    buf_append_str(o, "\",version=\"" PACKAGE_VERSION "\"} 1\n");
    for (size_t i = 0; i < sizeof(server_metrics) / sizeof(server_metrics[0]); i++) {
        const server_metric_t *sm = &server_metrics[i];
        family(o, sm->name, sm->type, sm->help);
        buf_appendf(o, "%s %lld\n", sm->name, sm->read());
    }
    static const unsigned over_ms[] = SERVER_SLOW_TURN_MS;
    family(o, "rimecast_worker_slow_turns_total", "counter",
           "Turns of a worker's event loop that took longer than over_seconds (its "
           "connections waited meanwhile).");
    for (size_t i = 0; i < sizeof(over_ms) / sizeof(over_ms[0]); i++)
        buf_appendf(o, "rimecast_worker_slow_turns_total{over_seconds=\"%g\"} %llu\n",
                    over_ms[i] / 1000.0,
                    (unsigned long long)atomic_load(&server.stats.slow_turns[i]));
    family(o, "rimecast_worker_turn_max_seconds", "gauge",
           "The longest turn of a worker's event loop since start.");
    buf_appendf(o, "rimecast_worker_turn_max_seconds %.6f\n",
                atomic_load(&server.stats.turn_max_us) / 1e6);
}

char *metrics_render(size_t *len)
{
    buf_t o = BUF_INIT;
    server_families(&o);
    audience_metrics(&o, label_value);
    audience_store_metrics(&o);
    mount_t **v = NULL;
    int n = stats_mounts(&v, 1);
    for (size_t i = 0; n >= 0 && i < sizeof(mount_metrics) / sizeof(mount_metrics[0]); i++) {
        const mount_metric_t *mm = &mount_metrics[i];
        family(&o, mm->name, mm->type, mm->help);
        for (int k = 0; k < n; k++) {
            buf_appendf(&o, "%s{mount=\"", mm->name);
            label_value(&o, v[k]->name);
            buf_appendf(&o, "\"} %lld\n", mm->read(v[k]));
        }
    }
    int failed = n < 0 || sources_up(&o, v, n) < 0;
    if (n > 0)
        stats_mounts_free(v, n);
    if (failed) {
        buf_free(&o);
        return NULL;
    }
    return buf_take(&o, len);
}
