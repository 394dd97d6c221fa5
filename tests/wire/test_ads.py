# SPDX-License-Identifier: GPL-2.0-or-later
"""Ad breaks: each listener hears the ads a VAST ad server chooses for it (docs/ADS.md). The
ad server and its tracking endpoint are a fake on 127.0.0.1 (adserver.py), so the mounts say
<allow-private>1.

Covers: a break asked for with /admin/adbreak splices the creative into an MP3 or AAC
listener's stream at frame boundaries (the creative's frames are in the capture whole, ffmpeg
decodes it all without an error) and the live stream goes on; the listener rejoins the live
stream as far on as the ad lasted; a listener moved to another mount in the middle of an ad
gets the rest of the creative's block and then that mount, whole frames throughout; one whose
source leaves in the middle of the break hears its ad to the end, then is closed; the ICY title names the ad, then the live title again; a
title ADBREAK_LENGTH_<ms> set by the source starts a break of that length (and another prefix
when <title-prefix> says so), also when the source sends it inline as ICY metadata, where it
sends it; a preroll plays before the stream; wrappers are followed (their
tracking fired too) and a chain deeper than three is refused with VAST error 302; a creative
in another format is not spliced and its error URL gets 403; an ad longer than the break is
left out; an ad server that times out, or one at a loopback address without <allow-private>,
leaves every listener on the live stream with one line in the log; the admin command's
errors, its credentials (the admin's or the source's) and its origin check.
"""

import os

import pytest

import adminlib
import adserver
import formatlib as fl
import wirelib
from conftest import SOURCE_PASSWORD
from test_fallback import mount_xml

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

MOUNT = "/live.mp3"
TEMPLATE = "/vast?ip={ip}&s={session}&d={duration}&ua={ua}&m={mount}"


@pytest.fixture
def ads():
    a = adserver.AdServer()
    yield a
    a.close()


def ads_xml(ads, path=TEMPLATE, private=1, extra=""):
    return ("<ads><vast-url>%s</vast-url>%s%s</ads>"
            % (ads.url(path).replace("&", "&amp;"),
               "<allow-private>1</allow-private>" if private else "", extra))


def station(server, ads, codec="mp3", mount=MOUNT, path=TEMPLATE, private=1, extra="", **cfg):
    """A server whose mount has the fake ad server, and a live ffmpeg source on it."""
    xml = mount_xml(mount).replace("</mount>", ads_xml(ads, path, private, extra) + "</mount>")
    srv = server(extra_xml=xml, **cfg)
    src = fl.ffmpeg_source(srv, mount, codec, freq=440)
    fl.wait_mount(srv, mount, src)
    return srv, src


def offer(ads, tmp_path, ad_id="a1", seconds=4, codec="mp3", **kw):
    """The ad server answers with one inline ad whose creative is a sine of `seconds`."""
    ext = "mp3" if codec == "mp3" else "aac"
    name = "%s.%s" % (ad_id, ext)
    data = adserver.creative(tmp_path, name, seconds, codec=codec, **kw)
    ads.add_media(name, data)
    ads.ads.append((ad_id, name, "audio/mpeg" if codec == "mp3" else "audio/aac", seconds,
                    None))
    return data


def audio_of(data):
    """A creative's audio as the server splices it: no ID3v2 tag, no Xing/Info frame."""
    return fl.mp3_audio(data)


def adbreak(srv, seconds, mount=MOUNT, **kw):
    return adminlib.admin(srv, "/admin/adbreak?mount=%s&duration=%s" % (mount, seconds), **kw)


def listen(srv, mount=MOUNT, n=16384, **kw):
    lis = srv.listener(mount, **kw)
    assert lis.open(timeout=10).status == 200
    lis.wait_bytes(n, 10)
    return lis


def wait_spliced(lis, audio, after=32768, timeout=30):
    """Until the listener's capture holds the creative's audio and `after` bytes past it;
    returns where it begins."""
    def found():
        body = lis.snapshot()
        at = body.find(audio)
        return at + 1 if at >= 0 and len(body) >= at + len(audio) + after else 0
    return wirelib.wait_until(found, timeout, lambda: "the creative in the capture (%d bytes, "
                              "has its start: %s)" % (lis.received,
                                                      lis.snapshot().find(audio[:256]) >= 0)) - 1


def decodes(tmp_path, body, codec, name):
    kept = fl.strict_capture(codec, body)
    assert len(kept) > len(body) - 8192, "frames stop long before the capture's end"
    path = fl.save(str(tmp_path), name, kept)
    errors = fl.ffmpeg_decode_errors(path)
    assert errors == "", errors


# ---------------------------------------------------------------- splicing

@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_a_break_splices_the_creative_at_frame_boundaries_and_the_capture_decodes(
        server, ads, tmp_path, codec):
    data = offer(ads, tmp_path, seconds=4, codec=codec)
    audio = audio_of(data) if codec == "mp3" else data
    srv, src = station(server, ads, codec)
    lis = listen(srv)
    r = adbreak(srv, 10)
    assert r.status == 200 and b"Ad break started" in r.body
    at = wait_spliced(lis, audio)
    body = lis.snapshot()
    assert at > 0, "the stream played before the break"
    decodes(tmp_path, body, codec, "break." + codec)
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "10" and vast.params["ip"] == "127.0.0.1"
    assert vast.params["ua"] == "wiretest-listener/1.0" and vast.params["m"] == MOUNT
    lis.wait_bytes(lis.received + 16384, 10)             # and the live stream goes on
    assert len(ads.of("/media/")) == 1
    lis.close()
    fl.stop_process(src)


def test_the_listener_rejoins_the_live_stream_as_far_on_as_the_ad_lasted(server, ads,
                                                                         tmp_path):
    """A source of known bytes: what follows the ad is the live stream from the point it had
    reached when the ad began, plus the ad's length (to the frame)."""
    data = offer(ads, tmp_path, seconds=3)
    audio = audio_of(data)
    live_path = os.path.join(str(tmp_path), "live.mp3")
    live = adserver.encode(live_path, 60, freq=440)
    live = audio_of(live)
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads) + "</mount>")
    srv = server(extra_xml=xml)
    src = srv.source(MOUNT, live, rate=8000, chunk=1000)    # 64 kbit/s: real time
    assert src.connect().status == 200
    src.start()
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    at = wait_spliced(lis, audio, after=16384)
    body = lis.snapshot()
    before = live.find(body[at - 1024:at])               # the live bytes just before the ad
    after = live.find(body[at + len(audio):at + len(audio) + 1024])
    assert before >= 0 and after >= 0
    skipped = after - (before + 1024)                     # live bytes the ad stood for
    assert abs(skipped - len(audio)) <= 2 * 209, (skipped, len(audio))   # within a frame
    decodes(tmp_path, body, "mp3", "rejoin.mp3")
    lis.close()
    src.close()


def test_the_icy_title_names_the_ad_then_the_live_title_again(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=3)
    audio = audio_of(data)
    srv, src = station(server, ads)
    assert fl.set_metadata(srv, MOUNT, song="Live show").status == 200
    lis = listen(srv, headers={"Icy-MetaData": "1"})
    metaint = int(lis.response.header("icy-metaint"))
    assert adbreak(srv, 8).status == 200

    def demuxed():
        got, blocks = fl.icy_demux(lis.snapshot(), metaint)
        at = got.find(audio)
        return (got, blocks, at) if at >= 0 and len(got) > at + len(audio) + 2 * metaint \
            else None
    got, blocks, at = wirelib.wait_until(demuxed, 30, "the ad and two metadata points after")
    titles = [(pos, fl.icy_fields(t).get("StreamTitle")) for pos, t in blocks if t]
    during = [t for pos, t in titles if at < pos <= at + len(audio)]
    assert during and set(during) == {"Ad a1"}, titles
    assert [t for pos, t in titles if pos > at + len(audio)][:1] == ["Live show"], titles
    decodes(tmp_path, got, "mp3", "icy.mp3")
    lis.close()
    fl.stop_process(src)


def test_a_listener_moved_in_the_middle_of_an_ad_gets_whole_frames_then_the_other_mount(
        server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=20)
    audio = audio_of(data)
    xml = (mount_xml(MOUNT).replace("</mount>", ads_xml(ads) + "</mount>") +
           mount_xml("/other.mp3"))
    srv = server(extra_xml=xml, sndbuf=8192)
    a = fl.ffmpeg_source(srv, MOUNT, "mp3", freq=440)
    b = fl.ffmpeg_source(srv, "/other.mp3", "mp3", freq=660)
    fl.wait_mount(srv, MOUNT, a)
    fl.wait_mount(srv, "/other.mp3", b)
    lis = srv.listener(MOUNT, rcvbuf=4096)
    assert lis.open(timeout=10, start=False).status == 200
    got = bytearray(lis.snapshot())
    lis.sock.settimeout(10)
    while len(got) < 16384:                     # the stream has frames
        got += lis.sock.recv(4096)
    assert adbreak(srv, 30).status == 200
    while True:                                 # a third of the ad, read slowly enough
        at = got.find(audio[:1024])
        if at >= 0 and len(got) >= at + len(audio) // 3:
            break
        got += lis.sock.recv(4096)
    r = adminlib.admin(srv, "/admin/moveclients?mount=%s&destination=/other.mp3" % MOUNT)
    assert r.status == 200, r.body
    lis._add(bytes(got[len(lis.snapshot()):]))     # what was read by hand, then the reader
    lis.start()
    lis.wait_bytes(len(got) + 49152, 15)
    body = lis.snapshot()
    assert body.find(audio) < 0                 # not the whole ad: the rest of a block at most
    decodes(tmp_path, body, "mp3", "moved.mp3")
    assert not ads.events("a1").get("complete")
    lis.close()
    for p in (a, b):
        fl.stop_process(p)


def test_a_source_leaving_during_the_break_lets_its_listeners_finish_their_ad(server, ads,
                                                                           tmp_path):
    data = offer(ads, tmp_path, seconds=4)
    audio = audio_of(data)
    srv, src = station(server, ads)
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wirelib.wait_until(lambda: lis.snapshot().find(audio[:1024]) >= 0, 15, "the ad begun")
    fl.stop_process(src)
    lis.wait_closed(15)                        # the mount ended: no fallback, so it closes
    body = lis.snapshot()
    assert body.find(audio) > 0                # the whole ad first
    decodes(tmp_path, body, "mp3", "ended.mp3")
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")


# ---------------------------------------------------------------- signals

@pytest.mark.parametrize("prefix", [None, "AD_BREAK_MS="])
def test_a_title_with_the_break_prefix_starts_a_break_of_that_length(server, ads, tmp_path,
                                                                     prefix):
    data = offer(ads, tmp_path, seconds=3)
    extra = "<title-prefix>%s</title-prefix>" % prefix if prefix else ""
    srv, src = station(server, ads, extra=extra)
    lis = listen(srv)
    assert fl.set_metadata(srv, MOUNT, song="ADBREAK_LENGTH_").status == 200  # no length
    assert fl.set_metadata(srv, MOUNT, song="Just a song").status == 200
    assert fl.set_metadata(srv, MOUNT, song=(prefix or "ADBREAK_LENGTH_") + "7500").status == 200
    wait_spliced(lis, audio_of(data))
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "7"
    lis.close()
    fl.stop_process(src)


def test_an_inline_icy_title_from_the_source_starts_a_break(server, ads, tmp_path):
    """A Shoutcast-style source (or a relay of one) sends its titles in the stream: the title
    that opens the break arrives there, at the point it is sent."""
    data = offer(ads, tmp_path, seconds=2)
    live = audio_of(adserver.encode(os.path.join(str(tmp_path), "live.mp3"), 60, freq=440))
    metaint = 8000                                   # a metadata point a second (64 kbit/s)
    points = len(live) // metaint

    def meta_at(i):
        if i == 0:
            return fl.icy_block("StreamTitle='Live show';")
        if i == 6:
            return fl.icy_block("StreamTitle='ADBREAK_LENGTH_9000';")
        if i == points // 2:
            return fl.icy_block("StreamTitle='Live show';")
        return b"\0"
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads) + "</mount>")
    srv = server(extra_xml=xml)
    src = srv.source(MOUNT, fl.icy_interleave(live, metaint, meta_at), rate=8200, chunk=1000,
                     headers={"icy-metaint": str(metaint)})
    assert src.connect().status == 200
    src.start()
    lis = listen(srv)
    at = wait_spliced(lis, audio_of(data), after=8192)
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "9"
    # the ad went in where the title was: about six seconds of the live stream before it
    assert abs(live.find(lis.snapshot()[at - 1024:at]) + 1024 - 6 * metaint) < 3 * metaint
    lis.close()
    src.close()


def test_a_preroll_plays_before_the_stream(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=2)
    audio = audio_of(data)
    srv, src = station(server, ads, extra="<preroll>1</preroll>"
                       "<preroll-duration>15</preroll-duration>")
    # a preroll is in the stream's format: wait until it has frames (a second of them)
    wirelib.wait_until(lambda: fl.stats_source(srv, MOUNT).findtext("audio_bitrate"), 10,
                       "the stream's first second")
    lis = listen(srv, n=len(audio) + 16384)
    body = lis.snapshot()
    assert body.startswith(audio), (body.find(audio), body.find(audio[:400]), len(audio))
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "15"
    decodes(tmp_path, lis.snapshot(), "mp3", "preroll.mp3")
    lis.close()
    fl.stop_process(src)


# ---------------------------------------------------------------- the ad server's answers

def test_wrappers_are_followed_and_their_tracking_fires_too(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=2)
    srv, src = station(server, ads, path="/wrap/2?s={session}")
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wait_spliced(lis, audio_of(data))
    assert [h.path for h in ads.of("/wrap/")] == ["/wrap/2", "/wrap/1", "/wrap/0"]
    for w in ("wrap2", "wrap1", "wrap0", "a1"):
        wirelib.wait_until(lambda: ads.events(w).get("complete") == 1, 10, w + " complete")
        assert ads.events(w).get("impression") == 1, ads.events(w)
    lis.close()
    fl.stop_process(src)


def test_wrappers_deeper_than_three_are_refused_with_error_302(server, ads, tmp_path):
    offer(ads, tmp_path, seconds=2)
    srv, src = station(server, ads, path="/wrap/3")
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wirelib.wait_until(lambda: ads.of("/t/wrap0/error"), 10, "wrapper error URL")
    assert {h.params.get("code") for h in ads.of("/t/wrap")
            if h.path.endswith("/error")} == {"302"}
    assert not ads.of("/vast") and not ads.of("/media/")
    keeps_live(lis)
    lis.close()
    fl.stop_process(src)


def test_a_creative_in_another_format_is_not_spliced_and_gets_error_403(server, ads, tmp_path):
    offer(ads, tmp_path, seconds=2, rate=22050)           # the mount is 44.1 kHz
    srv, src = station(server, ads)
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wirelib.wait_until(lambda: ads.of("/t/a1/error"), 10, "the ad's error URL")
    assert [h.params.get("code") for h in ads.of("/t/a1/error")] == ["403"]
    assert not ads.of("/t/a1/impression")
    keeps_live(lis)
    lis.close()
    fl.stop_process(src)


def test_an_ad_longer_than_the_break_is_left_out(server, ads, tmp_path):
    offer(ads, tmp_path, "long", seconds=6)
    short = offer(ads, tmp_path, "short", seconds=2)
    srv, src = station(server, ads)
    lis = listen(srv)
    assert adbreak(srv, 5).status == 200
    wait_spliced(lis, audio_of(short))
    assert not ads.of("/t/long/")
    lis.close()
    fl.stop_process(src)


def keeps_live(lis, extra=32768):
    """The listener goes on receiving whole frames of the live stream."""
    lis.wait_bytes(lis.received + extra, 15)
    fl.strict_capture("mp3", lis.snapshot())


def test_an_ad_server_that_times_out_leaves_everyone_on_the_live_stream(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=2)
    ads.delay = 3
    srv, src = station(server, ads, extra="<request-timeout-ms>500</request-timeout-ms>")
    listeners = [listen(srv) for _ in range(3)]
    assert adbreak(srv, 10).status == 200
    wirelib.wait_until(lambda: len(ads.of("/vast")) == 3, 10, "three ad requests")
    for lis in listeners:
        keeps_live(lis)
    assert not ads.of("/media/")
    for lis in listeners:
        assert lis.snapshot().find(audio_of(data)[:512]) < 0
        decodes(tmp_path, lis.snapshot(), "mp3", "timeout.mp3")
    srv.wait_log("did not answer", 10)
    assert srv.error_log().count("did not answer") == 1   # rate-limited: one line
    for lis in listeners:
        lis.close()
    fl.stop_process(src)


def test_without_allow_private_the_ad_server_on_loopback_is_not_reached(server, ads, tmp_path):
    offer(ads, tmp_path, seconds=2)
    srv, src = station(server, ads, private=0)
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    srv.wait_log("internal address", 10)
    assert ads.hits == []
    keeps_live(lis)
    lis.close()
    fl.stop_process(src)


# ---------------------------------------------------------------- the admin command

def test_the_admin_command_refuses_bad_durations_mounts_without_ads_and_other_origins(
        server, ads, tmp_path):
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads) + "</mount>") + mount_xml("/plain.mp3")
    srv = server(extra_xml=xml)
    a = fl.ffmpeg_source(srv, MOUNT, "mp3")
    b = fl.ffmpeg_source(srv, "/plain.mp3", "mp3")
    fl.wait_mount(srv, MOUNT, a)
    fl.wait_mount(srv, "/plain.mp3", b)
    for bad in ("0", "601", "ten", "-5", "5s", ""):
        r = adbreak(srv, bad)
        assert r.status == 400 and b"Invalid duration" in r.body, (bad, r.body)
    r = adbreak(srv, 10, mount="/plain.mp3")
    assert r.status == 400 and b"no ad server" in r.body
    assert adbreak(srv, 10, mount="/nothere.mp3").status == 400
    assert adbreak(srv, 10, auth=None).status == 401
    assert adbreak(srv, 10, auth=("source", "wrong")).status == 401
    r = adbreak(srv, 10, headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert r.status == 403
    assert not ads.of("/vast")
    wirelib.wait_until(lambda: fl.stats_source(srv, MOUNT).findtext("audio_bitrate"), 10,
                       "the stream's first second of frames")
    r = adbreak(srv, 10, auth=("source", SOURCE_PASSWORD))     # the source may, as metadata
    assert r.status == 200 and b"Ad break started" in r.body
    for p in (a, b):
        fl.stop_process(p)
