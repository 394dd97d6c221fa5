# SPDX-License-Identifier: GPL-2.0-or-later
"""/metrics: Prometheus text exposition, admin credentials required, parsed by a
strict parser and passed by promtool's linter, per-mount labels escaped; listeners and bytes
per mount (HLS among them), and whether each mount the config names has its source."""

import http.client
import shutil
import subprocess

import pytest

import formatlib as fl
import hlscheck
import wirelib
from adminlib import Station, admin, family_sum, parse_prometheus, request, wait
from conftest import SOURCE_PASSWORD

pytestmark = pytest.mark.rimecast_only

QUOTE_MOUNT = '/we"ird.mp3'
PROMTOOL = shutil.which("promtool")


@pytest.fixture
def station(server):
    st = Station(server, ["/a.mp3", "/b.mp3"])
    yield st
    st.close()


def sample(fams, name, **labels):
    for n, l, v in fams[name]["samples"]:
        if l == labels:
            return v
    raise AssertionError("no sample %s%r" % (name, labels))


def test_metrics_require_admin_credentials(station):
    for auth in (None, ("admin", "bad"), ("source", SOURCE_PASSWORD)):
        r = request(station.srv, "/metrics", auth=auth)
        assert r.status == 401 and r.header("www-authenticate").startswith("Basic")


def test_metrics_parse_and_count_listeners_and_bytes(station):
    lis = [station.srv.listener("/a.mp3") for _ in range(2)]
    for l in lis:
        assert l.open().status == 200
        l.wait_bytes(8192, 5)
    r = admin(station.srv, "/metrics")
    assert r.status == 200
    assert r.header("content-type").startswith("text/plain; version=0.0.4")
    fams = parse_prometheus(r.text)
    assert sample(fams, "rimecast_listeners", mount="/a.mp3") == 2
    assert sample(fams, "rimecast_listeners", mount="/b.mp3") == 0
    assert sample(fams, "rimecast_listener_peak", mount="/a.mp3") == 2
    assert sample(fams, "rimecast_hls_listeners", mount="/a.mp3") == 0
    assert sample(fams, "rimecast_sources") == 2
    assert family_sum(fams, "rimecast_listeners") == 2
    assert sample(fams, "rimecast_source_received_bytes_total", mount="/a.mp3") > 0
    assert sample(fams, "rimecast_hls_sent_bytes_total", mount="/a.mp3") == 0
    assert fams["rimecast_sent_bytes_total"]["type"] == "counter"
    assert fams["rimecast_slow_listeners_total"]["type"] == "counter"
    assert fams["rimecast_listeners"]["type"] == "gauge"
    wait(lambda: sample(parse_prometheus(admin(station.srv, "/metrics").text),
                        "rimecast_sent_bytes_total", mount="/a.mp3") >= 16384, 5, "bytes sent")
    for l in lis:
        l.close()
    wait(lambda: sample(parse_prometheus(admin(station.srv, "/metrics").text),
                        "rimecast_listeners", mount="/a.mp3") == 0, 5, "listeners gone")


def test_metrics_label_values_are_escaped(server):
    """A source's mount with a double quote, a mount of the config with a backslash and a
    double quote (a source's URL cannot carry a backslash, nor a name a newline), and a
    <server-id> with all three, as the exposition format escapes them; the strict parser reads
    the values back."""
    odd = '/back\\sl"ash.mp3'
    st = Station(server, ["/we%22ird.mp3"], mounts=[dict(mount_name=odd)],
                 extra_xml='<server-id>Rime\\cast&#10;"one"</server-id>')
    try:
        text = admin(st.srv, "/metrics").text
        fams = parse_prometheus(text)
        assert sample(fams, "rimecast_listeners", mount=QUOTE_MOUNT) == 0
        assert 'mount="/we\\"ird.mp3"' in text
        assert sample(fams, "rimecast_source_up", mount=odd) == 0
        assert 'rimecast_source_up{mount="/back\\\\sl\\"ash.mp3"} 0\n' in text
        (_, labels, _), = fams["rimecast_info"]["samples"]
        assert labels["server_id"] == 'Rime\\cast\n"one"'
        assert 'server_id="Rime\\\\cast\\n\\"one\\""' in text
    finally:
        st.close()


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus) not installed")
def test_promtool_passes_the_exposition(server):
    """promtool check metrics (its parser and linter: HELP and TYPE of each family, _total on
    counters and only there, base units, label escaping) finds nothing to say about /metrics
    of a server with live mounts, a listener, escaped names and a sourceless mount."""
    st = Station(server, ["/a.mp3", "/we%22ird.mp3"],
                 mounts=[dict(mount_name='/c\\o"nf.mp3'), dict(mount_name="/a.mp3")],
                 extra_xml='<server-id>Rime\\cast&#10;"one"</server-id>')
    try:
        lis = st.srv.listener("/a.mp3")
        assert lis.open().status == 200
        lis.wait_bytes(4096, 5)
        text = admin(st.srv, "/metrics").text
        lis.close()
    finally:
        st.close()
    r = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 0 and r.stdout + r.stderr == "", r.stdout + r.stderr


def test_source_up_for_live_mounts_and_those_the_config_names(server):
    """rimecast_source_up: 1 for a live mount; 0 for a <mount> of the config and an always-on
    <relay> without a source; nothing for a pattern, an on-demand relay, a name the webroot
    answers, or a live mount the config does not name once its source left."""
    relays = ("<relay><server>127.0.0.1</server><port>9</port><mount>/up.mp3</mount>"
              "<local-mount>/relayed.mp3</local-mount><on-demand>%d</on-demand></relay>")
    st = Station(server, ["/a.mp3", "/b.mp3"],
                 mounts=[dict(mount_name="/a.mp3"), dict(mount_name="/conf.mp3"),
                         dict(mount_name="/pat*.mp3"), dict(mount_name="/hello.txt")],
                 extra_xml=relays % 0 + (relays % 1).replace("/relayed.mp3", "/lazy.mp3"))
    try:
        def up():
            fams = parse_prometheus(admin(st.srv, "/metrics").text)
            return {l["mount"]: v for _, l, v in fams["rimecast_source_up"]["samples"]}
        assert up() == {"/a.mp3": 1, "/b.mp3": 1, "/conf.mp3": 0, "/relayed.mp3": 0}
        st.sources.pop("/a.mp3").stop()
        st.sources.pop("/b.mp3").stop()
        wait(lambda: up() == {"/a.mp3": 0, "/conf.mp3": 0, "/relayed.mp3": 0}, 10,
             "the mounts to lose their sources")
    finally:
        st.close()


@pytest.mark.skipif(fl.FFMPEG is None, reason="ffmpeg not installed")
def test_hls_listeners_and_bytes_per_mount(server):
    """An HLS session that fetched a segment is one of the mount's listeners and one of its
    HLS listeners; the bytes of its playlists and segment are counted to the mount, as HLS
    bytes and among all bytes sent (and in the stats' total_bytes_sent)."""
    srv = server()
    mount = "/live.mp3"
    p = fl.ffmpeg_source(srv, mount, "mp3")
    try:
        fl.wait_mount(srv, mount, p)
        token = hlscheck.token(srv, mount)
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
        c.request("GET", "%s/hls.m3u8?session=%s" % (mount, token))
        r = c.getresponse()
        playlist = r.read()
        assert r.status == 200
        c.close()
        status, segment = hlscheck.fetch_first_piece(srv.host, srv.port, mount,
                                                     playlist.decode())
        assert status == 200
        fams = parse_prometheus(admin(srv, "/metrics").text)
        assert sample(fams, "rimecast_listeners", mount=mount) == 1
        assert sample(fams, "rimecast_hls_listeners", mount=mount) == 1
        hls = sample(fams, "rimecast_hls_sent_bytes_total", mount=mount)
        assert hls == len(playlist) + len(segment)  # the bodies: heads are not counted
        assert sample(fams, "rimecast_sent_bytes_total", mount=mount) >= hls
        assert int(fl.stats_source(srv, mount).findtext("total_bytes_sent")) >= hls
    finally:
        fl.stop_process(p)


def test_metrics_with_no_mounts(server):
    st = Station(server, [])
    try:
        fams = parse_prometheus(admin(st.srv, "/metrics").text)
        assert fams["rimecast_listeners"]["samples"] == []
        assert sample(fams, "rimecast_sources") == 0
    finally:
        st.close()


def test_metrics_report_event_loop_turns(station):
    """Slow turns of the workers' loops are counted by threshold (cumulative: a turn over
    0.5 s is also over 0.1 s) and the longest turn is kept; after serving requests it is
    above zero."""
    for _ in range(3):
        assert request(station.srv, "/status-json.xsl").status == 200
    fams = parse_prometheus(admin(station.srv, "/metrics").text)
    assert fams["rimecast_worker_slow_turns_total"]["type"] == "counter"
    assert fams["rimecast_worker_turn_max_seconds"]["type"] == "gauge"
    counts = [sample(fams, "rimecast_worker_slow_turns_total", over_seconds=o)
              for o in ("0.01", "0.1", "0.5", "1")]
    assert all(c >= 0 for c in counts)
    assert counts == sorted(counts, reverse=True)
    longest = sample(fams, "rimecast_worker_turn_max_seconds")
    assert 0 < longest < 60
    if longest <= 0.01:
        assert counts[0] == 0
