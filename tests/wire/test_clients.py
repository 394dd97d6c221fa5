# SPDX-License-Identifier: GPL-2.0-or-later
"""Real clients as sources and listeners: ffmpeg (icecast:// output), ezstream."""

import os
import shutil
import subprocess
import tempfile

import pytest

import formatlib
import wirelib
from conftest import SOURCE_PASSWORD

FFMPEG = shutil.which("ffmpeg")
EZSTREAM = shutil.which("ezstream")

needs_ffmpeg = pytest.mark.skipif(FFMPEG is None, reason="ffmpeg not installed")
needs_ezstream = pytest.mark.skipif(EZSTREAM is None or FFMPEG is None,
                                    reason="ezstream/ffmpeg not installed")


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix="wire-clients-")
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def decode_errors(path):
    """Decode a file with ffmpeg; return its error output ('' = clean)."""
    p = subprocess.run([FFMPEG, "-hide_banner", "-v", "error", "-i", path, "-f", "null", "-"],
                       capture_output=True, text=True, timeout=60)
    return p.stderr.strip() if p.returncode == 0 else "exit %d: %s" % (p.returncode, p.stderr)


def wait_for_mount(srv, mount, proc, timeout=15):
    """Poll until the mount answers 200 (the source has logged in)."""
    def ready():
        assert proc.poll() is None, "source process exited with %s" % proc.returncode
        lis = srv.listener(mount)
        resp = lis.open(start=False)
        ok = resp is not None and resp.status == 200
        lis.close()
        return ok
    wirelib.wait_until(ready, timeout, "mount %s to come up" % mount, interval=0.2)


@needs_ffmpeg
def test_ffmpeg_source_and_decodable_listener_stream(server, workdir):
    srv = server()
    url = "icecast://source:%s@%s:%d/ff.mp3" % (SOURCE_PASSWORD, srv.host, srv.port)
    ff = subprocess.Popen(
        [FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-re",
         "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
         "-c:a", "libmp3lame", "-b:a", "128k", "-content_type", "audio/mpeg",
         "-ice_name", "FF Sine", "-ice_genre", "Test", "-f", "mp3", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_mount(srv, "/ff.mp3", ff)
        lis = srv.listener("/ff.mp3")
        resp = lis.open()
        assert resp.status == 200
        assert resp.header("Content-Type") == "audio/mpeg"
        assert resp.header("icy-name") == "FF Sine"
        lis.wait_bytes(48 * 1024, 15)          # ~3 s of 128 kbit/s
        lis.close()
        assert_decodes(lis, workdir)
    finally:
        formatlib.stop_process(ff)
    assert ff.returncode in (0, 255, -15), ff.stderr.read()


def assert_decodes(lis, workdir):
    """What the listener received decodes as MP3 without an error."""
    path = os.path.join(workdir, "got.mp3")
    with open(path, "wb") as f:
        f.write(lis.snapshot())
    errors = decode_errors(path)
    assert errors == "", errors


@needs_ezstream
def test_ezstream_source_loops_a_playlist(server, workdir):
    srv = server(burst_size=0)
    mp3 = os.path.join(workdir, "tone.mp3")
    subprocess.run([FFMPEG, "-hide_banner", "-v", "error", "-f", "lavfi", "-i",
                    "sine=frequency=660:sample_rate=44100:duration=2", "-c:a", "libmp3lame",
                    "-b:a", "128k", mp3], check=True, timeout=60)
    ez = formatlib.ezstream_source(srv, "/ez.mp3", [mp3], workdir, fmt="MP3", name="EZ Wire")
    try:
        wait_for_mount(srv, "/ez.mp3", ez)
        lis = srv.listener("/ez.mp3")
        resp = lis.open()
        assert resp.status == 200
        assert resp.header("Content-Type") == "audio/mpeg"
        # no burst: 48 KB is more than one pass over the 2 s file (~32 KB),
        # so the playlist looped
        lis.wait_bytes(48 * 1024, 15)
        assert ez.poll() is None, "ezstream exited"
        lis.close()
        assert_decodes(lis, workdir)
    finally:
        formatlib.stop_process(ez)
