# SPDX-License-Identifier: GPL-2.0-or-later
"""Every admin action that changes something is logged once in the error log, saying who did
it: the role and user of the credentials and the client's address (Icecast logs a kicked
listener as "Admin request: client N removed"). Commands that only read are not logged."""

import os
import shutil
import tempfile
import urllib.parse

import pytest

import adminlib
import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER, SOURCE_PASSWORD

pytestmark = pytest.mark.rimecast_only

BY_ADMIN = ', by admin "%s" from 127.0.0.1' % ADMIN_USER
BY_SOURCE = ', by source user "source" from 127.0.0.1'


@pytest.fixture
def station(server):
    d = tempfile.mkdtemp(prefix="wire-users-")
    os.chmod(d, 0o777)  # manageauth writes its new file beside the old one, as nobody
    users = os.path.join(d, "users")
    with open(users, "w") as f:
        f.write("")
    os.chmod(users, 0o666)
    srv = server(extra_xml='<mount type="normal"><mount-name>/prot.mp3</mount-name>'
                 '<authentication type="htpasswd"><option name="filename" value="%s"/>'
                 '</authentication></mount>' % users)
    srcs = []
    for i, name in enumerate(("/live.mp3", "/other.mp3")):
        src = srv.source(name, wirelib.make_data(1 << 20, seed=i), rate=32 * 1024, loop=True)
        assert src.connect().status == 200
        srcs.append(src.start())
    lis = srv.listener("/live.mp3")
    assert lis.open().status == 200
    lis.wait_bytes(1024, 5)
    yield srv
    lis.close()
    for src in srcs:
        src.stop()
    shutil.rmtree(d, ignore_errors=True)


def admin(srv, path, auth=(ADMIN_USER, ADMIN_PASSWORD)):
    r = adminlib.request(srv, path, auth=auth)
    assert r.status == 200, (path, r.status, r.body)
    return r


def listener_id(srv):
    doc = admin(srv, "/admin/listclients?mount=/live.mp3").xml()
    return doc.findtext("source/listener/ID")


def killclient(srv):
    n = listener_id(srv)
    admin(srv, "/admin/killclient?mount=/live.mp3&id=" + n)
    return "admin: client %s removed from /live.mp3" % n + BY_ADMIN


def killsource(srv):
    admin(srv, "/admin/killsource?mount=/live.mp3")
    return "admin: killing the source of /live.mp3" + BY_ADMIN


def moveclients(srv):
    admin(srv, "/admin/moveclients?mount=/live.mp3&destination=/other.mp3")
    return "admin: moved 1 listeners from /live.mp3 to /other.mp3" + BY_ADMIN


def metadata_by_admin(srv):
    admin(srv, "/admin/metadata?mount=/live.mp3&mode=updinfo&song=By+the+admin")
    return 'admin: metadata of /live.mp3 set to "By the admin"' + BY_ADMIN


def metadata_by_source(srv):
    admin(srv, "/admin/metadata?mount=/live.mp3&mode=updinfo&song=By+the+source",
          auth=("source", SOURCE_PASSWORD))
    return 'admin: metadata of /live.mp3 set to "By the source"' + BY_SOURCE


def admin_cgi(srv):
    admin(srv, "/admin.cgi?mode=updinfo&mount=/live.mp3&song=Shoutcast&pass=" +
          urllib.parse.quote(SOURCE_PASSWORD), auth=None)
    return ('admin: metadata of /live.mp3 set to "Shoutcast", by source user (password in the '
            'URL) from 127.0.0.1')


def fallbacks(srv):
    admin(srv, "/admin/fallbacks?mount=/live.mp3&fallback=/other.mp3")
    return "admin: fallback of /live.mp3 set to /other.mp3" + BY_ADMIN


def manageauth_add(srv):
    admin(srv, "/admin/manageauth?mount=/prot.mp3&action=add&username=bob&password=pw")
    return 'admin: add user "bob" on /prot.mp3' + BY_ADMIN


def manageauth_delete(srv):
    admin(srv, "/admin/manageauth?mount=/prot.mp3&action=add&username=eve&password=pw")
    admin(srv, "/admin/manageauth?mount=/prot.mp3&action=delete&username=eve")
    return 'admin: delete user "eve" on /prot.mp3' + BY_ADMIN


@pytest.mark.parametrize("action", [killclient, killsource, moveclients, metadata_by_admin,
                                    metadata_by_source, admin_cgi, fallbacks, manageauth_add,
                                    manageauth_delete], ids=lambda f: f.__name__)
def test_each_admin_action_is_logged_once_with_who_did_it(station, action):
    line = action(station)
    station.wait_log(line)
    # once: the line is complete (nothing after it) and not repeated
    lines = [l for l in station.error_log().splitlines() if line in l]
    assert len(lines) == 1 and lines[0].endswith(line), lines


def test_reading_commands_are_not_logged(station):
    for path in ("/admin/stats", "/admin/listclients?mount=/live.mp3", "/admin/listmounts",
                 "/admin/manageauth?mount=/prot.mp3&action=list"):
        admin(station, path)
    station.wait_log("/admin/manageauth", log="access")
    assert ", by admin" not in station.error_log()
