# SPDX-License-Identifier: GPL-2.0-or-later
"""An admin title update (/admin/metadata?mode=updinfo) on an Ogg Opus mount, with a real Opus
source (ffmpeg -c:a libopus -f ogg to icecast://).

Without <opus-title-updates> in its <mount>, the mount refuses it with Icecast 2.4's answer
(200, "Mountpoint will not accept URL updates", return 1; this part runs against Debian's
icecast2 as well): no new chain link reaches its listeners, the stats keep the stream's own
title; the admin page says it was not done and why; the Shoutcast DSP's /admin.cgi gets
Icecast's "illegal metadata call". An update that comes before an Ogg source's headers is taken
(the codec is not known yet), but not carried into the stream when the headers say Opus.
A mount that opts in carries the update as a new chain link
(a listener's capture holds the new TITLE and ARTIST, ffmpeg decodes it through a pipe and as
a file, and ffmpeg reading the mount over HTTP across the update, as a player does, reports no
error: ffmpeg 5.1 plays on; what it gets wrong is the title, see conf/README.md),
while another Opus mount of the same server still refuses; a reload that takes the element
away makes the mount refuse again.
"""

import shutil
import signal
import subprocess

import pytest

import adminlib
import formatlib as fl
import wirelib

pytestmark = pytest.mark.skipif(fl.FFMPEG is None or shutil.which("ffmpeg") is None,
                                reason="needs ffmpeg with libopus")

REFUSED = "Mountpoint will not accept URL updates"


def answer(r):
    assert r.status == 200, (r.status, r.body[:300])
    doc = r.xml()
    return doc.findtext("message"), doc.findtext("return")


def opus_live(srv, mount, title="Before"):
    enc = fl.ffmpeg_source(srv, mount, "opus", title=title)
    fl.wait_mount(srv, mount, enc)
    return enc


def listening(srv, mount):
    lis = srv.listener(mount)
    assert lis.open().status == 200
    wirelib.wait_until(lambda: fl.chain_progress(lis.snapshot())[1] >= 2, 10, "audio on " + mount)
    return lis


def stats_title(srv, mount):
    s = fl.stats_source(srv, mount)
    return None if s is None else s.findtext("title")


def test_an_opus_mount_refuses_a_title_update_as_icecast_does(server):
    srv = server(burst_size=4096)
    mount = "/refuse.opus"
    enc = opus_live(srv, mount)
    lis = None
    try:
        lis = listening(srv, mount)
        shown = stats_title(srv, mount)        # Icecast 2.4.4 reads no OpusTags: None there
        assert answer(fl.set_metadata(srv, mount, song="Nope")) == (REFUSED, "1")
        assert answer(fl.set_metadata(srv, mount, artist="A", title="Nope")) == (REFUSED, "1")
        # the stream goes on in its one link: two pages of audio later, no new link came
        _, pages = fl.chain_progress(lis.snapshot())
        wirelib.wait_until(lambda: fl.chain_progress(lis.snapshot())[1] >= pages + 2, 15,
                           "two pages of audio after the update")
        chk = fl.OggCheck(lis.snapshot())
        assert len(chk.groups) == 1 and chk.tags[0].get("title") == "Before", chk.tags
        assert stats_title(srv, mount) == shown
        assert enc.poll() is None
    finally:
        if lis is not None:
            lis.close()
        fl.stop_process(enc)


@pytest.mark.rimecast_only
def test_the_refusal_is_said_on_the_admin_page_in_the_log_and_to_the_dsp(server):
    srv = server(burst_size=4096, extra_xml='<shoutcast-mount>/dsp.opus</shoutcast-mount>')
    enc = opus_live(srv, "/dsp.opus")
    try:
        fl.wait_title(srv, "/dsp.opus", "Before")      # its headers came
        r = adminlib.admin(srv, "/admin/metadata.xsl?mount=/dsp.opus&mode=updinfo&song=Nope")
        assert r.status == 200 and b"notice bad" in r.body, r.body.split(b"<main", 1)[-1][:1500]
        assert b"opus-title-updates" in r.body and b"Not done" in r.body
        assert adminlib.admin(srv, "/admin/metadata.json?mount=/dsp.opus&mode=updinfo&song=No"
                              ).json() == {"iceresponse": {"message": REFUSED, "return": 1}}
        r = adminlib.request(srv, "/admin.cgi?pass=%s&mode=updinfo&song=Nope" % fl.SOURCE_PASSWORD)
        assert r.status == 400 and b"illegal metadata call" in r.body, (r.status, r.body)
        assert stats_title(srv, "/dsp.opus") == "Before"
        # logged once for the refusals of 10 s
        wirelib.wait_until(lambda: "metadata of /dsp.opus refused: an Ogg Opus stream takes "
                           "title updates only with <opus-title-updates>" in srv.error_log(), 5,
                           "the log line")
        assert srv.error_log().count("metadata of /dsp.opus refused") == 1, srv.error_log()
    finally:
        fl.stop_process(enc)


def ffmpeg_player(url, seconds):
    """ffmpeg reading a mount over HTTP as a player does, decoding `seconds` of it."""
    return subprocess.Popen([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i", url,
                             "-t", str(seconds), "-f", "null", "-"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.rimecast_only
def test_a_mount_that_opts_in_carries_title_updates_into_its_opus_stream(server, tmp_path):
    srv = server(burst_size=4096, extra_xml=fl.opus_titles_xml("/opted.opus"))
    opted, plain = "/opted.opus", "/plain.opus"
    encs = [opus_live(srv, opted), opus_live(srv, plain)]
    lis = player = None
    try:
        lis = listening(srv, opted)
        player = ffmpeg_player(srv.url(opted), 6)
        wirelib.wait_until(lambda: fl.stats_source(srv, opted).findtext("listeners") == "2", 10,
                           "the player connected")
        assert answer(fl.set_metadata(srv, opted, artist="The Band", title="After")) == \
            ("Metadata update successful", "1")
        fl.wait_title(srv, opted, "After")
        # another Opus mount of the server has not opted in
        assert answer(fl.set_metadata(srv, plain, song="Nope")) == (REFUSED, "1")
        wirelib.wait_until(lambda: fl.chain_progress(lis.snapshot()) >= (2, 10), 15,
                           lambda: "the new link: %r" % (fl.chain_progress(lis.snapshot()),))
        _, errors = player.communicate(timeout=30)
        assert player.returncode == 0 and fl._decode_complaints(errors) == "", errors
        data = lis.snapshot()
        chk = fl.OggCheck(data)
        fl.assert_ogg_links_whole(chk)
        assert [t.get("title") for t in chk.tags] == ["Before", "After"], chk.tags
        assert chk.tags[1].get("artist") == "The Band"
        assert fl.ffmpeg_stream_decode_errors(data[:chk.complete]) == ""
        path = fl.save(str(tmp_path), "capture.opus", data[:chk.complete])
        assert fl.ffmpeg_decode_errors(path) == ""             # a file: seekable
        # a reload that takes the element away: refused again
        reloads = srv.error_log().count("config reloaded")
        srv.write_config(extra_xml="")
        srv.send_signal(signal.SIGHUP)
        wirelib.wait_until(lambda: srv.error_log().count("config reloaded") > reloads, 5,
                           "the reload")
        assert answer(fl.set_metadata(srv, opted, song="Later")) == (REFUSED, "1")
        assert stats_title(srv, opted) == "After"
        assert all(e.poll() is None for e in encs)
    finally:
        if player is not None and player.poll() is None:
            player.kill()
            player.wait()
        if lis is not None:
            lis.close()
        for e in encs:
            fl.stop_process(e)


@pytest.mark.rimecast_only
def test_an_update_before_the_codec_is_known_stays_out_of_an_opus_stream(server, tmp_path):
    """An Ogg source that has not sent its headers yet is not known to be Opus: the update is
    answered as taken (as on Vorbis), and when the headers say Opus the stream does not carry
    it (logged once)."""
    srv = server(burst_size=4096)
    data = fl.encode_file(str(tmp_path / "file.opus"), "opus", 8, title="From the file")
    src = srv.source("/quiet.opus", data, rate=8000, content_type="audio/ogg")
    lis = None
    try:
        assert src.connect().status == 200
        fl.wait_mount(srv, "/quiet.opus")
        assert answer(fl.set_metadata(srv, "/quiet.opus", song="Early")) == \
            ("Metadata update successful", "1")
        lis = srv.listener("/quiet.opus")
        assert lis.open().status == 200
        src.start()
        wirelib.wait_until(lambda: fl.chain_progress(lis.snapshot())[1] >= 4, 15,
                           "audio of the file")
        chk = fl.OggCheck(lis.snapshot())
        assert len(chk.groups) == 1 and chk.tags[0].get("title") == "From the file", chk.tags
        wirelib.wait_until(lambda: "not carried into this stream (Opus, without "
                           "<opus-title-updates>" in srv.error_log(), 5, "the log line")
        # now that the codec is known, the mount refuses
        assert answer(fl.set_metadata(srv, "/quiet.opus", song="Later")) == (REFUSED, "1")
    finally:
        if lis is not None:
            lis.close()
        src.stop()
