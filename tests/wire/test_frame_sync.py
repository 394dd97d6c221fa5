# SPDX-License-Identifier: GPL-2.0-or-later
"""MP3 and AAC (ADTS) frame sync: a listener joining mid-stream, and one moved between two
mounts by /admin/moveclients, gets whole frames only and decodes with no ffmpeg error.

Icecast 2.4 starts a listener wherever its 1 400-byte refbuf begins (mid-frame), so these are
Rimecast-only."""

import time

import pytest

import adminlib
import formatlib as fl

pytestmark = pytest.mark.rimecast_only

FRAME_LEN = {"mp3": fl.mp3_frame_len, "aac": fl.adts_frame_len}


def frames_from_start(codec, data):
    """The capture must be back-to-back frames from its first byte; returns it cut after the
    last complete frame."""
    frame_len = FRAME_LEN[codec]
    pos = 0
    while True:
        n = frame_len(data, pos)
        if not n or pos + n > len(data):
            break
        pos += n
    assert pos > len(data) - 8192, "frames stop at byte %d of %d: %r" % (
        pos, len(data), bytes(data[pos:pos + 8]))
    return data[:pos]


def start_source(srv, mount, codec, freq):
    p = fl.ffmpeg_source(srv, mount, codec, freq=freq)
    fl.wait_mount(srv, mount, p)
    return p


@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_listener_joining_mid_stream_starts_at_a_frame(server, tmp_path, codec):
    # a burst point that is no frame boundary: the start moves back to the frame before it
    srv = server(burst_size=10001)
    p = start_source(srv, "/live." + codec, codec, 440)
    try:
        time.sleep(2.5)
        lis = srv.listener("/live." + codec)
        assert lis.open().status == 200
        lis.wait_bytes(16384, 10)
        lis.close()
    finally:
        fl.stop_process(p)
    got = frames_from_start(codec, lis.snapshot())
    path = fl.save(str(tmp_path), "live." + codec, got)
    assert fl.ffmpeg_decode_errors(path) == ""


@pytest.mark.parametrize("codec", ["mp3", "aac"])
def test_listener_moved_between_mounts_gets_whole_frames(server, tmp_path, codec):
    srv = server(burst_size=10001)
    a = start_source(srv, "/a." + codec, codec, 440)
    b = start_source(srv, "/b." + codec, codec, 880)
    try:
        time.sleep(1.5)
        lis = srv.listener("/a." + codec)
        assert lis.open().status == 200
        lis.wait_bytes(16384, 10)
        before = lis.received
        r = adminlib.admin(srv, "/admin/moveclients?mount=/a.%s&destination=/b.%s"
                           % (codec, codec))
        assert r.status == 200, r.body
        adminlib.wait_stat(srv, "/b." + codec, "listeners", "1")
        lis.wait_bytes(before + 16384, 10)
        lis.close()
    finally:
        fl.stop_process(a)
        fl.stop_process(b)
    got = frames_from_start(codec, lis.snapshot())
    path = fl.save(str(tmp_path), "moved." + codec, got)
    assert fl.ffmpeg_decode_errors(path) == ""
