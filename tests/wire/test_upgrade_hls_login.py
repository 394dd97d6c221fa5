# SPDX-License-Identifier: GPL-2.0-or-later
"""An HLS session logged in with a user file keeps its login across an upgrade: the user is
still listening in the new process (a second login of the same user is refused, as it is for a
plain listener carried with its login), and the session's end gives the user back."""

import re

import pytest

import adminlib
import formatlib as fl
import hlscheck
import wirelib
from test_hls_auth import MOUNT, htpasswd_station, play_segment, poll  # noqa: F401 (the fixture)
from test_upgrade import listener_stats, upgrade

pytestmark = pytest.mark.rimecast_only

ANN = {"Authorization": wirelib.basic_auth("ann", "secret")}


def login_refused(srv):
    lis = srv.listener(MOUNT, headers=ANN)
    status = lis.open(start=False).status
    lis.close()
    return status == 401


def test_an_htpasswd_hls_session_keeps_its_login_across_an_upgrade(htpasswd_station):
    srv = htpasswd_station
    token = hlscheck.token(srv, MOUNT, "8")
    status, _, body = poll(srv, token, ANN)
    assert status == 200 and play_segment(srv, body)[0] == 200  # a listener now
    assert login_refused(srv)  # ann listens: duplicate logins are refused by default
    before = listener_stats(srv, MOUNT)
    upgrade(srv)
    # the session goes on by its token alone, still ann's, still one listener
    assert poll(srv, token)[0] == 200
    assert listener_stats(srv, MOUNT).keys() == before.keys()
    assert fl.json_source(srv, MOUNT)["listeners"] == 1
    assert login_refused(srv)
    # killed, the session gives ann back: a plain login gets in
    sid = next(iter(before))
    assert adminlib.admin(srv, "/admin/killclient?mount=%s&id=%s" % (MOUNT, sid)).status == 200
    wirelib.wait_until(lambda: not login_refused(srv), 10, "ann's login once the session ended")


def test_a_protected_part_waiting_at_the_hand_over_stays_private(htpasswd_station):
    """A part of a logged-in session asked for before it exists waits in the old process; the
    new one answers it as the old would have: for that session only (Cache-Control private),
    never for a shared cache to keep."""
    from test_upgrade_hls import Answers, part_after, server_side
    srv = htpasswd_station
    token = hlscheck.token(srv, MOUNT, "9")
    check = hlscheck.Checker(min_window_targets=0)
    assert poll(srv, token, ANN)[0] == 200
    pl = check.reload_until(lambda: poll(srv, token)[2].decode(),
                            lambda pl: pl["segments"] and pl.get("hint") and pl, 20,
                            "a segment and a hinted part")
    hinted = pl["hint"]["URI"]
    m = re.match(r"hls/(\d+)\.(\d+)\.", hinted)
    msn, part = part_after(pl, int(m.group(1)), int(m.group(2)), 4)  # waits across the upgrade
    uri = re.sub(r"\d+\.\d+\.(\w+)", "%d.%d.\\1" % (msn, part), hinted, count=1)
    assert uri != hinted and "session=" in uri
    s = wirelib.connect(srv.host, srv.port, timeout=30)
    try:
        s.sendall(("GET %s/%s HTTP/1.0\r\nHost: x\r\nUser-Agent: hls-auth/1\r\n\r\n" %
                   (MOUNT, uri)).encode())
        wirelib.wait_until(lambda: server_side(srv, s) == ("01", 0), 10, "the part's request read")
        upgrade(srv)
        status, head, body = Answers(s).answer()
        assert status == 200 and body, body[:300]
        assert head.header("cache-control").startswith("private"), head.header("cache-control")
    finally:
        s.close()
