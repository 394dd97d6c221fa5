# SPDX-License-Identifier: GPL-2.0-or-later
"""Moving listeners between mounts: /admin/moveclients, and fallback when a source leaves.

A listener's framing was promised in its response head: ICY metadata every icy-metaint bytes
on a non-Ogg mount, bare Ogg pages on an Ogg mount. So listeners move only between mounts of
the same family and keep their own interval there; a move across families is refused (admin)
or closes the listener cleanly (fallback). A move takes a slot on the destination like a new
listener: what does not fit stays (admin) or is closed (fallback), and the counters follow."""

import time

import pytest

import adminlib
import formatlib as fl
import wirelib

pytestmark = pytest.mark.rimecast_only

RATE = 32 * 1024
METAINT = 16000          # the default interval
B_METAINT = 4000         # /b.mp3's own interval in test_moved_icy_listener_...


def mp3_source(srv, mount, data):
    """A paced random-data MP3 source (byte-exact checks are possible on what listeners get)."""
    src = srv.source(mount, data, rate=RATE, chunk=1024, loop=True)
    assert src.connect().status == 200, src.response
    src.start()
    src.wait_sent(4096, 5)
    return src


def ogg_source(srv, mount):
    p = fl.ffmpeg_source(srv, mount, "vorbis")
    fl.wait_mount(srv, mount, p)
    return p


def listeners(srv, mount, n, icy=False):
    out = []
    for _ in range(n):
        lis = srv.listener(mount, headers={"Icy-MetaData": "1"} if icy else None)
        assert lis.open().status == 200, lis.response
        out.append(lis)
    for lis in out:
        lis.wait_bytes(4096, 5)
    return out


def global_listeners(srv):
    return adminlib.admin(srv, "/admin/stats").xml().findtext("listeners")


def wait_counts(srv, counts, total):
    for mount, n in counts.items():
        adminlib.wait_stat(srv, mount, "listeners", str(n))
    wirelib.wait_until(lambda: global_listeners(srv) == str(total), 5,
                       lambda: "global listeners == %d (is %s)" % (total, global_listeners(srv)))
    for mount, n in counts.items():
        listing = adminlib.admin(srv, "/admin/listclients?mount=" + mount).xml()
        assert len(listing.findall("source/listener")) == n, (mount, n)


def icy_audio(lis, metaint):
    """The audio of an ICY listener; every metadata block must be well formed at `metaint`."""
    audio, blocks = fl.icy_demux(lis.snapshot(), metaint)
    for _, text in blocks:
        if text:
            assert text.startswith(b"StreamTitle='") and text.endswith(b"';"), text
    return audio, blocks


def titles(blocks):
    return [fl.icy_fields(t)["StreamTitle"] for _, t in blocks if t]


def move(srv, src, dest):
    return adminlib.admin(srv, "/admin/moveclients?mount=%s&destination=%s" % (src, dest))


def close_all(*groups):
    for g in groups:
        for lis in g:
            lis.close()


# ---------------------------------------------------------------- formats

def test_moveclients_between_mp3_and_ogg_is_refused_and_listeners_stay(server, data, tmp_path):
    srv = server()
    a = mp3_source(srv, "/a.mp3", data)
    ogg = ogg_source(srv, "/b.ogg")
    icy = listeners(srv, "/a.mp3", 1, icy=True)
    og = listeners(srv, "/b.ogg", 1)
    try:
        for src, dest in (("/a.mp3", "/b.ogg"), ("/b.ogg", "/a.mp3")):
            r = move(srv, src, dest)
            assert r.status == 400, (r.status, r.body)
            assert b"different stream format" in r.body
        wait_counts(srv, {"/a.mp3": 1, "/b.ogg": 1}, 2)
        icy[0].wait_bytes(icy[0].received + 16384, 5)
        og[0].wait_bytes(og[0].received + 2048, 5)      # a sine in Vorbis: ~1.5 KB/s
        assert not icy[0].closed and not og[0].closed
    finally:
        close_all(icy, og)
        a.stop()
        fl.stop_process(ogg)
    audio, blocks = icy_audio(icy[0], METAINT)
    assert len(blocks) >= 1
    wirelib.locate_slice(data, audio)
    assert b"OggS" not in icy[0].snapshot()
    path = fl.save(str(tmp_path), "b.ogg", fl.trim_capture("vorbis", og[0].snapshot()))
    assert fl.ffmpeg_decode_errors(path) == ""


def test_fallback_to_an_ogg_mount_closes_icy_listeners_cleanly(server, data):
    srv = server(mounts=[{"mount_name": "/a.mp3", "fallback_mount": "/b.ogg"}])
    ogg = ogg_source(srv, "/b.ogg")
    a = mp3_source(srv, "/a.mp3", data)
    icy = listeners(srv, "/a.mp3", 3, icy=True)
    try:
        icy[0].wait_bytes(METAINT + 4096, 5)
        a.stop()
        for lis in icy:
            lis.wait_closed(10)
            lis.close()     # the server lingers until the client closes too
        wait_counts(srv, {"/b.ogg": 0}, 0)
        srv.wait_log("cannot move to fallback /b.ogg")
        assert srv.error_log().count("cannot move to fallback") == 1, "logged once, not per listener"
    finally:
        close_all(icy)
        fl.stop_process(ogg)
    for lis in icy:
        body = lis.snapshot()
        assert b"OggS" not in body
        audio, _ = icy_audio(lis, METAINT)
        wirelib.locate_slice(data, audio)


def test_fallback_from_ogg_to_mp3_closes_ogg_listeners_cleanly(server, data, tmp_path):
    srv = server(mounts=[{"mount_name": "/a.ogg", "fallback_mount": "/b.mp3"}])
    b = mp3_source(srv, "/b.mp3", data)
    ogg = ogg_source(srv, "/a.ogg")
    og = listeners(srv, "/a.ogg", 1)
    try:
        og[0].wait_bytes(og[0].received + 2048, 5)
        fl.stop_process(ogg)
        og[0].wait_closed(10)
        og[0].close()
        wait_counts(srv, {"/b.mp3": 0}, 0)
        srv.wait_log("cannot move to fallback /b.mp3")
    finally:
        close_all(og)
        b.stop()
    body = og[0].snapshot()
    assert fl.ogg_pages(body)[1] == len(body), "whole Ogg pages only, nothing after them"
    path = fl.save(str(tmp_path), "a.ogg", fl.trim_capture("vorbis", body))
    assert fl.ffmpeg_decode_errors(path) == ""


def test_moved_icy_listener_keeps_its_interval_and_gets_the_new_title(server, data):
    extra = ("<mount type=\"normal\"><mount-name>/b.mp3</mount-name>"
             "<mp3-metadata-interval>%d</mp3-metadata-interval></mount>" % B_METAINT)
    srv = server(extra_xml=extra)
    data_a, data_b = data[:4 << 20], data[4 << 20:]
    a = mp3_source(srv, "/a.mp3", data_a)
    b = mp3_source(srv, "/b.mp3", data_b)
    assert fl.set_metadata(srv, "/a.mp3", song="Alpha").status == 200
    assert fl.set_metadata(srv, "/b.mp3", song="Beta").status == 200
    lis = listeners(srv, "/a.mp3", 1, icy=True)[0]
    try:
        assert lis.response.header("icy-metaint") == str(METAINT)
        wirelib.wait_until(lambda: "Alpha" in titles(icy_audio(lis, METAINT)[1]), 5, "Alpha")
        r = move(srv, "/a.mp3", "/b.mp3")
        assert r.status == 200 and r.xml().findtext("message") == \
            "Clients moved from /a.mp3 to /b.mp3"
        wait_counts(srv, {"/a.mp3": 0, "/b.mp3": 1}, 1)
        wirelib.wait_until(lambda: "Beta" in titles(icy_audio(lis, METAINT)[1]), 5,
                           lambda: "Beta after the move (got %r)"
                           % titles(icy_audio(lis, METAINT)[1]))
        lis.wait_bytes(lis.received + 2 * METAINT, 5)
    finally:
        lis.close()
        a.stop()
        b.stop()
    audio, blocks = icy_audio(lis, METAINT)
    assert [pos for pos, _ in blocks] == [METAINT * (i + 1) for i in range(len(blocks))]
    got = titles(blocks)
    assert got[0] == "Alpha" and got[-1] == "Beta" and "Alpha" not in got[got.index("Beta"):]
    wirelib.locate_slice(data_a, audio[:METAINT])
    wirelib.locate_slice(data_b, audio[-METAINT:])


# ---------------------------------------------------------------- max-listeners

def test_moveclients_moves_only_as_many_as_the_destination_takes(server, data):
    srv = server(mounts=[{"mount_name": "/b.mp3", "max_listeners": 2}])
    a = mp3_source(srv, "/a.mp3", data[:4 << 20])
    b = mp3_source(srv, "/b.mp3", data[4 << 20:])
    on_b = listeners(srv, "/b.mp3", 1)
    on_a = listeners(srv, "/a.mp3", 3)
    try:
        r = move(srv, "/a.mp3", "/b.mp3")
        assert r.status == 200
        doc = r.xml()
        assert doc.findtext("message") == ("Clients moved from /a.mp3 to /b.mp3: 1 moved, "
                                           "2 not moved (destination full)")
        assert doc.findtext("return") == "1"
        wait_counts(srv, {"/a.mp3": 2, "/b.mp3": 2}, 4)
        adminlib.wait_stat(srv, "/b.mp3", "listener_peak", "2")
        for lis in on_a + on_b:
            lis.wait_bytes(lis.received + 8192, 5)
            assert not lis.closed
        extra = srv.listener("/b.mp3")
        extra.open(start=False)
        assert extra.status == 403
        extra.close()
        # nothing fits any more: nobody moves, and the answer says so
        r = move(srv, "/a.mp3", "/b.mp3").xml()
        assert r.findtext("message") == ("Clients moved from /a.mp3 to /b.mp3: 0 moved, "
                                         "2 not moved (destination full)")
        assert r.findtext("return") == "0"
        wait_counts(srv, {"/a.mp3": 2, "/b.mp3": 2}, 4)
    finally:
        close_all(on_a, on_b)
        a.stop()
        b.stop()


def test_fallback_into_a_full_mount_moves_what_fits_and_closes_the_rest(server, data):
    srv = server(mounts=[{"mount_name": "/a.mp3", "fallback_mount": "/b.mp3"},
                         {"mount_name": "/b.mp3", "max_listeners": 2}])
    data_a, data_b = data[:4 << 20], data[4 << 20:]
    b = mp3_source(srv, "/b.mp3", data_b)
    a = mp3_source(srv, "/a.mp3", data_a)
    on_a = listeners(srv, "/a.mp3", 5)
    try:
        a.stop()
        wirelib.wait_until(lambda: sum(l.closed for l in on_a) == 3, 10,
                           lambda: "3 listeners closed (%d are)" % sum(l.closed for l in on_a))
        moved = [l for l in on_a if not l.closed]
        for lis in on_a:
            if lis.closed:
                lis.close()
        for lis in moved:
            lis.wait_bytes(lis.received + 16384, 5)
        wait_counts(srv, {"/b.mp3": 2}, 2)
        srv.wait_log("cannot move to fallback /b.mp3 (max-listeners reached)")
        assert srv.error_log().count("cannot move to fallback") == 1, "logged once, not per listener"
        assert sum(l.closed for l in on_a) == 3
    finally:
        close_all(on_a)
        b.stop()
    for lis in moved:
        body = lis.snapshot()
        wirelib.locate_slice(data_b, body[-8192:])


# ---------------------------------------------------------------- whole frames and pages

NOISE = {
    # codec: (ffmpeg output args, content type, muxer); noise at a high bitrate fills a small
    # socket buffer in a moment, and its blocks are large
    "mp3": (["-c:a", "libmp3lame", "-b:a", "192k", "-id3v2_version", "0", "-write_xing", "0"],
            "audio/mpeg", "mp3"),
    "vorbis": (["-ac", "2", "-c:a", "libvorbis", "-q:a", "8"], "audio/ogg", "ogg"),
}


def noise_source(srv, mount, codec):
    args, ctype, muxer = NOISE[codec]
    url = "icecast://source:%s@%s:%d%s" % (fl.SOURCE_PASSWORD, srv.host, srv.port, mount)
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-re", "-f", "lavfi", "-i",
           "anoisesrc=sample_rate=44100:amplitude=0.3"] + args + [
           "-content_type", ctype, "-f", muxer, url]
    p = fl.subprocess.Popen(cmd, stdin=fl.subprocess.DEVNULL, stdout=fl.subprocess.DEVNULL,
                            stderr=fl.subprocess.PIPE)
    fl.wait_mount(srv, mount, p)
    return p


def stalled_then_moved(srv, a, b):
    """A listener of a with a tiny receive buffer (and the server a small send buffer) that
    reads nothing for a while: the server's writes stop partway through its burst, most likely
    partway through a block. It is moved to b while stalled, then reads for a while."""
    time.sleep(3)       # a burst of more than both socket buffers hold
    lis = srv.listener(a, rcvbuf=4096)
    assert lis.open(start=False).status == 200, lis.response
    time.sleep(1.5)
    r = move(srv, a, b)
    assert r.status == 200 and r.xml().findtext("message") == \
        "Clients moved from %s to %s" % (a, b)
    adminlib.wait_stat(srv, b, "listeners", "1")
    lis.start()
    lis.wait_bytes(lis.received + 64 * 1024, 15)
    lis.close()
    return lis.snapshot()


def test_listener_moved_while_stalled_mid_block_gets_whole_mp3_frames(server, tmp_path):
    srv = server(sndbuf=8192)
    a = noise_source(srv, "/a.mp3", "mp3")
    b = noise_source(srv, "/b.mp3", "mp3")
    try:
        body = stalled_then_moved(srv, "/a.mp3", "/b.mp3")
    finally:
        fl.stop_process(a)
        fl.stop_process(b)
    # back-to-back frames from the first byte to the last complete one: none is cut
    pos = 0
    while True:
        n = fl.mp3_frame_len(body, pos)
        if not n or pos + n > len(body):
            break
        pos += n
    assert pos > len(body) - 2048, "frames stop at byte %d of %d: %r" % (
        pos, len(body), body[pos:pos + 8])
    path = fl.save(str(tmp_path), "moved.mp3", body[:pos])
    assert fl.ffmpeg_decode_errors(path) == ""


def test_listener_moved_while_stalled_mid_block_gets_whole_ogg_pages(server, tmp_path):
    srv = server(sndbuf=8192)
    a = noise_source(srv, "/a.ogg", "vorbis")
    b = noise_source(srv, "/b.ogg", "vorbis")
    try:
        body = stalled_then_moved(srv, "/a.ogg", "/b.ogg")
    finally:
        fl.stop_process(a)
        fl.stop_process(b)
    # whole pages with good CRCs from the first byte, and a second chain link (b's headers)
    check = fl.OggCheck(body)
    assert check.complete > len(body) - 65536
    assert check.codecs() == [["vorbis"], ["vorbis"]], check.codecs()
    path = fl.save(str(tmp_path), "moved.ogg", body[:check.complete])
    assert fl.ffmpeg_stream_decode_errors(body[:check.complete]) == ""
    assert fl.oggdec_errors(path) == ""
