# SPDX-License-Identifier: GPL-2.0-or-later
"""Prerolls per listener: the URL-auth server's answer to listener_add names a webroot file
(header icecast-preroll, or the option preroll_header) that this listener hears first instead
of the mount's <intro>.

Covers: a listener whose answer names file A hears A's bytes, then the stream, and ffmpeg
decodes it all; another listener of the same mount with no header hears the mount's intro;
a preroll (or intro) sent to its end counts one impression (preroll 1 in the session log and
the store, /admin/audience.json prerolls), one cut off by the listener leaving does not; a
name that is no webroot file name (../etc/passwd) or a file that is missing gives the mount's
intro and one line in the error log; the option preroll_header renames the header; a
listener on a Shoutcast listen socket's port hears its preroll too.
"""

import os

import pytest

import adminlib
import conftest
import formatlib as fl
import httprec
import wirelib
from test_fallback import decodes, mount_xml, source, stop_all, webdir, webroot_with  # noqa: F401
from test_sessions import records, wait_records

pytestmark = pytest.mark.rimecast_only      # Icecast 2.4 has no prerolls

MOUNT = "/a.mp3"
PREROLLS = {"wants-ad": "ads/spring.mp3", "wants-long": "long.mp3",
            "evil": "../etc/passwd", "missing": "ads/nothere.mp3"}


def answer(header):
    """listener_add: accepted; the listener's user name picks the preroll named."""
    def reply(req):
        h = {"icecast-auth-user": "1"}
        name = PREROLLS.get(req.form.get("user"))
        if name:
            h[header] = name
        return 200, h
    return reply


auth = httprec.recorder_fixture("auth", answer("icecast-preroll"))


@pytest.fixture
def station(server, auth, webdir):
    """A mount with URL authentication and an intro; the files in its webroot."""
    def make(header=None, extra="", **cfg):
        raw = {}
        _, raw["intro"] = webroot_with(webdir, "intro.mp3", seconds=1, freq=1000)
        os.makedirs(os.path.join(webdir, "ads"), mode=0o755)
        _, raw["ad"] = webroot_with(webdir, "ads/spring.mp3", seconds=1, freq=500)
        _, raw["long"] = webroot_with(webdir, "long.mp3", seconds=60, freq=700)
        # what a listener hears of each: its frames, as of any ad (no tags, no Xing frame)
        files = {k: fl.mp3_audio(v) for k, v in raw.items()}
        files["raw"] = raw
        rec = auth(answer(header)) if header else auth()
        opt = '<option name="preroll_header" value="%s"/>' % header if header else ""
        xml = mount_xml(MOUNT, intro="/intro.mp3").replace(
            "</mount>", '<authentication type="url"><option name="listener_add" value="%s"/>'
            '%s</authentication></mount>' % (rec.url("/listener_add"), opt))
        srv = server(extra_xml=xml + extra, webroot=webdir, **cfg)
        return srv, files, source(srv, MOUNT)
    return make


def hear(srv, who, n, rcvbuf=None, port=None):
    lis = wirelib.Listener(srv.host, port or srv.port, MOUNT, rcvbuf=rcvbuf,
                           headers={"Authorization": wirelib.basic_auth(who, "pw")})
    assert lis.open(timeout=10).status == 200
    lis.wait_bytes(n, 10)
    return lis


def figures(srv):
    j = adminlib.admin(srv, "/admin/audience.json?period=all&mount=" + MOUNT).json()
    return j["periods"][0] if j["periods"] else {}


def test_each_listener_hears_its_preroll_or_the_intro_and_it_decodes(station, tmp_path):
    srv, files, src = station()
    ad, intro = files["ad"], files["intro"]
    assert ad[:4096] != intro[:4096]
    a = hear(srv, "wants-ad", len(ad) + 16384)
    b = hear(srv, "plain", len(intro) + 16384)
    body = a.snapshot()
    assert body[:len(ad)] == ad
    assert files["raw"]["ad"].startswith(b"ID3") and not body.startswith(b"ID3")
    assert fl.mp3_frame_len(body, len(ad)), "no frame right after the preroll"
    decodes(tmp_path, a, "mp3", "preroll-live.mp3")     # the preroll's frames, then the live
    assert b.snapshot()[:len(intro)] == intro
    decodes(tmp_path, b, "mp3", "intro-live.mp3")
    stop_all(a, b)
    recs = wait_records(srv, 2)
    assert sorted((r["user"], r["preroll"]) for r in recs) == [
        ("plain", 1), ("wants-ad", 1)]
    wirelib.wait_until(lambda: figures(srv).get("prerolls") == 2, 10, "two prerolls")
    assert figures(srv)["sessions"] == 2
    fl.stop_process(src)


def test_a_preroll_cut_off_is_not_counted_one_played_through_is_counted_once(station):
    srv, files, src = station(sndbuf=8192)
    # a client that reads a little of a minute of preroll and leaves
    cut = srv.listener(MOUNT, headers={"Authorization": wirelib.basic_auth("wants-long", "pw")},
                       rcvbuf=4096)
    assert cut.open(timeout=10, start=False).status == 200
    got = cut.snapshot()
    cut.sock.settimeout(5)
    while len(got) < 4096:
        got += cut.sock.recv(4096)
    assert got[:4096] == files["long"][:4096]
    cut.close()
    [r] = wait_records(srv, 1)
    assert (r["user"], r["preroll"]) == ("wants-long", 0)
    whole = hear(srv, "wants-ad", len(files["ad"]) + 16384)
    whole.close()
    recs = wait_records(srv, 2)
    assert [(x["user"], x["preroll"]) for x in recs] == [("wants-long", 0),
                                                                 ("wants-ad", 1)]
    wirelib.wait_until(lambda: figures(srv).get("sessions") == 2, 10, "two sessions")
    assert figures(srv)["prerolls"] == 1
    fl.stop_process(src)


@pytest.mark.parametrize("agent,said", [
    ("evil", 'named the preroll "../etc/passwd", not a file name of the webroot'),
    ("missing", "preroll ads/nothere.mp3 cannot be read")])
def test_a_bad_or_missing_preroll_gives_the_intro_and_one_log_line(station, agent, said):
    srv, files, src = station()
    intro = files["intro"]
    for _ in range(2):
        lis = hear(srv, agent, len(intro) + 4096)
        assert lis.snapshot()[:len(intro)] == intro
        lis.close()
    wait_records(srv, 2)
    assert srv.error_log().count(said) == 1
    assert "root:" not in "".join(str(r) for r in records(srv))
    fl.stop_process(src)


def test_the_preroll_header_option_renames_the_header(station):
    srv, files, src = station(header="x-ad-file")
    lis = hear(srv, "wants-ad", len(files["ad"]) + 4096)
    assert lis.snapshot()[:len(files["ad"])] == files["ad"]
    stop_all(lis, src)


def test_a_listener_on_the_shoutcast_port_hears_its_preroll_too(station):
    port = conftest.port_pair()
    srv, files, src = station(extra=(
        "<listen-socket><port>%d</port><bind-address>127.0.0.1</bind-address>"
        "<shoutcast-mount>%s</shoutcast-mount></listen-socket>" % (port, MOUNT)))
    ad = files["ad"]
    lis = hear(srv, "wants-ad", len(ad) + 4096, port=port)
    assert lis.snapshot()[:len(ad)] == ad
    lis.close()
    [r] = wait_records(srv, 1)
    assert (r["user"], r["preroll"]) == ("wants-ad", 1)
    fl.stop_process(src)
