# SPDX-License-Identifier: GPL-2.0-or-later
"""Ad breaks for the HLS sessions of an Ogg Opus mount (docs/ADS.md, "HLS sessions"): the
creative, an Ogg Opus file of the mount's channels, is cut into fragmented MP4 as an Opus intro
is, with an init segment of its own. The ad server is the fake of adserver.py; segments of 2 s
(four parts of 0.5 s) keep the breaks short.

Covers: a break makes a session's playlist list, reload by reload (hlscheck.Checker: media and
discontinuity sequences of its own, a map changing only at a discontinuity), an
EXT-X-DISCONTINUITY, the EXT-X-MAP of the ad's init segment (hls/ad/<id>/init.mp4, the
creative's OpusHead), an EXT-X-DATERANGE of class com.rimecast.ad and the ad's fragments (the
creative's Opus packets, in order, timed from 0), then the live map again after another
discontinuity; tracking per session (all the ad's pieces: every event once; one part: start
only); ffmpeg decodes the session's HLS through the break with no complaint, the creative's
tone in it; a preroll lists the ad first, its map first, then the live map after a
discontinuity; a creative of other channels leaves the session on the live stream.
"""

import array
import os
import re
import subprocess

import pytest

import formatlib as fl
import hlscheck
import wirelib
from test_ads import ads, adbreak  # noqa: F401 (ads: fixture)
from test_ads_hls import (Session, ad_segments, first_segment, station, wait_ads_listed,
                          wait_rejoined)
from test_hls_opus import multivariant
from test_hls_opus_intro import tone

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

AD_FREQ = 880
LIVE_FREQ = 440


def opus_offer(ads, tmp_path, ad_id="a1", seconds=4, channels=1):
    """The ad server answers with one inline ad: an Ogg Opus file of a sine at AD_FREQ."""
    name = "%s.opus.ogg" % ad_id
    path = os.path.join(str(tmp_path), name)
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
           "sine=frequency=%d:sample_rate=48000:duration=%g" % (AD_FREQ, seconds),
           "-ac", str(channels), "-c:a", "libopus", "-b:a", "48k",
           "-metadata", "title=Spot " + ad_id, "-f", "ogg", path]
    subprocess.run(cmd, check=True, timeout=60, capture_output=True)
    with open(path, "rb") as f:
        data = f.read()
    ads.add_media(name, data)
    ads.ads.append((ad_id, name, "audio/ogg", seconds, None))
    return data


def opus_packets(data):
    """The audio packets of an Ogg Opus file (its two header packets left out)."""
    out, cur = [], b""
    for page in fl.ogg_pages(data)[0]:
        for piece, complete in fl.page_packets(page):
            cur += piece
            if complete:
                out.append(cur)
                cur = b""
    return out[2:]


def opus_station(server, ads, **kw):
    srv, src, mount = station(server, ads, "opus", **kw)
    multivariant(srv, mount)
    return srv, src, mount


def test_a_break_lists_the_ads_fragments_after_a_map_of_their_own(server, ads, tmp_path):
    data = opus_offer(ads, tmp_path, seconds=4)
    srv, src, mount = opus_station(server, ads)
    whole = Session(srv, mount, agent="wiretest-whole/1.0")
    part = Session(srv, mount, agent="wiretest-part/1.0")
    for sess in (whole, part):
        first = sess.reload()
        assert first["segments"][-1]["uri"].endswith(".mp4")
        sess.piece(first["segments"][-1]["uri"])           # a listener now
    assert adbreak(srv, 10, mount=mount).status == 200
    pl = wait_ads_listed(whole)
    seg = ad_segments(pl)[0]
    assert seg["discontinuity"], "no EXT-X-DISCONTINUITY before the ad"
    assert re.fullmatch(r"hls/ad/[0-9a-f]{32}/init\.mp4", seg["map"]), seg
    assert re.fullmatch(r"hls/ad/[0-9a-f]{32}/0\.mp4", seg["uri"]), seg
    text = whole.playlist_text()
    assert 'CLASS="com.rimecast.ad"' in text and "#EXT-X-DATERANGE:ID=" in text, text
    # the other session: its own break, the same URIs
    other = wait_ads_listed(part)
    assert ad_segments(other)[0]["map"] == seg["map"]
    part.piece(ad_segments(other)[0]["parts"][0]["uri"])   # one part: the ad started
    pl = wait_rejoined(whole)
    segs = pl["segments"]
    last_ad = max(i for i, s in enumerate(segs) if "/ad/" in s["uri"])
    rejoin = segs[last_ad + 1]
    assert rejoin["discontinuity"], "no EXT-X-DISCONTINUITY after the ad"
    assert re.fullmatch(r"hls/\d+\.init\.mp4", rejoin["map"]), rejoin
    # the ad's init segment: the creative's OpusHead; its fragments: the creative's packets
    headers, init = whole.piece(seg["map"])
    assert headers["content-type"] == "audio/mp4" and "public" in headers["cache-control"]
    d = hlscheck.opus_init(init)
    assert d["channels"] == 1 and d["timescale"] == 48000, d
    listed = ad_segments(pl)
    names = [s["uri"].rsplit("/", 1)[1] for s in listed]
    assert len(names) >= 2 and names == ["%d.mp4" % i for i in range(len(names))], names
    bodies = [whole.piece(s["uri"])[1] for s in listed]
    frags = [f for b in bodies for f in hlscheck.fragments(b)]
    assert b"".join(f["mdat"] for f in frags) == b"".join(opus_packets(data))
    assert frags[0]["tfdt"] == 0
    for a, b in zip(frags, frags[1:]):                      # decode times follow on
        assert b["tfdt"] == a["tfdt"] + sum(a["durations"])
    assert b"Ad a1" in bodies[0]                            # its title (emsg ID3)
    path = fl.save(str(tmp_path), "ad.mp4", init + b"".join(bodies))
    assert fl.ffmpeg_decode_errors(path) == ""
    # tracking per session: every event for the one that fetched it all, start for the other
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    ev = ads.events("a1")
    assert ev == {"start": 2, "impression": 1, "firstQuartile": 1, "midpoint": 1,
                  "thirdQuartile": 1, "complete": 1}, ev
    common = Session(srv, mount, agent="wiretest-common/1.0").reload()
    assert not ad_segments(common) and common["segments"][-1]["map"] == rejoin["map"]
    whole.close()
    part.close()
    fl.stop_process(src)


def test_ffmpeg_decodes_a_sessions_opus_hls_through_a_break(server, ads, tmp_path):
    opus_offer(ads, tmp_path, seconds=4)
    srv, src, mount = opus_station(server, ads)
    token = hlscheck.issue_token(srv.host, srv.port, mount)
    url = "%s/hls.m3u8?session=%s" % (mount, token)
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-user_agent", "ffmpeg-hls",
           "-i", srv.url(url), "-t", "22", "-ac", "1", "-ar", "48000", "-f", "s16le", "-"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wirelib.wait_until(lambda: fl.json_source(srv, mount).get("listeners", 0) >= 1, 20,
                       "ffmpeg's session to listen")
    assert adbreak(srv, 8, mount=mount).status == 200
    out, err = p.communicate(timeout=120)
    err = err.decode(errors="replace")
    assert p.returncode == 0 and fl._decode_complaints(err) == "", err
    pcm = array.array("h", out)
    assert len(pcm) >= 10 * 48000
    heard = [round(tone(pcm, t / 2, 0.5)) for t in range(0, 2 * (len(pcm) // 48000) - 1)]
    ad_at = [i for i, f in enumerate(heard) if abs(f - AD_FREQ) < 20]
    assert len(ad_at) >= 6, (len(pcm), heard)               # 3 s of the ad's 4 at least
    assert any(abs(f - LIVE_FREQ) < 20 for f in heard[:ad_at[0]]), heard
    assert any(abs(f - LIVE_FREQ) < 20 for f in heard[ad_at[-1] + 1:]), heard
    ev = ads.events("a1")                   # it fetched the ad's segments, all of them
    assert ev.get("start") == 1 and ev.get("complete") == 1, ev
    fl.stop_process(src)


def test_a_creative_of_other_channels_leaves_the_session_on_the_live_stream(server, ads,
                                                                           tmp_path):
    opus_offer(ads, tmp_path, seconds=3, channels=2)        # the mount is mono
    srv, src, mount = opus_station(server, ads)
    sess = Session(srv, mount)
    sess.piece(sess.reload()["segments"][-1]["uri"])
    assert adbreak(srv, 6, mount=mount).status == 200
    sess.reload()                                           # the session asks at its reload
    srv.wait_log("no media file in the stream's format", 10)
    start = sess.reload()["segments"][-1]["seq"]
    pl = sess.checker.reload_until(sess.playlist_text,
                                   lambda p: p if p["segments"][-1]["seq"] >= start + 4 else None,
                                   20, "four more segments")
    assert not ad_segments(pl) and not sess.checker.discontinuities
    other = Session(srv, mount, agent="wiretest-other/1.0")
    assert other.reload()["msn"] == sess.reload()["msn"]     # the window's numbers
    assert not ads.events("a1").get("start")
    sess.close()
    other.close()
    fl.stop_process(src)


def test_a_preroll_on_an_opus_mount_lists_the_ad_with_its_map_first(server, ads, tmp_path):
    opus_offer(ads, tmp_path, seconds=3)
    srv, src, mount = opus_station(server, ads, extra="<preroll>1</preroll>"
                                   "<preroll-duration>10</preroll-duration>")
    first_segment(srv, mount, ads)
    sess = Session(srv, mount)
    text = sess.playlist_text()
    pl = sess.checker.check(text)
    segs, n = pl["segments"], len(ad_segments(pl))
    assert n >= 2 and segs[0]["uri"].startswith("hls/ad/") and segs[0]["discontinuity"], text
    assert re.fullmatch(r"hls/ad/[0-9a-f]{32}/init\.mp4", segs[0]["map"]), text
    assert "#EXT-X-START:TIME-OFFSET=0" in text
    live = segs[n]
    assert live["discontinuity"] and re.fullmatch(r"hls/\d+\.init\.mp4", live["map"]), text
    _, init = sess.piece(segs[0]["map"])
    assert hlscheck.opus_init(init)["channels"] == 1
    for s in ad_segments(pl):
        sess.piece(s["uri"])
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 10, "complete")
    sess.close()
    fl.stop_process(src)
