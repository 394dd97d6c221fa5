# SPDX-License-Identifier: GPL-2.0-or-later
"""A listener in the middle of an ad break through `rimecast --upgrade` (docs/ADS.md,
docs/UPGRADE.md): the new process carries its break (the ads still to play, where it is in
the one playing, which tracking events fired) and fetches the creative again, so the
listener hears the whole ad, then the live stream, and each tracking event fires once.

Covers: an MP3 listener a third of the way into an ad, and Ogg Vorbis and Opus ones, through an
upgrade: the creative's bytes are in the capture whole and in order, ffmpeg decodes it, every
event fired exactly once (some by the old process, the rest by the new one); a listener
upgraded twice in the middle of the first ad of a two-ad pod hears the second ad too; one whose
creative cannot be fetched again in the new process rejoins the live stream at a frame
boundary, stays connected, and gets no event twice. HLS sessions (MP3 and Opus mounts) in the
middle of a break go on with their ads in the new process: their playlists, checked reload by
reload across the upgrade, keep their numbers and the ad's URIs, and each event fires once; a
session whose creative is gone at the upgrade rejoins the live stream, numbered on, with no
event twice.
"""

import pytest

import formatlib as fl
import test_upgrade
import test_upgrade_command
import wirelib
from test_ads import adbreak, ads, audio_of, offer, station  # noqa: F401
from test_ads_ogg import ogg_offer, ogg_station
import test_ads_ogg
from test_ads_hls import Session, ad_segments, station as hls_station, wait_ads_listed
from test_ads_hls_opus import opus_offer
from test_hls_opus import multivariant

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

MOUNT = "/live.mp3"
EVENTS = ("impression", "start", "firstQuartile", "midpoint", "thirdQuartile", "complete")


def upgrade_by_command(srv):
    """`rimecast --upgrade -c CONFIG`; srv follows the new process."""
    old = srv.proc
    rc, out, err = test_upgrade_command.upgrade(srv, "--timeout=30", timeout=90)
    assert rc == 0, (rc, out, err, srv.diagnostics())
    new = test_upgrade.pidfile_pid(srv)
    assert new != old.pid and "handed over to PID %d" % new in out, out
    if isinstance(old, test_upgrade.Adopted):   # one that took over exits without a word
        wirelib.wait_until(lambda: not old._running(), 30, "PID %d to exit" % old.pid)
    else:
        assert old.wait(30) == 0
    srv.proc = test_upgrade.Adopted(new, srv)
    return new


def slow_listener(srv, mount, before):
    """A listener read by hand (a small receive buffer): `before` bytes of the stream."""
    lis = srv.listener(mount, rcvbuf=4096)
    assert lis.open(timeout=10, start=False).status == 200
    got = bytearray(lis.snapshot())
    lis.sock.settimeout(10)
    while len(got) < before:
        got += lis.sock.recv(4096)
    return lis, got


def read_into(lis, got, marker, upto):
    """Reads until the capture holds `marker` and `upto` bytes from it on; where it begins."""
    while True:
        at = got.find(marker)
        if at >= 0 and len(got) >= at + upto:
            return at
        chunk = lis.sock.recv(4096)
        assert chunk, "closed"
        got += chunk


def hand_back(lis, got):
    """What was read by hand goes into the listener's capture; its reader takes over."""
    lis._add(bytes(got[len(lis.snapshot()):]))
    lis.start()


def test_an_mp3_listener_in_the_middle_of_an_ad_hears_it_to_the_end_across_an_upgrade(
        server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=20)
    audio = audio_of(data)
    srv, src = station(server, ads, sndbuf=8192)
    lis, got = slow_listener(srv, MOUNT, 16384)
    assert adbreak(srv, 30).status == 200
    read_into(lis, got, audio[:1024], len(audio) // 3)
    wirelib.wait_until(lambda: ads.events("a1").get("firstQuartile") == 1, 10,
                       lambda: "the first quartile: %r" % ads.events("a1"))
    upgrade_by_command(srv)
    hand_back(lis, got)
    wirelib.wait_until(lambda: lis.snapshot().find(audio) >= 0 and
                       len(lis.snapshot()) > lis.snapshot().find(audio) + len(audio) + 8192,
                       30, lambda: "the whole ad, then the live stream (%d bytes)" % lis.received)
    body = lis.snapshot()
    assert body.count(audio[:1024]) == 1                    # the ad once, not started again
    kept = fl.strict_capture("mp3", body)
    errors = fl.ffmpeg_stream_decode_errors(kept, "mp3")
    assert errors == "", errors
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 15,
                       lambda: "complete: %r" % ads.events("a1"))
    assert ads.events("a1") == {e: 1 for e in EVENTS}
    assert len(ads.of("/media/")) == 2                      # fetched again by the new process
    assert not lis.closed
    lis.close()
    fl.stop_process(src)


@pytest.mark.parametrize("codec", ["vorbis", "opus"])
def test_an_ogg_listener_in_the_middle_of_an_ad_hears_it_to_the_end_across_an_upgrade(
        server, ads, tmp_path, codec):
    data = ogg_offer(ads, tmp_path, codec, seconds=10, noise=True)
    srv, src = ogg_station(server, ads, codec, sndbuf=8192)
    lis, got = slow_listener(srv, test_ads_ogg.MOUNT, 6144)
    assert test_ads_ogg.adbreak(srv, 20).status == 200
    read_into(lis, got, data[:200], len(data) // 3)
    upgrade_by_command(srv)
    hand_back(lis, got)
    wirelib.wait_until(lambda: lis.snapshot().find(data) >= 0 and
                       len(lis.snapshot()) > lis.snapshot().find(data) + len(data) + 4096,
                       40, lambda: "the whole ad, then the live stream (%d bytes)" % lis.received)
    body = fl.strict_capture(codec, lis.snapshot())
    check, links = test_ads_ogg.links(body)
    assert [t.get("title") for _, _, t in links[:3]] == ["Live show", "Spot a1", "Live show"]
    errors = fl.ffmpeg_stream_decode_errors(body)
    assert errors == "", errors
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 15,
                       lambda: "complete: %r" % ads.events("a1"))
    assert ads.events("a1") == {e: 1 for e in EVENTS}
    lis.close()
    fl.stop_process(src)


def test_the_second_ad_of_a_pod_plays_after_two_upgrades_in_the_first(server, ads, tmp_path):
    """The second upgrade carries a pod the first one carried: its second ad's creative not
    fetched again yet."""
    first = audio_of(offer(ads, tmp_path, ad_id="a1", seconds=20))
    second = audio_of(offer(ads, tmp_path, ad_id="a2", seconds=3, freq=660))
    srv, src = station(server, ads, sndbuf=8192)
    lis, got = slow_listener(srv, MOUNT, 16384)
    assert adbreak(srv, 30).status == 200
    read_into(lis, got, first[:1024], len(first) // 3)
    upgrade_by_command(srv)
    read_into(lis, got, first[:1024], 2 * len(first) // 3)
    upgrade_by_command(srv)
    hand_back(lis, got)
    wirelib.wait_until(lambda: lis.snapshot().find(first + second) >= 0, 30,
                       lambda: "both ads, one after the other (%d bytes)" % lis.received)
    lis.wait_bytes(lis.received + 8192, 40)             # the live stream, as far on as they lasted
    errors = fl.ffmpeg_stream_decode_errors(fl.strict_capture("mp3", lis.snapshot()), "mp3")
    assert errors == "", errors
    for ad in ("a1", "a2"):
        wirelib.wait_until(lambda: ads.events(ad).get("complete") == 1, 15,
                           lambda: "%s complete: %r" % (ad, ads.events(ad)))
        assert ads.events(ad) == {e: 1 for e in EVENTS}, ad
    lis.close()
    fl.stop_process(src)


def test_a_creative_the_new_process_cannot_fetch_leaves_the_listener_on_the_live_stream(
        server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=20)
    audio = audio_of(data)
    srv, src = station(server, ads, sndbuf=8192)
    lis, got = slow_listener(srv, MOUNT, 16384)
    assert adbreak(srv, 30).status == 200
    at = read_into(lis, got, audio[:1024], len(audio) // 3)
    wirelib.wait_until(lambda: ads.events("a1").get("firstQuartile") == 1, 10,
                       lambda: "the first quartile: %r" % ads.events("a1"))
    fired = ads.events("a1")
    ads.media.clear()                                    # the creative is gone from its URL
    upgrade_by_command(srv)
    hand_back(lis, got)
    lis.wait_bytes(len(got) + 32768, 20)                 # the live stream goes on
    body = lis.snapshot()
    assert body.find(audio) < 0                          # the rest of the ad is not heard
    assert body[at:].find(audio[len(audio) // 2:len(audio) // 2 + 1024]) < 0
    errors = fl.ffmpeg_stream_decode_errors(fl.strict_capture("mp3", body), "mp3")
    assert errors == "", errors
    wirelib.wait_until(lambda: srv.error_log().count("not fetched again after the upgrade"),
                       10, "the log line")
    assert ads.events("a1") == fired and "complete" not in fired   # nothing twice, no more
    assert not lis.closed
    lis.close()
    fl.stop_process(src)


# ---------------------------------------------------------------- HLS sessions

def hls_break(server, ads, tmp_path, codec):
    """An HLS session a quarter of the way into a 12 s ad (its first quartile fired): the
    server, its source, the mount and the session."""
    if codec == "opus":
        opus_offer(ads, tmp_path, seconds=12)
    else:
        offer(ads, tmp_path, seconds=12)
    srv, src, mount = hls_station(server, ads, codec)
    if codec == "opus":
        multivariant(srv, mount)
    sess = Session(srv, mount)
    sess.piece(sess.reload()["segments"][-1]["uri"])        # a listener now
    assert adbreak(srv, 20, mount=mount).status == 200
    wait_ads_listed(sess)
    fetched = set()
    sess.checker.reload_until(sess.playlist_text,
                              lambda pl: fetch_ads(sess, pl, fetched) >= 2 or None, 20,
                              "two of the ad's segments")
    wirelib.wait_until(lambda: ads.events("a1").get("firstQuartile") == 1, 10,
                       lambda: "the first quartile: %r" % ads.events("a1"))
    return srv, src, mount, sess, fetched


def fetch_ads(sess, pl, fetched):
    """Fetches, whole, each complete ad segment pl lists that was not yet; how many were."""
    for s in ad_segments(pl):
        if s["uri"] not in fetched:
            sess.piece(s["uri"])
            fetched.add(s["uri"])
    return len(fetched)


def ads_over(pl):
    segs = pl["segments"]
    at = [i for i, s in enumerate(segs) if "/ad/" in s["uri"]]
    return at and at[-1] + 1 < len(segs)


@pytest.mark.parametrize("codec", ["mp3", "opus"])
def test_an_hls_session_in_the_middle_of_a_break_hears_its_ads_on_across_an_upgrade(
        server, ads, tmp_path, codec):
    srv, src, mount, sess, fetched = hls_break(server, ads, tmp_path, codec)
    before = sess.reload()
    cut = {s["uri"].split("/")[2] for s in ad_segments(before)}
    assert len(cut) == 1 and "midpoint" not in ads.events("a1"), ads.events("a1")
    upgrade_by_command(srv)
    # each reload follows from the one before (the Checker: the numbers run on, a segment
    # listed twice is the same URI), the ad's segments under the same cut, then the live stream
    pl = sess.checker.reload_until(
        sess.playlist_text, lambda pl: pl if fetch_ads(sess, pl, fetched) and ads_over(pl)
        else None, 40, "the rest of the ad, then the live stream")
    assert {s["uri"].split("/")[2] for s in ad_segments(pl)} == cut
    assert pl["segments"][-1]["seq"] > before["segments"][-1]["seq"]
    assert len(fetched) >= 6                                # 12 s of 2 s segments
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 15,
                       lambda: "complete: %r" % ads.events("a1"))
    assert ads.events("a1") == {e: 1 for e in EVENTS}
    assert len(ads.of("/media/")) == 2                      # fetched again by the new process
    sess.close()
    fl.stop_process(src)


def test_an_hls_session_whose_creative_is_gone_at_an_upgrade_rejoins_the_live_stream(
        server, ads, tmp_path):
    srv, src, mount, sess, fetched = hls_break(server, ads, tmp_path, "mp3")
    before = sess.reload()
    last = before["segments"][-1]["seq"]
    fired = ads.events("a1")
    ads.media.clear()                                       # the creative is gone from its URL
    upgrade_by_command(srv)
    pl = sess.checker.reload_until(
        sess.playlist_text, lambda pl: pl if not ad_segments(pl) and
        pl["segments"][-1]["seq"] >= last + 2 else None, 30, "the live stream, numbered on")
    wirelib.wait_until(lambda: srv.error_log().count("did not go on after the upgrade"), 10,
                       "the log line")
    common = Session(srv, mount, agent="wiretest-other/1.0").reload()
    # live again, at the live edge (a segment may have been completed in between)
    assert pl["segments"][-1]["uri"] in [s["uri"] for s in common["segments"][-2:]]
    assert ads.events("a1") == fired and "complete" not in fired          # nothing twice
    sess.close()
    fl.stop_process(src)
