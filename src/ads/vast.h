/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * vast: the reader of an ad server's answer, IAB VAST 2.0 to 4.3 (DAAST's audio ads are VAST 4
 * ads with adType="audio"). Pure: bytes in, a vast_doc_t out; no network, no I/O.
 *
 * The answer is untrusted. It is parsed by libxml2 without network access (XML_PARSE_NONET),
 * as UTF-8 whatever it declares, and refused whole when it is larger than VAST_MAX_BYTES,
 * holds a NUL byte or a document type declaration (no DTD is ever loaded, no entity declared
 * or expanded). What is kept is bounded: VAST_MAX_ADS ads, VAST_MAX_MEDIA media files and
 * VAST_MAX_URLS URLs of each kind per ad; a URL is kept only when it is http or https, at most
 * VAST_URL_MAX bytes of printable ASCII with no blank (blanks around it trimmed); a title is
 * valid UTF-8 without control characters, cut to VAST_TITLE_MAX bytes. Whether a URL's host is
 * one the server may reach is not decided here (ads/ads_url.h, and the fetch at connect time).
 */
#ifndef RIMECAST_ADS_VAST_H
#define RIMECAST_ADS_VAST_H

#include <stddef.h>

#define VAST_MAX_BYTES (256 * 1024)
#define VAST_MAX_ADS 8
#define VAST_MAX_MEDIA 16
#define VAST_MAX_URLS 16
#define VAST_URL_MAX 2048
#define VAST_TITLE_MAX 200

/* The VAST error codes the server reports (to an ad's <Error> URLs, [ERRORCODE]). */
enum {
    VAST_ERR_XML = 100,           /* the answer is not XML the reader takes */
    VAST_ERR_SCHEMA = 101,        /* not a VAST document */
    VAST_ERR_VERSION = 102,       /* a VAST version it does not read */
    VAST_ERR_DURATION = 202,      /* the ad is longer than the break */
    VAST_ERR_WRAPPER = 300,       /* a wrapper's answer could not be had */
    VAST_ERR_WRAPPER_TIMEOUT = 301,
    VAST_ERR_WRAPPER_LIMIT = 302, /* wrappers nested deeper than ADS_WRAPPER_DEPTH */
    VAST_ERR_WRAPPER_EMPTY = 303, /* a wrapper's answer had no ad */
    VAST_ERR_MEDIA_NOT_FOUND = 401,
    VAST_ERR_MEDIA_TIMEOUT = 402,
    VAST_ERR_MEDIA_UNSUPPORTED = 403, /* no media file in the mount's format */
    VAST_ERR_MEDIA_BROKEN = 405,  /* the creative is not whole frames of that format */
    VAST_ERR_UNDEFINED = 900,
};

/* Tracking events the server fires by bytes delivered (docs/ADS.md, "Counting"). */
enum {
    VAST_EV_START,
    VAST_EV_FIRST_QUARTILE,
    VAST_EV_MIDPOINT,
    VAST_EV_THIRD_QUARTILE,
    VAST_EV_COMPLETE,
    VAST_EV_COUNT,
};

typedef struct vast_urls {
    int n;
    char *v[VAST_MAX_URLS];
} vast_urls_t;

typedef struct vast_media {
    char *url;
    char type[64];    /* MIME type as given, lower case ("audio/mpeg"); "" none */
    char codec[32];   /* codec attribute, lower case; "" none */
    unsigned bitrate; /* kbit/s; 0 unknown */
} vast_media_t;

typedef struct vast_ad {
    char id[64];          /* the Ad's id, printable ASCII; "" none */
    char creative_id[64]; /* its linear <Creative>'s id (else adId), printable ASCII; "" none */
    int sequence;         /* its place in a pod (1, 2, ...); 0: a stand-alone ad */
    int wrapper;          /* 1: a <Wrapper> (tag_uri names the next answer), 0: <InLine> */
    char *tag_uri;        /* <VASTAdTagURI> of a wrapper */
    char *title;          /* <AdTitle>; NULL none */
    unsigned duration_ms; /* the linear creative's <Duration>; 0 none given */
    vast_urls_t impression, error;
    vast_urls_t track[VAST_EV_COUNT];
    int nmedia;
    vast_media_t media[VAST_MAX_MEDIA];
} vast_ad_t;

typedef struct vast_doc {
    int nads;
    vast_ad_t ads[VAST_MAX_ADS]; /* in document order */
    vast_urls_t error;           /* the root's <Error>: where "no ad" is reported */
} vast_doc_t;

/* Reads len bytes of an answer into doc (zeroed first; free with vast_free in every case).
 * Returns 0, or a VAST error code: VAST_ERR_XML (too large, not well-formed, a NUL byte, a
 * document type declaration), VAST_ERR_SCHEMA (the root is not <VAST>), VAST_ERR_VERSION.
 * A document with no <Ad> (no fill) is valid: nads 0. An <Ad> with neither <InLine> nor
 * <Wrapper>, or a wrapper without a usable <VASTAdTagURI>, is left out. */
int vast_parse(const char *data, size_t len, vast_doc_t *doc);
void vast_free(vast_doc_t *doc);

/* "HH:MM:SS" or "HH:MM:SS.mmm" as milliseconds; 0 when it is neither. */
unsigned vast_duration_ms(const char *s);
/* Appends a copy of url to list (dropped when the list is full). 0 or -ENOMEM. */
int vast_urls_add(vast_urls_t *list, const char *url);
/* Appends copies of every URL of from to list, as room allows. 0 or -ENOMEM. */
int vast_urls_extend(vast_urls_t *list, const vast_urls_t *from);
void vast_urls_free(vast_urls_t *list);

#endif
