# SPDX-License-Identifier: GPL-2.0-or-later
"""/metrics: Prometheus text exposition, admin credentials required, parsed by a
strict parser, per-mount labels escaped."""

import pytest

from adminlib import Station, admin, parse_prometheus, request, wait
from conftest import SOURCE_PASSWORD

pytestmark = pytest.mark.rimecast_only

QUOTE_MOUNT = '/we"ird.mp3'


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
    assert sample(fams, "rimecast_sources") == 2
    assert sample(fams, "rimecast_server_listeners") == 2
    assert sample(fams, "rimecast_bytes_read_total", mount="/a.mp3") > 0
    assert fams["rimecast_bytes_sent_total"]["type"] == "counter"
    assert fams["rimecast_slow_listeners_total"]["type"] == "counter"
    assert fams["rimecast_listeners"]["type"] == "gauge"
    wait(lambda: sample(parse_prometheus(admin(station.srv, "/metrics").text),
                        "rimecast_bytes_sent_total", mount="/a.mp3") >= 16384, 5, "bytes sent")
    for l in lis:
        l.close()
    wait(lambda: sample(parse_prometheus(admin(station.srv, "/metrics").text),
                        "rimecast_listeners", mount="/a.mp3") == 0, 5, "listeners gone")


def test_metrics_label_values_are_escaped(station):
    station.add_source("/we%22ird.mp3")
    fams = parse_prometheus(admin(station.srv, "/metrics").text)
    assert sample(fams, "rimecast_listeners", mount=QUOTE_MOUNT) == 0
    assert 'mount="/we\\"ird.mp3"' in admin(station.srv, "/metrics").text


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
