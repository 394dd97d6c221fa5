# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS of Ogg Opus mounts in fragmented MP4 (RFC 8216 3.3): an init segment (EXT-X-MAP) built
from the stream's OpusHead, and segments and low-latency parts of moof + mdat fragments of
the mount's Opus packets, nothing transcoded. ffmpeg plays it; the playlist checker holds
over reloads and a source reconnect (a discontinuity and a new map); the boxes are read in
Python; a chained stream with another OpusHead gets a new init segment. Rimecast only."""

import struct
import subprocess

import pytest

import formatlib as fl
import hlscheck
import wirelib
from test_hls import (_id3_frames, blocking_reloads_are_answered_when_the_part_exists,
                      ffmpeg_play_hls, get, playlist, reload_over_a_source_reconnect,
                      start_source)

pytestmark = pytest.mark.rimecast_only

MOUNT = "/live.opus"
TIMESTAMP_OWNER = b"com.apple.streaming.transportStreamTimestamp\0"


def fetch(srv, uri, mount=MOUNT):
    status, headers, body = get(srv, mount + "/" + uri)
    assert status == 200, (uri, status, body[:200])
    return headers, body


def ogg_opus_head(srv, mount=MOUNT):
    """The OpusHead packet the mount's listeners get first."""
    s = wirelib.connect(srv.host, srv.port)
    try:
        s.sendall(("GET %s HTTP/1.0\r\n\r\n" % mount).encode())
        head, rest = wirelib.read_head(s)
        data = rest
        while fl.parse_page(data, 0) is None:
            data += s.recv(4096)
    finally:
        s.close()
    page = fl.parse_page(data, 0)
    assert page.bos
    return fl.page_packets(page)[0][0]


def multivariant(srv, mount=MOUNT):
    """The multivariant playlist, once the mount's codec headers came (503 until then)."""
    def answered():
        r = get(srv, mount + "/hls.m3u8")
        assert r[0] in (200, 503), r
        return r if r[0] == 200 else None
    return wirelib.wait_until(answered, 10, "the Opus mount's HLS", interval=0.1)


def opus_source(srv, mount=MOUNT):
    p = start_source(srv, mount, "opus")
    multivariant(srv, mount)
    return p


def test_ffmpeg_plays_the_opus_hls_for_30_seconds(server):
    srv = server()
    p = opus_source(srv)
    try:
        r = ffmpeg_play_hls(srv, MOUNT, 30)
    finally:
        fl.stop_process(p)
    assert r.returncode == 0 and fl._decode_complaints(r.stderr) == "", r.stderr


def test_init_segment_describes_the_opus_stream_and_segments_last_their_extinf(server, tmp_path):
    srv = server()
    p = opus_source(srv)
    try:
        status, _, body = multivariant(srv)
        variant = hlscheck.parse_multivariant(body.decode())
        pl = hlscheck.Checker().check(playlist(srv, MOUNT))
        opus_head = ogg_opus_head(srv)
        seg = pl["segments"][-1]
        assert seg["map"] and seg["uri"].endswith(".mp4"), seg
        ih, init = fetch(srv, seg["map"])
        uri = MOUNT + "/" + seg["map"]
        status, hh, body = get(srv, uri, method="HEAD")
        cdn = {"head": (status, hh["content-length"], body),
               "not_modified": get(srv, uri, {"If-None-Match": ih["etag"]})[0],
               "range": get(srv, uri, {"Range": "bytes=8-31"})[::2]}
        sh, segment = fetch(srv, seg["uri"])
        parts = [fetch(srv, q["uri"])[1] for q in seg["parts"]]
    finally:
        fl.stop_process(p)
    assert variant["CODECS"] == "Opus"
    assert ih["content-type"] == "audio/mp4" and sh["content-type"] == "audio/mp4"
    assert "immutable" in ih["cache-control"] and ih["access-control-allow-origin"] == "*"
    assert cdn["head"] == (200, str(len(init)), b"")
    assert cdn["not_modified"] == 304 and cdn["range"] == (206, init[8:32])
    d = hlscheck.opus_init(init)
    assert d["top"] == ["ftyp", "moov"] and d["timescale"] == 48000
    channels, pre_skip, rate = struct.unpack_from("<BHI", opus_head, 9)
    assert (d["channels"], d["channelcount"], d["pre_skip"], d["rate"], d["family"]) == (
        channels, channels, pre_skip, rate, opus_head[18])
    frags = hlscheck.fragments(segment)
    ticks = sum(sum(f["durations"]) for f in frags)
    packet = max(max(f["durations"]) for f in frags)
    assert abs(ticks - seg["duration"] * 48000) < packet, (ticks, seg["duration"])
    for f in frags:
        assert sum(f["sizes"]) == len(f["mdat"])
    for a, b in zip(frags, frags[1:]):  # decode times follow on
        assert b["tfdt"] == a["tfdt"] + sum(a["durations"])
    # a segment is its parts back to back
    assert seg["parts"] and b"".join(parts) == segment
    path = fl.save(str(tmp_path), "seg.mp4", init + segment)
    assert fl.ffmpeg_decode_errors(path) == ""


def test_opus_playlist_rules_hold_over_reloads_and_a_source_reconnect(server):
    srv = server(extra_xml="<hls><target-duration>2</target-duration>"
                 "<part-target-ms>500</part-target-ms><segments>3</segments></hls>" +
                 fl.opus_titles_xml(MOUNT))
    check = hlscheck.Checker()
    p = [opus_source(srv)]

    def title_update(load):
        # carried into the Ogg stream as a new chain link with the same OpusHead: the
        # segments go on, with no discontinuity and the same map
        assert fl.set_metadata(srv, MOUNT, song="Next Song").status == 200
        fl.wait_title(srv, MOUNT, "Next Song")
        after_title = check.last["segments"][-1]["seq"] + 2
        check.reload_until(load, lambda pl: pl["segments"][-1]["seq"] >= after_title, 30,
                           "segments after the title")
        assert not check.discontinuities
        assert len({s["map"] for s in check.last["segments"]}) == 1

    def restart():
        fl.stop_process(p[0])
        p[0] = opus_source(srv)
    try:
        new = reload_over_a_source_reconnect(srv, MOUNT, check, restart, title_update)
        old_map = check.known[new["seq"] - 1][3]
        assert new["map"] and old_map and new["map"] != old_map
        hlscheck.opus_init(fetch(srv, new["map"])[1])
    finally:
        fl.stop_process(p[0])
    assert check.reloads > 20


def test_opus_blocking_reload_is_answered_when_the_part_exists(server):
    srv = server()
    p = opus_source(srv)
    try:
        pl = blocking_reloads_are_answered_when_the_part_exists(srv, MOUNT)
        # the preload hint's part is answered once complete, a fragment of its packets
        hint = pl["hint"]["URI"]
        headers, body = fetch(srv, hint)
        frags = hlscheck.fragments(body)
        assert len(frags) == 1 and frags[0]["durations"]
        assert sum(frags[0]["durations"]) <= pl["part_target"] * 48000
    finally:
        fl.stop_process(p)


def test_a_chained_stream_with_another_opus_head_gets_a_new_init_segment(server, tmp_path):
    """A source whose Ogg stream chains a mono Opus link and a stereo one: the second link's
    segments follow a discontinuity and a new EXT-X-MAP describing two channels."""
    srv = server(extra_xml="<hls><target-duration>2</target-duration>"
                 "<part-target-ms>500</part-target-ms></hls>")
    mono = fl.encode_file(str(tmp_path / "mono.opus"), "opus", 8)
    stereo = str(tmp_path / "stereo.opus")
    subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                    "-i", "sine=frequency=660:sample_rate=48000:duration=8", "-ac", "2",
                    "-c:a", "libopus", "-b:a", "48k", "-f", "ogg", stereo],
                   check=True, timeout=60, capture_output=True)
    with open(stereo, "rb") as f:
        chained = mono + f.read()
    # four times real time: the whole chain goes in within a few seconds
    src = srv.source(MOUNT, chained, rate=20000, content_type="audio/ogg")
    assert src.connect().status == 200
    src.start()
    try:
        multivariant(srv)
        check = hlscheck.Checker(min_window_targets=0)
        new = check.reload_until(lambda: playlist(srv, MOUNT),
                                 lambda pl: [s for s in pl["segments"] if s["discontinuity"]],
                                 30, "the stereo link's segments", interval=0.2)[0]
        before = [s for s in check.last["segments"] if s["seq"] < new["seq"]]
        assert before and new["map"] != before[-1]["map"], check.last
        first = hlscheck.opus_init(fetch(srv, before[-1]["map"])[1])
        init = fetch(srv, new["map"])[1]
        segment = fetch(srv, new["uri"])[1]
    finally:
        src.stop()
    assert (first["channels"], first["channelcount"]) == (1, 1)
    second = hlscheck.opus_init(init)
    assert (second["channels"], second["channelcount"]) == (2, 2)
    path = fl.save(str(tmp_path), "second.mp4", init + segment)
    assert fl.ffmpeg_decode_errors(path) == ""


def test_a_title_change_travels_in_an_emsg_box_of_the_next_part(server):
    """A title set on the Opus mount (carried into the Ogg stream as a new comment header)
    reaches HLS players as an emsg box (ID3 scheme) with a TIT2 frame, in front of the first
    fragment cut after the change, at that fragment's time. Every fragment has an emsg box
    whose ID3 tag holds its time (the PRIV timestamp frame, 90 kHz, as packed audio's);
    the parts after the change have no TIT2."""
    srv = server(extra_xml=fl.opus_titles_xml(MOUNT))
    p = opus_source(srv)
    try:
        playlist(srv, MOUNT)  # the window exists from here
        title = "Zoë Keating – Escape Artist"
        assert fl.set_metadata(srv, MOUNT, song=title).status == 200
        fl.wait_title(srv, MOUNT, title)

        def titled_parts():
            uris = hlscheck.part_uris(hlscheck.parse(playlist(srv, MOUNT)))
            found = []
            for uri in uris[-12:]:
                for f in hlscheck.fragments(fetch(srv, uri)[1]):
                    assert len(f["emsg"]) == 1, (uri, f)
                    t, scale, tag = f["emsg"][0]
                    frames = _id3_frames(tag)
                    stamp = frames.pop("PRIV")
                    assert stamp == TIMESTAMP_OWNER + (f["tfdt"] * 90000 // 48000 % (1 << 33)) \
                        .to_bytes(8, "big"), (uri, tag)
                    assert (t, scale) == (f["tfdt"], 48000), (uri, f)
                    if frames:
                        found.append((uri, frames))
            return found if found and found[0][0] != uris[-1] else None
        found = wirelib.wait_until(titled_parts, 30, "a part announcing the title", interval=0.5)
    finally:
        fl.stop_process(p)
    assert [frames for _, frames in found] == [{"TIT2": b"\x03" + title.encode()}], found
