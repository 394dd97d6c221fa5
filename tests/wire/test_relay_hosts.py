# SPDX-License-Identifier: GPL-2.0-or-later
"""A <relay> with several upstreams (Icecast-KH's <host>, Icecast 2.5's <upstream>).

The relay tries its upstreams in order on each (re)connect: a dead first one is skipped at
once (and logged), a lost stream starts again from the first and goes on from the next one
without dropping the edge's listeners; when every upstream fails the attempts back off
(no busy loop) and the mount stays absent. Too many upstreams stop the start with a clear
message; an unknown element in a <host> is warned about like anywhere else.
"""

import pytest

import adminlib
import formatlib
import wirelib
from conftest import free_port, run_config

pytestmark = pytest.mark.rimecast_only

RATE = 32 * 1024


def block(kind, port, mount="/live.mp3", extra=""):
    return ("<%s><server>127.0.0.1</server><port>%d</port><mount>%s</mount>%s</%s>"
            % (kind, port, mount, extra, kind))


def relay(local, inner):
    return ("<relay>%s<local-mount>%s</local-mount><on-demand>0</on-demand></relay>"
            % (inner, local))


def start_origin(server, mount, data, name=None):
    origin = server()
    src = origin.source(mount, data, rate=RATE, headers={"ice-name": name} if name else None)
    assert src.connect().status == 200
    src.start()
    formatlib.wait_mount(origin, mount)
    return origin, src


def upstream_of(srv, mount):
    s = formatlib.stats_source(srv, mount)
    return None if s is None else s.findtext("relay_upstream")


def url(port, mount="/live.mp3"):
    return "http://127.0.0.1:%d%s" % (port, mount)


@pytest.mark.parametrize("kind", ["host", "upstream"])
def test_a_dead_first_upstream_is_skipped(server, data, kind):
    origin, src = start_origin(server, "/live.mp3", data)
    dead = free_port()
    edge = server(extra_xml=relay("/edge.mp3", block(kind, dead) + block(kind, origin.port)))
    formatlib.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(40000, 10)
    wirelib.locate_slice(data, lis.snapshot()[-16000:])
    log = edge.error_log()
    assert "127.0.0.1:%d/live.mp3: cannot connect" % dead in log, log
    assert "trying upstream 2 of 2" in log, log
    assert upstream_of(edge, "/edge.mp3") == url(origin.port)
    # the admin-only field stays out of the public JSON
    assert "relay_upstream" not in formatlib.json_source(edge, "/edge.mp3")
    lis.close()
    src.close()


def test_the_next_upstream_takes_over_without_dropping_listeners(server, data):
    data2 = wirelib.make_data(4 << 20, seed=77)
    origin1, src1 = start_origin(server, "/live.mp3", data, "Origin One")
    origin2, src2 = start_origin(server, "/live.mp3", data2, "Origin Two")
    # the flat fields are the first upstream, the <host> block the second
    flat = "<server>127.0.0.1</server><port>%d</port><mount>/live.mp3</mount>" % origin1.port
    edge = server(extra_xml=relay("/edge.mp3", flat + block("host", origin2.port)))
    formatlib.wait_mount(edge, "/edge.mp3")
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(40000, 10)
    wirelib.locate_slice(data, lis.snapshot()[-16000:])
    assert upstream_of(edge, "/edge.mp3") == url(origin1.port)
    assert formatlib.stats_source(edge, "/edge.mp3").findtext("server_name") == "Origin One"

    src1.close()  # the first origin's mount ends: 404 there from now on
    wirelib.wait_until(lambda: upstream_of(edge, "/edge.mp3") == url(origin2.port), 15,
                       lambda: "the edge on the second upstream (stats say %r)"
                       % upstream_of(edge, "/edge.mp3"))
    before = lis.received
    lis.wait_bytes(before + 40000, 15)
    assert not lis.closed, lis.close_reason
    wirelib.locate_slice(data2, lis.snapshot()[-16000:])
    log = edge.error_log()
    assert "upstream lost, reconnecting" in log
    assert "127.0.0.1:%d/live.mp3: upstream answered: 404" % origin1.port in log, log
    assert "streaming from %s (upstream 2 of 2)" % url(origin2.port) in log, log
    # what the edge says about the stream is the new upstream's
    assert formatlib.stats_source(edge, "/edge.mp3").findtext("server_name") == "Origin Two"

    # it stays on the second one while that one works, and it survives the first server's end
    origin1.stop()
    before = lis.received
    lis.wait_bytes(before + 20000, 10)
    assert upstream_of(edge, "/edge.mp3") == url(origin2.port)
    lis.close()
    src2.close()


def test_all_upstreams_dead_back_off(server):
    dead1, dead2 = free_port(), free_port()
    edge = server(extra_xml=relay("/edge.mp3", block("host", dead1) + block("host", dead2)))
    wirelib.wait_until(lambda: "all 2 upstreams failed, trying again in about 4 s"
                       in edge.error_log(), 20, "three rounds of failed attempts")
    log = edge.error_log()
    rounds = [ln for ln in log.splitlines() if "all 2 upstreams failed" in ln]
    waits = [int(ln.rsplit("about ", 1)[1].split()[0]) for ln in rounds]
    assert waits[:3] == [1, 2, 4], rounds
    assert log.count("127.0.0.1:%d/live.mp3: cannot connect" % dead1) == len(rounds)
    # waiting for the next round costs nothing
    cpu = wirelib.proc_cpu_seconds(edge.pid)
    wirelib.wait_until(lambda: "trying again in about 8 s" in edge.error_log(), 10,
                       "the next round")
    assert wirelib.proc_cpu_seconds(edge.pid) - cpu < 0.5
    assert formatlib.stats_source(edge, "/edge.mp3") is None
    lis = edge.listener("/edge.mp3")
    assert lis.open().status == 404
    lis.close()


@pytest.mark.parametrize("flat", [0, 1])
def test_too_many_upstreams_stop_the_start(flat):
    n = 16 if flat else 17
    inner = "".join(block("host", 8000 + i) for i in range(n))
    if flat:
        inner = "<server>127.0.0.1</server>" + inner
    code, out, _ = run_config(relay("/edge.mp3", inner))
    assert code not in (None, 0), out
    assert "<relay> has more than 16 upstreams" in out, out


def test_sixteen_upstreams_and_an_unknown_element_in_a_host(server):
    inner = "".join(block("host", free_port(), extra="<bogus>1</bogus>" if i == 3 else "")
                    for i in range(16))
    edge = server(extra_xml=relay("/edge.mp3", inner))
    wirelib.wait_until(lambda: "unknown element <bogus> in <host>, ignored" in edge.error_log(),
                       5, "the warning")
    warnings = adminlib.admin(edge, "/admin/stats").xml().findall("config-warnings/warning")
    assert [w for w in warnings if w.findtext("setting") == "bogus"], warnings
    wirelib.wait_until(lambda: "all 16 upstreams failed" in edge.error_log(), 15,
                       "a round over the 16 upstreams")
