# SPDX-License-Identifier: GPL-2.0-or-later
"""Listener authentication with <authentication type="htpasswd"> on a mount.

HTTP Basic on GET/HEAD of the mount (401 with Icecast's challenge), Icecast's
"user:<md5 hex>" files, duplicate logins, the file re-read when it changes
(twice within one second too), /admin/manageauth (XML, JSON, HTML) writing the
file atomically (a new file renamed over the old one), a deleted user's listener
staying connected while the user can no longer log in, the admin pages offering
Users only for htpasswd mounts (sourceless ones too), and the per-address
back-off after repeated failures. Passwords are verified off the workers: a
burst of logins on a costly hash stalls no other listener of the worker,
guesses sent at once stop at the back-off, listeners that hang up while their
check waits leave nothing behind, manageauth's changes are verifier jobs too;
an on-demand relay's protected mount connects only for a listener that logged in.
"""

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import time
import warnings

import pytest

import adminlib
import formatlib
import wirelib
from conftest import IS_ICECAST, SOURCE_PASSWORD

MOUNT = "/secret"
DATA = wirelib.make_data(256 * 1024)


def md5_line(user, password):
    return "%s:%s\n" % (user, hashlib.md5(password.encode()).hexdigest())


def user_dir():
    """A directory the server (which drops to nobody) may write its temporary file in."""
    d = tempfile.mkdtemp(prefix="wire-users-")
    os.chmod(d, 0o777)
    return d


def write_users(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o666)


def auth_mount(path, **options):
    opts = {"filename": path}
    opts.update(options)
    return {"mount_name": MOUNT, "auth": {"type": "htpasswd", "options": opts}}


@pytest.fixture
def station(server):
    made = []

    def start(users="", mount_opts=None, live=True, **cfg):
        d = user_dir()
        made.append(d)
        path = os.path.join(d, "users")
        write_users(path, users)
        srv = server(mounts=[auth_mount(path, **(mount_opts or {}))], **cfg)
        src = None
        if live:
            src = srv.source(MOUNT, DATA, headers={"Content-Type": "audio/mpeg"})
            assert src.connect().status == 200
            src.start()
            wirelib.wait_until(lambda: src.sent > 32 * 1024, 5, "source data")
        return srv, path, src

    yield start
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


def get(srv, user=None, password=None, method="GET", mount=MOUNT):
    headers = {}
    if user is not None:
        headers["Authorization"] = wirelib.basic_auth(user, password)
    lst = srv.listener(mount, method=method, headers=headers)
    resp = lst.open()
    return lst, resp


def test_listener_without_or_with_wrong_credentials_gets_401(station):
    srv, path, src = station(md5_line("alice", "wonderland"))
    for creds in ((None, None), ("alice", "wrong"), ("nobody", "wonderland")):
        lst, resp = get(srv, *creds)
        assert resp.status == 401, resp
        assert resp.header("WWW-Authenticate") == 'Basic realm="Icecast2 Server"'
        lst.close()
    lst, resp = get(srv, "alice", "wonderland")
    assert resp.status == 200
    lst.wait_bytes(16 * 1024, 5)
    lst.close()
    if not IS_ICECAST:  # Icecast 2.4 answers HEAD with 400
        head, resp = get(srv, "alice", "wonderland", method="HEAD")
        assert resp.status == 200
        head.close()
    src.stop()


def test_curl_and_ffmpeg_listen_with_credentials_in_the_url(station):
    srv, path, _ = station(md5_line("bob", "s3cret"), live=False)
    enc = formatlib.ffmpeg_source(srv, MOUNT, "mp3")
    try:
        wirelib.wait_until(lambda: adminlib.admin(srv, "/admin/listmounts").body.count(
            MOUNT.encode()) > 0, 10, "the encoder on the mount")
        time.sleep(1)
        url = "http://bob:s3cret@127.0.0.1:%d%s" % (srv.port, MOUNT)
        bad = url.replace("s3cret", "nope")
        for u, want in ((url, "200"), (bad, "401")):
            out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                  "--max-time", "1", u], capture_output=True, text=True)
            assert out.stdout == want
        ff = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-t", "0.5", "-i", url,
                             "-f", "null", "-"], capture_output=True, text=True, timeout=20)
        assert ff.returncode == 0, ff.stderr
        ff = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-t", "0.5", "-i", bad,
                             "-f", "null", "-"], capture_output=True, text=True, timeout=20)
        assert ff.returncode != 0 and "401" in ff.stderr, ff.stderr
    finally:
        formatlib.stop_process(enc)


def test_a_user_already_listening_is_refused_a_second_login(station):
    srv, path, src = station(md5_line("carol", "pw"))
    first, resp = get(srv, "carol", "pw")
    assert resp.status == 200
    second, resp2 = get(srv, "carol", "pw")
    assert resp2.status == 401
    second.close()
    first.close()
    # once the first connection is gone, the user may log in again
    wirelib.wait_until(lambda: get(srv, "carol", "pw")[1].status == 200, 5, "login after leave")
    src.stop()


def test_allow_duplicate_users_lets_the_same_user_in_twice(station):
    srv, path, src = station(md5_line("dave", "pw"), {"allow_duplicate_users": "1"})
    a, r1 = get(srv, "dave", "pw")
    b, r2 = get(srv, "dave", "pw")
    assert (r1.status, r2.status) == (200, 200)
    a.close()
    b.close()
    src.stop()


def test_listclients_shows_the_user_a_listener_logged_in_with(station):
    srv, path, src = station(md5_line("erin", "pw"))
    lst, resp = get(srv, "erin", "pw")
    assert resp.status == 200
    doc = adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT).xml()
    listeners = doc.findall("source/listener")
    assert [l.findtext("username") for l in listeners] == ["erin"]
    html = adminlib.admin(srv, "/admin/listclients.xsl?mount=" + MOUNT)
    assert html.status == 200 and b"erin" in html.body
    lst.close()
    src.stop()


@pytest.mark.rimecast_only
def test_file_changed_twice_within_a_second_is_picked_up(station):
    srv, path, src = station(md5_line("erin", "one"))
    lst, resp = get(srv, "erin", "one")
    assert resp.status == 200
    lst.close()
    # two rewrites in place, same size, same second: Icecast misses the second one
    write_users(path, md5_line("erin", "two"))
    r = get(srv, "erin", "two")
    r[0].close()
    write_users(path, md5_line("erin", "six"))
    assert os.stat(path).st_size == len(md5_line("erin", "two"))
    assert get(srv, "erin", "two")[1].status == 401
    ok = get(srv, "erin", "six")
    assert ok[1].status == 200
    ok[0].close()
    src.stop()


@pytest.mark.rimecast_only
def test_unknown_lines_and_comments_are_skipped(station):
    srv, path, src = station("# a comment\n\nbroken line\n" + md5_line("fay", "pw") +
                             "gil:$6$saltsalt$" + "x" * 86 + "\n")
    ok = get(srv, "fay", "pw")
    assert ok[1].status == 200
    ok[0].close()
    assert get(srv, "gil", "pw")[1].status == 401
    src.stop()


# ---------------------------------------------------------------- manageauth

def manage(srv, query, view=""):
    return adminlib.admin(srv, "/admin/manageauth%s?mount=%s&%s" % (view, MOUNT, query))


@pytest.mark.rimecast_only
def test_manageauth_adds_lists_and_deletes_users_atomically(station):
    srv, path, src = station(md5_line("old", "pw"))
    r = manage(srv, "action=add&username=newbie&password=pa%26ss")
    assert r.status == 200
    assert r.xml().findtext("iceresponse/message") or "added" in r.body.decode()
    text = open(path).read()
    assert text.startswith("newbie:$6$") and md5_line("old", "pw") in text
    # written through a temporary file renamed over the old one: none left, mode kept
    assert sorted(os.listdir(os.path.dirname(path))) == ["users"]
    assert os.stat(path).st_mode & 0o777 == 0o666
    ok = get(srv, "newbie", "pa&ss")
    assert ok[1].status == 200
    ok[0].close()
    # the list: XML as Icecast's, JSON, and the HTML page
    doc = manage(srv, "action=list").xml()
    users = [u.findtext("username") for u in doc.findall("source/User")]
    assert users == ["newbie", "old"], r.body
    j = manage(srv, "action=list", ".json").json()
    assert json.dumps(j).count("newbie") == 1
    html = manage(srv, "action=list", ".xsl").body.decode()
    assert "newbie" in html and "stay connected" in html
    # a duplicate add is refused, a delete takes effect at once
    assert b"already" in manage(srv, "action=add&username=newbie&password=x").body
    assert manage(srv, "action=delete&username=newbie").status == 200
    assert get(srv, "newbie", "pa&ss")[1].status == 401
    assert "newbie" not in open(path).read()
    src.stop()


@pytest.mark.rimecast_only
def test_manageauth_changes_are_made_on_the_verifier_threads(station):
    """Hashing a new password and rewriting the file (fsync) are verifier jobs, not work of
    the worker that answers the request; listing is neither."""
    srv, path, src = station(md5_line("old", "pw"), live=False)

    def jobs():
        return metrics(srv)["rimecast_verifier_jobs_total"]
    before = jobs()
    assert manage(srv, "action=list").status == 200
    assert jobs() == before
    r = manage(srv, "action=add&username=kim&password=pw")
    assert r.status == 200 and r.xml().findtext("iceresponse/return") == "1"
    assert jobs() == before + 1
    r = manage(srv, "action=delete&username=nobody")
    assert r.status == 200 and r.xml().findtext("iceresponse/message") == "User not found"
    r = manage(srv, "action=delete&username=kim")
    assert r.status == 200 and r.xml().findtext("iceresponse/message") == "User deleted"
    assert jobs() == before + 3
    assert manage(srv, "action=add&username=kim").status == 400  # no password: not queued
    assert jobs() == before + 3


@pytest.mark.rimecast_only
def test_manageauth_replaces_the_file_instead_of_writing_it_in_place(station):
    srv, path, src = station(md5_line("old", "pw"), live=False)
    first = os.stat(path).st_ino
    assert manage(srv, "action=add&username=added&password=pw").status == 200
    added = os.stat(path)
    assert "added:" in open(path).read()
    assert added.st_ino != first  # a new file renamed over the old one, not rewritten
    assert manage(srv, "action=delete&username=old").status == 200
    assert "old:" not in open(path).read()
    assert os.stat(path).st_ino != added.st_ino
    assert sorted(os.listdir(os.path.dirname(path))) == ["users"]


@pytest.mark.rimecast_only
def test_deleted_user_keeps_listening_but_cannot_log_in_again(station):
    # duplicates allowed: a second login is refused for the deletion alone
    srv, path, src = station(md5_line("ivy", "pw"), {"allow_duplicate_users": "1"})
    lst, resp = get(srv, "ivy", "pw")
    assert resp.status == 200
    lst.wait_bytes(8192, 5)
    again, resp = get(srv, "ivy", "pw")
    assert resp.status == 200
    again.close()
    assert manage(srv, "action=delete&username=ivy").status == 200
    assert get(srv, "ivy", "pw")[1].status == 401
    # the stated policy: connected listeners stay and keep receiving
    before = lst.received
    lst.wait_bytes(before + 16 * 1024, 5)
    assert not lst.closed
    users = [l.findtext("username") for l in adminlib.admin(
        srv, "/admin/listclients?mount=" + MOUNT).xml().findall("source/listener")]
    assert users == ["ivy"]
    lst.close()
    src.stop()


@pytest.mark.rimecast_only
def test_users_tab_only_on_htpasswd_mounts_and_sourceless_ones_reachable(server):
    d = user_dir()
    try:
        path = os.path.join(d, "users")
        write_users(path, md5_line("kim", "pw"))
        idle = auth_mount(path)
        idle["mount_name"] = "/idle"
        srv = server(mounts=[auth_mount(path), idle, {"mount_name": "/plain"}])
        srcs = []
        for mount in (MOUNT, "/plain"):
            src = srv.source(mount, DATA, headers={"Content-Type": "audio/mpeg"})
            assert src.connect().status == 200
            src.start()
            srcs.append(src)
        formatlib.wait_mount(srv, MOUNT)
        formatlib.wait_mount(srv, "/plain")
        # the stats say which mounts have htpasswd users, live or not
        doc = adminlib.admin(srv, "/admin/stats").xml()
        auth = {s.get("mount"): s.findtext("authenticator") for s in doc.findall("source")}
        assert auth == {MOUNT: "htpasswd", "/plain": None}, auth
        assert [m.text for m in doc.findall("htpasswd-mounts/mount")] == [MOUNT, "/idle"]
        # the overview: a Users tab on the protected card only, a link for the sourceless one
        html = adminlib.admin(srv, "/admin/stats.xsl").body.decode()

        def card(mount):
            return html.split('<li class="card" data-mount="%s"' % mount, 1)[1].split("</article>")[0]
        assert "/admin/manageauth.xsl?mount=/secret" in card(MOUNT)
        assert "manageauth.xsl" not in card("/plain")
        listed = html.split('class="sourceless-users"', 1)[1].split("</ul>")[0]
        assert 'href="/admin/manageauth.xsl?mount=/idle"' in listed and MOUNT not in listed
        # the page behind the link works without a source
        page = adminlib.admin(srv, "/admin/manageauth.xsl?mount=/idle")
        assert page.status == 200 and "kim" in page.body.decode()
        # the tabs of one mount's pages follow its configuration
        for page in ("listclients", "updatemetadata", "moveclients"):
            assert "manageauth.xsl" in adminlib.admin(
                srv, "/admin/%s.xsl?mount=%s" % (page, MOUNT)).body.decode(), page
            assert "manageauth.xsl" not in adminlib.admin(
                srv, "/admin/%s.xsl?mount=/plain" % page).body.decode(), page
        for src in srcs:
            src.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.rimecast_only
def test_manageauth_works_without_a_live_source(station):
    srv, path, src = station("", live=False)
    assert manage(srv, "action=add&username=early&password=bird").status == 200
    doc = manage(srv, "action=list").xml()
    assert [u.findtext("username") for u in doc.findall("source/User")] == ["early"]


@pytest.mark.rimecast_only
def test_manageauth_on_a_mount_without_htpasswd_is_refused(server):
    srv = server(mounts=[{"mount_name": "/plain"}])
    r = adminlib.admin(srv, "/admin/manageauth?mount=/plain&action=list")
    assert r.status == 400


# ---------------------------------------------------------------- back-off

# loopback counts here like a remote address (it is exempt by default: test_backoff.py)
COUNT_LOOPBACK = "<login-backoff><exempt-local>0</exempt-local></login-backoff>"

@pytest.mark.rimecast_only
def test_repeated_failures_back_off_and_expire(station):
    srv, path, src = station(md5_line("hal", "right"), security_xml=COUNT_LOOPBACK)
    for _ in range(5):
        lst, resp = get(srv, "hal", "wrong")
        assert resp.status == 401
        lst.close()
    lst, resp = get(srv, "hal", "right")
    assert resp.status == 429 and int(resp.header("Retry-After")) >= 1
    lst.close()
    # listeners without credentials and other requests are not affected
    assert get(srv)[1].status == 401
    assert adminlib.request(srv, "/status-json.xsl").status == 200
    log = srv.error_log()
    assert log.count("failed login from 127.0.0.1") == 5, log
    time.sleep(2.2)
    ok = get(srv, "hal", "right")
    assert ok[1].status == 200
    ok[0].close()
    src.stop()


# ---------------------------------------------------------------- Icecast's own files

ICECAST = "/usr/bin/icecast2"


@pytest.mark.rimecast_only
@pytest.mark.skipif(not os.path.exists(ICECAST), reason="Debian's icecast2 is not installed")
def test_a_file_written_by_icecast_manageauth_is_read(station):
    import conftest
    d = user_dir()
    path = os.path.join(d, "users")
    write_users(path, "")
    ice = None
    try:
        for attempt in range(3):
            ice = conftest.Server(binary=ICECAST, mounts=[auth_mount(path)]).start()
            try:
                # answering, not only listening (a source that came before icecast2's start-up
                # was done was closed unanswered); icecast2 itself now and then never answers
                # after a start on a busy machine: it gets another start
                wirelib.wait_until(lambda: _answers(ice.port), 10, "icecast2 to answer")
                break
            except wirelib.WaitTimeout:
                ice.stop()
                shutil.rmtree(ice.dir, ignore_errors=True)
                if attempt == 2:
                    raise
        src = ice.source(MOUNT, DATA, headers={"Content-Type": "audio/mpeg"})
        assert src.connect().status == 200   # Icecast manages users of live mounts only
        src.start()
        r = adminlib.admin(ice, "/admin/manageauth?mount=%s&action=add&username=iceuser"
                           "&password=icepass" % MOUNT)
        assert r.status == 200
        src.stop()
    finally:
        if ice is not None:
            ice.stop()
            shutil.rmtree(ice.dir, ignore_errors=True)
    assert open(path).read().strip() == md5_line("iceuser", "icepass").strip()
    srv, _, src = station(open(path).read())
    ok = get(srv, "iceuser", "icepass")
    assert ok[1].status == 200
    ok[0].close()
    assert get(srv, "iceuser", "wrong")[1].status == 401
    src.stop()
    shutil.rmtree(d, ignore_errors=True)


def _answers(port):
    try:
        s = wirelib.connect("127.0.0.1", port, timeout=1)
        s.sendall(b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
        head, _ = wirelib.read_head(s, 2)
        s.close()
        return head is not None and head.status == 200
    except (OSError, wirelib.WaitTimeout):
        return False


@pytest.mark.rimecast_only  # sourceless mounts serving a fallback: see test_fallback.py
def test_a_protected_mount_without_source_guards_its_fallback(server):
    """A listener asking for a protected mount that serves its fallback (no source of its
    own) is authenticated against the mount it asked for, as if its source were there."""
    d = user_dir()
    try:
        path = os.path.join(d, "users")
        write_users(path, md5_line("dave", "pw"))
        mount = auth_mount(path)
        mount["fallback_mount"] = "/open"
        srv = server(mounts=[mount])
        src = srv.source("/open", DATA)
        assert src.connect().status == 200
        src.start()
        wirelib.wait_until(lambda: src.sent > 32 * 1024, 5, "source data")
        lst, resp = get(srv)
        assert resp.status == 401, resp
        lst.close()
        lst, resp = get(srv, "dave", "pw")
        assert resp.status == 200, resp
        lst.wait_bytes(16 * 1024, 5)
        lst.close()
        src.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.rimecast_only  # Icecast serves the protected fallback to anyone
def test_an_open_mount_without_source_does_not_open_its_protected_fallback(server):
    """A listener asking for an open mount with no source is served that mount's fallback;
    when the fallback has authentication of its own, the listener passes it first (as one
    that asked for the fallback), a direct request and one through the open mount alike."""
    d = user_dir()
    try:
        path = os.path.join(d, "users")
        write_users(path, md5_line("erin", "pw"))
        protected = auth_mount(path)
        protected["mount_name"] = "/club"
        srv = server(mounts=[protected, {"mount_name": "/lobby", "fallback_mount": "/club"}])
        src = srv.source("/club", DATA)
        assert src.connect().status == 200
        src.start()
        wirelib.wait_until(lambda: src.sent > 32 * 1024, 5, "source data")
        for mount in ("/lobby", "/club"):
            lst, resp = get(srv, mount=mount)
            assert resp.status == 401, (mount, resp)
            lst.close()
            lst, resp = get(srv, "erin", "wrong", mount=mount)
            assert resp.status == 401, (mount, resp)
            lst.close()
            lst, resp = get(srv, "erin", "pw", mount=mount)
            assert resp.status == 200, (mount, resp)
            lst.wait_bytes(16 * 1024, 5)
            lst.close()
        src.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ---------------------------------------------------------------- verification off the workers

def costly_hash(password, seconds=0.3):
    """A "$6$" line's hash whose check costs about `seconds` on this machine (rounds= scaled
    to it), and what one check of it took here."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        crypt = pytest.importorskip("crypt")
    rounds = 999999
    while True:
        t0 = time.monotonic()
        h = crypt.crypt(password, "$6$rounds=%d$wiretestsalt$" % rounds)
        took = time.monotonic() - t0
        if took >= seconds * 0.8 or rounds >= 999999999:
            break
        rounds = min(999999999, int(rounds * seconds / took) + 1)
    t0 = time.monotonic()
    assert crypt.crypt(password, h) == h
    return h, min(took, time.monotonic() - t0)


class ArrivalListener(wirelib.Listener):
    """A listener that notes when each piece of its stream arrives."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.arrivals = []

    def _add(self, chunk):
        if chunk:
            self.arrivals.append(time.monotonic())
        super()._add(chunk)

    def longest_gap(self, start, end):
        points = [start] + [t for t in list(self.arrivals) if start < t < end] + [end]
        return max(b - a for a, b in zip(points, points[1:]))


def send_logins(srv, logins, mount=MOUNT):
    """Opens one connection per (user, password, method), then sends all the requests at once
    (the server reads them in one go). Returns the sockets."""
    socks = [wirelib.connect(srv.host, srv.port, 10) for _ in logins]
    for s, (user, password, method) in zip(socks, logins):
        s.sendall(("%s %s HTTP/1.0\r\nAuthorization: %s\r\n\r\n"
                   % (method, mount, wirelib.basic_auth(user, password))).encode())
    return socks


def statuses_of(socks, timeout):
    out = []
    for s in socks:
        resp, _ = wirelib.read_head(s, timeout)
        out.append(resp.status if resp else None)
    return out


def metrics(srv):
    r = adminlib.admin(srv, "/metrics")
    assert r.status == 200
    fams = adminlib.parse_prometheus(r.body.decode())
    return {name: v for fam in fams.values() for name, labels, v in fam["samples"]
            if not labels}


@pytest.mark.rimecast_only
def test_password_checks_leave_the_other_listeners_of_the_worker_streaming(server):
    """Costly hashes are verified off the worker: with one worker, a burst of logins on a
    protected mount does not hold up a listener of another mount, and each login still gets
    the answer its password deserves."""
    slow, cost = costly_hash("right")
    d = user_dir()
    try:
        path = os.path.join(d, "users")
        write_users(path, "slow:%s\n" % slow)
        # one worker: every client shares its loop; write window 0: each source write goes
        # out to the listeners at once (a piece every 1/16 s)
        srv = server(mounts=[auth_mount(path, allow_duplicate_users="1")], workers=1,
                     write_window=0)
        sources = []
        for mount in (MOUNT, "/open"):
            src = srv.source(mount, DATA, loop=True, headers={"Content-Type": "audio/mpeg"})
            assert src.connect().status == 200
            sources.append(src.start())
        plain = ArrivalListener(srv.host, srv.port, "/open")
        assert plain.open().status == 200
        plain.wait_bytes(32 * 1024, 10)
        logins = ([("slow", "right", "GET")] * 6 + [("slow", "right", "HEAD")] +
                  [("slow", "wrong", "GET")] * 2 + [("nobody", "right", "GET")])
        start = time.monotonic()
        socks = send_logins(srv, logins)
        statuses = statuses_of(socks, 120)
        end = time.monotonic()
        wirelib.wait_until(lambda: plain.arrivals[-1] > end, 10, "the plain listener to go on")
        gap = plain.longest_gap(start, plain.arrivals[-1])
        turn = metrics(srv)["rimecast_worker_turn_max_seconds"]
        assert statuses == [200] * 7 + [401] * 3, statuses
        total = len(logins) * cost  # what the checks cost one after the other
        assert gap < total / 3, "the plain listener waited %.2f s (checks: %.2f s in all, " \
            "%.2f s each; logins took %.2f s)" % (gap, total, cost, end - start)
        assert turn < total / 3, "a turn of the worker took %.2f s" % turn
        for s in socks:
            s.close()
        plain.close()
        for src in sources:
            src.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.mark.rimecast_only
def test_many_guesses_at_once_from_one_address_stop_at_the_back_off(station):
    """Guesses sent all at once are not all verified: once the address is blocked, those
    still waiting for verification get 429 (a check already running may still end in 401)."""
    srv, path, src = station(md5_line("ivy", "right"), security_xml=COUNT_LOOPBACK)
    n = 12
    socks = send_logins(srv, [("ivy", "guess%d" % i, "GET") for i in range(n)])
    statuses = statuses_of(socks, 30)
    for s in socks:
        s.close()
    refused, blocked = statuses.count(401), statuses.count(429)
    assert refused + blocked == n, statuses
    assert 5 <= refused <= 7 and blocked >= n - 7, statuses
    assert srv.error_log().count("failed login from 127.0.0.1") == refused
    src.stop()


@pytest.mark.rimecast_only
def test_listeners_that_hang_up_while_their_password_is_checked_leave_nothing_behind(station):
    slow, cost = costly_hash("right")
    srv, path, src = station("slow:%s\n" % slow)
    base = metrics(srv)
    n = 6
    socks = send_logins(srv, [("slow", "right", "GET")] * n)
    wirelib.wait_until(lambda: metrics(srv)["rimecast_verifier_queued"] > 0, 10,
                       "the checks to wait for the verifier")
    for s in socks:
        wirelib.set_linger_rst(s)
        s.close()

    def settled():
        m = metrics(srv)
        return (m["rimecast_verifier_jobs_total"] >= base["rimecast_verifier_jobs_total"] + n
                and m["rimecast_verifier_queued"] == 0 and m["rimecast_verifier_running"] == 0
                and m["rimecast_clients"] == base["rimecast_clients"])
    wirelib.wait_until(settled, 30 + n * cost, "the checks to end and the clients to go")
    fams = adminlib.parse_prometheus(adminlib.admin(srv, "/metrics").body.decode())
    assert adminlib.family_sum(fams, "rimecast_listeners") == 0
    # no session was left open in their name: the user (no duplicates allowed) gets in
    lst, resp = get(srv, "slow", "right")
    assert resp.status == 200
    lst.wait_bytes(16 * 1024, 10)
    lst.close()
    src.stop()


@pytest.mark.rimecast_only
def test_protected_on_demand_relay_connects_only_for_a_listener_that_logged_in(server):
    """An on-demand relay's mount with htpasswd authentication: a refused listener never makes
    the relay connect; one whose password was verified gets the relayed stream."""
    origin = server()
    up = origin.source("/live.mp3", DATA, loop=True, headers={"Content-Type": "audio/mpeg"})
    assert up.connect().status == 200
    up.start()
    formatlib.wait_mount(origin, "/live.mp3")
    d = user_dir()
    try:
        path = os.path.join(d, "users")
        write_users(path, md5_line("olga", "pw"))
        mount = auth_mount(path)
        mount["mount_name"] = "/od.mp3"
        relay = ("<relay><server>127.0.0.1</server><port>%d</port><mount>/live.mp3</mount>"
                 "<local-mount>/od.mp3</local-mount><on-demand>1</on-demand></relay>"
                 % origin.port)
        edge = server(mounts=[mount], extra_xml=relay)

        def origin_listeners():
            s = formatlib.stats_source(origin, "/live.mp3")
            return int(s.findtext("listeners"))
        for creds in ((None, None), ("olga", "wrong")):
            lst, resp = get(edge, *creds, mount="/od.mp3")
            assert resp.status == 401, resp
            lst.close()
        assert origin_listeners() == 0
        lst, resp = get(edge, "olga", "pw", mount="/od.mp3")
        assert resp.status == 200, resp
        lst.wait_bytes(16 * 1024, 10)
        assert origin_listeners() == 1
        lst.close()
    finally:
        up.stop()
        shutil.rmtree(d, ignore_errors=True)
