# SPDX-License-Identifier: GPL-2.0-or-later
"""A listener's preroll is one break (docs/ADS.md, "House ads"): the mount's <intro>, or the
file its URL authentication named, is the break's first ad (a house ad), and the ad server's
preroll ads (<ads><preroll>) follow it, spliced, skipped in the live stream and counted as any
break's ads are.

Covers: the intro's time is skipped in the live stream, so a listener hears the live stream
after it from as near the live edge as it joined (Icecast puts a listener after its intro
where the stream is then), to the frame; the intro then the ad server's preroll ads then the
live stream, whole frames that ffmpeg decodes, with the ad's tracking fired and counted and
the intro neither tracked nor counted among the ads, and the session record's preroll set once
the whole preroll was heard; an intro that is no audio of the mount's kind (an MP3 intro on
an AAC mount) is not played, with one line in the log, and the listener hears the stream;
one of another sample rate is played as it is (as Icecast plays it), said once.
"""

import os

import pytest

import adminlib
import adserver
import formatlib as fl
import wirelib
from test_ads import ads, ads_xml, audio_of, decodes, offer  # noqa: F401 (fixture)
from test_ads_tracking import metrics
from test_fallback import mount_xml, webdir  # noqa: F401 (fixture)
from test_sessions import wait_records

pytestmark = pytest.mark.rimecast_only      # Icecast sends an intro as it is and has no ads

MOUNT = "/live.mp3"
RATE = 8000                                  # the 64 kbit/s sources' bytes a second


def live_source(srv, tmp_path, seconds=60):
    """A paced source of known bytes (a sine, no tags) on MOUNT; its audio."""
    live = audio_of(adserver.encode(os.path.join(str(tmp_path), "live.mp3"), seconds,
                                    freq=440))
    src = srv.source(MOUNT, live, rate=RATE, chunk=1000)
    assert src.connect().status == 200
    src.start()
    fl.wait_mount(srv, MOUNT)
    return src, live


def test_the_intros_time_is_skipped_in_the_live_stream_as_an_ads_is(server, tmp_path, webdir):
    intro = audio_of(adserver.encode(os.path.join(webdir, "intro.mp3"), 3, freq=1000))
    os.chmod(os.path.join(webdir, "intro.mp3"), 0o644)
    xml = mount_xml(MOUNT, intro="/intro.mp3").replace(
        "</mount>", "<burst-size>0</burst-size></mount>")
    srv = server(extra_xml=xml, webroot=webdir)
    src, live = live_source(srv, tmp_path)
    wirelib.wait_until(lambda: src.sent > 5 * RATE, 10, "five seconds of the source")
    joined = src.sent                            # the live edge as the listener joins
    lis = srv.listener(MOUNT)
    assert lis.open(timeout=10).status == 200
    lis.wait_bytes(len(intro) + 4 * RATE, 20)
    body = lis.snapshot()
    assert body[:len(intro)] == intro
    after = live.find(body[len(intro):len(intro) + 1024])
    assert after >= 0, "no live bytes right after the intro"
    # it goes on where the live stream is once the intro's three seconds went by, not where
    # it was when the listener joined (a block of the source is 1 000 bytes)
    assert abs(after - joined - len(intro)) <= 2 * 1000 + 2 * 209, (after, joined, len(intro))
    decodes(tmp_path, body, "mp3", "intro-live.mp3")
    lis.close()
    src.close()


def test_the_intro_then_the_ad_servers_preroll_ads_then_live_counted_as_one_preroll(
        server, ads, tmp_path, webdir):
    ad = audio_of(offer(ads, tmp_path, seconds=2))
    intro = audio_of(adserver.encode(os.path.join(webdir, "intro.mp3"), 2, freq=1000))
    os.chmod(os.path.join(webdir, "intro.mp3"), 0o644)
    xml = mount_xml(MOUNT, intro="/intro.mp3").replace(
        "</mount>", ads_xml(ads, extra="<preroll>1</preroll><preroll-duration>15"
                            "</preroll-duration>") + "</mount>")
    srv = server(extra_xml=xml, webroot=webdir)
    src, live = live_source(srv, tmp_path)
    wirelib.wait_until(lambda: src.sent > 3 * RATE, 10, "three seconds of the source")
    lis = srv.listener(MOUNT)
    assert lis.open(timeout=10).status == 200
    lis.wait_bytes(len(intro) + len(ad) + 2 * RATE, 20)
    body = lis.snapshot()
    assert body[:len(intro)] == intro
    assert body[len(intro):len(intro) + len(ad)] == ad, "the ad does not follow the intro"
    assert live.find(body[len(intro) + len(ad):len(intro) + len(ad) + 1024]) >= 0
    decodes(tmp_path, body, "mp3", "intro-ad-live.mp3")
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "the ad's complete")
    lis.close()
    [rec] = wait_records(srv, 1)
    assert rec["preroll"] == 1
    m = metrics(srv)
    assert m["rimecast_ads_fills_total"] == 1 and m["rimecast_ads_impressions_total"] == 1
    assert m["rimecast_ads_completes_total"] == 1          # the intro is no ad of theirs
    assert [h.path for h in ads.of("/media/")] == ["/media/a1.mp3"]
    src.close()


def test_an_intro_of_another_codec_is_not_played_and_said_once(server, tmp_path, webdir):
    fl.encode_file(os.path.join(webdir, "intro.mp3"), "mp3", 2, freq=1000)
    srv = server(extra_xml=mount_xml("/live.aac", intro="/intro.mp3"), webroot=webdir)
    src = fl.ffmpeg_source(srv, "/live.aac", "aac", freq=440)
    fl.wait_mount(srv, "/live.aac", src)
    for _ in range(2):
        lis = srv.listener("/live.aac")
        assert lis.open(timeout=10).status == 200
        lis.wait_bytes(8192, 10)
        body = lis.snapshot()
        assert fl.adts_frame_len(body, 0), "not the AAC stream from its first byte"
        lis.close()
    said = "/intro.mp3 on /live.aac"
    srv.wait_log(said, 5)
    assert sum(said in line for line in srv.error_log().splitlines()) == 1
    fl.stop_process(src)


def test_an_intro_of_another_rate_is_played_as_it_is_and_said_once(server, tmp_path, webdir):
    """As Icecast plays it: a 22.05 kHz intro on a 44.1 kHz MP3 mount, its frames first."""
    intro = audio_of(adserver.encode(os.path.join(webdir, "intro.mp3"), 2, freq=1000,
                                     rate=22050))
    os.chmod(os.path.join(webdir, "intro.mp3"), 0o644)
    srv = server(extra_xml=mount_xml(MOUNT, intro="/intro.mp3"), webroot=webdir)
    src, _ = live_source(srv, tmp_path)
    for _ in range(2):
        lis = srv.listener(MOUNT)
        assert lis.open(timeout=10).status == 200
        lis.wait_bytes(len(intro) + 4096, 10)
        body = lis.snapshot()
        assert body[:len(intro)] == intro
        assert fl.mp3_frame_len(body, len(intro)), "no frame right after the intro"
        lis.close()
    said = "played as it is"
    srv.wait_log(said, 5)
    assert sum(said in line for line in srv.error_log().splitlines()) == 1
    src.close()
