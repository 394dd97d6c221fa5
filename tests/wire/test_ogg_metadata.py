# SPDX-License-Identifier: GPL-2.0-or-later
"""A title set through /admin/metadata on an Ogg mount (Vorbis, Opus, FLAC) reaches the
listeners in the stream, as Icecast 2.4 does for Vorbis: at the next page a listener may start
on, the stream goes on as a new chain link (new serial, BOS page, the codec's header packets
with the comment packet naming the new TITLE/ARTIST, granule positions from 0), after an EOS
page that ends the link playing. A listener connected before the update and one that joins
after both get a stream that ogginfo and ffmpeg read without error, whose comments name the
new title; what the stats show is what the stream says. (An Opus mount does this only with
<opus-title-updates>: test_opus_title_updates.py.)"""

import shutil
import subprocess

import pytest

import formatlib as fl
import wirelib

OGGINFO = shutil.which("ogginfo")
FFPROBE = shutil.which("ffprobe")

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(fl.FFMPEG is None or OGGINFO is None or FFPROBE is None,
                                 reason="needs ffmpeg, ffprobe and ogginfo")]

CODECS = ["vorbis", "opus", "flac"]


def ogginfo(path):
    p = subprocess.run([OGGINFO, path], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def ogginfo_problems(text, links):
    """ogginfo's warnings and errors, but for what any listener's capture has: the gap in the
    first stream's page numbers where the listener started (after the header pages) and the
    last link's missing EOS page (the capture ends while it plays)."""
    expected = ("WARNING: EOS not set on stream %d" % links, "WARNING: discontinuity in stream (1)")
    return [l for l in text.splitlines() if l.startswith(("WARNING", "ERROR", "Warning", "Error"))
            and "insecure memory" not in l and l not in expected
            and not l.startswith("WARNING: sequence number gap in stream 1.")]


def ffprobe_titles(path):
    """The TITLE of the first link (what a player that opens the capture shows)."""
    p = subprocess.run([FFPROBE, "-v", "error", "-show_entries",
                        "stream_tags=title,artist:format_tags=title,artist", "-of",
                        "default=noprint_wrappers=1", path], capture_output=True, text=True,
                       timeout=60)
    return p.stdout


def check_capture(workdir, name, data, codec):
    chk = fl.OggCheck(data)
    fl.assert_ogg_links_whole(chk)
    assert all(c == [codec] for c in chk.codecs()), chk.codecs()
    path = fl.save(workdir, name + ".ogg", data[:chk.complete])
    _, text = ogginfo(path)
    assert ogginfo_problems(text, len(chk.groups)) == [], text
    errors = fl.ffmpeg_stream_decode_errors(data[:chk.complete])
    assert errors == "", "%s: %s" % (name, errors)
    if codec == "vorbis" and fl.OGGDEC:
        errors = fl.oggdec_errors(path)
        assert errors == "", "oggdec, %s: %s" % (name, errors)
    return chk, path, text


@pytest.mark.parametrize("codec", CODECS)
def test_admin_title_reaches_listeners_before_and_after_the_update(server, tmp_path, codec):
    workdir = str(tmp_path)
    mount = "/meta.ogg"
    # an Opus mount takes title updates only when it says so (test_opus_title_updates.py)
    srv = server(burst_size=4096, extra_xml=fl.opus_titles_xml(mount) if codec == "opus" else "")
    enc = fl.ffmpeg_source(srv, mount, codec, title="Before")
    before = after = None
    try:
        fl.wait_mount(srv, mount, enc)
        fl.wait_title(srv, mount, "Before")
        before = srv.listener(mount)
        assert before.open().status == 200
        wirelib.wait_until(lambda: fl.chain_progress(before.snapshot())[1] >= 2, 10,
                           "audio before the update")
        r = fl.set_metadata(srv, mount, artist="The Band", title="After \u00e9")
        assert r.status == 200 and b"Metadata update successful" in r.body
        fl.wait_title(srv, mount, "After \u00e9")
        wirelib.wait_until(lambda: fl.chain_progress(before.snapshot()) >= (2, 3), 15,
                           lambda: "the new link and its audio: %r"
                           % (fl.chain_progress(before.snapshot()),))
        after = srv.listener(mount)
        assert after.open().status == 200
        wirelib.wait_until(lambda: fl.chain_progress(after.snapshot())[1] >= 3, 10,
                           "audio for the listener that joined after")
        # a second update: one more link for the first listener
        assert fl.set_metadata(srv, mount, song="Third").status == 200
        fl.wait_title(srv, mount, "Third")
        wirelib.wait_until(lambda: fl.chain_progress(before.snapshot()) >= (3, 2), 15,
                           "the second update's link")
        assert enc.poll() is None, enc.stderr.read()
    finally:
        for one in (before, after):
            if one is not None:
                one.close()
        fl.stop_process(enc)

    chk, _, text = check_capture(workdir, "before", before.snapshot(), codec)
    assert chk.tags[0].get("title") == "Before", chk.tags
    assert chk.tags[1].get("title") == "After \u00e9" and chk.tags[1].get("artist") == \
        "The Band", chk.tags
    assert chk.tags[2].get("title") == "Third" and "artist" not in chk.tags[2], chk.tags
    assert "ENCODER=" in text or "encoder=" in text.lower()   # other comments are kept
    serials = [list(g)[0] for g in chk.groups]
    assert len(set(serials)) == 3, serials
    for link, want in zip(fl.ogg_links(chk)[:2], chk.groups[1:]):
        last = list(link.values())[0][-1]
        assert last.eos, "the link before an update ends with an EOS page: %r" % last
    chk2, path2, _ = check_capture(workdir, "after", after.snapshot(), codec)
    assert chk2.tags[0].get("title") == "After \u00e9", chk2.tags
    probe = ffprobe_titles(path2)
    assert "After \u00e9" in probe and "The Band" in probe, probe
    # granule positions of a new link start afresh: its first audio page holds at most the
    # second of audio an ffmpeg page may hold
    for g in (1, 2):
        first_audio = chk.first_audio_page[g]
        assert 0 <= first_audio.granule <= 48000, (g, first_audio, first_audio.granule)
