# SPDX-License-Identifier: GPL-2.0-or-later
"""A relay's listeners start on a frame, as a source-fed mount's do.

An upstream answers a relay from wherever its stream is: here an ID3v2 tag and then the middle
of an MP3 frame, on every connection. The relay follows the frames before it publishes
anything: the first listener of an on-demand relay, and the listeners kept across a relay's
reconnects, get back-to-back MP3 frames from their first byte (no tag, no partial frame), and
ffmpeg decodes what they got without an error.
"""

import pytest

import formatlib
import wirelib
from upstreamlib import FakeUpstream

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(formatlib.FFMPEG is None, reason="ffmpeg not installed")]


def upstream_bytes(tmp_path):
    """An ffmpeg-made MP3 (64 kbit/s) as an upstream sends it to a relay joining mid-stream:
    its ID3v2 tag, then its frames from 100 bytes into the third one."""
    mp3 = formatlib.encode_file(str(tmp_path / "tone.mp3"), "mp3", 30)
    tag = formatlib.id3v2_len(mp3, 0)
    assert tag > 0, "ffmpeg wrote no ID3v2 tag"
    pos = tag
    for _ in range(2):
        pos += formatlib.mp3_frame_len(mp3, pos)
    assert formatlib.mp3_frame_len(mp3, pos) > 100
    return mp3[:tag] + mp3[pos + 100:]


def frames_only(data):
    """data is back-to-back MP3 frames from its first byte (no tag between them), but for a
    last frame cut where the capture ended; returns how many frames."""
    pos = count = 0
    while pos < len(data):
        n = formatlib.mp3_frame_len(data, pos)
        if not n or pos + n > len(data):
            break
        pos += n
        count += 1
    assert len(data) - pos < 7 or formatlib.mp3_frame_len(data, pos) > len(data) - pos, \
        "not a frame at byte %d of %d: %r" % (pos, len(data), bytes(data[pos:pos + 16]))
    return count


def check_capture(capture):
    assert capture[:1] == b"\xff" and capture[1] & 0xE0 == 0xE0, capture[:16]
    assert frames_only(capture) > 10
    assert formatlib.ffmpeg_stream_decode_errors(bytes(capture), "mp3") == ""


def relay_xml(port, on_demand):
    return ("<relay><server>127.0.0.1</server><port>%d</port><mount>/live.mp3</mount>"
            "<local-mount>/edge.mp3</local-mount><on-demand>%d</on-demand>"
            "<relay-shoutcast-metadata>0</relay-shoutcast-metadata></relay>"
            % (port, on_demand))


def test_the_first_listener_of_an_on_demand_relay_starts_on_a_frame(server, tmp_path):
    up = FakeUpstream(streams={"/live.mp3": upstream_bytes(tmp_path)}, rate=16000)
    try:
        edge = server(extra_xml=relay_xml(up.port, 1))
        lis = edge.listener("/edge.mp3")
        assert lis.open(timeout=15).status == 200
        lis.wait_bytes(24000, 15)
        lis.close()
        check_capture(lis.snapshot())
    finally:
        up.close()


@pytest.mark.slow
def test_listeners_kept_across_relay_reconnects_get_whole_frames(server, tmp_path):
    # every connection is cut after 2.5 s (mid-frame) and starts again with the tag and a
    # partial frame
    up = FakeUpstream(streams={"/live.mp3": upstream_bytes(tmp_path)}, rate=16000,
                      cut_after=40000)
    try:
        edge = server(extra_xml=relay_xml(up.port, 0))
        formatlib.wait_mount(edge, "/edge.mp3")
        lis = edge.listener("/edge.mp3")
        assert lis.open().status == 200
        wirelib.wait_until(lambda: len(up.requests_for("/live.mp3")) >= 3, 20,
                           "two reconnects of the relay")
        lis.wait_bytes(lis.received + 8000, 10)    # and audio after the second one
        lis.close()
        assert not lis.closed or lis.close_reason is None, lis.close_reason
        check_capture(lis.snapshot())
    finally:
        up.close()
