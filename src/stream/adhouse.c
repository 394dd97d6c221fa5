/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * adhouse: the station's own audio as a listener's preroll (docs/ADS.md, "House ads"): the
 * preroll its URL authentication named, else the mount's <intro>. Either is a webroot file
 * (stream/webfile.h) made a creative once per version of the file (ads/ads.h: checked frame by
 * frame or page by page, cut into shared blocks) and kept; a listener's preroll break plays it
 * as it plays an ad server's ads (stream/adbreak.c): spliced at a frame boundary, its time
 * skipped in the live stream, an Ogg one as a chain link, carried by an upgrade.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ads/ads_ogg.h"
#include "auth/auth_url.h"
#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "http/client.h"
#include "net/conn.h"
#include "net/server.h"
#include "stream/adbreak_internal.h"
#include "stream/mount.h"
#include "stream/webfile.h"

/* The files made creatives: by the webfile (a new version of a file is a new webfile). A file
 * that is no creative is kept too (c NULL), so that it is checked and said once. */
typedef struct house {
    webfile_t *file;
    ads_creative_t *c;
    struct house *next;
} house_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static house_t *houses;
#define HOUSES_MAX 64 /* a station has an intro or a few prerolls; past this, the oldest go */

static void house_free(house_t *h)
{
    webfile_unref(h->file);
    ads_creative_unref(h->c);
    free(h);
}

/* The creative of webfile f (a new reference), made on first use; NULL when f is none. */
static ads_creative_t *creative_of(webfile_t *f, const char *name)
{
    pthread_mutex_lock(&lock);
    house_t **pp = &houses, *h;
    int n = 0;
    for (; (h = *pp); pp = &h->next, n++)
        if (h->file == f)
            break;
    if (!h) {
        h = calloc(1, sizeof(*h));
        if (!h) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        h->file = webfile_ref(f);
        int rc = f->len ? ads_creative_build(f->data, f->len, NULL, &h->c) : VAST_ERR_MEDIA_BROKEN;
        if (rc != 0) {
            char esc[512];
            log_warn("%s is not whole frames of MP3, AAC (ADTS), Ogg Vorbis or Ogg Opus: not "
                     "played as an intro or preroll",
                     escape_log(esc, sizeof(esc), name, strlen(name)));
        }
        h->next = houses;
        houses = h;
        if (n >= HOUSES_MAX) { /* the list's last entry goes */
            house_t **last = &houses;
            while ((*last)->next)
                last = &(*last)->next;
            house_free(*last);
            *last = NULL;
        }
    } else if (pp != &houses) { /* to the front: the ones in use stay */
        *pp = h->next;
        h->next = houses;
        houses = h;
    }
    ads_creative_t *c = ads_creative_ref(h->c);
    pthread_mutex_unlock(&lock);
    return c;
}

void adhouse_cache_clear(void)
{
    pthread_mutex_lock(&lock);
    while (houses) {
        house_t *h = houses;
        houses = h->next;
        house_free(h);
    }
    pthread_mutex_unlock(&lock);
}

static const char *kind_name(const ads_format_t *f)
{
    return f->ogg == ADS_OGG_VORBIS ? "Ogg Vorbis" : f->ogg == ADS_OGG_OPUS ? "Ogg Opus"
           : f->ogg ? "Ogg" : f->adts ? "AAC" : "MPEG audio";
}

/* May creative c open a stream of format fmt (or of its kind alone: samplerate 0)? The same
 * kind of stream (MPEG audio, AAC in ADTS, Ogg Vorbis, Ogg Opus) is needed; another rate or
 * channel count is played as it is, as Icecast plays an intro, and said once. */
static int fits(const ads_creative_t *c, const ads_format_t *fmt, const char *name,
                const char *mount)
{
    int same_kind = (fmt->ogg ? (c->fmt.ogg & fmt->ogg) != 0 : !c->fmt.ogg) &&
                    c->fmt.adts == fmt->adts;
    if (same_kind && (!fmt->samplerate || ads_format_equal(&c->fmt, fmt)))
        return 1;
    static log_ratelimit_t rl;
    char esc[512], mesc[256];
    if (!same_kind)
        log_warn_limited(&rl, 60000, "%s on %s: %s, the mount %s: not played",
                         escape_log(esc, sizeof(esc), name, strlen(name)),
                         escape_log(mesc, sizeof(mesc), mount, strlen(mount)),
                         kind_name(&c->fmt), kind_name(fmt));
    else
        log_warn_limited(&rl, 60000, "%s on %s: %u Hz, %u channels, the mount %u Hz, %u "
                         "channels: played as it is",
                         escape_log(esc, sizeof(esc), name, strlen(name)),
                         escape_log(mesc, sizeof(mesc), mount, strlen(mount)),
                         c->fmt.samplerate, c->fmt.channels, fmt->samplerate, fmt->channels);
    return same_kind;
}

/* The house ad of webroot file `file` for a listener of mount `mount`: 0 with *ad; -ENOENT
 * (no such file), -EPROTO (not one it can play), -ENOMEM. */
static int house_ad(const char *file, const ads_format_t *fmt, const char *mount, ads_ad_t *ad)
{
    if (!file || !*file)
        return -ENOENT;
    char path[1024];
    snprintf(path, sizeof(path), "%s%s", file[0] == '/' ? "" : "/", file);
    webfile_t *f = webfile_get(path);
    if (!f)
        return -ENOENT;
    ads_creative_t *c = creative_of(f, path);
    webfile_unref(f);
    if (!c)
        return -EPROTO;
    if (!fits(c, fmt, path, mount)) {
        ads_creative_unref(c);
        return -EPROTO;
    }
    if (c->fmt.ogg) { /* under a serial number of its own (ads_ogg.h) */
        ads_creative_t *s = ads_ogg_creative_for(c, fmt->serial);
        ads_creative_unref(c);
        if (!(c = s))
            return -ENOMEM;
    }
    size_t ulen = strlen(ADS_HOUSE_PREFIX) + strlen(path) + 1;
    char *url = malloc(ulen);
    if (!url) {
        ads_creative_unref(c);
        return -ENOMEM;
    }
    snprintf(url, ulen, "%s%s", ADS_HOUSE_PREFIX, path);
    *ad = (ads_ad_t){.creative = c, .media_url = url, .house = 1};
    size_t n = strlen(path) < sizeof(ad->id) ? strlen(path) : sizeof(ad->id) - 1;
    memcpy(ad->id, path, n); /* its name, as the log calls it (cut) */
    ad->id[n] = '\0';
    return 0;
}

ads_pod_t *adhouse_pod(listener_t *l, const ads_format_t *fmt)
{
    client_t *cl = client_of(l->conn);
    const auth_url_session_t *s =
        cl->on_end == auth_url_session_end ? (const auth_url_session_t *)cl->on_end_arg : NULL;
    ads_ad_t ad;
    int rc = s && s->preroll ? house_ad(s->preroll, fmt, l->mount->name, &ad) : -ENOENT;
    if (s && s->preroll && rc < 0) {
        static log_ratelimit_t rl;
        char esc[512], pesc[512];
        log_warn_limited(&rl, 60000, "listener %llu on %s: preroll %s cannot be %s; the "
                         "mount's intro is played instead", (unsigned long long)l->conn->id,
                         escape_log(esc, sizeof(esc), l->mount->name, strlen(l->mount->name)),
                         escape_log(pesc, sizeof(pesc), s->preroll, strlen(s->preroll)),
                         rc == -ENOENT ? "read" : "played");
    }
    if (rc < 0) {
        const mount_conf_t *mc = config_find_mount(server_config(), l->mount->name);
        rc = house_ad(mc ? mc->intro : NULL, fmt, l->mount->name, &ad);
    }
    if (rc < 0)
        return NULL;
    ads_pod_t *pod = calloc(1, sizeof(*pod));
    if (!pod) {
        ads_creative_unref(ad.creative);
        free(ad.media_url);
        return NULL;
    }
    pod->n = 1;
    pod->ad[0] = ad;
    pod->duration_ms = ad.creative->duration_ms;
    return pod;
}

ads_creative_t *adhouse_again(const char *media_url, const ads_format_t *fmt, const char *mount)
{
    ads_ad_t ad;
    if (house_ad(media_url + strlen(ADS_HOUSE_PREFIX), fmt, mount, &ad) < 0)
        return NULL;
    free(ad.media_url);
    return ad.creative;
}
