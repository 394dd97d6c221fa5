# SPDX-License-Identifier: GPL-2.0-or-later
"""Ad breaks for HLS sessions (docs/ADS.md, "HLS sessions"). The ad server is the fake of
adserver.py on 127.0.0.1 (the mounts say <allow-private>1); segments of 2 s (four parts of
0.5 s) keep the breaks short.

Covers: a break asked for with /admin/adbreak makes a session's playlist list the ad's
segments and parts (URIs that name the creative, the same for every session, public and
cacheable) after EXT-X-DISCONTINUITY with an EXT-X-DATERANGE of class com.rimecast.ad, then
the live segments again after another discontinuity, each reload consistent with the one
before (media and discontinuity sequences of its own, checked by hlscheck.Checker), and
the common playlist unchanged; ffmpeg decodes the session's HLS across the break (MP3 and
AAC); blocking reloads in the session's numbering; a title ADBREAK_LENGTH_<ms> starts the
break too; tracking per session by the ad's pieces it fetched whole (impression, start,
quartiles, complete for the one that fetched it all, start only for one that fetched a
part); an ad server that times out leaves the session on the live stream; a preroll lists
the ads first (and one not decided in time leaves the first playlist on the live stream); a
session with an intro and a preroll lists the intro (its house ad, a date range of class
com.rimecast.house), then the preroll's ads, then the live stream, ffmpeg and hls.js play it
through, and its session record says preroll once all of it was fetched; a session whose
intro is still listed stays on the live stream through a break, and a later break follows
it; a session that asks
again only after its break is over, and one carried by an upgrade, keep their numbers; on a
protected mount the ad's pieces answer without a login and never carry the mount's audio;
unknown ad URLs are 404; hls.js in Chromium plays through a break (currentTime advances, no
error), on an MP3 and an Opus mount.
"""

import http.client
import os
import shutil
import subprocess
import threading
import time
import xml.etree.ElementTree as ET

import pytest

import adminlib
import formatlib as fl
import hlscheck
import webuilib
import wirelib
from test_ads import TEMPLATE, ads, ads_xml, adbreak, offer  # noqa: F401 (ads: fixture)
from test_ads_tracking import metrics
from test_fallback import mount_xml, webdir, webroot_with  # noqa: F401 (webdir: fixture)
from test_hls import _session_records
from test_webui import ADMIN, WEB, browsers  # noqa: F401 (browsers: the fixture)

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

HLS_XML = "<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms></hls>"


def station(server, ads, codec="mp3", extra="", mount_extra="", hls=HLS_XML, **cfg):
    mount = "/live." + codec
    xml = mount_xml(mount).replace("</mount>", ads_xml(ads, TEMPLATE, 1, extra) + hls +
                                   mount_extra + "</mount>")
    srv = server(extra_xml=xml, **cfg)
    src = fl.ffmpeg_source(srv, mount, codec, freq=440)
    fl.wait_mount(srv, mount, src)
    return srv, src, mount


class Session:
    """One HLS session as a player drives it, on a keep-alive connection of its own."""

    def __init__(self, srv, mount, agent="wiretest-hls/1.0", headers=None):
        self.srv, self.mount = srv, mount
        self.headers = dict(headers or {}, **{"User-Agent": agent})
        self.token = hlscheck.issue_token(srv.host, srv.port, mount, self.headers)
        self.conn = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
        self.checker = hlscheck.Checker()
        self.lock = threading.Lock()

    def get(self, path):
        with self.lock:
            for again in (True, False):
                try:
                    self.conn.request("GET", path, headers=self.headers)
                    r = self.conn.getresponse()
                    return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
                except (ConnectionError, http.client.HTTPException):
                    if not again:
                        raise
                    self.conn.close()       # a keep-alive connection the server closed
                    self.conn = http.client.HTTPConnection(self.srv.host, self.srv.port,
                                                           timeout=30)

    def playlist_text(self, query=""):
        status, _, body = self.get("%s/hls.m3u8?session=%s%s" % (self.mount, self.token, query))
        assert status == 200, (status, body[:300])
        return body.decode()

    def reload(self, query=""):
        return self.checker.check(self.playlist_text(query))

    def piece(self, uri):
        status, headers, body = self.get(self.mount + "/" + uri)
        assert status == 200, (uri, status, body[:200])
        return headers, body

    def close(self):
        self.conn.close()


def first_segment(srv, mount, ads):
    """Waits for the window's first segment with probe sessions. On a mount with a preroll
    the probe whose first playlist lists a segment asks for its ads: the ad requests so far,
    that one in."""
    wirelib.wait_until(lambda: hlscheck.parse(Session(srv, mount, "probe").playlist_text())
                       ["segments"], 20, "a first segment")
    return len(wirelib.wait_until(lambda: ads.of("/vast"), 10, "the probe's ad request"))


def ad_segments(pl):
    return [s for s in pl["segments"] if "/ad/" in s["uri"]]


def wait_ads_listed(sess, timeout=20):
    return sess.checker.reload_until(sess.playlist_text, lambda pl: pl if ad_segments(pl) else None,
                                     timeout, "the ad's segments in the session's playlist")


def wait_rejoined(sess, timeout=30):
    def back(pl):
        segs = pl["segments"]
        ads_at = [i for i, s in enumerate(segs) if "/ad/" in s["uri"]]
        return pl if ads_at and ads_at[-1] + 1 < len(segs) else None
    return sess.checker.reload_until(sess.playlist_text, back, timeout,
                                     "the live stream after the ads")


# ---------------------------------------------------------------- the playlist

@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_a_break_lists_the_ads_between_discontinuities_and_the_hls_decodes(
        server, ads, tmp_path, codec):
    offer(ads, tmp_path, seconds=4, codec=codec)
    srv, src, mount = station(server, ads, codec)
    sess = Session(srv, mount)
    first = sess.reload()
    sess.piece(first["segments"][-1]["uri"])                 # a listener now
    assert adbreak(srv, 10, mount=mount).status == 200
    pl = wait_ads_listed(sess)
    seg = ad_segments(pl)[0]
    assert seg["discontinuity"], "no EXT-X-DISCONTINUITY before the ad"
    text = sess.playlist_text()
    assert 'CLASS="com.rimecast.ad"' in text and "#EXT-X-DATERANGE:ID=" in text, text
    assert seg["uri"].startswith("hls/ad/") and seg["uri"].endswith(".%s" % codec)
    pl = wait_rejoined(sess)
    segs = pl["segments"]
    last_ad = max(i for i, s in enumerate(segs) if "/ad/" in s["uri"])
    assert segs[last_ad + 1]["discontinuity"], "no EXT-X-DISCONTINUITY after the ad"
    assert not segs[last_ad + 1]["uri"].startswith("hls/ad/")
    # every ad piece the playlist lists: public, cacheable, the same URI for every session
    for s in ad_segments(pl):
        headers, body = sess.piece(s["uri"])
        assert "public" in headers["cache-control"] and "immutable" in headers["cache-control"]
        assert body.startswith(b"ID3") and len(body) > 200
    other = Session(srv, mount, agent="wiretest-other/1.0")
    assert other.reload()["segments"][-1]["uri"] == pl["segments"][-1]["uri"]  # the window's
    assert not ad_segments(other.checker.last)
    sess.close()
    other.close()
    fl.stop_process(src)


def ffmpeg_plays(srv, url, seconds):
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-user_agent", "ffmpeg-hls",
           "-i", srv.url(url), "-t", str(seconds), "-f", "null", "-"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_ffmpeg_decodes_a_sessions_hls_through_a_break(server, ads, tmp_path, codec):
    offer(ads, tmp_path, seconds=4, codec=codec)
    srv, src, mount = station(server, ads, codec)
    token = hlscheck.issue_token(srv.host, srv.port, mount)
    p = ffmpeg_plays(srv, "%s/hls.m3u8?session=%s" % (mount, token), 22)
    # ffmpeg's session is a listener: it fetched audio
    wirelib.wait_until(lambda: fl.json_source(srv, mount).get("listeners", 0) >= 1, 20,
                       "ffmpeg's session to listen")
    assert adbreak(srv, 8, mount=mount).status == 200
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    complaints = fl._decode_complaints(err).splitlines()
    # ffmpeg's raw MP3 reader reads across segment boundaries (docs/HLS.md, "Not done yet")
    complaints = [l for l in complaints if "non monotonically increasing dts" not in l]
    assert complaints == [], complaints
    ev = ads.events("a1")                   # it fetched the ad's segments, all of them
    assert ev.get("start") == 1 and ev.get("complete") == 1, ev
    fl.stop_process(src)


def test_blocking_reloads_are_in_the_sessions_numbers(server, ads, tmp_path):
    """_HLS_msn names the session's next segment, an ad's or a live one after the ads, in
    its own numbers: each reload is answered once that segment is complete, within a
    segment's time, through the whole break."""
    offer(ads, tmp_path, seconds=4)
    srv, src, mount = station(server, ads)
    sess = Session(srv, mount)
    sess.piece(sess.reload()["segments"][-1]["uri"])
    assert adbreak(srv, 10, mount=mount).status == 200
    pl = wait_ads_listed(sess)
    seen = set()
    while len(seen) < 2 or pl["segments"][-1]["uri"].startswith("hls/ad/"):
        last = pl["segments"][-1]["seq"]
        t0 = time.monotonic()
        pl = sess.checker.check(sess.playlist_text("&_HLS_msn=%d" % (last + 1)))
        assert pl["segments"][-1]["seq"] >= last + 1, (last, pl["segments"][-1])
        assert time.monotonic() - t0 < 4, "a blocking reload waited longer than a segment"
        seen.add("ad" if pl["segments"][-1]["uri"].startswith("hls/ad/") else "live")
        assert len(sess.checker.known) < 200
    assert seen == {"ad", "live"}
    sess.close()
    fl.stop_process(src)


def test_a_preroll_lists_the_ads_first_then_the_live_stream(server, ads, tmp_path):
    """With <preroll>, a session's first playlist waits for its ads (its decision) and lists
    them first, EXT-X-START at their start, then the live stream from the newest segment,
    numbered as everyone's once the ads have left it."""
    offer(ads, tmp_path, seconds=3)
    srv, src, mount = station(server, ads, extra="<preroll>1</preroll>"
                              "<preroll-duration>10</preroll-duration>")
    asked = first_segment(srv, mount, ads)
    sess = Session(srv, mount)
    text = sess.playlist_text()
    pl = sess.checker.check(text)
    segs = pl["segments"]
    assert segs[0]["uri"].startswith("hls/ad/") and "#EXT-X-START:TIME-OFFSET=0" in text, text
    n = len(ad_segments(pl))
    assert not segs[n]["uri"].startswith("hls/ad/") and segs[n]["discontinuity"], text
    assert [h.params["d"] for h in ads.of("/vast")[asked:]] == ["10"]
    for s_ in ad_segments(pl):
        sess.piece(s_["uri"])
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    common = Session(srv, mount, agent="wiretest-other/1.0")
    pl = sess.checker.reload_until(
        sess.playlist_text,
        lambda p: p if not ad_segments(p) and not p["segments"][0]["discontinuity"] else None,
        40, "the ads to leave the playlist")
    c = common.reload()
    assert pl["segments"][-1]["seq"] == c["segments"][-1]["seq"]      # the window's numbers
    assert pl["segments"][-1]["uri"] == c["segments"][-1]["uri"]
    sess.close()
    common.close()
    fl.stop_process(src)


def test_a_preroll_the_ad_server_does_not_decide_in_time_leaves_the_live_stream(server, ads,
                                                                                 tmp_path):
    offer(ads, tmp_path, seconds=3)
    ads.delay = 3
    srv, src, mount = station(server, ads, extra="<preroll>1</preroll>"
                              "<request-timeout-ms>600</request-timeout-ms>")
    asked = first_segment(srv, mount, ads)
    sess = Session(srv, mount)
    t0 = time.monotonic()
    pl = sess.reload()                       # waits for the decision's deadline at most
    assert time.monotonic() - t0 < 3
    assert not ad_segments(pl) and len(ads.of("/vast")) == asked + 1
    end = pl["segments"][-1]["seq"] + 2      # and stays on the live stream after it
    pl = sess.checker.reload_until(sess.playlist_text,
                                   lambda p: p if p["segments"][-1]["seq"] >= end else None,
                                   20, "two more segments")
    assert not ad_segments(pl) and not ads.of("/media/")
    sess.close()
    fl.stop_process(src)


def test_a_title_signal_starts_a_break_for_hls_sessions(server, ads, tmp_path):
    offer(ads, tmp_path, seconds=3)
    srv, src, mount = station(server, ads)
    sess = Session(srv, mount)
    sess.piece(sess.reload()["segments"][-1]["uri"])
    assert fl.set_metadata(srv, mount, song="ADBREAK_LENGTH_6000").status == 200
    wait_ads_listed(sess)
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "6" and vast.params["ua"] == "wiretest-hls/1.0"
    assert vast.params["m"] == mount
    sess.close()
    fl.stop_process(src)


def test_a_session_that_polls_again_after_its_break_gets_the_live_stream_numbered_on(
        server, ads, tmp_path):
    """Its ads came, but it asked for its playlist again only once the window had moved past
    where the ads ended: its playlist is the live stream in its own numbers, each reload
    following from the one before."""
    offer(ads, tmp_path, seconds=4)
    # three segments listed: the window's first is past the rejoin segment when it asks again
    srv, src, mount = station(server, ads,
                              hls=HLS_XML.replace("</hls>", "<segments>3</segments></hls>"))
    sess = Session(srv, mount)
    pl = sess.reload()
    sess.piece(pl["segments"][-1]["uri"])
    assert adbreak(srv, 10, mount=mount).status == 200
    sess.reload()                                        # it asks for its ads
    wirelib.wait_until(lambda: ads.of("/media/"), 10, "the creative fetched")
    watcher = Session(srv, mount, agent="wiretest-watcher/1.0")
    end = watcher.reload()["segments"][-1]["seq"] + 5    # the window moves on, 10 s
    watcher.checker.reload_until(watcher.playlist_text,
                                 lambda p: p if p["segments"][-1]["seq"] >= end else None, 30,
                                 "five more segments")
    after = sess.reload()
    common = watcher.reload()
    assert after["segments"][-1]["uri"] == common["segments"][-1]["uri"]
    assert after["segments"][-1]["seq"] > common["segments"][-1]["seq"]   # numbered on
    sess.checker.reload_until(sess.playlist_text,
                              lambda p: p if not ad_segments(p) else None, 20,
                              "a playlist without the ad")
    sess.close()
    watcher.close()
    fl.stop_process(src)


def test_an_upgrade_keeps_the_numbers_a_break_left_a_session(server, ads, tmp_path):
    from test_upgrade import upgrade
    offer(ads, tmp_path, seconds=3)
    srv, src, mount = station(server, ads)
    sess = Session(srv, mount)
    sess.piece(sess.reload()["segments"][-1]["uri"])
    assert adbreak(srv, 6, mount=mount).status == 200
    wait_rejoined(sess)
    pl = sess.checker.reload_until(sess.playlist_text,
                                   lambda pl: pl if not ad_segments(pl) and
                                   not pl["segments"][0]["discontinuity"] else None, 40,
                                   "the ad to leave the session's playlist")
    common = Session(srv, mount, agent="wiretest-other/1.0").reload()
    assert pl["msn"] > common["msn"]                  # numbers of its own, ahead
    pl = sess.reload()
    upgrade(srv)
    # each reload follows from the last (the Checker), the numbers run on from its own
    last = pl["segments"][-1]["seq"]
    after = sess.checker.reload_until(
        sess.playlist_text, lambda p: p if p["segments"][-1]["seq"] >= last + 2 else None, 20,
        "two more segments after the upgrade")
    assert after["msn"] >= pl["msn"] and not ad_segments(after)
    sess.close()
    fl.stop_process(src)


def test_an_intro_plays_through_a_break_and_a_later_break_follows_it(server, ads, tmp_path,
                                                                     webdir):  # noqa: F811
    """Without <preroll>, a session's intro alone is its preroll: one whose intro is still
    listed stays on the live stream through a break; once the intro left its playlist, a
    break lists the ads after it, numbered on from its view."""
    webroot_with(webdir, "intro.mp3", codec="mp3", seconds=3, freq=1000)
    offer(ads, tmp_path, seconds=3)
    mount = "/live.mp3"
    hls = HLS_XML.replace("</hls>", "<segments>3</segments></hls>")
    xml = mount_xml(mount, intro="/intro.mp3").replace(
        "</mount>", ads_xml(ads, TEMPLATE, 1) + hls + "</mount>")
    srv = server(extra_xml=xml, webroot=webdir)
    src = fl.ffmpeg_source(srv, mount, "mp3", freq=440)
    fl.wait_mount(srv, mount, src)
    sess = Session(srv, mount)
    pl = sess.reload()
    intro = [s for s in pl["segments"] if s["uri"].startswith("hls/intro/")]
    assert intro, pl["segments"]
    sess.piece(intro[0]["uri"])
    assert adbreak(srv, 4, mount=mount).status == 200
    end = pl["segments"][-1]["seq"] + 3
    pl = sess.checker.reload_until(
        sess.playlist_text, lambda p: p if p["segments"][-1]["seq"] >= end else None, 20,
        "three more segments")
    assert not ad_segments(pl) and not ads.of("/vast")     # not asked: its intro plays first
    pl = sess.checker.reload_until(
        sess.playlist_text,
        lambda p: p if not any(s["uri"].startswith("hls/intro/") for s in p["segments"])
        else None, 30, "the intro to leave the playlist")
    assert adbreak(srv, 6, mount=mount).status == 200
    wait_ads_listed(sess)
    wait_rejoined(sess)                                     # each reload checked
    sess.close()
    fl.stop_process(src)


def intro_station(server, ads, webdir, codec="mp3", **cfg):
    """A mount with an <intro> of 3 s and a preroll of the ad server's."""
    webroot_with(webdir, "intro." + codec, codec=codec, seconds=3, freq=1000)
    mount = "/live." + codec
    hls = HLS_XML.replace("</hls>", "<segments>3</segments></hls>")
    xml = mount_xml(mount, intro="/intro." + codec).replace(
        "</mount>", ads_xml(ads, TEMPLATE, 1, "<preroll>1</preroll>"
                            "<preroll-duration>10</preroll-duration>") + hls + "</mount>")
    srv = server(extra_xml=xml, webroot=webdir, **cfg)
    src = fl.ffmpeg_source(srv, mount, codec, freq=440)
    fl.wait_mount(srv, mount, src)
    return srv, src, mount


def kill_sessions(srv, mount, agents):
    """Kicks the sessions of those agents and returns their records' preroll flags."""
    r = adminlib.admin(srv, "/admin/listclients?mount=" + mount)
    ids = {l.findtext("UserAgent"): l.findtext("ID")
           for l in ET.fromstring(r.body).findall("source/listener")}
    for agent in agents:
        assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s"
                              % (mount, ids[agent])).status == 200

    def recs():
        got = {r["user_agent"]: r["preroll"] for r in _session_records(srv)
               if r["user_agent"] in agents}
        return got if len(got) == len(agents) else None
    return wirelib.wait_until(recs, 10, "the sessions' records")


def test_a_sessions_intro_then_its_preroll_ads_then_the_live_stream(server, ads, tmp_path,
                                                                     webdir):  # noqa: F811
    """With an <intro> and <preroll>, a session's first playlist lists its intro first
    (EXT-X-START at its start, a date range of class com.rimecast.house, no tracking), then
    after a discontinuity the preroll's ads (tracked as ever), then after another the live
    stream, each reload consistent; its record says preroll once it fetched all of it, and
    not for a session that fetched the intro only. Its numbers become the window's once the
    preroll left its playlist."""
    offer(ads, tmp_path, seconds=3)
    srv, src, mount = intro_station(server, ads, webdir)
    asked = first_segment(srv, mount, ads)
    whole = Session(srv, mount, agent="wiretest-whole/1.0")
    part = Session(srv, mount, agent="wiretest-part/1.0")
    text = whole.playlist_text()
    pl = whole.checker.check(text)
    segs = pl["segments"]
    intro = [s for s in segs if s["uri"].startswith("hls/intro/")]
    n, k = len(intro), len(ad_segments(pl))
    assert n and k and segs[:n] == intro, text
    assert all(s["uri"].startswith("hls/ad/") for s in segs[n:n + k]), text
    assert segs[n]["discontinuity"] and segs[n + k]["discontinuity"], text
    assert not segs[n + k]["uri"].startswith(("hls/ad/", "hls/intro/")), text
    assert text.index("#EXT-X-START:TIME-OFFSET=0") < text.index(intro[0]["uri"]), text
    assert 'CLASS="com.rimecast.house"' in text and 'CLASS="com.rimecast.ad"' in text, text
    assert text.index("com.rimecast.house") < text.index("com.rimecast.ad"), text
    assert [h.params["d"] for h in ads.of("/vast")[asked:]] == ["10"]
    for s_ in segs[:n + k]:
        whole.piece(s_["uri"])
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    pp = part.reload()
    for s_ in [s for s in pp["segments"] if s["uri"].startswith("hls/intro/")]:
        part.piece(s_["uri"])
    part.piece(pp["segments"][-1]["uri"])            # a live segment: a listener
    assert kill_sessions(srv, mount, ["wiretest-part/1.0"]) == {"wiretest-part/1.0": 0}
    common = Session(srv, mount, agent="wiretest-other/1.0")
    pl = whole.checker.reload_until(
        whole.playlist_text,
        lambda p: p if not any(s["uri"].startswith(("hls/ad/", "hls/intro/"))
                               for s in p["segments"]) and
        not p["segments"][0]["discontinuity"] else None, 40, "the preroll to leave")
    c = common.reload()
    assert pl["segments"][-1]["seq"] == c["segments"][-1]["seq"]    # the window's numbers
    assert pl["segments"][-1]["uri"] == c["segments"][-1]["uri"]
    m = metrics(srv)         # the house ad is no ad of the figures: one ad a session asked
    assert m["rimecast_mount_ad_fills_total@" + mount] == len(ads.of("/vast")) >= 3, m
    assert m["rimecast_mount_ad_impressions_total@" + mount] == 1, m
    assert all(h.path.startswith("/t/a1/") for h in ads.of("/t/"))  # nothing of the intro
    flags = kill_sessions(srv, mount, ["wiretest-whole/1.0"])
    assert flags["wiretest-whole/1.0"] == 1, flags
    for sess in (whole, part, common):
        sess.close()
    fl.stop_process(src)


def test_ffmpeg_decodes_an_intro_then_preroll_ads_then_the_live_stream(server, ads, tmp_path,
                                                                        webdir):  # noqa: F811
    offer(ads, tmp_path, seconds=3)
    srv, src, mount = intro_station(server, ads, webdir)
    first_segment(srv, mount, ads)
    token = hlscheck.issue_token(srv.host, srv.port, mount)
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-user_agent", "ffmpeg-hls",
           "-prefer_x_start", "1", "-i", srv.url("%s/hls.m3u8?session=%s" % (mount, token)),
           "-t", "10", "-f", "null", "-"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    complaints = [l for l in fl._decode_complaints(r.stderr).splitlines()
                  if "non monotonically increasing dts" not in l]
    assert complaints == [], complaints
    srv.wait_log("played its intro", 5)              # the intro, then the ad, whole
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    fl.stop_process(src)


# ---------------------------------------------------------------- tracking

def test_tracking_counts_each_session_by_the_ads_pieces_it_fetched(server, ads, tmp_path):
    offer(ads, tmp_path, seconds=4)
    srv, src, mount = station(server, ads)
    whole = Session(srv, mount, agent="wiretest-whole/1.0")
    part = Session(srv, mount, agent="wiretest-part/1.0")
    for sess in (whole, part):
        sess.piece(sess.reload()["segments"][-1]["uri"])
    assert adbreak(srv, 10, mount=mount).status == 200
    for sess in (whole, part):                           # each asks at its next reload
        wait_ads_listed(sess)
    assert len(ads.of("/vast")) == 2
    first = ad_segments(part.checker.last)[0]
    part.piece(first["parts"][0]["uri"])                 # one part: the ad started
    wirelib.wait_until(lambda: ads.events("a1").get("start") == 1, 10, "start of one")
    assert "impression" not in ads.events("a1")
    pl = wait_rejoined(whole)
    for s in ad_segments(pl):                            # every segment of the ad, whole
        whole.piece(s["uri"])
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    ev = ads.events("a1")
    assert ev == {"start": 2, "impression": 1, "firstQuartile": 1, "midpoint": 1,
                  "thirdQuartile": 1, "complete": 1}, ev
    m = metrics(srv)
    assert m["rimecast_mount_ad_impressions_total@" + mount] == 1, m
    assert m["rimecast_mount_ad_completes_total@" + mount] == 1, m
    assert m["rimecast_mount_ad_fills_total@" + mount] == 2, m
    assert m["rimecast_mount_ad_breaks_total@" + mount] == 2, m
    whole.close()
    part.close()
    fl.stop_process(src)


def test_an_ad_server_that_times_out_leaves_the_session_on_the_live_stream(server, ads,
                                                                          tmp_path):
    offer(ads, tmp_path, seconds=2)
    ads.delay = 3
    srv, src, mount = station(server, ads, extra="<request-timeout-ms>500</request-timeout-ms>")
    sess = Session(srv, mount)
    sess.piece(sess.reload()["segments"][-1]["uri"])
    assert adbreak(srv, 6, mount=mount).status == 200
    sess.reload()                                        # the session asks at its reload
    wirelib.wait_until(lambda: len(ads.of("/vast")) == 1, 10, "the ad request")
    srv.wait_log("did not answer", 10)
    # a few segments later: the common playlist, nothing of an ad, no discontinuity
    start = sess.reload()["segments"][-1]["seq"]
    pl = sess.checker.reload_until(sess.playlist_text,
                                   lambda p: p if p["segments"][-1]["seq"] >= start + 4 else None,
                                   20, "four more segments")
    assert not ad_segments(pl) and not sess.checker.discontinuities
    other = Session(srv, mount, agent="wiretest-other/1.0")
    assert other.reload()["msn"] == sess.reload()["msn"]       # the window's numbers
    assert not ads.of("/media/")
    sess.close()
    other.close()
    fl.stop_process(src)


# ---------------------------------------------------------------- a protected mount

def test_on_a_protected_mount_the_ads_pieces_need_no_login(server, ads, tmp_path):
    import base64
    import os
    import shutil
    from test_auth_htpasswd import md5_line, user_dir, write_users
    data = offer(ads, tmp_path, seconds=3)
    d = user_dir()
    users = os.path.join(d, "users")
    write_users(users, md5_line("u", "p"))
    auth = ('<authentication type="htpasswd"><option name="filename" value="%s"/>'
            '<option name="allow_duplicate_users" value="1"/></authentication>' % users)
    srv, src, mount = station(server, ads, mount_extra=auth)
    cred = {"Authorization": "Basic " + base64.b64encode(b"u:p").decode()}
    sess = Session(srv, mount, headers=cred)
    pl = sess.reload()
    assert "session=" in pl["segments"][-1]["uri"]
    sess.piece(pl["segments"][-1]["uri"])
    assert adbreak(srv, 10, mount=mount).status == 200
    pl = wait_ads_listed(sess)
    uri = ad_segments(pl)[0]["uri"]
    assert "session=" not in uri                        # the same for every session
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    c.request("GET", mount + "/" + uri)                 # no login, no token
    r = c.getresponse()
    body = r.read()
    c.close()
    assert r.status == 200 and "public" in r.getheader("Cache-Control")
    assert body[body.index(b"\xff"):] in data          # the ad's frames, nothing else
    for other in (uri.rsplit("/", 1)[0] + "/99.mp3", "hls/ad/%s/0.mp3" % ("0" * 32)):
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
        c.request("GET", mount + "/" + other)            # no such cut: nothing
        assert c.getresponse().status == 404, other
        c.close()
    live = sess.reload()["segments"][0]["uri"].split("?")[0]
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    c.request("GET", mount + "/" + live)                 # the mount's own: still closed
    assert c.getresponse().status == 403
    c.close()
    sess.close()
    fl.stop_process(src)


# ---------------------------------------------------------------- hls.js in Chromium

@pytest.mark.parametrize("codec", ["mp3", "opus"])
def test_hls_js_in_chromium_plays_through_a_break(server, ads, tmp_path, browsers,  # noqa: F811
                                                  codec):
    missing = webuilib.missing_requirements()
    if missing:
        pytest.skip(missing)
    if codec == "opus":         # fragmented MP4: the ad under its own init segment
        from test_ads_hls_opus import opus_offer
        opus_offer(ads, tmp_path, seconds=4)
    else:
        offer(ads, tmp_path, seconds=4)
    srv, src, mount = station(server, ads, codec, webroot=WEB, adminroot=ADMIN)
    if codec == "opus":
        from test_hls_opus import multivariant
        multivariant(srv, mount)
    audio = "li[data-mount='%s'] .player audio" % mount
    b = browsers(js=True)
    b.get(srv.url("/status.xsl"))
    b.js_run("document.querySelector(arguments[0]).muted = true", audio)
    b.one("li[data-mount='%s'] .player .hls-toggle" % mount).click()
    b.wait(lambda: b.js_run("return !!document.querySelector(arguments[0]).__hls", audio), 15,
           "hls.js to take the player")
    b.js_run("""var a = document.querySelector(arguments[0]), h = a.__hls;
        window.__errors = []; window.__mediaErrors = 0;
        h.on(Hls.Events.ERROR, function (e, d) {
            window.__errors.push([d.type, d.details, d.fatal]); });
        a.addEventListener('error', function () { window.__mediaErrors++; });""", audio)

    def played():
        return b.js_run("return document.querySelector(arguments[0]).currentTime", audio)
    b.wait(lambda: played() > 1, 30, "hls.js to play")
    assert adbreak(srv, 8, mount=mount).status == 200
    # it fetched every part of the ad (its complete fired), and played on past it
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 40,
                       lambda: "the ad played whole in the browser (%r, %r)"
                       % (ads.events("a1"), b.js_run("return window.__errors")))
    t0 = played()
    b.wait(lambda: played() > t0 + 4, 30, "the live stream after the ad")
    state = b.js_run("""var a = document.querySelector(arguments[0]);
        return {errors: window.__errors, media: window.__mediaErrors,
                error: a.error && a.error.code, paused: a.paused};""", audio)
    assert state["media"] == 0 and state["error"] is None and not state["paused"], state
    assert not [e for e in state["errors"] if e[2]], state            # nothing fatal
    # nor any other error; a stall (the playhead waiting for data) is what a browser starved
    # of CPU on a shared machine reports on any live stream, with or without a break
    assert [e for e in state["errors"] if e[1] != "bufferStalledError"] == [], state
    fl.stop_process(src)


@pytest.mark.parametrize("codec", ["mp3", "opus"])
def test_hls_js_in_chromium_plays_an_intro_then_preroll_ads_then_live(  # noqa: F811
        server, ads, tmp_path, webdir, browsers, codec):
    """hls.js from the public page's HLS toggle plays the intro, then the preroll's ad (its
    complete fires: it fetched every part), then on into the live stream, with no error."""
    missing = webuilib.missing_requirements()
    if missing:
        pytest.skip(missing)
    if codec == "opus":
        from test_ads_hls_opus import opus_offer
        opus_offer(ads, tmp_path, seconds=3)
    else:
        offer(ads, tmp_path, seconds=3)
    web = os.path.join(webdir, "web")   # the page and the intro, readable by the server
    shutil.copytree(WEB, web)
    os.chmod(web, 0o755)
    srv, src, mount = intro_station(server, ads, web, codec, adminroot=ADMIN)
    if codec == "opus":
        from test_hls_opus import multivariant
        multivariant(srv, mount)
    from test_hls_web import play_hls
    b, audio = play_hls(srv, browsers, mount)
    b.js_run("""var h = document.querySelector(arguments[0]).__hls;
        window.__errors = [];
        h.on(Hls.Events.ERROR, function (e, d) {
            window.__errors.push([d.type, d.details, d.fatal]); });""", audio)
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 40,
                       lambda: "the ad played whole after the intro (%r, %r)"
                       % (ads.events("a1"), b.js_run("return window.__errors")))

    def played():
        return b.js_run("return document.querySelector(arguments[0]).currentTime", audio)
    b.wait(lambda: played() > 3 + 3 + 2, 40, "the live stream after the intro and the ad")
    state = b.js_run("""var a = document.querySelector(arguments[0]);
        return {errors: window.__errors, error: a.error && a.error.code, paused: a.paused};""",
                     audio)
    assert state["error"] is None and not state["paused"], state
    assert [e for e in state["errors"] if e[1] != "bufferStalledError"] == [], state
    fl.stop_process(src)
