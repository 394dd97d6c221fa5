/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_vast: the VAST reader (inline and wrapper ads, pods, audio media files, impression,
 * error and tracking URLs, no fill), what it refuses (a DOCTYPE or entity, a NUL, too large,
 * not VAST, an unknown version) and what it leaves out (URLs that are not http(s) or hold
 * blanks, streaming media, wrappers without a tag URI, ads past the limit); the ad server's
 * URL template and the VAST macros; the internal addresses no ad URL may reach.
 */
#include "ads/ads_url.h"
#include "ads/vast.h"
#include "core/cidr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static const char inline_doc[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<VAST version=\"4.1\" xmlns=\"http://www.iab.com/VAST\">\n"
    " <Ad id=\"a1\" adType=\"audio\">\n"
    "  <InLine>\n"
    "   <AdSystem>Test</AdSystem>\n"
    "   <AdTitle>Spring &amp; <![CDATA[Sale]]></AdTitle>\n"
    "   <Impression id=\"i\"><![CDATA[ https://t.example/imp?a=1&b=[CACHEBUSTING] ]]></Impression>\n"
    "   <Impression>javascript:alert(1)</Impression>\n"
    "   <Error><![CDATA[https://t.example/err?code=[ERRORCODE]]]></Error>\n"
    "   <Creatives>\n"
    "    <Creative id=\"c1\"><CompanionAds/></Creative>\n"
    "    <Creative id=\"c2\">\n"
    "     <Linear>\n"
    "      <Duration>00:00:15.500</Duration>\n"
    "      <TrackingEvents>\n"
    "       <Tracking event=\"start\">https://t.example/start</Tracking>\n"
    "       <Tracking event=\"firstQuartile\">https://t.example/q1</Tracking>\n"
    "       <Tracking event=\"midpoint\">https://t.example/mid</Tracking>\n"
    "       <Tracking event=\"thirdQuartile\">https://t.example/q3</Tracking>\n"
    "       <Tracking event=\"complete\">https://t.example/done</Tracking>\n"
    "       <Tracking event=\"mute\">https://t.example/mute</Tracking>\n"
    "       <Tracking event=\"complete\">file:///etc/passwd</Tracking>\n"
    "      </TrackingEvents>\n"
    "      <MediaFiles>\n"
    "       <MediaFile delivery=\"streaming\" type=\"audio/mpeg\">https://c.example/live</MediaFile>\n"
    "       <MediaFile delivery=\"progressive\" type=\"Audio/MPEG\" bitrate=\"128\">\n"
    "         https://c.example/ad.mp3\n"
    "       </MediaFile>\n"
    "       <MediaFile delivery=\"progressive\" type=\"audio/aac\" codec=\"mp4a.40.2\">"
    "https://c.example/ad.aac</MediaFile>\n"
    "       <MediaFile type=\"audio/mpeg\">https://c.example/has space.mp3</MediaFile>\n"
    "      </MediaFiles>\n"
    "     </Linear>\n"
    "    </Creative>\n"
    "   </Creatives>\n"
    "  </InLine>\n"
    " </Ad>\n"
    "</VAST>\n";

static void test_inline_ad(void)
{
    vast_doc_t *d = calloc(1, sizeof(*d));
    CHECK(vast_parse(inline_doc, strlen(inline_doc), d) == 0);
    CHECK(d->nads == 1);
    const vast_ad_t *a = &d->ads[0];
    CHECK_STR(a->id, "a1");
    CHECK(!a->wrapper && a->sequence == 0);
    CHECK_STR(a->title, "Spring & Sale");
    CHECK(a->duration_ms == 15500);
    CHECK(a->impression.n == 1); /* javascript: left out */
    CHECK_STR(a->impression.v[0], "https://t.example/imp?a=1&b=[CACHEBUSTING]");
    CHECK(a->error.n == 1);
    CHECK_STR(a->track[VAST_EV_START].v[0], "https://t.example/start");
    CHECK_STR(a->track[VAST_EV_FIRST_QUARTILE].v[0], "https://t.example/q1");
    CHECK_STR(a->track[VAST_EV_MIDPOINT].v[0], "https://t.example/mid");
    CHECK_STR(a->track[VAST_EV_THIRD_QUARTILE].v[0], "https://t.example/q3");
    CHECK(a->track[VAST_EV_COMPLETE].n == 1); /* file: left out */
    CHECK(a->nmedia == 2); /* streaming and the URL with a blank left out */
    CHECK_STR(a->media[0].url, "https://c.example/ad.mp3");
    CHECK_STR(a->media[0].type, "audio/mpeg");
    CHECK(a->media[0].bitrate == 128);
    CHECK_STR(a->media[1].codec, "mp4a.40.2");
    vast_free(d);
    free(d);
}

static void test_wrapper_and_pod(void)
{
    static const char doc[] =
        "<VAST version=\"3.0\">"
        "<Error>https://t.example/nofill</Error>"
        "<Ad id=\"w\" sequence=\"2\"><Wrapper>"
        "<VASTAdTagURI><![CDATA[http://next.example/vast?x=1]]></VASTAdTagURI>"
        "<Impression>https://w.example/imp</Impression>"
        "<Creatives><Creative><Linear><TrackingEvents>"
        "<Tracking event=\"complete\">https://w.example/done</Tracking>"
        "</TrackingEvents></Linear></Creative></Creatives>"
        "</Wrapper></Ad>"
        "<Ad id=\"no-uri\"><Wrapper><VASTAdTagURI>ftp://x/</VASTAdTagURI></Wrapper></Ad>"
        "<Ad id=\"neither\"/>"
        "<Ad id=\"i\" sequence=\"1\"><InLine><AdTitle>One</AdTitle></InLine></Ad>"
        "</VAST>";
    vast_doc_t *d = calloc(1, sizeof(*d));
    CHECK(vast_parse(doc, strlen(doc), d) == 0);
    CHECK(d->nads == 2);
    CHECK(d->error.n == 1);
    CHECK(d->ads[0].wrapper && d->ads[0].sequence == 2);
    CHECK_STR(d->ads[0].tag_uri, "http://next.example/vast?x=1");
    CHECK_STR(d->ads[0].track[VAST_EV_COMPLETE].v[0], "https://w.example/done");
    CHECK(!d->ads[1].wrapper && d->ads[1].sequence == 1);
    CHECK(d->ads[1].nmedia == 0 && d->ads[1].duration_ms == 0);
    vast_free(d);
    free(d);
}

static int parse_rc(const char *doc, size_t len)
{
    vast_doc_t *d = calloc(1, sizeof(*d));
    int rc = vast_parse(doc, len, d);
    vast_free(d);
    free(d);
    return rc;
}

static void test_refused(void)
{
    static const char laughs[] =
        "<?xml version=\"1.0\"?><!DOCTYPE VAST [<!ENTITY a \"aaaaaaaaaa\">"
        "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><VAST version=\"4.0\">&b;</VAST>";
    static const char external[] =
        "<?xml version=\"1.0\"?><!DOCTYPE VAST SYSTEM \"http://evil.example/x.dtd\">"
        "<VAST version=\"4.0\"/>";
    static const char nul[] = "<VAST version=\"4.0\">\0</VAST>";
    CHECK(parse_rc(laughs, strlen(laughs)) == VAST_ERR_XML);
    CHECK(parse_rc(external, strlen(external)) == VAST_ERR_XML);
    CHECK(parse_rc(nul, sizeof(nul) - 1) == VAST_ERR_XML);
    CHECK(parse_rc("<VAST version=\"4.0\">", 20) == VAST_ERR_XML);
    CHECK(parse_rc("", 0) == VAST_ERR_XML);
    CHECK(parse_rc("<VMAP version=\"1.0\"/>", 21) == VAST_ERR_SCHEMA);
    CHECK(parse_rc("<VAST version=\"5.0\"/>", 21) == VAST_ERR_VERSION);
    CHECK(parse_rc("<VAST/>", 7) == VAST_ERR_VERSION);
    CHECK(parse_rc("<VAST version=\"4.2\"/>", 21) == 0); /* no fill */
    size_t big = VAST_MAX_BYTES + 1;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    memcpy(huge, "<VAST version=\"4.0\">", 20);
    memcpy(huge + big - 7, "</VAST>", 7);
    CHECK(parse_rc(huge, big) == VAST_ERR_XML);
    CHECK(parse_rc(huge, big - 1 - 7) != 0); /* cut: not well-formed */
    free(huge);
}

static void test_limits(void)
{
    char *doc = malloc(64 * 1024), *p = doc;
    p += sprintf(p, "<VAST version=\"4.0\">");
    for (int i = 0; i < VAST_MAX_ADS + 4; i++) {
        p += sprintf(p, "<Ad id=\"%d\"><InLine>", i);
        for (int j = 0; j < VAST_MAX_URLS + 4; j++)
            p += sprintf(p, "<Impression>https://t.example/%d/%d</Impression>", i, j);
        p += sprintf(p, "<AdTitle>");
        for (int j = 0; j < VAST_TITLE_MAX; j++)
            p += sprintf(p, "\xc3\xa9"); /* two bytes each */
        p += sprintf(p, "\t</AdTitle></InLine></Ad>");
    }
    p += sprintf(p, "</VAST>");
    vast_doc_t *d = calloc(1, sizeof(*d));
    CHECK(vast_parse(doc, (size_t)(p - doc), d) == 0);
    CHECK(d->nads == VAST_MAX_ADS);
    CHECK(d->ads[0].impression.n == VAST_MAX_URLS);
    CHECK(strlen(d->ads[0].title) == VAST_TITLE_MAX); /* whole characters */
    vast_free(d);
    free(d);
    free(doc);
}

static void test_duration(void)
{
    CHECK(vast_duration_ms("00:00:30") == 30000);
    CHECK(vast_duration_ms("01:02:03.5") == 3723500);
    CHECK(vast_duration_ms("00:00:15.250") == 15250);
    CHECK(vast_duration_ms("0:0:30") == 0);
    CHECK(vast_duration_ms("00:61:00") == 0);
    CHECK(vast_duration_ms("00:00:30s") == 0);
    CHECK(vast_duration_ms("") == 0);
}

static void test_template(void)
{
    ads_url_vars_t v = {.ip = "2001:db8::1", .ua = "Player/1.0 (x; y)&z=1",
                        .country = "DE", .session = "42", .mount = "/live.mp3",
                        .duration = 30, .cachebuster = 7};
    CHECK_OWNED(ads_url_expand("https://ads.example/vast?ip={ip}&ua={ua}&c={country}&s={session}"
                               "&m={mount}&d={duration}&cb={cachebuster}&k={other}{", &v),
                "https://ads.example/vast?ip=2001%3Adb8%3A%3A1&ua=Player%2F1.0%20%28x%3B%20y%29"
                "%26z%3D1&c=DE&s=42&m=%2Flive.mp3&d=30&cb=7&k={other}{");
    ads_url_vars_t none = {0};
    CHECK_OWNED(ads_url_expand("http://a/?c={country}", &none), "http://a/?c=");
    char *long_ua = malloc(ADS_URL_MAX + 2);
    memset(long_ua, 'a', ADS_URL_MAX + 1);
    long_ua[ADS_URL_MAX + 1] = '\0';
    v.ua = long_ua;
    CHECK_NULL(ads_url_expand("http://a/?ua={ua}", &v));
    free(long_ua);
}

static void test_macros(void)
{
    CHECK_OWNED(ads_url_macros("https://t/e?c=[ERRORCODE]&cb=[CACHEBUSTING]&t=[TIMESTAMP]", 403,
                               1234, 0),
                "https://t/e?c=403&cb=00001234&t=1970-01-01T00%3A00%3A00.000Z");
    CHECK_OWNED(ads_url_macros("https://t/e?c=[ERRORCODE]", 0, 1, 0), "https://t/e?c=[ERRORCODE]");
}

static int internal(const char *ip)
{
    unsigned char a[16];
    return cidr_addr_parse(ip, strlen(ip), a) == 0 && cidr_is_internal(a);
}

static void test_internal_addresses(void)
{
    const char *in[] = {"127.0.0.1", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1",
                        "169.254.169.254", "100.64.0.1", "0.0.0.0", "::1", "::", "fe80::1",
                        "fd00::1", "::ffff:127.0.0.1", "224.0.0.1"};
    const char *out[] = {"8.8.8.8", "172.32.0.1", "192.0.2.1", "2001:db8::1", "1.1.1.1",
                         "::ffff:93.184.216.34"};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        CHECK(internal(in[i]));
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
        CHECK(!internal(out[i]));
}

int main(void)
{
    test_inline_ad();
    test_wrapper_and_pod();
    test_refused();
    test_limits();
    test_duration();
    test_template();
    test_macros();
    test_internal_addresses();
    return testlib_done();
}
