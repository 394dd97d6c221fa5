# SPDX-License-Identifier: GPL-2.0-or-later
"""Fallbacks a station can trust, with real encoders as sources and ffmpeg decoding what a
listener got: a source leaving sends its listeners to the fallback (a chain of them, resolved
by name when the move happens), fallback-override brings them back, a mount with no source
serves its fallback, fallback-when-full serves it to listeners over max-listeners, runtime
fallbacks (/admin/fallbacks) follow the fallback's reconnecting source, and cycles neither
loop nor leak."""

import os
import shutil
import tempfile
import time

import pytest

import adminlib
import formatlib as fl
import wirelib
from conftest import IS_ICECAST


def mount_xml(name, **settings):
    body = "".join("<%s>%s</%s>" % (k.replace("_", "-"), v, k.replace("_", "-"))
                   for k, v in settings.items())
    return '<mount type="normal"><mount-name>%s</mount-name>%s</mount>' % (name, body)


def start(server, *mounts, **cfg):
    return server(extra_xml="\n".join(mounts), **cfg)


def source(srv, mount, codec="mp3", freq=440):
    p = fl.ffmpeg_source(srv, mount, codec, freq=freq)
    fl.wait_mount(srv, mount, p)
    return p


def listener(srv, mount, min_bytes=4096):
    lis = srv.listener(mount)
    r = lis.open()
    assert r is not None and r.status == 200, (mount, lis.response)
    lis.wait_bytes(min_bytes, 10)
    return lis


def listeners_on(srv, mount):
    s = fl.stats_source(srv, mount)
    return None if s is None else int(s.findtext("listeners"))


def wait_listeners(srv, mount, n, timeout=10):
    wirelib.wait_until(lambda: listeners_on(srv, mount) == n, timeout,
                       lambda: "%d listeners on %s (has %s)" % (n, mount, listeners_on(srv, mount)))


def keeps_receiving(lis, extra, timeout=10):
    lis.wait_bytes(lis.received + extra, timeout)
    assert not lis.closed, lis.close_reason


def decodes(tmp_path, lis, codec, name, links=None, ended_with_eos=0):
    """Everything the listener received is whole frames (MP3) or whole pages of whole chained
    Vorbis streams (Ogg), but for the one frame or page its capture was cut in, and ffmpeg
    decodes it without an error. links: the chain links (Ogg) the capture must hold."""
    body = lis.snapshot()
    assert len(body) == lis.received
    if IS_ICECAST:      # Icecast 2.4 starts and moves listeners mid-frame: what decodes of it
        path = fl.save(str(tmp_path), name, fl.trim_capture(codec, body))
        errors = fl.ffmpeg_decode_errors(path)
        assert errors == "", errors
        return path
    if codec == "mp3":
        kept = fl.strict_capture(codec, body)
        path = fl.save(str(tmp_path), name, kept)
        errors = fl.ffmpeg_decode_errors(path)
    else:
        check, kept = fl.whole_pages_from_start(body)
        assert check.codecs() == [["vorbis"]] * len(check.groups), check.codecs()
        assert links is None or len(check.groups) == links, len(check.groups)
        fl.assert_ogg_links_whole(check, ended_with_eos)
        path = fl.save(str(tmp_path), name, kept)
        errors = fl.ffmpeg_stream_decode_errors(kept) or fl.oggdec_errors(path)
    assert errors == "", errors
    return path


def stop_all(*things):
    for t in things:
        if isinstance(t, wirelib.Listener):
            t.close()
        else:
            fl.stop_process(t)


# ---------------------------------------------------------------- to a live mount

@pytest.mark.parametrize("codec,ext,extra", [("mp3", "mp3", 16384), ("vorbis", "ogg", 4096)])
def test_listener_moves_to_live_fallback_and_decodes_across_the_switch(server, tmp_path, codec,
                                                                      ext, extra):
    a, b = "/a." + ext, "/b." + ext
    srv = start(server, mount_xml(a, fallback_mount=b))
    pb = source(srv, b, codec, freq=660)
    pa = source(srv, a, codec, freq=440)
    lis = listener(srv, a)
    try:
        keeps_receiving(lis, extra)
        fl.stop_process(pa)
        wait_listeners(srv, b, 1)
        keeps_receiving(lis, 2 * extra)
    finally:
        stop_all(lis, pa, pb)
    decodes(tmp_path, lis, codec, "switch." + ext, links=2, ended_with_eos=1)


def test_chain_follows_each_fallback_as_mounts_go_quiet(server, tmp_path):
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/b.mp3"),
                mount_xml("/b.mp3", fallback_mount="/c.mp3"))
    pc = source(srv, "/c.mp3", freq=880)
    pb = source(srv, "/b.mp3", freq=660)
    pa = source(srv, "/a.mp3", freq=440)
    lis = listener(srv, "/a.mp3")
    try:
        fl.stop_process(pa)                 # A -> B
        wait_listeners(srv, "/b.mp3", 1)
        keeps_receiving(lis, 16384)
        fl.stop_process(pb)                 # B -> C
        wait_listeners(srv, "/c.mp3", 1)
        keeps_receiving(lis, 16384)
    finally:
        stop_all(lis, pa, pb, pc)
    decodes(tmp_path, lis, "mp3", "chain.mp3")


def test_chain_skips_a_fallback_that_went_quiet_first(server):
    """B leaves before A: A's listeners go through B's <mount> straight to C."""
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/b.mp3"),
                mount_xml("/b.mp3", fallback_mount="/c.mp3"))
    pc = source(srv, "/c.mp3", freq=880)
    pb = source(srv, "/b.mp3", freq=660)
    pa = source(srv, "/a.mp3", freq=440)
    lis = listener(srv, "/a.mp3")
    try:
        fl.stop_process(pb)
        keeps_receiving(lis, 16384)
        fl.stop_process(pa)
        wait_listeners(srv, "/c.mp3", 1)
        keeps_receiving(lis, 16384)
    finally:
        stop_all(lis, pa, pb, pc)


# ---------------------------------------------------------------- a source cut off mid-frame

CONTENT_TYPES = {"mp3": "audio/mpeg", "vorbis": "audio/ogg"}


def units_of(codec, data):
    """(start, end) of every frame (MP3) or page (Ogg) of an encoded file."""
    if codec == "mp3":
        pos, out = 0, []
        while fl.mp3_frame_len(data, pos):
            out.append((pos, pos + fl.mp3_frame_len(data, pos)))
            pos = out[-1][1]
        assert pos == len(data), "%d bytes after the frames" % (len(data) - pos)
        return out
    pages, end = fl.ogg_pages(data)
    assert end == len(data)
    return [(p.offset, p.offset + len(p.raw)) for p in pages]


def cut_point(codec, data):
    """The frame or page a source is cut off in, one in the second half of the file (for Ogg
    one after a page that ends a packet: the stream so far is whole), and the one before it:
    (start of the one before, start, end)."""
    units = units_of(codec, data)
    for k in range(len(units) // 2, len(units) - 1):
        prev = units[k - 1][0]
        if codec == "mp3" or fl.parse_page(data, prev).lacing[-1] != 255:
            return (prev,) + units[k]
    raise AssertionError("no page to cut the file at")


@pytest.mark.rimecast_only      # Icecast 2.4 passes on whatever the source sent last
@pytest.mark.parametrize("close", ["fin", "rst"])
@pytest.mark.parametrize("codec,ext,extra", [("mp3", "mp3", 16384), ("vorbis", "ogg", 4096)])
def test_source_cut_off_mid_frame_leaves_no_cut_frame_before_the_fallback(
        server, tmp_path, codec, ext, extra, close):
    """A source dies halfway through a frame (Ogg: a page): its listeners get its last whole
    frame, then the fallback's stream, and a player decodes across the switch."""
    a, b = "/a." + ext, "/b." + ext
    srv = start(server, mount_xml(a, fallback_mount=b))
    pb = source(srv, b, codec, freq=660)
    data = fl.encode_file(str(tmp_path / ("a." + ext)), codec, 6, freq=440)
    data = data[fl.id3v2_len(data, 0):]         # MP3: frames only, from the first byte
    prev, start_, end = cut_point(codec, data)
    whole, half = data[:start_], data[start_:start_ + (end - start_) // 2]
    src = srv.source(a, content_type=CONTENT_TYPES[codec])
    lis = None
    try:
        assert src.connect().status == 200, src.response
        src.send_now(whole)
        fl.wait_mount(srv, a)
        lis = listener(srv, a, min_bytes=1)
        src.send_now(half)
        adminlib.wait_stat(srv, a, "total_bytes_read", str(len(whole) + len(half)))
        if close == "rst":
            wirelib.set_linger_rst(src.sock)
        src.close()
        srv.wait_log("of an incomplete %s at end of stream dropped"
                     % ("frame" if codec == "mp3" else "page"), 10)
        wait_listeners(srv, b, 1)
        keeps_receiving(lis, extra)
    finally:
        src.close()
        stop_all(lis, pb)
    body = lis.snapshot()
    if codec == "mp3":
        assert body[:len(whole)] == whole       # the burst holds all of it, from the first byte
        at = len(whole)
        assert fl.mp3_frame_len(body, at) or fl.id3v2_len(body, at), body[at:at + 8]
    else:
        last = data[prev:start_]                # pages are unique (serial, number, CRC)
        at = body.index(last) + len(last)
        assert fl.parse_page(body, at).bos, "no fallback stream right after the last page"
    assert body[at:at + len(half)] != half
    decodes(tmp_path, lis, codec, "cut." + ext, links=2)


# ---------------------------------------------------------------- fallback-override

def test_override_brings_moved_listeners_back_and_leaves_the_fallbacks_own(server, tmp_path):
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/b.mp3", fallback_override=1))
    pb = source(srv, "/b.mp3", freq=660)
    pa = source(srv, "/a.mp3", freq=440)
    moved = listener(srv, "/a.mp3")
    own = listener(srv, "/b.mp3")
    try:
        fl.stop_process(pa)
        wait_listeners(srv, "/b.mp3", 2)
        keeps_receiving(moved, 16384)
        pa = source(srv, "/a.mp3", freq=440)
        if IS_ICECAST:      # Icecast 2.4 moves every listener of the fallback, its own too
            wait_listeners(srv, "/a.mp3", 2)
        else:
            wait_listeners(srv, "/a.mp3", 1)
            assert listeners_on(srv, "/b.mp3") == 1
            keeps_receiving(own, 16384)
        keeps_receiving(moved, 16384)
    finally:
        stop_all(moved, own, pa, pb)
    decodes(tmp_path, moved, "mp3", "override.mp3")


# ---------------------------------------------------------------- no source, full

def test_mount_without_source_serves_its_live_fallback(server, tmp_path):
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/b.mp3", fallback_override=1),
                mount_xml("/b.mp3", fallback_mount="/c.mp3"))
    r = srv.listener("/a.mp3")
    assert r.open(start=False).status == 404         # nothing live along the chain
    r.close()
    pc = source(srv, "/c.mp3", freq=880)             # A (no source) -> B (no source) -> C
    lis = listener(srv, "/a.mp3")
    pa = None
    try:
        wait_listeners(srv, "/c.mp3", 1)
        keeps_receiving(lis, 16384)
        pa = source(srv, "/a.mp3", freq=440)         # override: home to A
        wait_listeners(srv, "/a.mp3", 1)
        keeps_receiving(lis, 16384)
    finally:
        stop_all(lis, pa, pc)
    decodes(tmp_path, lis, "mp3", "sourceless.mp3")


def test_when_full_the_next_listener_gets_the_fallback(server):
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/b.mp3", max_listeners=1,
                                  fallback_when_full=1),
                mount_xml("/c.mp3", max_listeners=1))
    pb = source(srv, "/b.mp3", freq=660)
    pa = source(srv, "/a.mp3", freq=440)
    pc = source(srv, "/c.mp3", freq=880)
    first = listener(srv, "/a.mp3")
    second = listener(srv, "/a.mp3")
    try:
        wait_listeners(srv, "/a.mp3", 1)
        wait_listeners(srv, "/b.mp3", 1)
        keeps_receiving(second, 16384)
        c1 = listener(srv, "/c.mp3")                 # no fallback-when-full: 403
        c2 = srv.listener("/c.mp3")
        assert c2.open(start=False).status == 403
        c2.close()
        c1.close()
    finally:
        stop_all(first, second, pa, pb, pc)


# ---------------------------------------------------------------- runtime fallbacks

def set_fallback(srv, mount, fallback):
    r = adminlib.admin(srv, "/admin/fallbacks?mount=%s&fallback=%s" % (mount, fallback))
    assert r.status == 200, (r.status, r.body)


def test_runtime_fallback_follows_the_fallbacks_reconnected_source(server, tmp_path):
    srv = start(server)
    pb = source(srv, "/b.mp3", freq=660)
    pa = source(srv, "/a.mp3", freq=440)
    set_fallback(srv, "/a.mp3", "/b.mp3")
    lis = listener(srv, "/a.mp3")
    try:
        fl.stop_process(pb)                          # B's source reconnects: a new mount
        wirelib.wait_until(lambda: listeners_on(srv, "/b.mp3") is None, 10, "B to go")
        pb = source(srv, "/b.mp3", freq=660)
        fl.stop_process(pa)
        wait_listeners(srv, "/b.mp3", 1)
        keeps_receiving(lis, 16384)
    finally:
        stop_all(lis, pa, pb)
    decodes(tmp_path, lis, "mp3", "runtime.mp3")


def test_runtime_fallback_lasts_as_long_as_the_source(server):
    """As in Icecast: a reconnecting source starts again from its config (no fallback here)."""
    srv = start(server)
    pb = source(srv, "/b.mp3", freq=660)
    pa = source(srv, "/a.mp3", freq=440)
    set_fallback(srv, "/a.mp3", "/b.mp3")
    fl.stop_process(pa)
    wirelib.wait_until(lambda: listeners_on(srv, "/a.mp3") is None, 10, "A to go")
    pa = source(srv, "/a.mp3", freq=440)
    lis = listener(srv, "/a.mp3")
    try:
        fl.stop_process(pa)
        lis.wait_closed(10)
        assert listeners_on(srv, "/b.mp3") == 0
    finally:
        stop_all(lis, pa, pb)


def raw_source(srv, mount, data):
    """A source that sends 128 KB at once: its mount keeps a burst's worth (64 KB) queued."""
    s = srv.source(mount, b"", rate=1 << 20)
    assert s.connect().status == 200, s.response
    s.send_now(data[:128 << 10])
    return s


@pytest.mark.rimecast_only
@pytest.mark.skipif("ASAN_OPTIONS" in os.environ,
                    reason="RSS is not a leak measure under ASan (quarantine); LeakSanitizer is")
def test_runtime_fallback_cycles_do_not_leak(server, data):
    # resident memory by the page, not by the 2 MB of a worker heap's huge pages
    srv = server(start=False)
    srv.preexec_fn = wirelib.no_huge_pages
    srv.start()

    def cycle(n):
        for _ in range(n):
            a, b = raw_source(srv, "/x.mp3", data), raw_source(srv, "/y.mp3", data)
            fl.wait_mount(srv, "/y.mp3")
            adminlib.wait_stat(srv, "/y.mp3", "total_bytes_read", str(128 << 10))
            set_fallback(srv, "/x.mp3", "/y.mp3")
            set_fallback(srv, "/y.mp3", "/x.mp3")
            a.close()
            b.close()
            wirelib.wait_until(lambda: not adminlib.admin(srv, "/admin/listmounts").xml()
                               .findall("source"), 5, "mounts to go")

    cycle(20)                                        # warm up allocator caches
    before = wirelib.proc_rss_kb(srv.pid)
    cycle(100)
    grown = wirelib.proc_rss_kb(srv.pid) - before
    assert grown < 4096, "RSS grew by %d KB over 100 fallback cycles" % grown


def test_fallback_cycle_in_config_does_not_loop(server):
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/b.mp3"),
                mount_xml("/b.mp3", fallback_mount="/a.mp3"))
    r = srv.listener("/a.mp3")
    assert r.open(start=False).status == 404
    r.close()
    pa = source(srv, "/a.mp3")
    lis = listener(srv, "/a.mp3")
    try:
        fl.stop_process(pa)
        lis.wait_closed(10)
        assert srv.is_alive()
        r = srv.listener("/b.mp3")
        assert r.open(start=False).status == 404
        r.close()
    finally:
        stop_all(lis, pa)


@pytest.mark.rimecast_only      # the bound and its log line are Rimecast's
def test_chain_longer_than_the_bound_ends_with_a_log_line(server):
    """/c0 -> /c1 -> ... -> /c11, only /c11 live at the end: it is 10 steps from /c1 (reached)
    and 11 from /c0 (too far: the chain ends there, logged; the listener is closed)."""
    names = ["/c%d.mp3" % i for i in range(12)]
    srv = start(server, *[mount_xml(a, fallback_mount=b) for a, b in zip(names, names[1:])])
    last = source(srv, names[11], freq=880)
    p0 = source(srv, names[0], freq=440)
    p1 = source(srv, names[1], freq=660)
    l0, l1 = listener(srv, names[0]), listener(srv, names[1])
    try:
        fl.stop_process(p1)                         # /c1 -> 9 mounts without a source -> /c11
        wait_listeners(srv, names[11], 1)
        keeps_receiving(l1, 16384)
        fl.stop_process(p0)                         # /c0 -> /c1 ... -> /c11: one step too many
        l0.wait_closed(10)
        srv.wait_log("fallback chain at /c11.mp3 is too long (more than 10 mounts)", 5)
        keeps_receiving(l1, 16384)
        assert listeners_on(srv, names[11]) == 1
        r = srv.listener(names[0])                  # and for a listener of /c0 now: 404
        assert r.open(start=False).status == 404
        r.close()
        ok = listener(srv, names[1])                # /c1's chain still reaches /c11
        ok.close()
    finally:
        stop_all(l0, l1, p0, p1, last)


# ---------------------------------------------------------------- file fallbacks

FILE_SECONDS = 3
FILE_RATE = 64000       # the "mp3" encoder's bitrate


@pytest.fixture
def webdir():
    """A webroot the server can read after dropping privileges (pytest's tmp_path is 0700)."""
    web = tempfile.mkdtemp(prefix="wire-web-")
    os.chmod(web, 0o755)
    yield web
    shutil.rmtree(web, ignore_errors=True)


def webroot_with(web, name, codec="mp3", seconds=FILE_SECONDS, freq=330):
    data = fl.encode_file(os.path.join(web, name), codec, seconds, freq=freq)
    return web, data


def rate_over(lis, seconds):
    before, t0 = lis.received, time.monotonic()
    time.sleep(seconds)
    return (lis.received - before) * 8 / (time.monotonic() - t0)


@pytest.mark.rimecast_only      # Icecast 2.4 sends fallback files as fast as the socket takes
def test_file_fallback_is_paced_looped_and_left_on_override(server, tmp_path, webdir):
    web, data = webroot_with(webdir, "silence.mp3")
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/silence.mp3", fallback_override=1),
                webroot=web)
    pa = source(srv, "/a.mp3", freq=440)
    lis = listener(srv, "/a.mp3")
    try:
        keeps_receiving(lis, 16384)
        fl.stop_process(pa)
        srv.wait_log("moved from /a.mp3 to fallback /silence.mp3", 10)
        time.sleep(1.5)                               # what was queued and the file's prefill
        rate = rate_over(lis, 2 * FILE_SECONDS)
        assert 0.8 * FILE_RATE < rate < 1.2 * FILE_RATE, rate
        on_file = lis.snapshot()
        pa = source(srv, "/a.mp3", freq=440)          # override: back to the live mount
        wait_listeners(srv, "/a.mp3", 1)
        keeps_receiving(lis, 16384)
    finally:
        stop_all(lis, pa)
    at = data.index(b"\xff\xfb", 10)                  # the first frame, after the ID3 tag
    at += fl.mp3_frame_len(data, at)
    first = data[at:at + 64]                          # the second frame: real audio
    assert on_file.count(first) >= 2, "the file was not looped"
    decodes(tmp_path, lis, "mp3", "file-fallback.mp3")


@pytest.mark.rimecast_only
def test_mount_without_source_serves_its_file_fallback(server, tmp_path, webdir):
    web, _ = webroot_with(webdir, "silence.mp3")
    srv = start(server, mount_xml("/a.mp3", fallback_mount="/silence.mp3"), webroot=web)
    lis = listener(srv, "/a.mp3", min_bytes=1024)
    try:
        assert lis.response.header("content-type") == "audio/mpeg"
        time.sleep(1.5)
        rate = rate_over(lis, 3)
        assert 0.8 * FILE_RATE < rate < 1.2 * FILE_RATE, rate
        r = srv.listener("/silence.mp3")              # the file itself is still a file
        assert r.open(start=False).status == 200
        r.close()
    finally:
        stop_all(lis)
    decodes(tmp_path, lis, "mp3", "file-sourceless.mp3")


@pytest.mark.rimecast_only      # Icecast 2.4 refuses to loop an Ogg file
def test_ogg_file_fallback_loops_as_a_chained_stream_that_decodes(server, tmp_path, webdir):
    seconds = 2
    web, data = webroot_with(webdir, "loop.ogg", codec="vorbis", seconds=seconds)
    file_rate = len(data) * 8 / seconds
    srv = start(server, mount_xml("/a.ogg", fallback_mount="/loop.ogg"), webroot=web)
    pa = source(srv, "/a.ogg", "vorbis", freq=440)
    lis = listener(srv, "/a.ogg")
    try:
        fl.stop_process(pa)                           # the live source leaves: on to the file
        srv.wait_log("moved from /a.ogg to fallback /loop.ogg", 10)
        time.sleep(1.5)                               # what was queued and the file's prefill
        rate = rate_over(lis, 2 * seconds)
        assert 0.75 * file_rate < rate < 1.25 * file_rate, (rate, file_rate)
        wirelib.wait_until(lambda: len(fl.OggCheck(lis.snapshot()).groups) >= 4, 15,
                           "the live stream and three links of the file")
    finally:
        stop_all(lis, pa)
    body = lis.snapshot()
    check = fl.OggCheck(body)                         # whole pages, good CRCs, complete headers
    assert check.codecs()[1:] == [["vorbis"]] * (len(check.groups) - 1)
    serials = [sorted(g) for g in check.groups]
    assert len(set(map(tuple, serials))) == len(serials), "every link has its own serial"
    assert fl.ffmpeg_stream_decode_errors(body[:check.complete]) == ""
    path = fl.save(str(tmp_path), "file-fallback.ogg", body[:check.complete])
    assert fl.oggdec_errors(path) == ""


# ---------------------------------------------------------------- intro

def test_intro_comes_first_then_live_mp3_that_decodes(server, tmp_path, webdir):
    _, raw = webroot_with(webdir, "intro.mp3", seconds=1, freq=1000)
    # Icecast sends the file as it is; Rimecast its frames (no tags, no Xing frame), as an ad
    intro = raw if IS_ICECAST else fl.mp3_audio(raw)
    srv = start(server, mount_xml("/a.mp3", intro="/intro.mp3"), webroot=webdir)
    pa = source(srv, "/a.mp3", freq=440)
    lis = listener(srv, "/a.mp3", min_bytes=len(intro) + 16384)
    icy = srv.listener("/a.mp3", headers={"Icy-MetaData": "1"})
    assert icy.open().status == 200
    try:
        icy.wait_bytes(len(intro) + 32768, 10)
    finally:
        stop_all(lis, icy, pa)
    body = lis.snapshot()
    assert body[:len(intro)] == intro
    audio, _ = fl.icy_demux(icy.snapshot(), int(icy.response.header("icy-metaint")))
    assert audio[:len(intro)] == intro
    if IS_ICECAST:      # Icecast 2.4 goes on with the live stream wherever its buffer begins
        decodes(tmp_path, lis, "mp3", "intro-live.mp3")
        return
    assert fl.mp3_frame_len(body, len(intro)), "no frame right after the intro: %r" % (
        body[len(intro):len(intro) + 8],)
    decodes(tmp_path, lis, "mp3", "intro-live.mp3")   # the intro's frames, then the live ones
    assert fl.mp3_frame_len(audio, len(intro))
    fl.strict_capture("mp3", audio)


def test_intro_comes_first_then_live_ogg_that_decodes(server, tmp_path, webdir):
    _, intro = webroot_with(webdir, "intro.ogg", codec="vorbis", seconds=1, freq=1000)
    srv = start(server, mount_xml("/a.ogg", intro="/intro.ogg"), webroot=webdir)
    pa = source(srv, "/a.ogg", "vorbis", freq=440)
    lis = listener(srv, "/a.ogg", min_bytes=len(intro) + 4096)
    try:
        keeps_receiving(lis, 4096)
    finally:
        stop_all(lis, pa)
    body = lis.snapshot()
    assert body[:len(intro)] == intro
    if IS_ICECAST:
        decodes(tmp_path, lis, "vorbis", "intro-live.ogg")
        return
    # whole pages from the intro's end on, opening with the live stream's header pages
    live, _ = fl.whole_pages_from_start(body[len(intro):])
    assert live.pages[0].bos and live.codecs()[0] == ["vorbis"], live.pages[:3]
    assert live.first_audio_page[0] is not None, "no audio after the live stream's headers"
    intro_serials = {p.serial for p in fl.OggCheck(intro).pages}
    assert live.pages[0].serial not in intro_serials
    # the intro (a whole file, to its EOS page), then the live stream, decode as one chain
    decodes(tmp_path, lis, "vorbis", "intro-live.ogg", links=2, ended_with_eos=1)
