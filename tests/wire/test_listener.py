# SPDX-License-Identifier: GPL-2.0-or-later
"""Listener requests: versions, HEAD, 404, per-mount and global limits."""

import pytest

import wirelib


@pytest.fixture
def live(server, data):
    def make(**cfg):
        srv = server(**cfg)
        src = srv.source("/live.mp3", data, rate=32 * 1024, loop=True)
        assert src.connect().status == 200
        src.start()
        src.wait_sent(8192, 5)
        return srv, src
    return make


@pytest.mark.parametrize("version", ["1.0", "1.1"])
def test_get_returns_200_and_stream_data(live, data, version):
    srv, src = live()
    lis = srv.listener("/live.mp3", version=version)
    resp = lis.open()
    assert resp.status == 200, resp
    assert resp.header("Content-Type") == "audio/mpeg"
    lis.wait_bytes(32768, 5)
    wirelib.locate_slice(data, lis.snapshot())
    lis.close()
    src.stop()


@pytest.mark.rimecast_only
def test_head_returns_headers_and_no_body(live):
    srv, src = live()
    resp, body = wirelib.simple_request(
        srv.host, srv.port, b"HEAD /live.mp3 HTTP/1.1\r\nHost: x\r\n\r\n", timeout=3)
    assert resp is not None and resp.status == 200, resp
    assert resp.header("Content-Type") == "audio/mpeg"
    assert body == b""
    src.stop()


def test_head_on_icecast_is_a_bad_request(live):
    """Pins down the reference behaviour the rimecast HEAD test deliberately departs from."""
    from conftest import IS_ICECAST
    if not IS_ICECAST:
        pytest.skip("icecast2 reference behaviour only")
    srv, src = live()
    resp, _ = wirelib.simple_request(srv.host, srv.port, b"HEAD /live.mp3 HTTP/1.0\r\n\r\n", timeout=3)
    assert resp.status == 400
    src.stop()


def test_unknown_mount_gets_404(server):
    srv = server()
    resp, _ = wirelib.simple_request(srv.host, srv.port, b"GET /nothing.mp3 HTTP/1.0\r\n\r\n")
    assert resp is not None and resp.status == 404, resp


def test_max_listeners_per_mount_gets_403(live):
    srv, src = live(mounts=[dict(mount_name="/live.mp3", max_listeners=2)])
    a, b = srv.listener("/live.mp3"), srv.listener("/live.mp3")
    assert a.open().status == 200
    assert b.open().status == 200
    c = srv.listener("/live.mp3")
    assert c.open().status == 403
    # the two admitted listeners still flow
    a.wait_bytes(a.received + 8192, 5)
    b.wait_bytes(b.received + 8192, 5)
    b.close()
    # a slot is free again once one leaves
    wirelib.wait_until(lambda: srv.listener("/live.mp3").open(start=False).status == 200, 5,
                       "a freed listener slot")
    a.close()
    src.stop()


def test_global_clients_limit_gets_403(live):
    # Icecast counts every connection (the source too) against <clients>.
    srv, src = live(clients=4)
    admitted = []
    refused = None
    for _ in range(6):
        lis = srv.listener("/live.mp3")
        resp = lis.open(start=False)
        if resp is None or resp.status != 200:
            refused = resp
            lis.close()
            break
        admitted.append(lis)
    assert refused is not None and refused.status == 403, refused
    assert 2 <= len(admitted) <= 3, "admitted %d listeners with clients=4" % len(admitted)
    for lis in admitted:
        lis.close()
    src.stop()
