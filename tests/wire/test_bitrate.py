# SPDX-License-Identifier: GPL-2.0-or-later
"""The bitrate of an MP3 or AAC stream whose source names none (ffmpeg sends no ice-bitrate)
is read from its frames: the admin stats, the admin page, status-json and the directory
listing show it (CBR MP3: the frames' own bitrate; AAC: the average so far, without the ADTS
headers, rounded to kbit/s). What the source names still wins."""

import subprocess

import pytest

import adminlib
import formatlib as fl
import httprec
import wirelib
from conftest import SOURCE_PASSWORD

pytestmark = pytest.mark.rimecast_only

directory = httprec.recorder_fixture(
    "directory", lambda req: (200, {"YPResponse": "1", "SID": "sid-1", "TouchFreq": "30"}
                              if req.action == "add" else {"YPResponse": "1"}))

CASES = {
    # name: (ffmpeg output args, content type, muxer, kbit/s shown)
    "mp3-128k": (["-c:a", "libmp3lame", "-b:a", "128k"], "audio/mpeg", "mp3", "128"),
    "aac-96k": (["-c:a", "aac", "-b:a", "96k"], "audio/aac", "adts", "96"),
}


def ffmpeg_public_source(srv, mount, args, ctype, muxer):
    url = "icecast://source:%s@%s:%d%s" % (SOURCE_PASSWORD, srv.host, srv.port, mount)
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i",
           "sine=frequency=440:sample_rate=44100"] + args + [
           "-content_type", ctype, "-ice_name", "Rate", "-ice_public", "1"]
    return subprocess.Popen(cmd + ["-f", muxer, url], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def shown_bitrate(srv, mount):
    s = fl.stats_source(srv, mount)
    return s.findtext("bitrate") if s is not None else None


@pytest.mark.parametrize("case", sorted(CASES))
def test_bitrate_from_the_frames_when_the_source_names_none(server, directory, case):
    args, ctype, muxer, kbps = CASES[case]
    d = directory()
    srv = server(extra_xml="<directory><yp-url>%s</yp-url><yp-url-timeout>2</yp-url-timeout>"
                 "<add-delay>3</add-delay></directory>" % d.url("/cgi"))
    mount = "/rate"
    enc = ffmpeg_public_source(srv, mount, args, ctype, muxer)
    try:
        fl.wait_mount(srv, mount, enc)
        wirelib.wait_until(lambda: shown_bitrate(srv, mount) is not None, 10,
                           "the stats to show a bitrate")
        assert shown_bitrate(srv, mount) == kbps
        js = fl.json_source(srv, mount)
        assert str(js.get("bitrate")) == kbps, js
        page = adminlib.admin(srv, "/admin/stats.xsl")
        assert page.status == 200 and ("%s kbit/s" % kbps) in page.text
        assert d.wait("add", 1, 10)[0].form["b"] == kbps
        # still the frames' value a few seconds on (the AAC average moves, its rounding not)
        wirelib.wait_until(lambda: int(fl.stats_source(srv, mount).findtext(
            "total_bytes_read") or 0) > 6 * int(kbps) * 125, 15, "6 s of audio")
        assert shown_bitrate(srv, mount) == kbps
    finally:
        fl.stop_process(enc)


def test_bitrate_the_source_names_wins_over_the_frames(server):
    srv = server()
    audio = fl.encode_file(srv.dir + "/clip.mp3", "mp3", 4)   # 64k frames
    src = srv.source("/named", audio, rate=16 * 1024, loop=True, headers={"ice-bitrate": "112"})
    assert src.connect().status == 200
    src.start()
    try:
        wirelib.wait_until(lambda: (fl.stats_source(srv, "/named").findtext("audio_bitrate")
                                    or "") == "64000", 10, "the frames' bitrate to be read")
        assert shown_bitrate(srv, "/named") == "112"
    finally:
        src.close()
