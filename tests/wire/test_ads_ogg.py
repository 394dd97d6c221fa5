# SPDX-License-Identifier: GPL-2.0-or-later
"""Ad breaks on Ogg Vorbis and Opus mounts (docs/ADS.md, "Ogg"): a listener hears the creative
(an Ogg file of the mount's codec, rate and channels) as a chain link of its own, then the live
stream as a new link: the mount's header pages, then its pages as far on as the ad lasted.

Covers: a break splices the creative's pages whole into a Vorbis and an Opus listener's stream
and ffmpeg decodes the capture across it without a complaint; the links are the live stream
(ended by an EOS page), the ad (its own serial number and comments: its title), the live
stream again (its headers and title); a preroll plays the ad link before the stream's;
tracking fires each event once; a creative in another codec is not spliced (VAST error 403,
the listener stays live); a creative whose serial number is the live stream's is spliced under
another one; ogg123 and mpv play a capture through the chain; a title ADBREAK_LENGTH_<ms>
starts a break on an Ogg mount too.
"""

import os
import struct
import subprocess

import pytest

import formatlib as fl
import wirelib
import test_ads
from test_ads import ads, ads_xml  # noqa: F401
from test_fallback import mount_xml

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

MOUNT = "/live.ogg"
EVENTS = ("impression", "start", "firstQuartile", "midpoint", "thirdQuartile", "complete")


def adbreak(srv, seconds):
    return test_ads.adbreak(srv, seconds, mount=MOUNT)


def listen(srv, n=6144):
    """A listener with the headers and some pages (a sine wave is a few kB a second)."""
    return test_ads.listen(srv, MOUNT, n)


def ogg_station(server, ads, codec, extra="", **cfg):
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads, extra=extra) + "</mount>")
    srv = server(extra_xml=xml, **cfg)
    src = fl.ffmpeg_source(srv, MOUNT, codec, title="Live show", freq=440)
    fl.wait_mount(srv, MOUNT, src)
    return srv, src


def ogg_offer(ads, tmp_path, codec, ad_id="a1", seconds=3, mime="audio/ogg", serial=None,
              noise=False):
    """The ad server answers with one inline ad: an Ogg file of `codec` titled "Spot <id>" (a
    sine wave, or pink noise: more bytes a second)."""
    name = "%s.%s.ogg" % (ad_id, codec)
    path = os.path.join(str(tmp_path), name)
    args, _, muxer = fl.ENCODERS[codec]
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
           ("anoisesrc=d=%g:c=pink:r=44100" if noise else
            "sine=frequency=880:sample_rate=44100:duration=%g") % seconds, "-ac", "1"] + args
    cmd += ["-metadata", "title=Spot " + ad_id, "-f", muxer, path]
    subprocess.run(cmd, check=True, timeout=60, capture_output=True)
    with open(path, "rb") as f:
        data = f.read()
    if serial is not None:
        data = with_serial(data, serial)
    ads.add_media(name, data)
    ads.ads.append((ad_id, name, mime, seconds, None))
    return data


def wait_pages(lis, data, after=6144, timeout=30):
    """Until the capture holds the creative's pages and `after` bytes past them; where they
    begin."""
    def found():
        body = lis.snapshot()
        at = body.find(data)
        return at + 1 if at >= 0 and len(body) >= at + len(data) + after else 0
    return wirelib.wait_until(found, timeout, lambda: "the creative's pages in the capture "
                              "(%d bytes; its first page: %s)" % (
                                  lis.received, lis.snapshot().find(data[:200]) >= 0)) - 1


def links(body):
    """The capture's chain links: [(serials, codecs, tags)], checked page by page."""
    check, _ = fl.whole_pages_from_start(body)
    return check, [(sorted(g), sorted(g.values()), t) for g, t in zip(check.groups, check.tags)]


def with_serial(data, serial):
    """data's pages under another serial number (their CRCs set again)."""
    out = bytearray()
    for p in fl.ogg_pages(data)[0]:
        raw = bytearray(p.raw)
        struct.pack_into("<II", raw, 14, serial, p.seqno)
        struct.pack_into("<I", raw, 22, 0)
        struct.pack_into("<I", raw, 22, fl.ogg_crc(bytes(raw)))
        out += raw
    return bytes(out)


def serial_of(data):
    return fl.ogg_pages(data)[0][0].serial


@pytest.mark.parametrize("codec", ["vorbis", "opus"])
def test_a_break_plays_the_creative_as_a_chain_link_and_the_capture_decodes(
        server, ads, tmp_path, codec):
    data = ogg_offer(ads, tmp_path, codec)
    srv, src = ogg_station(server, ads, codec)
    lis = listen(srv)
    r = adbreak(srv, 10)
    assert r.status == 200 and b"Ad break started" in r.body
    at = wait_pages(lis, data)
    body = fl.strict_capture(codec, lis.snapshot())
    assert at > 0, "the live stream played before the break"
    check, got = links(body)
    live = serial_of(body)
    ad = serial_of(data)
    assert [s for s, _, _ in got[:3]] == [[live], [ad], [got[2][0][0]]]
    assert got[2][0][0] != ad
    assert all(c == [codec] for _, c, _ in got)
    assert got[0][2].get("title") == "Live show" and got[1][2].get("title") == "Spot a1"
    assert got[2][2].get("title") == "Live show"
    # the live link before the ad ends with an EOS page; the one after it starts with its
    # header pages, then audio pages of the stream
    before = fl.ogg_pages(body[:at])[0]
    assert before[-1].eos and before[-1].serial == live and not before[-2].eos
    assert before[-1].seqno == before[-2].seqno + 1 and not before[-1].body
    rest = body[at + len(data):]
    assert fl.ogg_pages(rest)[0][0].bos
    errors = fl.ffmpeg_stream_decode_errors(body)
    assert errors == "", errors
    lis.wait_bytes(lis.received + 2048, 10)           # and the live stream goes on
    assert len(ads.of("/media/")) == 1
    lis.close()
    fl.stop_process(src)


def test_the_listener_rejoins_as_far_on_as_the_ad_lasted(server, ads, tmp_path):
    """The live link after the ad starts at a granule position the ad's duration past the
    last page before it (to a page, a few hundred ms of Vorbis at this rate)."""
    data = ogg_offer(ads, tmp_path, "vorbis", seconds=4)
    srv, src = ogg_station(server, ads, "vorbis")
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    at = wait_pages(lis, data, after=8192)
    body = lis.snapshot()
    before = [p for p in fl.ogg_pages(body[:at])[0] if p.granule not in (0, -1)
              and p.granule < 2 ** 63]
    after = [p for p in fl.ogg_pages(body[at + len(data):])[0] if p.granule > 0]
    ad_len = fl.ogg_pages(data)[0][-1].granule
    jump = after[0].granule - before[-1].granule
    page = max(b.granule - a.granule for a, b in zip(after, after[1:]))
    assert ad_len <= jump <= ad_len + 3 * page, (jump, ad_len, page)
    lis.close()
    fl.stop_process(src)


def test_a_preroll_plays_the_ad_link_before_the_stream(server, ads, tmp_path):
    data = ogg_offer(ads, tmp_path, "opus", seconds=2)
    srv, src = ogg_station(server, ads, "opus", extra="<preroll>1</preroll>"
                           "<preroll-duration>15</preroll-duration>")
    # a preroll is in the stream's format: wait until its headers were read (its title)
    wirelib.wait_until(lambda: fl.stats_source(srv, MOUNT).findtext("title"), 10,
                       "the stream's headers")
    lis = listen(srv, n=len(data) + 6144)
    body = fl.strict_capture("opus", lis.snapshot())
    assert body.startswith(data), body.find(data)
    check, got = links(body)
    assert got[0][0] == [serial_of(data)] and got[1][2].get("title") == "Live show"
    errors = fl.ffmpeg_stream_decode_errors(body)
    assert errors == "", errors
    lis.close()
    fl.stop_process(src)


def test_tracking_fires_each_event_once(server, ads, tmp_path):
    n = 3
    data = ogg_offer(ads, tmp_path, "vorbis", seconds=3)
    srv, src = ogg_station(server, ads, "vorbis")
    listeners = [listen(srv) for _ in range(n)]
    assert adbreak(srv, 10).status == 200
    for lis in listeners:
        wait_pages(lis, data, after=4096)
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == n, 15,
                       lambda: "%d completes: %r" % (n, ads.events("a1")))
    assert ads.events("a1") == {e: n for e in EVENTS}
    assert len(ads.of("/vast")) == n and len(ads.of("/media/")) == 1
    for lis in listeners:
        lis.close()
    fl.stop_process(src)


@pytest.mark.parametrize("ad_codec,mime", [("opus", "audio/ogg"), ("vorbis", "audio/mpeg")])
def test_a_creative_in_another_codec_is_refused_and_the_listener_stays_live(
        server, ads, tmp_path, ad_codec, mime):
    data = ogg_offer(ads, tmp_path, ad_codec, mime=mime)
    srv, src = ogg_station(server, ads, "vorbis")
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wirelib.wait_until(lambda: ads.of("/t/a1/error"), 10, "the error URL")
    [err] = ads.of("/t/a1/error")
    assert err.params["code"] == "403"
    lis.wait_bytes(lis.received + 8192, 15)
    body = fl.strict_capture("vorbis", lis.snapshot())
    assert body.find(data[:200]) < 0
    check, got = links(body)
    assert len(got) == 1                               # one link: the live stream throughout
    assert ads.events("a1") == {"error": 1}            # no impression, no tracking
    lis.close()
    fl.stop_process(src)


def test_a_creative_with_the_streams_serial_number_goes_out_under_another(server, ads,
                                                                         tmp_path):
    srv, src = ogg_station(server, ads, "vorbis")
    lis = listen(srv)
    live = serial_of(lis.snapshot())
    data = ogg_offer(ads, tmp_path, "vorbis", serial=live)
    assert serial_of(data) == live
    assert adbreak(srv, 10).status == 200
    lis.wait_bytes(lis.received + len(data) + 8192, 20)
    body = fl.strict_capture("vorbis", lis.snapshot())
    check, got = links(body)
    assert len(got) >= 3 and got[1][2].get("title") == "Spot a1"
    assert got[1][0][0] not in (live, got[2][0][0])
    ad_pages = [p.body for p in fl.ogg_pages(data)[0]]
    got_pages = [p.body for p in check.pages if p.serial == got[1][0][0]]
    assert got_pages == ad_pages                       # the same pages, under another serial
    errors = fl.ffmpeg_stream_decode_errors(body)
    assert errors == "", errors
    lis.close()
    fl.stop_process(src)


@pytest.mark.parametrize("codec,player", [("vorbis", "ogg123"), ("opus", "mpv")])
def test_a_player_plays_through_the_chain(server, ads, tmp_path, codec, player):
    data = ogg_offer(ads, tmp_path, codec, seconds=2)
    srv, src = ogg_station(server, ads, codec)
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wait_pages(lis, data)
    body = fl.strict_capture(codec, lis.snapshot())
    path = fl.save(str(tmp_path), "chain.ogg", body)
    if player == "ogg123":
        cmd = ["ogg123", "-q", "-d", "null", path]
    else:
        cmd = ["mpv", "--no-config", "--really-quiet", "--ao=null", "--vo=null", path]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    out = (p.stdout + p.stderr).strip()
    assert p.returncode == 0 and "rror" not in out, out
    lis.close()
    fl.stop_process(src)


def test_a_title_with_the_break_prefix_starts_a_break_on_an_ogg_mount(server, ads, tmp_path):
    data = ogg_offer(ads, tmp_path, "vorbis", seconds=2)
    srv, src = ogg_station(server, ads, "vorbis")
    lis = listen(srv)
    assert fl.set_metadata(srv, MOUNT, song="ADBREAK_LENGTH_6500").status == 200
    wait_pages(lis, data, after=8192)
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "6"
    errors = fl.ffmpeg_stream_decode_errors(fl.strict_capture("vorbis", lis.snapshot()))
    assert errors == "", errors
    lis.close()
    fl.stop_process(src)
