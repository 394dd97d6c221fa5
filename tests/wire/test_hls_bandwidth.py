# SPDX-License-Identifier: GPL-2.0-or-later
"""BANDWIDTH and AVERAGE-BANDWIDTH of the multivariant playlist (RFC 8216bis 4.4.6.2: the peak
and the average segment bit rate): before the first segment is complete they come from the
stream's bit rate (what the format handler measured, or what the source declared) plus what
the segments add (ID3 tags, ADTS headers, fMP4 boxes), then from the segments themselves. Each
is checked against the bit rate of the segments a player then fetches."""

import subprocess
import time

import pytest

import formatlib as fl
import hlscheck
import wirelib
from test_hls import get

pytestmark = pytest.mark.rimecast_only

TARGET = 6  # the default target duration (seconds)

CODECS = {
    # codec: (ffmpeg encoder args for a bit rate in kbit/s, content type, muxer)
    "mp3": (lambda k: ["-c:a", "libmp3lame", "-b:a", "%dk" % k], "audio/mpeg", "mp3"),
    "aac": (lambda k: ["-c:a", "aac", "-b:a", "%dk" % k], "audio/aac", "adts"),
}


def ffmpeg_source_at(srv, mount, codec, kbps):
    """A real-time ffmpeg encoder streaming a sine wave at kbps to the mount (it declares no
    bit rate: the server measures it)."""
    args, ctype, muxer = CODECS[codec]
    url = "icecast://source:%s@%s:%d%s" % (fl.SOURCE_PASSWORD, srv.host, srv.port, mount)
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i",
           "sine=frequency=440:sample_rate=44100"] + args(kbps) + [
           "-content_type", ctype, "-f", muxer, url]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def variant(srv, mount):
    status, _, body = get(srv, mount + "/hls.m3u8")
    assert status == 200, (status, body[:200])
    v = hlscheck.parse_multivariant(body.decode())
    if "AVERAGE-BANDWIDTH" in v:
        v["AVERAGE-BANDWIDTH"] = int(v["AVERAGE-BANDWIDTH"])
    return v


def segment_rates(srv, mount, media_uri, count=2):
    """Bit rates (bit/s) of the first `count` segments the session's playlist lists, as
    served (the bytes a player fetches over the duration EXTINF says)."""
    def listed():
        status, _, body = get(srv, mount + "/" + media_uri, timeout=4 * TARGET)
        assert status == 200, status
        pl = hlscheck.parse(body.decode())
        return pl if len(pl["segments"]) >= count else None
    pl = wirelib.wait_until(listed, 4 * TARGET * count, "%d segments" % count, interval=0.5)
    rates = []
    for seg in pl["segments"][:count]:
        status, _, body = get(srv, mount + "/" + seg["uri"])
        assert status == 200
        rates.append(8 * len(body) / seg["duration"])
    return rates


def check_bandwidth(srv, mount, on_air_since, margin):
    """The multivariant playlist asked while no segment can be complete (its first request
    makes the window, which cuts what the mount holds: less than a target duration), held
    against the segments that then come, and the one asked once they are there."""
    early = variant(srv, mount)
    on_air = time.monotonic() - on_air_since
    assert on_air < TARGET - 1.5, "on air %.1f s: a segment may be complete already" % on_air
    rates = segment_rates(srv, mount, early["uri"])
    average = sum(rates) / len(rates)
    # before any segment: the stream's rate with what the segments add, for both
    assert early["BANDWIDTH"] == early["AVERAGE-BANDWIDTH"], early
    assert abs(early["BANDWIDTH"] - average) <= margin * average, (early, rates)
    # with segments: the peak and the average of those held (these and maybe one more)
    later = variant(srv, mount)
    assert later["AVERAGE-BANDWIDTH"] <= later["BANDWIDTH"], later
    assert later["BANDWIDTH"] >= max(rates) - 1, (later, rates)
    assert abs(later["AVERAGE-BANDWIDTH"] - average) <= margin * average, (later, rates)
    return early, later, rates


@pytest.mark.parametrize("codec,kbps,margin", [
    ("mp3", 64, 0.02),
    ("mp3", 128, 0.02),
    # ffmpeg's AAC encoder is not constant: its first seconds' rate vs. its segments'
    ("aac", 64, 0.05),
])
def test_first_multivariant_says_the_stream_rate_before_any_segment(server, codec, kbps, margin):
    srv = server()
    mount = "/live." + codec
    t0 = time.monotonic()
    p = ffmpeg_source_at(srv, mount, codec, kbps)
    try:
        fl.wait_mount(srv, mount, p)
        # the format handler tells the rate after a second of audio (as the stats show it)
        wirelib.wait_until(lambda: (fl.json_source(srv, mount) or {}).get("bitrate"), 5,
                           "the measured bit rate in the stats", interval=0.1)
        measured = int(fl.json_source(srv, mount)["bitrate"]) * 1000
        early, later, rates = check_bandwidth(srv, mount, t0, margin)
    finally:
        fl.stop_process(p)
    print("%s %d kbit/s: measured %d, first %s, later %s, segments %s"
          % (codec, kbps, measured, early, later, [round(r) for r in rates]))
    if codec == "mp3":  # CBR: the frames' rate and an ID3 tag a segment
        assert kbps * 1000 < early["BANDWIDTH"] < kbps * 1000 + 200, early
    else:  # the ADTS headers (7 bytes a frame) are in the segments, not in the codec's rate
        assert early["BANDWIDTH"] > measured + 2000, (early, measured)


def test_first_multivariant_of_an_opus_mount_says_its_declared_rate_and_boxes(server, tmp_path):
    """An Ogg Opus source that declares its rate (ice-audio-info, as butt and Liquidsoap send
    it): the fMP4 segments carry it plus an emsg, moof and mdat a part (some 7 kbit/s at
    32 kbit/s and the default half-second parts), which the first BANDWIDTH counts too."""
    srv = server()
    mount = "/live.opus"
    path = str(tmp_path / "cbr.opus")
    subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                    "-i", "sine=frequency=440:sample_rate=48000:duration=40", "-c:a", "libopus",
                    "-b:a", "32k", "-vbr", "off", "-f", "ogg", path],
                   check=True, timeout=60, capture_output=True)
    data = open(path, "rb").read()
    t0 = time.monotonic()
    src = srv.source(mount, data, content_type="application/ogg", rate=len(data) // 40,
                     headers={"ice-audio-info": "ice-samplerate=48000;ice-bitrate=32"})
    try:
        assert src.connect().status == 200
        src.start()
        # 503 until the codec headers came
        wirelib.wait_until(lambda: get(srv, mount + "/hls.m3u8")[0] == 200, 5, "Opus HLS",
                           interval=0.1)
        early, later, rates = check_bandwidth(srv, mount, t0, 0.03)
    finally:
        src.close()
    print("opus 32 kbit/s: first %s, later %s, segments %s"
          % (early, later, [round(r) for r in rates]))
    assert 32000 + 5000 < early["BANDWIDTH"] < 32000 + 9000, early
