# SPDX-License-Identifier: GPL-2.0-or-later
"""Mount policy a station relies on: <dump-file> recordings, <on-connect>/<on-disconnect>
scripts and the <playlistlog>, with real sources (ffmpeg, ezstream) and listeners.

A recording must hold exactly what a listener without Icy-MetaData receives from the start;
scripts get the mount as argv[1], no descriptor but 0-2, their output in the error log, and a
hanging one is killed while streaming goes on; the playlist log has Icecast's line format."""

import os
import re
import shutil
import signal
import stat
import tempfile
import time

import pytest

import formatlib as fl
import wirelib
from conftest import IS_ICECAST, assert_server_healthy


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="wire-station-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def start_with(server, extra_xml_of):
    """A server whose extra_xml may name files in its own (nobody-writable) log dir."""
    srv = server(start=False)
    srv.cfg["extra_xml"] = extra_xml_of(srv)
    return srv.start()


def mount_xml(name, **settings):
    body = "".join("<%s>%s</%s>" % (k, v, k) for k, v in settings.items())
    return "<mount><mount-name>%s</mount-name>%s</mount>" % (name, body)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def wait_recording_closed(srv, mount, timeout=10):
    srv.wait_log("recording of %s to " % mount, timeout)


# ---------------------------------------------------------------- dump-file

def record_with_listener(srv, mount, proc):
    """Listens from the start while proc streams to mount, until the source leaves."""
    fl.wait_mount(srv, mount, proc)
    lis = srv.listener(mount)
    assert lis.open().status == 200
    try:
        proc.wait(30)
        lis.wait_closed(10)
    finally:
        lis.close()
    return lis.snapshot()


@pytest.mark.rimecast_only
def test_dump_file_mp3_is_what_a_listener_got_and_decodes(server):
    srv = start_with(server, lambda s: mount_xml(
        "/rec.mp3", **{"dump-file": os.path.join(s.logdir, "rec-%Y.mp3")}))
    proc = fl.ffmpeg_source(srv, "/rec.mp3", "mp3", duration=4)
    body = record_with_listener(srv, "/rec.mp3", proc)
    wait_recording_closed(srv, "/rec.mp3")
    path = os.path.join(srv.logdir, time.strftime("rec-%Y.mp3"))
    dump = read(path)
    assert len(dump) > 20000
    # the listener joined within its burst: it got the recording from its first frame (the
    # ID3v2 tag the source began with is recorded, but no start point for listeners)
    tag = fl.id3v2_len(dump, 0)
    assert tag > 0 and fl.mp3_frame_len(dump, tag) > 0
    assert wirelib.locate_slice(dump, body) == tag
    assert dump[tag:] == body
    assert fl.ffmpeg_decode_errors(path, "mp3") == ""


@pytest.mark.rimecast_only
def test_dump_file_ogg_vorbis_holds_headers_and_pages(server):
    srv = start_with(server, lambda s: mount_xml(
        "/rec.ogg", **{"dump-file": os.path.join(s.logdir, "rec.ogg")}))
    proc = fl.ffmpeg_source(srv, "/rec.ogg", "vorbis", title="Recorded", duration=4)
    body = record_with_listener(srv, "/rec.ogg", proc)
    wait_recording_closed(srv, "/rec.ogg")
    path = os.path.join(srv.logdir, "rec.ogg")
    dump = read(path)
    assert dump[:4] == b"OggS" and len(dump) > 8000
    assert dump == body
    assert fl.oggdec_errors(path) == ""
    assert fl.ffmpeg_decode_errors(path) == ""


@pytest.mark.rimecast_only
def test_dump_file_strips_inbound_icy_metadata_keeps_every_byte(server, workdir):
    """An ICY source (icy-metaint) with a real MP3: the recording is the MP3 file, byte for
    byte, without the metadata blocks, including the last partial block."""
    audio = fl.encode_file(os.path.join(workdir, "a.mp3"), "mp3", 3)
    audio = fl.strict_capture("mp3", audio[:len(audio) - 777])  # ends with a whole frame
    metaint = 8192
    assert len(audio) % 4096 and len(audio) % metaint    # not a multiple of any block size
    stream = fl.icy_interleave(audio, metaint, lambda i: fl.icy_block(
        "StreamTitle='Song %d';" % i) if i % 2 == 0 else b"\0")
    srv = start_with(server, lambda s: mount_xml(
        "/icy.mp3", **{"dump-file": os.path.join(s.logdir, "icy.mp3")}))
    src = srv.source("/icy.mp3", stream, rate=256 * 1024, headers={"icy-metaint": str(metaint)})
    assert src.connect().status == 200
    src.start()
    src.wait_done(20)
    time.sleep(0.3)
    src.stop()
    wait_recording_closed(srv, "/icy.mp3")
    assert read(os.path.join(srv.logdir, "icy.mp3")) == audio


@pytest.mark.rimecast_only
def test_dump_file_appends_and_expands_strftime_per_connection(server, data):
    srv = start_with(server, lambda s: mount_xml(
        "/again", **{"dump-file": os.path.join(s.logdir, "again-%Y%m%d.bin")}))
    parts = [data[:50000], data[50000:90000]]
    for part in parts:
        src = srv.source("/again", part, rate=1 << 20, content_type="application/octet-stream")
        assert src.connect().status == 200
        src.start()
        src.wait_done(10)
        src.stop()
        wirelib.wait_until(lambda: srv.error_log().count("recording of /again to ") >=
                           parts.index(part) + 1, 10, "recording closed")
    path = os.path.join(srv.logdir, time.strftime("again-%Y%m%d.bin"))
    assert read(path) == data[:90000]


@pytest.mark.rimecast_only
def test_dump_file_unwritable_path_logs_once_and_streaming_goes_on(server, data):
    srv = start_with(server, lambda s: mount_xml(
        "/nodisk", **{"dump-file": "/nonexistent-dir/x-%F.mp3"}))
    src = srv.source("/nodisk", data, rate=128 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        lis = srv.listener("/nodisk")
        assert lis.open().status == 200
        srv.wait_log("dump file /nonexistent-dir/x-", 5)
        assert_server_healthy(srv, lis, more=65536)
        body = lis.snapshot()
        wirelib.locate_slice(data, body)
        assert srv.error_log().count("cannot open") == 1
        lis.close()
    finally:
        src.stop()


@pytest.mark.rimecast_only
def test_dump_file_on_a_full_disk_logs_one_error_and_streaming_goes_on(server, data):
    """/dev/full takes no byte: the writer thread fails every 100 ms, logs it once (a minute
    apart at most), and listeners get every byte all the same."""
    srv = start_with(server, lambda s: mount_xml("/full", **{"dump-file": "/dev/full"}))
    src = srv.source("/full", data, rate=128 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        lis = srv.listener("/full")
        assert lis.open().status == 200
        srv.wait_log("dump file /dev/full of /full: cannot write", 5)
        assert_server_healthy(srv, lis, more=128 * 1024)      # a second or more of failing
        wirelib.locate_slice(data, lis.snapshot())
        lis.close()
    finally:
        src.stop()
    srv.wait_log("recording of /full to /dev/full ended: 0 bytes written", 10)
    assert srv.error_log().count("dump file /dev/full") == 1, srv.error_log()


# ---------------------------------------------------------------- on-connect / on-disconnect

SCRIPT = """#!/bin/sh
out={out}
echo "{event} $# $1" >> "$out/calls.txt"
ls -l /proc/self/fd 2>/dev/null > "$out/fds-{event}-$$.txt"
std=$(readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2)
echo "$std" > "$out/std-{event}-$$.txt"
echo "hello from {event} $1"
printf 'second\\001line\\n' >&2
printf 'no newline at the end'
"""


def write_script(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def fd_lines(path):
    """'fd -> target' for every descriptor in an `ls -l /proc/self/fd` listing."""
    out = {}
    for line in read(path).decode().splitlines():
        m = re.search(r" (\d+) -> (.*)$", line)
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


@pytest.mark.rimecast_only
def test_scripts_run_once_each_with_the_mount_and_no_leaked_fd(server, workdir):
    def cfg(s):
        on = write_script(os.path.join(workdir, "on.sh"),
                          SCRIPT.format(out=s.logdir, event="connect"))
        off = write_script(os.path.join(workdir, "off.sh"),
                           SCRIPT.format(out=s.logdir, event="disconnect"))
        return mount_xml("/scripted.ogg", **{"on-connect": on, "on-disconnect": off})
    srv = start_with(server, cfg)
    proc = fl.ffmpeg_source(srv, "/scripted.ogg", "vorbis", duration=2)
    fl.wait_mount(srv, "/scripted.ogg", proc)
    lis = srv.listener("/scripted.ogg")      # a socket the script must not inherit
    assert lis.open().status == 200
    proc.wait(30)
    calls = os.path.join(srv.logdir, "calls.txt")
    wirelib.wait_until(lambda: os.path.exists(calls) and read(calls).count(b"\n") >= 2, 10,
                       "both scripts to run")
    time.sleep(0.5)
    assert sorted(read(calls).decode().splitlines()) == [
        "connect 1 /scripted.ogg", "disconnect 1 /scripted.ogg"]
    lis.close()
    for event in ("connect", "disconnect"):
        [fds] = [f for f in os.listdir(srv.logdir) if f.startswith("fds-%s-" % event)]
        listing = fd_lines(os.path.join(srv.logdir, fds))
        # ls has 0 /dev/null (ours), 1 its output file, 2 /dev/null (its redirect) and its
        # own directory handle; anything else was inherited from the server
        extra = {fd: t for fd, t in listing.items()
                 if fd > 2 and not re.match(r"/proc/\d+/fd$", t)}
        assert extra == {}, "leaked descriptors: %r" % extra
        [std] = [f for f in os.listdir(srv.logdir) if f.startswith("std-%s-" % event)]
        stdin, stdout, stderr = read(os.path.join(srv.logdir, std)).decode().split()
        assert stdin == "/dev/null"
        assert stdout.startswith("pipe:") and stdout == stderr
    if not IS_ICECAST:
        log = srv.error_log()
        for event in ("connect", "disconnect"):
            assert re.search(r"on-%s /scripted\.ogg \[\d+\]: hello from %s /scripted\.ogg"
                             % (event, event), log), log
            assert re.search(r"on-%s /scripted\.ogg \[\d+\]: second\\x01line" % event, log)
            assert re.search(r"on-%s /scripted\.ogg \[\d+\]: no newline at the end" % event,
                             log)


HANGING = """#!/bin/sh
sleep 1000 &
echo "$$ $!" > {out}/hang-pids.txt
echo "hanging now"
wait
"""


@pytest.mark.rimecast_only
def test_hanging_script_is_killed_with_its_children_and_streaming_goes_on(server, workdir,
                                                                          data):
    def cfg(s):
        hang = write_script(os.path.join(workdir, "hang.sh"), HANGING.format(out=s.logdir))
        return ("<limits><script-timeout>2</script-timeout></limits>" +
                mount_xml("/hang", **{"on-connect": hang}))
    srv = start_with(server, cfg)
    src = srv.source("/hang", data, rate=128 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        pids = os.path.join(srv.logdir, "hang-pids.txt")
        wirelib.wait_until(lambda: os.path.exists(pids) and read(pids).strip(), 5, "script")
        shell, sleeper = [int(x) for x in read(pids).split()]
        lis = srv.listener("/hang")
        assert lis.open().status == 200
        assert_server_healthy(srv, lis, more=65536)   # while the script hangs
        srv.wait_log("still running after its timeout, killed", 6)

        def gone(pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    return f.read().split()[2] == "Z"   # a zombie until its parent reaps it
            except FileNotFoundError:
                return True
        wirelib.wait_until(lambda: gone(shell) and gone(sleeper), 5, "script group killed")
        assert "hanging now" in srv.error_log()
        assert_server_healthy(srv, lis, more=32768)
        lis.close()
    finally:
        src.stop()


# ---------------------------------------------------------------- playlistlog

LINE = re.compile(r"^(\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\|([^|]*)\|(\d+)\|(.*)$")


def playlist_lines(srv):
    return [l for l in srv._read(os.path.join(srv.logdir, "playlist.log")).splitlines() if l]


def with_playlist_log(server, **kw):
    return server(extra_xml="<logging><playlistlog>playlist.log</playlistlog></logging>", **kw)


def test_playlist_log_lines_for_admin_metadata_updates(server, data):
    srv = with_playlist_log(server)
    src = srv.source("/pl.mp3", data, rate=64 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        lis = srv.listener("/pl.mp3")
        assert lis.open().status == 200
        assert fl.set_metadata(srv, "/pl.mp3", song="First Song").status == 200
        # Icecast applies an update when the next audio block passes: one at a time
        wirelib.wait_until(lambda: playlist_lines(srv), 5, "first playlist line")
        assert fl.set_metadata(srv, "/pl.mp3", artist="Art", title="T\u00eftle").status == 200
        wirelib.wait_until(lambda: len(playlist_lines(srv)) >= 2, 5, "two playlist lines")
        lines = playlist_lines(srv)
        assert len(lines) == 2, lines
        parsed = [LINE.match(l) for l in lines]
        assert all(parsed), lines
        assert [p.group(2, 3, 4) for p in parsed] == [
            ("/pl.mp3", "1", "First Song"), ("/pl.mp3", "1", "Art - T\u00eftle")]
        stamp = time.mktime(time.strptime(parsed[0].group(1)[:20], "%d/%b/%Y:%H:%M:%S"))
        assert abs(stamp - time.time()) < 60
        lis.close()
    finally:
        src.stop()


@pytest.mark.rimecast_only
def test_playlist_log_escapes_control_characters(server, data):
    srv = with_playlist_log(server)
    src = srv.source("/esc.mp3", data, rate=64 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        fl.set_metadata(srv, "/esc.mp3", song="a\\b\tc|d \"q\"")
        wirelib.wait_until(lambda: playlist_lines(srv), 5, "a playlist line")
        [line] = playlist_lines(srv)
        assert LINE.match(line).group(4) in ('a\\\\b\\x09c|d "q"', 'a\\\\bc|d "q"'), line
    finally:
        src.stop()


def test_playlist_log_line_for_ogg_vorbis_title(server):
    srv = with_playlist_log(server)
    proc = fl.ffmpeg_source(srv, "/pl.ogg", "vorbis", title="Ogg Title")
    try:
        fl.wait_mount(srv, "/pl.ogg", proc)
        wirelib.wait_until(lambda: playlist_lines(srv), 10, "a playlist line")
        [line] = playlist_lines(srv)
        m = LINE.match(line)
        assert m and m.group(2, 3, 4) == ("/pl.ogg", "0", "Ogg Title"), line
    finally:
        fl.stop_process(proc)


@pytest.mark.rimecast_only
def test_playlist_log_reopened_on_sighup(server, data):
    srv = with_playlist_log(server)
    src = srv.source("/hup.mp3", data, rate=64 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        path = os.path.join(srv.logdir, "playlist.log")
        fl.set_metadata(srv, "/hup.mp3", song="Before")
        wirelib.wait_until(lambda: playlist_lines(srv), 5, "first line")
        os.rename(path, path + ".1")
        srv.send_signal(signal.SIGHUP)
        srv.wait_log("config reloaded", 5)
        fl.set_metadata(srv, "/hup.mp3", song="After")
        wirelib.wait_until(lambda: playlist_lines(srv), 5, "line in the new file")
        assert [LINE.match(l).group(4) for l in playlist_lines(srv)] == ["After"]
        assert b"|Before\n" in read(path + ".1")
        assert stat.S_IMODE(os.stat(path).st_mode) & 0o600
    finally:
        src.stop()
