# SPDX-License-Identifier: GPL-2.0-or-later
"""Stream formats with real encoders and decoders.

ffmpeg encodes Ogg Vorbis, Ogg Opus, Ogg FLAC, MP3 and AAC/ADTS in real time into one server;
listeners join right away and a few seconds later, and what each received must decode with
ffmpeg (and oggdec for Vorbis) without a single error. Ogg listeners must start with the
BOS/header pages and the first audio page on a page boundary; Vorbis comments must show up
as the mount's title. ezstream plays two Ogg files to make a chained stream. Broken Ogg input
is skipped without reaching listeners or other mounts."""

import os
import shutil
import tempfile

import pytest

import formatlib as fl
import wirelib
from conftest import IS_ICECAST, Server

needs_tools = pytest.mark.skipif(fl.FFMPEG is None or fl.OGGDEC is None,
                                 reason="ffmpeg/oggdec not installed")

CODECS = ["vorbis", "opus", "flac", "speex", "theora", "mp3", "aac"]
OGG = {"vorbis", "opus", "flac", "speex", "theora"}
AUDIO_RATE = {"vorbis": "44100", "opus": "48000", "flac": "16000", "speex": "16000"}
TITLE = "Sine %s & <b>\"q\" \u00e9t\u00e9"
ENOUGH = {"mp3": 16000, "aac": 16000}     # ~2 s at 64 kbit/s; Ogg: 2 audio pages


@pytest.fixture(scope="module")
def workdir():
    d = tempfile.mkdtemp(prefix="wire-formats-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def audio_pages(data):
    """Pages after the headers in a listener capture (0 if it does not parse yet)."""
    try:
        chk = fl.OggCheck(data)
    except AssertionError:
        return 0
    first = chk.first_audio_page[0] if chk.first_audio_page else None
    return 0 if first is None else sum(1 for p in chk.pages if p.offset >= first.offset)


def enough(codec, lis):
    data = lis.snapshot()
    if codec in OGG:
        return audio_pages(data) >= 2
    return len(data) >= ENOUGH[codec]


def stop_server(srv):
    alive = srv.is_alive()
    code = srv.stop()
    if not alive or code != 0:
        print(srv.diagnostics())
    assert alive, "server died"
    assert code == 0, "exit code %r after SIGTERM" % code


@pytest.fixture(scope="module")
def encoders():
    """Five ffmpeg encoders on one server; per codec an early and a late listener's capture."""
    if fl.FFMPEG is None:
        pytest.skip("ffmpeg not installed")
    srv = Server(burst_size=4096).start()
    procs, early, late = {}, {}, {}
    try:
        for c in CODECS:
            title = TITLE % c if c in OGG else None
            procs[c] = fl.ffmpeg_source(srv, "/%s" % c, c, title=title, freq=300 + 100 * len(procs))
        for c in CODECS:
            fl.wait_mount(srv, "/" + c, procs[c])
            early[c] = srv.listener("/" + c)        # right away: maybe before the first page
            assert early[c].open().status == 200
        wirelib.wait_until(lambda: all(enough(c, early[c]) for c in CODECS), 15,
                           lambda: "early listeners to get 2 s of audio: %s"
                           % {c: early[c].received for c in CODECS})
        for c in CODECS:                            # a few seconds in: mid-stream
            late[c] = srv.listener("/" + c)
            assert late[c].open().status == 200
        wirelib.wait_until(lambda: all(enough(c, late[c]) for c in CODECS), 15,
                           lambda: "late listeners to get 2 s of audio: %s"
                           % {c: late[c].received for c in CODECS})
        for lis in list(early.values()) + list(late.values()):
            lis.close()
        yield srv, procs, early, late
    finally:
        for p in procs.values():
            fl.stop_process(p)
        stop_server(srv)


@needs_tools
@pytest.mark.slow
@pytest.mark.parametrize("codec", CODECS)
def test_encoder_stream_decodes_for_early_and_late_listeners(encoders, workdir, codec):
    srv, procs, early, late = encoders
    assert procs[codec].poll() is None, "encoder exited: %s" % procs[codec].stderr.read()
    for when, lis in (("early", early[codec]), ("late", late[codec])):
        data = lis.snapshot()
        assert lis.response.header("Content-Type") == fl.ENCODERS[codec][1]
        if codec in OGG:
            chk = fl.OggCheck(data)
            want = ["theora", "vorbis"] if codec == "theora" else [codec]
            assert chk.codecs() == [want], chk.codecs()
            first = chk.first_audio_page[0]
            assert first is not None and not first.continued, first
            assert chk.tags[0].get("title") == TITLE % codec
            if codec == "theora":
                video = [p for serial, p in chk.first_data[0].items()
                         if chk.groups[0][serial] == "theora"]
                assert video and video[0][0] & 0xC0 == 0, "video does not start on a keyframe"
        trimmed = fl.trim_capture(codec, data)
        assert len(data) - len(trimmed) < 8192, "garbage in the %s stream" % codec
        data = trimmed
        path = fl.save(workdir, "%s-%s.%s" % (codec, when, fl.ENCODERS[codec][2]), data)
        errors = fl.ffmpeg_decode_errors(path)
        assert errors == "", "%s listener of %s: %s" % (when, codec, errors)
        if codec == "vorbis":
            errors = fl.oggdec_errors(path)
            assert errors == "", "oggdec, %s listener: %s" % (when, errors)


@needs_tools
@pytest.mark.parametrize("codec", sorted(OGG))
def test_vorbis_comment_title_in_stats_and_status_json(encoders, codec):
    srv = encoders[0]
    fl.wait_title(srv, "/" + codec, TITLE % codec, timeout=5)


@needs_tools
@pytest.mark.rimecast_only
@pytest.mark.parametrize("codec", sorted(AUDIO_RATE))
def test_ogg_audio_info_from_the_codec_headers(encoders, codec):
    srv = encoders[0]
    s = fl.stats_source(srv, "/" + codec)
    assert s.findtext("audio_channels") == "1"
    assert s.findtext("audio_samplerate") == AUDIO_RATE[codec]


# ---------------------------------------------------------------- chained stream

CHAIN_TITLES = ("First Tone", "Second Tone")


@needs_tools
@pytest.mark.slow
@pytest.mark.skipif(fl.EZSTREAM is None, reason="ezstream not installed")
def test_ezstream_chained_ogg_decodes_at_every_join_time(server, workdir):
    srv = server(burst_size=4096)
    files = []
    for i, title in enumerate(CHAIN_TITLES):
        path = os.path.join(workdir, "chain%d.ogg" % i)
        fl.encode_file(path, "vorbis", 2, title=title, freq=440 + 220 * i)
        files.append(path)
    ez = fl.ezstream_source(srv, "/chain.ogg", files, workdir)
    lis = []
    try:
        fl.wait_mount(srv, "/chain.ogg", ez)
        first = srv.listener("/chain.ogg")               # right away
        assert first.open().status == 200
        lis.append(first)
        fl.wait_title(srv, "/chain.ogg", CHAIN_TITLES[0], timeout=5)
        wirelib.wait_until(lambda: fl.chain_progress(first.snapshot())[1] >= 1, 5, "audio")
        second = srv.listener("/chain.ogg")              # during the first file
        assert second.open().status == 200
        lis.append(second)
        fl.wait_title(srv, "/chain.ogg", CHAIN_TITLES[1], timeout=8)
        third = srv.listener("/chain.ogg")               # after the chain switch
        assert third.open().status == 200
        lis.append(third)
        # ezstream sends a file's pages by their time stamps: its two audio pages arrive
        # about one and two seconds after its headers
        wirelib.wait_until(lambda: fl.chain_progress(first.snapshot()) >= (2, 1) and
                           fl.chain_progress(second.snapshot()) >= (2, 1) and
                           fl.chain_progress(third.snapshot()) >= (1, 1), 8,
                           lambda: "audio after the switch: %r" % [
                               fl.chain_progress(x.snapshot()) for x in lis])
        assert ez.poll() is None, "ezstream exited: %s" % ez.stdout.read()
    finally:
        for one in lis:
            one.close()
        fl.stop_process(ez)
    first_chk = fl.OggCheck(first.snapshot())
    assert [t.get("title") for t in first_chk.tags[:2]] == list(CHAIN_TITLES)
    third_chk = fl.OggCheck(third.snapshot())
    assert third_chk.tags[0].get("title") == CHAIN_TITLES[1], third_chk.tags
    for i, one in enumerate(lis):
        chk = fl.OggCheck(one.snapshot())
        assert all(c == ["vorbis"] for c in chk.codecs()), chk.codecs()
        path = fl.save(workdir, "chain-%d.ogg" % i, one.snapshot()[:chk.complete])
        errors = fl.ffmpeg_decode_errors(path)
        assert errors == "", "listener %d: %s" % (i, errors)
        errors = fl.oggdec_errors(path)
        assert errors == "", "oggdec, listener %d: %s" % (i, errors)


# ---------------------------------------------------------------- broken Ogg input

@pytest.fixture
def vorbis_pages(workdir):
    data = fl.encode_file(os.path.join(workdir, "pages.ogg"), "vorbis", 3, title="Pages")
    pages, n = fl.ogg_pages(data)
    assert n == len(data)
    chk = fl.OggCheck(data)
    split = [p.offset for p in pages].index(chk.first_audio_page[0].offset)
    return [p.raw for p in pages[:split]], [p.raw for p in pages[split:]]


def ogg_source(srv, mount, data):
    src = srv.source(mount, data, rate=512 * 1024, chunk=1000, content_type="audio/ogg")
    assert src.connect().status == 200, src.response
    return src.start()


def check_only_valid_pages(data, min_audio_pages):
    chk = fl.OggCheck(data)
    assert chk.complete == len(data), "a half page reached the listener"
    assert audio_pages(data) >= min_audio_pages, "only %d audio pages" % audio_pages(data)
    return chk


@pytest.fixture
def two_mounts(server):
    """A server with a healthy MP3 mount and its listener, to show others are unaffected."""
    srv = server()
    data = wirelib.make_data(1 << 20, seed=33)
    good = srv.source("/good.mp3", data, rate=64 * 1024, loop=True)
    assert good.connect().status == 200
    good.start()
    lis = srv.listener("/good.mp3", keep=0)
    assert lis.open().status == 200
    yield srv, lis
    lis.close()
    good.stop()


def assert_healthy(srv, lis):
    assert srv.is_alive(), "server died\n" + srv.diagnostics()
    before = lis.received
    lis.wait_bytes(before + 16384, 5)


@pytest.mark.skipif(fl.FFMPEG is None, reason="ffmpeg not installed")
def test_random_bytes_as_ogg_pass_nothing_and_log_once(two_mounts):
    srv, good = two_mounts
    junk = wirelib.make_data(256 * 1024, seed=5).replace(b"OggS", b"OggX")
    src = ogg_source(srv, "/junk.ogg", junk)
    lis = srv.listener("/junk.ogg")
    assert lis.open().status == 200
    src.wait_done(10)
    assert_healthy(srv, good)
    assert lis.received == 0, "garbage reached the listener: %r" % lis.snapshot()[:64]
    assert not lis.closed
    src.stop()
    lis.wait_closed(5)
    assert lis.received == 0
    if not IS_ICECAST:
        srv.wait_log("/junk.ogg")
        lines = [x for x in srv.error_log().splitlines() if "Ogg" in x]
        assert 1 <= len(lines) <= 3, lines


@pytest.mark.skipif(fl.FFMPEG is None, reason="ffmpeg not installed")
@pytest.mark.parametrize("damage", ["truncated", "huge-page", "bad-crc"])
def test_damaged_pages_are_skipped_and_the_stream_goes_on(two_mounts, vorbis_pages, workdir,
                                                          damage):
    srv, good = two_mounts
    headers, audio = vorbis_pages
    half = len(audio) // 2
    if damage == "truncated":
        bad = audio[half][:len(audio[half]) // 2]
    elif damage == "huge-page":
        # a header claiming 255 segments of 255 bytes, then garbage (and no real body)
        bad = b"OggS\0\0" + b"\0" * 8 + audio[half][14:26] + b"\xff" + b"\xff" * 255
        bad += wirelib.make_data(70000, seed=9).replace(b"OggS", b"OggX")
    else:
        page = bytearray(audio[half])
        page[-1] ^= 0x55
        bad = bytes(page)
    stream = b"".join(headers) + b"".join(audio[:half]) + bad + b"".join(audio[half + 1:])
    src = ogg_source(srv, "/bad.ogg", stream)
    lis = srv.listener("/bad.ogg")
    assert lis.open().status == 200
    src.wait_done(10)
    # everything after the damage arrives: the pages of the rest of the file
    tail = audio[-1]
    wirelib.wait_until(lambda: lis.snapshot().endswith(tail), 5, "the last page")
    data = lis.snapshot()
    check_only_valid_pages(data, len(audio) - half - 1)
    assert bad not in data
    path = fl.save(workdir, "bad-%s.ogg" % damage, data)
    assert fl.ffmpeg_decode_errors(path) == ""
    assert_healthy(srv, good)
    src.stop()
    if not IS_ICECAST:
        wirelib.wait_until(lambda: "/bad.ogg disconnected" in srv.error_log(), 5,
                           "the source to end")
        lines = [x for x in srv.error_log().splitlines()
                 if "Ogg:" in x and ("skipped" in x or "no valid page" in x)]
        assert len(lines) == 1, srv.error_log()
