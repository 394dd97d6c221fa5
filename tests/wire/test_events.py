# SPDX-License-Identifier: GPL-2.0-or-later
"""/admin/events: server-sent events for listener joins and leaves, source
connects and disconnects and title changes; admin credentials; JSON data escaped."""

import urllib.parse

import pytest

from adminlib import EVIL, EventStream, Station, admin, request
from conftest import ADMIN_USER

pytestmark = pytest.mark.rimecast_only


@pytest.fixture
def station(server):
    st = Station(server, ["/a.mp3"])
    yield st
    st.close()


def test_events_require_admin_credentials(station):
    for auth in (None, (ADMIN_USER, "bad")):
        es = EventStream(station.srv, auth=auth)
        assert es.response.status == 401
        es.close()


def test_listener_join_and_leave_events(station):
    es = EventStream(station.srv)
    try:
        assert es.response.status == 200
        assert es.response.header("content-type").startswith("text/event-stream")
        es.wait_for(lambda j: True, 0.2, "nothing") if es.events else None
        lis = station.srv.listener("/a.mp3")
        assert lis.open().status == 200
        join = es.wait_for(lambda j: j["type"] == "listener_join", 5, "join")
        assert join["event"] == "listener_join" and join["json"]["mount"] == "/a.mp3"
        assert join["json"]["ip"] == "127.0.0.1" and join["id"] == str(join["json"]["seq"])
        lid = join["json"]["id"]
        lis.close()
        leave = es.wait_for(lambda j: j["type"] == "listener_leave" and j["id"] == lid, 5, "leave")
        assert int(leave["id"]) > int(join["id"])
        # the listener id is the one listclients and killclient use
        lis2 = station.srv.listener("/a.mp3")
        assert lis2.open().status == 200
        j2 = es.wait_for(lambda j: j["type"] == "listener_join" and j["id"] != lid, 5, "join 2")
        r = admin(station.srv, "/admin/killclient?mount=/a.mp3&id=%d" % j2["json"]["id"])
        assert r.xml().findtext("return") == "1"
        es.wait_for(lambda j: j["type"] == "listener_leave" and j["id"] == j2["json"]["id"], 5)
        lis2.close()
    finally:
        es.close()


def test_title_change_and_source_events_escape_their_data(station):
    es = EventStream(station.srv)
    try:
        admin(station.srv, "/admin/metadata?mount=/a.mp3&mode=updinfo&song="
              + urllib.parse.quote(EVIL + "\n</script>"))
        ev = es.wait_for(lambda j: j["type"] == "metadata", 5, "metadata")
        assert ev["json"]["title"] == EVIL + "\n</script>"
        assert "</script>" not in ev["data"] and "\n" not in ev["data"]
        station.add_source("/b.mp3")
        es.wait_for(lambda j: j["type"] == "source_connect" and j["mount"] == "/b.mp3", 5)
        station.sources.pop("/b.mp3").stop()
        es.wait_for(lambda j: j["type"] == "source_disconnect" and j["mount"] == "/b.mp3", 5)
    finally:
        es.close()


def test_last_event_id_resumes_and_many_streams_get_everything(station):
    streams = [EventStream(station.srv) for _ in range(4)]
    try:
        for i in range(5):
            admin(station.srv, "/admin/metadata?mount=/a.mp3&mode=updinfo&song=t%d" % i)
        for es in streams:
            es.wait_for(lambda j: j.get("title") == "t4", 5, "t4")
            titles = [e["json"]["title"] for e in es.events if e["json"]["type"] == "metadata"]
            assert titles == ["t%d" % i for i in range(5)]
        first = next(e for e in streams[0].events if e["json"].get("title") == "t1")
        resumed = EventStream(station.srv, headers={"Last-Event-ID": first["id"]})
        try:
            resumed.wait_for(lambda j: j.get("title") == "t4", 5, "resumed t4")
            titles = [e["json"]["title"] for e in resumed.events]
            assert titles == ["t2", "t3", "t4"]
        finally:
            resumed.close()
    finally:
        for es in streams:
            es.close()


def test_head_on_events_and_server_survives_abrupt_closes(station):
    r = request(station.srv, "/admin/events", method="HEAD", auth=(ADMIN_USER, "adminpw"))
    assert r.status == 200 and r.body == b""
    for _ in range(20):
        EventStream(station.srv).close()
    admin(station.srv, "/admin/metadata?mount=/a.mp3&mode=updinfo&song=after")
    assert station.srv.is_alive()
    es = EventStream(station.srv)
    try:
        admin(station.srv, "/admin/metadata?mount=/a.mp3&mode=updinfo&song=again")
        es.wait_for(lambda j: j.get("title") == "again", 5)
    finally:
        es.close()


@pytest.mark.slow
def test_keepalive_comment_every_15_seconds(station):
    es = EventStream(station.srv)
    try:
        from adminlib import wait
        wait(lambda: "keepalive" in es.comments, 20, "keepalive comment")
    finally:
        es.close()
