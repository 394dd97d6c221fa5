# SPDX-License-Identifier: GPL-2.0-or-later
"""A mount with authentication stays closed to listeners moved there: by a fallback, by
/admin/moveclients or by fallback-override, and to listeners sent there by the
<fallback-when-full> of a full mount. A listener may go only where it logged in (the mount it
asked for) or to a mount of the same htpasswd file (its user is one of that mount's users);
the others are closed (fallback, as if there were none), stay where they are (moveclients,
override), or are refused as if the full mount had no such fallback (403), and the refusal
is logged once. Each case has its control: an open destination takes everyone."""

import hashlib
import os
import shutil
import tempfile

import pytest

import adminlib
import wirelib

pytestmark = pytest.mark.rimecast_only

USER, PASSWORD = "alice", "wonderland"


@pytest.fixture
def users():
    d = tempfile.mkdtemp(prefix="wire-users-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "users")
    with open(path, "w") as f:
        f.write("%s:%s\n" % (USER, hashlib.md5(PASSWORD.encode()).hexdigest()))
    os.chmod(path, 0o644)
    yield path
    shutil.rmtree(d, ignore_errors=True)


def mount(name, users=None, **settings):
    body = "".join("<%s>%s</%s>" % (k.replace("_", "-"), v, k.replace("_", "-"))
                   for k, v in settings.items())
    if users:
        body += ('<authentication type="htpasswd"><option name="filename" value="%s"/>'
                 '</authentication>' % users)
    return '<mount type="normal"><mount-name>%s</mount-name>%s</mount>' % (name, body)


def source(srv, name, seed):
    src = srv.source(name, wirelib.make_data(1 << 20, seed=seed), rate=32 * 1024, chunk=1024,
                     loop=True)
    assert src.connect().status == 200, src.response
    src.start()
    src.wait_sent(4096, 5)
    return src


def listener(srv, name, login=False):
    headers = {"Authorization": wirelib.basic_auth(USER, PASSWORD)} if login else None
    lis = srv.listener(name, headers=headers)
    assert lis.open().status == 200, (name, lis.response)
    lis.wait_bytes(4096, 5)
    return lis


def listeners_on(srv, name):
    doc = adminlib.admin(srv, "/admin/listclients?mount=" + name).xml()
    return len(doc.findall("source/listener"))


def still_playing(lis):
    lis.wait_bytes(lis.received + 8192, 5)
    assert not lis.closed, lis.close_reason


def close_all(*things):
    for t in things:
        t.close() if isinstance(t, wirelib.Listener) else t.stop()


def test_fallback_to_a_protected_mount_takes_only_its_users(server, users):
    srv = server(extra_xml="".join([
        mount("/open.mp3", fallback_mount="/prot.mp3"),
        mount("/member.mp3", users, fallback_mount="/prot.mp3"),
        mount("/prot.mp3", users),
        mount("/control.mp3", fallback_mount="/free.mp3"),
    ]))
    srcs = {m: source(srv, m, i) for i, m in enumerate(
        ("/prot.mp3", "/free.mp3", "/open.mp3", "/member.mp3", "/control.mp3"))}
    anonymous = listener(srv, "/open.mp3")
    member = listener(srv, "/member.mp3", login=True)
    control = listener(srv, "/control.mp3")
    try:
        for m in ("/open.mp3", "/member.mp3", "/control.mp3"):
            srcs.pop(m).stop()
        anonymous.wait_closed(10)
        srv.wait_log("listeners of /open.mp3 cannot move to fallback /prot.mp3 (it has "
                     "authentication they did not pass): closing them")
        # the one that logged in against the same file goes; the open fallback takes anyone
        wirelib.wait_until(lambda: listeners_on(srv, "/prot.mp3") == 1, 5, "member on /prot")
        wirelib.wait_until(lambda: listeners_on(srv, "/free.mp3") == 1, 5, "control on /free")
        still_playing(member)
        still_playing(control)
        assert srv.error_log().count("cannot move to fallback /prot.mp3") == 1
    finally:
        close_all(anonymous, member, control, *srcs.values())


def test_moveclients_to_a_protected_mount_leaves_the_others_where_they_are(server, users):
    srv = server(extra_xml="".join([mount("/member.mp3", users), mount("/prot.mp3", users)]))
    srcs = [source(srv, m, i) for i, m in enumerate(
        ("/open.mp3", "/member.mp3", "/prot.mp3", "/free.mp3"))]
    anonymous = listener(srv, "/open.mp3")
    member = listener(srv, "/member.mp3", login=True)
    try:
        r = adminlib.admin(srv, "/admin/moveclients?mount=/open.mp3&destination=/prot.mp3")
        assert r.status == 200
        assert r.xml().findtext("message") == (
            "Clients moved from /open.mp3 to /prot.mp3: 0 moved, 0 not moved (destination "
            "full), 1 not moved (not logged in to the destination)")
        assert r.xml().findtext("return") == "0"
        srv.wait_log("1 stay (not logged in to the destination)")
        assert listeners_on(srv, "/open.mp3") == 1 and listeners_on(srv, "/prot.mp3") == 0
        still_playing(anonymous)
        # a user of the same file goes
        r = adminlib.admin(srv, "/admin/moveclients?mount=/member.mp3&destination=/prot.mp3")
        assert r.xml().findtext("message") == "Clients moved from /member.mp3 to /prot.mp3"
        wirelib.wait_until(lambda: listeners_on(srv, "/prot.mp3") == 1, 5, "member on /prot")
        still_playing(member)
        # control: an open destination takes anyone
        r = adminlib.admin(srv, "/admin/moveclients?mount=/open.mp3&destination=/free.mp3")
        assert r.xml().findtext("message") == "Clients moved from /open.mp3 to /free.mp3"
        wirelib.wait_until(lambda: listeners_on(srv, "/free.mp3") == 1, 5, "moved to /free")
        still_playing(anonymous)
    finally:
        close_all(anonymous, member, *srcs)


def test_fallback_when_full_into_a_protected_mount_takes_only_its_users(server, users):
    # max-listeners 0: every listener of these mounts is one too many
    srv = server(extra_xml="".join([
        mount("/open.mp3", max_listeners=0, fallback_mount="/prot.mp3", fallback_when_full=1),
        mount("/member.mp3", users, max_listeners=0, fallback_mount="/prot.mp3",
              fallback_when_full=1),
        mount("/prot.mp3", users),
        mount("/control.mp3", max_listeners=0, fallback_mount="/free.mp3", fallback_when_full=1),
    ]))
    srcs = [source(srv, m, i) for i, m in enumerate(
        ("/open.mp3", "/member.mp3", "/prot.mp3", "/control.mp3", "/free.mp3"))]
    anonymous = srv.listener("/open.mp3")
    got = []
    try:
        # /open.mp3 is full: its fallback would be /prot.mp3, whose users it does not know
        assert anonymous.open().status == 403
        srv.wait_log("/open.mp3 is full and its <fallback-when-full> /prot.mp3 has "
                     "authentication it did not pass")
        assert listeners_on(srv, "/prot.mp3") == 0
        # a listener whose login there is good for /prot.mp3 (the same file) gets it
        got.append(listener(srv, "/member.mp3", login=True))
        assert listeners_on(srv, "/prot.mp3") == 1
        # control: an open fallback takes anyone
        got.append(listener(srv, "/control.mp3"))
        assert listeners_on(srv, "/free.mp3") == 1
        for lis in got:
            still_playing(lis)
    finally:
        close_all(anonymous, *got, *srcs)


def test_override_into_a_protected_mount_brings_back_only_those_who_logged_in(server, users):
    """/home.mp3 and /prot.mp3 have no source: their listeners are served /free.mp3. When
    /prot.mp3 starts, fallback-override would bring back the listener of /home.mp3 (its chain
    now resolves to /prot.mp3) but it never logged in there; the one that asked for /prot.mp3
    and logged in comes back. The control: /open2.mp3 has no authentication."""
    srv = server(extra_xml="".join([
        mount("/home.mp3", fallback_mount="/prot.mp3"),
        mount("/prot.mp3", users, fallback_mount="/free.mp3", fallback_override=1),
        mount("/home2.mp3", fallback_mount="/open2.mp3"),
        mount("/open2.mp3", fallback_mount="/free.mp3", fallback_override=1),
    ]))
    srcs = [source(srv, "/free.mp3", 1)]
    anonymous = listener(srv, "/home.mp3")
    member = listener(srv, "/prot.mp3", login=True)
    control = listener(srv, "/home2.mp3")
    try:
        assert listeners_on(srv, "/free.mp3") == 3
        srcs.append(source(srv, "/prot.mp3", 2))
        srv.wait_log("fallback-override: 1 listeners stay where they are: /prot.mp3 has "
                     "authentication they did not pass")
        wirelib.wait_until(lambda: listeners_on(srv, "/prot.mp3") == 1, 5, "member back")
        assert listeners_on(srv, "/free.mp3") == 2
        still_playing(anonymous)
        still_playing(member)
        srcs.append(source(srv, "/open2.mp3", 3))
        wirelib.wait_until(lambda: listeners_on(srv, "/open2.mp3") == 1, 5, "control back")
        assert listeners_on(srv, "/free.mp3") == 1
        still_playing(control)
        assert srv.error_log().count("stay where they are") == 1
    finally:
        close_all(anonymous, member, control, *srcs)
