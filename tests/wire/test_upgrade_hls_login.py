# SPDX-License-Identifier: GPL-2.0-or-later
"""An HLS session logged in with a user file keeps its login across an upgrade: the user is
still listening in the new process (a second login of the same user is refused, as it is for a
plain listener carried with its login), and the session's end gives the user back."""

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
