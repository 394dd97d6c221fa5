/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ads_url: the URLs of the ad pipeline, pure text work: the ad server's URL from a mount's
 * <vast-url> template and a listener's values, and the VAST macros an ad's own URLs may carry
 * ([ERRORCODE], [CACHEBUSTING], [TIMESTAMP]). Whether a host may be reached is checked when
 * it is connected to (http/fetch.h public_only), not here.
 */
#ifndef RIMECAST_ADS_URL_H
#define RIMECAST_ADS_URL_H

#include <stdint.h>

#define ADS_URL_MAX 8192 /* an expanded URL longer than this is not asked */

/* What a template's placeholders stand for; NULL is the empty string. */
typedef struct ads_url_vars {
    const char *ip;       /* {ip}: the listener's address (the forwarded one) */
    const char *ua;       /* {ua}: its User-Agent */
    const char *country;  /* {country}: ISO code from GeoIP, "" unknown */
    const char *session;  /* {session}: the listener's id */
    const char *mount;    /* {mount}: the mount's name */
    unsigned duration;    /* {duration}: seconds the break lasts */
    uint32_t cachebuster; /* {cachebuster}: a random number */
} ads_url_vars_t;

/* The template with each placeholder replaced by its value, percent-encoded (RFC 3986
 * unreserved characters kept); other text is kept as written, an unknown {name} too.
 * malloc'd, or NULL when out of memory or longer than ADS_URL_MAX. */
char *ads_url_expand(const char *tmpl, const ads_url_vars_t *v);

/* An ad's URL with the VAST macros replaced: [ERRORCODE] by code (when code > 0, else kept),
 * [CACHEBUSTING] by cachebuster as eight digits, [TIMESTAMP] by now_s as ISO 8601 UTC
 * (percent-encoded). malloc'd, or NULL (out of memory, longer than ADS_URL_MAX). */
char *ads_url_macros(const char *url, int code, uint32_t cachebuster, int64_t now_s);

#endif
