# SPDX-License-Identifier: GPL-2.0-or-later
"""YP directory listings (<directory>) against a recording directory server.

A public mount is added after add-delay with Icecast's fields, touched with its
listener count at the TouchFreq the directory asks for (under the SID it gave),
and removed when its source ends; private mounts are never listed. A directory
that is slow past yp-url-timeout or failing leaves streaming and admin as fast
as without it.
"""

import socket
import time

import pytest

import adminlib
import httprec
import wirelib

MOUNT = "/radio"
DATA = wirelib.make_data(256 * 1024)

pytestmark = pytest.mark.rimecast_only  # Icecast waits 60 s and touches at most every 30 s


def listed(req):
    if req.action == "add":
        return 200, {"YPResponse": "1", "YPMessage": "Welcome <b>", "SID": "sid-42",
                     "TouchFreq": "1"}
    return 200, {"YPResponse": "1"}


directory = httprec.recorder_fixture("directory", listed)


def yp_xml(url, timeout=2, touch=5, delay=0):
    return ("<directory><yp-url>%s</yp-url><yp-url-timeout>%d</yp-url-timeout>"
            "<touch-interval>%d</touch-interval><add-delay>%d</add-delay></directory>"
            % (url, timeout, touch, delay))


def source(srv, mount=MOUNT, public="1", **headers):
    h = {"Content-Type": "audio/mpeg", "ice-public": public, "ice-name": "Wire FM",
         "ice-genre": "test rock", "ice-description": "a d\u00e9scription".encode().decode(
             "latin-1"), "ice-url": "http://wire.example/", "ice-bitrate": "128",
         "ice-audio-info": "samplerate=44100;channels=2"}
    h.update(headers)
    src = srv.source(mount, DATA, headers=h, loop=True)
    assert src.connect().status == 200
    src.start()
    return src


def test_public_mount_is_added_touched_and_removed(server, directory):
    d = directory()
    srv = server(extra_xml=yp_xml(d.url("/cgi"), delay=1))
    t0 = time.monotonic()
    src = source(srv)
    private = source(srv, "/private", public="0")
    add = d.wait("add", 1, 6)[0]
    assert add.time - t0 >= 0.9  # add-delay
    f = add.form
    assert f["sn"] == "Wire FM" and f["genre"] == "test rock" and f["desc"] == "a d\u00e9scription"
    assert f["url"] == "http://wire.example/" and f["type"] == "audio/mpeg" and f["b"] == "128"
    assert f["listenurl"] == "http://127.0.0.1:%d/radio" % srv.port
    assert f["samplerate"] == "44100" and f["channels"] == "2" and f["stype"] == ""
    assert add.body.startswith(b"action=add&sn=Wire%20FM&genre=test%20rock&cpswd=&desc=")
    srv.wait_log("listed at")
    assert "Welcome <b>" in srv.error_log()
    lst = srv.listener(MOUNT)
    assert lst.open().status == 200
    touches = d.wait("touch", 3, 8)
    assert all(t.form["sid"] == "sid-42" for t in touches)  # SID reused
    gaps = [b.time - a.time for a, b in zip(touches, touches[1:])]
    assert all(0.8 <= g <= 2.2 for g in gaps), gaps  # TouchFreq: 1
    wirelib.wait_until(lambda: any(t.form["listeners"] == "1" for t in d.of("touch")), 5,
                       "a touch counting the listener")
    t = d.of("touch")[-1].form
    assert t["max_listeners"] == "unlimited" and set(t) >= {"st", "stype"}
    lst.close()
    src.stop()
    rm = d.wait("remove", 1, 5)[0]
    assert rm.body == b"action=remove&sid=sid%2d42"
    assert all(r.form.get("listenurl", "").find("private") < 0 for r in d.requests)
    private.stop()


def test_cluster_password_is_sent_as_cpswd(server, directory):
    d = directory()
    srv = server(extra_xml=yp_xml(d.url("/cgi")) + '<mount type="normal"><mount-name>%s'
                 '</mount-name><cluster-password>c p&amp;w</cluster-password></mount>' % MOUNT)
    src = source(srv)
    assert d.wait("add", 1, 5)[0].form["cpswd"] == "c p&w"
    src.stop()


def admin_latency(srv):
    t0 = time.monotonic()
    r = adminlib.admin(srv, "/admin/stats")
    assert r.status == 200
    return time.monotonic() - t0


@pytest.mark.parametrize("kind", ["slow", "error", "refused"])
def test_bad_directory_leaves_streaming_and_admin_unaffected(server, directory, kind):
    if kind == "refused":
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        url = "http://127.0.0.1:%d/cgi" % s.getsockname()[1]
        s.close()
        d = None
    else:
        d = directory((lambda req: (time.sleep(5), listed(req))[1]) if kind == "slow"
                      else (lambda req: (500, {})))
        url = d.url("/cgi")
    srv = server(extra_xml=yp_xml(url, timeout=1, touch=1))
    src = source(srv)
    lst = srv.listener(MOUNT)
    assert lst.open().status == 200
    lst.wait_bytes(16 * 1024, 5)
    start, t0 = lst.received, time.monotonic()
    worst = 0.0
    while time.monotonic() - t0 < 4:
        worst = max(worst, admin_latency(srv))
        time.sleep(0.1)
    rate = (lst.received - start) / (time.monotonic() - t0)
    assert worst < 0.5, worst
    assert rate > 32 * 1024, rate  # the source sends 64 KiB/s
    srv.wait_log("yp: add of /radio at")
    if d is not None:
        assert len(d.of("add")) >= 2  # retried after backing off
    lst.close()
    src.stop()
