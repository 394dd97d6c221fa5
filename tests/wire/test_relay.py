# SPDX-License-Identifier: GPL-2.0-or-later
"""Relays and master/slave, with Debian's icecast2 as the other side in both directions.

Each test starts two servers at once (the server fixture takes binary=): an origin with a
source, and an edge that relays it. Listeners on the edge must get a byte-exact slice of what
the source sent (MP3 with ICY titles), or an Ogg stream that decodes without errors; they keep
their connection while the upstream is away; on-demand relays connect only for listeners; a
slave follows its master's stream list.
"""

import os
import time

import pytest

import adminlib
import formatlib
import wirelib
from conftest import SOURCE_PASSWORD

pytestmark = pytest.mark.rimecast_only

ICECAST = "/usr/bin/icecast2"
needs_icecast = pytest.mark.skipif(not os.path.exists(ICECAST), reason="icecast2 not installed")
needs_ffmpeg = pytest.mark.skipif(formatlib.FFMPEG is None, reason="ffmpeg not installed")


def relay_xml(origin, mount, local, on_demand=0, icy=1):
    return ("<relay><server>127.0.0.1</server><port>%d</port><mount>%s</mount>"
            "<local-mount>%s</local-mount><relay-shoutcast-metadata>%d</relay-shoutcast-metadata>"
            "<on-demand>%d</on-demand></relay>" % (origin.port, mount, local, icy, on_demand))


def start_origin(server, binary, mount, data):
    origin = server(binary=binary)
    src = origin.source(mount, data, rate=32 * 1024)
    assert src.connect().status == 200
    src.start()
    formatlib.wait_mount(origin, mount)
    return origin, src


def start_edge(server, binary, origin, mount, local, **kw):
    extra = relay_xml(origin, mount, local, **kw)
    if binary and "icecast" in binary:
        extra += "\n<master-update-interval>1</master-update-interval>"  # paces its retries
    return server(binary=binary, extra_xml=extra)


def listeners_on(srv, mount):
    s = formatlib.stats_source(srv, mount)
    return None if s is None else int(s.findtext("listeners"))


def icy_listener(srv, mount):
    lis = srv.listener(mount, headers={"Icy-MetaData": "1"})
    assert lis.open().status == 200
    metaint = int(lis.response.header("icy-metaint"))
    return lis, metaint


def titles(lis, metaint):
    _, blocks = formatlib.icy_demux(lis.snapshot(), metaint)
    return [formatlib.icy_fields(t).get("StreamTitle") for _, t in blocks if t]


def check_mp3_relay(origin, edge, src, data, local):
    formatlib.set_metadata(origin, src.mount, song="First song")
    formatlib.wait_mount(edge, local)
    lis, metaint = icy_listener(edge, local)
    lis.wait_bytes(metaint * 2, 10)
    assert formatlib.set_metadata(origin, src.mount, song="Second <song> & co").status == 200
    wirelib.wait_until(lambda: "Second <song> & co" in titles(lis, metaint), 15,
                       lambda: "the new title on the edge (has %r)" % titles(lis, metaint))
    audio, _ = formatlib.icy_demux(lis.snapshot(), metaint)
    wirelib.locate_slice(data, audio)
    formatlib.wait_title(edge, local, "Second <song> & co")
    lis.close()


@needs_icecast
def test_rimecast_relays_an_icecast_mp3_mount_with_icy_titles(server, data):
    origin, src = start_origin(server, ICECAST, "/live.mp3", data)
    edge = start_edge(server, None, origin, "/live.mp3", "/edge.mp3")
    check_mp3_relay(origin, edge, src, data, "/edge.mp3")
    src.close()


@needs_icecast
def test_icecast_relays_a_rimecast_mp3_mount_with_icy_titles(server, data):
    origin, src = start_origin(server, None, "/live.mp3", data)
    edge = start_edge(server, ICECAST, origin, "/live.mp3", "/edge.mp3")
    check_mp3_relay(origin, edge, src, data, "/edge.mp3")
    src.close()


@needs_icecast
@needs_ffmpeg
@pytest.mark.parametrize("direction", ["icecast-to-rimecast", "rimecast-to-icecast"])
def test_ogg_vorbis_relay_decodes_for_late_joiners(server, tmp_path, direction):
    origin_bin, edge_bin = (ICECAST, None) if direction == "icecast-to-rimecast" else (None, ICECAST)
    origin = server(binary=origin_bin)
    proc = formatlib.ffmpeg_source(origin, "/v.ogg", "vorbis", title="Ogg title")
    try:
        formatlib.wait_mount(origin, "/v.ogg", proc)
        edge = start_edge(server, edge_bin, origin, "/v.ogg", "/e.ogg")
        formatlib.wait_mount(edge, "/e.ogg")
        time.sleep(1.5)  # a late joiner: the stream's headers went by long ago
        lis = edge.listener("/e.ogg")
        assert lis.open().status == 200
        assert lis.response.header("content-type").startswith("audio/ogg")
        lis.wait_bytes(24000, 15)
        body = lis.snapshot()
        lis.close()
        path = str(tmp_path / "edge.ogg")
        with open(path, "wb") as f:
            f.write(body)
        assert body.startswith(b"OggS")
        assert formatlib.ffmpeg_decode_errors(path) == ""
    finally:
        formatlib.stop_process(proc)


def test_listeners_stay_while_the_upstream_drops_and_returns(server, data):
    origin, src = start_origin(server, None, "/live.mp3", data)
    edge = start_edge(server, None, origin, "/live.mp3", "/edge.mp3")
    formatlib.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(20000, 10)
    src.close()
    time.sleep(2.5)
    assert not lis.closed, lis.close_reason
    before = lis.received
    data2 = wirelib.make_data(4 << 20, seed=99)
    src2 = origin.source("/live.mp3", data2, rate=32 * 1024)
    assert src2.connect().status == 200
    src2.start()
    lis.wait_bytes(before + 40000, 15)
    assert not lis.closed
    tail = lis.snapshot()[-16000:]
    wirelib.locate_slice(data2, tail)
    assert "upstream lost, reconnecting" in edge.error_log()
    lis.close()
    src2.close()


def test_on_demand_relay_connects_only_for_listeners(server, data):
    origin, src = start_origin(server, None, "/live.mp3", data)
    edge = start_edge(server, None, origin, "/live.mp3", "/od.mp3", on_demand=1)
    time.sleep(1.5)
    assert listeners_on(origin, "/live.mp3") == 0
    assert "/od.mp3" in [s.get("mount") for s in
                         adminlib.admin(edge, "/admin/stats").xml().findall("source")]
    lis = edge.listener("/od.mp3")
    assert lis.open(timeout=12).status == 200
    lis.wait_bytes(20000, 10)
    wirelib.locate_slice(data, lis.snapshot())
    assert listeners_on(origin, "/live.mp3") == 1
    lis.close()
    t0 = time.monotonic()
    wirelib.wait_until(lambda: listeners_on(origin, "/live.mp3") == 0, 25,
                       "the on-demand relay to disconnect")
    assert time.monotonic() - t0 >= 5
    # and again: a new listener brings it back
    lis = edge.listener("/od.mp3")
    assert lis.open(timeout=12).status == 200
    lis.wait_bytes(10000, 10)
    lis.close()
    src.close()


def test_unknown_mount_is_still_404_next_to_an_on_demand_relay(server, data):
    origin, src = start_origin(server, None, "/live.mp3", data)
    edge = start_edge(server, None, origin, "/live.mp3", "/od.mp3", on_demand=1)
    lis = edge.listener("/nothing.mp3")
    assert lis.open().status == 404
    src.close()


@pytest.mark.parametrize("master_bin", [None, ICECAST], ids=["rimecast-master", "icecast-master"])
def test_slave_follows_the_masters_stream_list(server, data, master_bin):
    if master_bin and not os.path.exists(master_bin):
        pytest.skip("icecast2 not installed")
    master = server(binary=master_bin)
    slave = server(extra_xml="<master-server>127.0.0.1</master-server>"
                   "<master-server-port>%d</master-server-port>"
                   "<master-update-interval>1</master-update-interval>"
                   "<master-username>relay</master-username>"
                   "<master-password>%s</master-password>" % (master.port, SOURCE_PASSWORD))
    src = master.source("/m1.mp3", data, rate=32 * 1024)
    assert src.connect().status == 200
    src.start()
    formatlib.wait_mount(master, "/m1.mp3")
    t0 = time.monotonic()
    formatlib.wait_mount(slave, "/m1.mp3", timeout=6)
    assert time.monotonic() - t0 < 4  # within two intervals (plus the connect)
    lis = slave.listener("/m1.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(20000, 10)
    wirelib.locate_slice(data, lis.snapshot())
    lis.close()
    src.close()
    wirelib.wait_until(lambda: "/m1.mp3" not in [
        s.get("mount") for s in adminlib.admin(slave, "/admin/listmounts").xml().findall("source")],
        6, "the mount to go from the slave")


@pytest.mark.parametrize("binary", [None, ICECAST], ids=["rimecast", "icecast"])
def test_streamlist_answers_the_relay_user_only(server, data, binary):
    if binary and not os.path.exists(binary):
        pytest.skip("icecast2 not installed")
    srv = server(binary=binary)
    src = srv.source("/s.mp3", data)
    assert src.connect().status == 200
    src.start()
    formatlib.wait_mount(srv, "/s.mp3")
    def listed():
        r = adminlib.request(srv, "/admin/streamlist.txt", auth=("relay", SOURCE_PASSWORD))
        assert r.status == 200 and r.header("content-type").startswith("text/plain")
        return "/s.mp3" in r.body.decode().splitlines()  # icecast2 ends lines with CRLF
    # icecast2 lists a mount only after its source ran for a moment
    wirelib.wait_until(listed, 5, "the mount in the stream list")
    assert adminlib.admin(srv, "/admin/streamlist.txt").status == 401
    assert adminlib.request(srv, "/admin/streamlist.txt").status == 401
    src.close()


def test_relay_connects_from_its_bind_address(server, data):
    """<bind> in <relay>: the upstream sees the relay coming from that local address."""
    origin, src = start_origin(server, None, "/live.mp3", data)
    extra = relay_xml(origin, "/live.mp3", "/edge.mp3").replace(
        "</relay>", "<bind>127.0.0.2</bind></relay>")
    edge = server(extra_xml=extra)
    formatlib.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(8192, 5)
    wirelib.wait_until(lambda: "127.0.0.2" in origin.access_log() or
                       b"127.0.0.2" in adminlib.admin(origin, "/admin/listclients?mount=/live.mp3").body,
                       5, "the origin to see the relay from 127.0.0.2")
    lis.close()
    src.stop()
