# SPDX-License-Identifier: GPL-2.0-or-later
"""Who may do what: source credentials (global and per mount) on every admin
command, allow-ip / deny-ip files with CIDR ranges, the deny-agents file (both
re-read when they change), X-Forwarded-For believed from trusted proxies only,
and the per-address back-off after repeated bad admin and source logins.
"""

import os
import shutil
import socket
import tempfile
import time

import pytest

import adminlib
import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER, IS_ICECAST, SOURCE_PASSWORD

DATA = wirelib.make_data(128 * 1024)

# every route of src/admin/commands.c with what a source user of /live gets
SOURCE_ALLOWED = {"metadata", "updatemetadata"}
ROUTES = ["stats", "listmounts", "history", "log", "streamlist", "listclients", "moveclients",
          "killclient", "killsource", "metadata", "fallbacks", "updatemetadata", "events",
          "manageauth"]


def start_source(srv, mount="/live"):
    src = srv.source(mount, DATA, headers={"Content-Type": "audio/mpeg"})
    assert src.connect().status == 200
    src.start()
    return src


def check_routes(srv, creds, mount, other):
    """Every admin route with a source user's credentials for mount: metadata only."""
    query = ("?mount=%s&mode=updinfo&song=x&id=1&destination=%s&fallback=%s&action=list"
             % (mount, other, other))
    for cmd in ROUTES:
        r = adminlib.request(srv, "/admin/%s%s" % (cmd, query), auth=creds)
        if cmd in SOURCE_ALLOWED:
            assert r.status == 200, (cmd, creds, r.status)
        else:
            assert r.status == 401, (cmd, creds, r.status)


@pytest.mark.rimecast_only
def test_source_credentials_reach_only_the_metadata_of_their_own_mount(server):
    # Icecast 2.4.4 lets a source user with mount= also run stats, listclients, killclient,
    # killsource and fallbacks on the mount; Rimecast keeps source users to metadata.
    srv = server(mounts=[{"mount_name": "/own", "password": "ownpw"},
                         {"mount_name": "/dj", "username": "dj", "password": "djpw"}])
    live = start_source(srv)
    own = srv.source("/own", DATA, password="ownpw", headers={"Content-Type": "audio/mpeg"})
    assert own.connect().status == 200
    own.start()
    dj = srv.source("/dj", DATA, user="dj", password="djpw", headers={"Content-Type": "audio/mpeg"})
    assert dj.connect().status == 200
    dj.start()
    creds = ("source", SOURCE_PASSWORD)
    check_routes(srv, creds, "/live", "/own")
    # a mount's own source user is kept to that mount's metadata just the same
    check_routes(srv, ("dj", "djpw"), "/dj", "/live")
    # and not even that on another mount (one try: wrong credentials count towards back-off)
    r = adminlib.request(srv, "/admin/metadata?mount=/live&mode=updinfo&song=y",
                         auth=("dj", "djpw"))
    assert r.status == 401
    dj.stop()
    # the global source password is not a key to a mount with its own password
    r = adminlib.request(srv, "/admin/metadata?mount=/own&mode=updinfo&song=x", auth=creds)
    assert r.status == 401
    r = adminlib.request(srv, "/admin/metadata?mount=/own&mode=updinfo&song=x",
                         auth=("source", "ownpw"))
    assert r.status == 200
    # and a mount's own password is no key to another mount
    r = adminlib.request(srv, "/admin/metadata?mount=/live&mode=updinfo&song=x",
                         auth=("source", "ownpw"))
    assert r.status == 401
    live.stop()
    own.stop()


# ---------------------------------------------------------------- addresses

def status_from(srv, bind_ip, path="/status-json.xsl", headers=""):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((bind_ip, 0))
    s.connect((srv.host, srv.port))
    s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n%s\r\n" % (path, headers)).encode())
    head, _ = wirelib.read_head(s, 5)
    s.close()
    return head.status if head else None


@pytest.fixture
def files():
    d = tempfile.mkdtemp(prefix="wire-access-")
    os.chmod(d, 0o755)

    def write(name, text):
        p = os.path.join(d, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o644)
        return p

    yield write
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.rimecast_only
def test_deny_ip_with_an_address_and_allow_ip_with_a_range(server, files):
    deny = files("deny", "# the second local address\n127.0.0.2\n")
    allow = files("allow", "127.0.0.0/8   # loopback\n::1\n")
    srv = server(extra_xml="<paths><allow-ip>%s</allow-ip><deny-ip>%s</deny-ip></paths>"
                 % (allow, deny))
    assert status_from(srv, "127.0.0.1") == 200
    assert status_from(srv, "127.0.0.2") == 403
    # the files are re-read when they change
    files("deny", "")
    assert status_from(srv, "127.0.0.2") == 200
    files("allow", "127.0.0.1/32\n")
    assert status_from(srv, "127.0.0.3") == 403
    assert status_from(srv, "127.0.0.1") == 200


@pytest.mark.rimecast_only
def test_denied_user_agent_gets_403(server, files):
    agents = files("agents", "# scrapers\n*BadBot*\ncurl/*\n")
    srv = server(extra_xml="<paths><deny-agents>%s</deny-agents></paths>" % agents)
    assert status_from(srv, "127.0.0.1", headers="User-Agent: nice player\r\n") == 200
    assert status_from(srv, "127.0.0.1", headers="User-Agent: a badbot 2.0\r\n") == 403
    assert status_from(srv, "127.0.0.1", headers="User-Agent: curl/8.0\r\n") == 403
    assert "user agent a badbot 2.0 is denied" in srv.error_log()
    # the file is re-read when it changes: the old patterns go, the new ones apply
    files("agents", "Evil*\n")
    assert status_from(srv, "127.0.0.1", headers="User-Agent: curl/8.0\r\n") == 200
    assert status_from(srv, "127.0.0.1", headers="User-Agent: a badbot 2.0\r\n") == 200
    assert status_from(srv, "127.0.0.1", headers="User-Agent: EvilCrawler/1\r\n") == 403


def unreadable(path):
    """Makes path exist but fail to read, for any user (as root, modes do not stop a read)."""
    if os.path.exists(path):
        os.unlink(path)
    os.mkdir(path)


@pytest.mark.rimecast_only
def test_an_access_file_that_cannot_be_read_keeps_the_list_read_before(server, files):
    deny = files("deny", "127.0.0.2\n")
    agents = files("agents", "curl/*\n")
    srv = server(extra_xml="<paths><deny-ip>%s</deny-ip><deny-agents>%s</deny-agents></paths>"
                 % (deny, agents))
    assert status_from(srv, "127.0.0.2") == 403
    assert status_from(srv, "127.0.0.1", headers="User-Agent: curl/8.0\r\n") == 403
    # replaced by something that cannot be read (a bad mode in the middle of an edit): the
    # lists read before still apply, they are not read as empty
    unreadable(deny)
    unreadable(agents)
    assert status_from(srv, "127.0.0.2") == 403
    assert status_from(srv, "127.0.0.1", headers="User-Agent: curl/8.0\r\n") == 403
    assert status_from(srv, "127.0.0.1", headers="User-Agent: mpv\r\n") == 200
    log = srv.error_log()
    assert log.count("Is a directory (the version read before stays in use)") == 2, log
    # readable again: the new lists
    os.rmdir(deny)
    os.rmdir(agents)
    files("deny", "127.0.0.3\n")
    files("agents", "Evil*\n")
    assert status_from(srv, "127.0.0.2") == 200
    assert status_from(srv, "127.0.0.3") == 403
    assert status_from(srv, "127.0.0.1", headers="User-Agent: curl/8.0\r\n") == 200


@pytest.mark.rimecast_only
@pytest.mark.parametrize("element", ["deny-ip", "deny-agents", "allow-ip"])
def test_an_access_file_never_read_refuses_everyone(server, files, element):
    # what a list would let in is refused while the list could never be read; once gone, a
    # deny file that does not exist is an empty list
    path = files(element, "")
    unreadable(path)
    srv = server(extra_xml="<paths><%s>%s</%s></paths>" % (element, path, element))
    assert status_from(srv, "127.0.0.1", headers="User-Agent: mpv\r\n") == 403
    assert "nothing read yet: what it would allow is refused" in srv.error_log()
    os.rmdir(path)
    if element == "allow-ip":
        files(element, "127.0.0.1\n")
    assert status_from(srv, "127.0.0.1", headers="User-Agent: mpv\r\n") == 200


@pytest.mark.rimecast_only
def test_forwarded_for_is_believed_from_trusted_proxies_only(server, files):
    proxies = files("proxies", "127.0.0.2\n10.0.0.0/8\n")
    deny = files("deny", "192.0.2.66\n")
    srv = server(extra_xml="<paths><trusted-proxies>%s</trusted-proxies><deny-ip>%s</deny-ip>"
                 "</paths>" % (proxies, deny))
    src = start_source(srv)
    # from the trusted proxy: the rightmost untrusted hop is the listener
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.settimeout(5)
    s.connect((srv.host, srv.port))
    s.sendall(b"GET /live HTTP/1.0\r\nUser-Agent: proxied\r\n"
              b"X-Forwarded-For: 6.6.6.6, 198.51.100.7, 10.1.2.3\r\n\r\n")
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    doc = adminlib.admin(srv, "/admin/listclients?mount=/live").xml()
    ips = [l.findtext("IP") for l in doc.iter("listener")]
    assert ips == ["198.51.100.7"], ips
    s.close()
    srv.wait_log('198.51.100.7 - - [', log="access")
    # a forwarded address is checked against deny-ip too
    assert status_from(srv, "127.0.0.2", headers="Forwarded: for=192.0.2.66;proto=http\r\n") == 403
    # from anyone else the header is ignored
    assert status_from(srv, "127.0.0.1", headers="X-Forwarded-For: 192.0.2.66\r\n") == 200
    s = socket.socket()
    s.bind(("127.0.0.3", 0))
    s.settimeout(5)
    s.connect((srv.host, srv.port))
    s.sendall(b"GET /live HTTP/1.0\r\nX-Forwarded-For: 203.0.113.9\r\n\r\n")
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    doc = adminlib.admin(srv, "/admin/listclients?mount=/live").xml()
    assert [l.findtext("IP") for l in doc.iter("listener")] == ["127.0.0.3"]
    s.close()
    assert "203.0.113.9" not in srv.access_log()
    src.stop()


# ---------------------------------------------------------------- metadata by address

def request_from(srv, bind_ip, path, auth=None, headers=""):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(5)
    s.bind((bind_ip, 0))
    s.connect((srv.host, srv.port))
    if auth:
        headers += "Authorization: %s\r\n" % wirelib.basic_auth(*auth)
    s.sendall(("GET %s HTTP/1.0\r\nHost: x\r\n%s\r\n" % (path, headers)).encode())
    head, body = wirelib.read_head(s, 5)
    body += wirelib.read_until_closed(s, 5)
    s.close()
    return head, body


def title_of(srv, want=None, mount="/live"):
    """The mount's title in the stats; with want, waits for it (Icecast shows a new source and
    its titles after a moment)."""
    found = []

    def listed():
        doc = adminlib.admin(srv, "/admin/stats").xml()
        found[:] = [s.findtext("title") for s in doc.iter("source") if s.get("mount") == mount]
        return found and (want is None or found[0] == want)
    try:
        wirelib.wait_until(listed, 5, "the title in the stats")
    except AssertionError:
        pass
    return found[0] if found else None


def test_source_credentials_update_metadata_from_the_source_address_only(server):
    srv = server()
    src = start_source(srv)  # from 127.0.0.1
    meta = "/admin/metadata?mount=/live&mode=updinfo&song="
    creds = ("source", SOURCE_PASSWORD)
    head, body = request_from(srv, "127.0.0.1", meta + "same", auth=creds)
    assert head.status == 200 and b"Metadata update successful" in body
    assert title_of(srv, "same") == "same"
    # another address with the right source credentials: refused, as Icecast answers it
    head, body = request_from(srv, "127.0.0.2", meta + "other", auth=creds)
    assert head.status == 200 and b"Mountpoint will not accept URL updates" in body
    assert title_of(srv) == "same"
    # admin credentials from anywhere
    head, _ = request_from(srv, "127.0.0.2", meta + "admin", auth=(ADMIN_USER, ADMIN_PASSWORD))
    assert head.status == 200
    assert title_of(srv, "admin") == "admin"
    if not IS_ICECAST:  # Icecast 2.4's admin.cgi knows only the shoutcast-mount
        # the Shoutcast DSP's admin.cgi: the same rule
        cgi = "/admin.cgi?mount=/live&mode=updinfo&pass=%s&song=" % SOURCE_PASSWORD
        head, _ = request_from(srv, "127.0.0.2", cgi + "dsp-other")
        assert head.status == 403
        assert title_of(srv) == "admin"
        head, _ = request_from(srv, "127.0.0.1", cgi + "dsp")
        assert head.status == 200
        assert title_of(srv, "dsp") == "dsp"
    src.stop()


@pytest.mark.rimecast_only
def test_metadata_address_check_uses_the_forwarded_address_of_a_trusted_proxy(server, files):
    proxies = files("proxies", "127.0.0.2\n")
    srv = server(extra_xml="<paths><trusted-proxies>%s</trusted-proxies></paths>" % proxies)
    # the source comes through the proxy from 198.51.100.7
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    s.settimeout(5)
    s.connect((srv.host, srv.port))
    s.sendall(("PUT /live HTTP/1.0\r\nContent-Type: audio/mpeg\r\nAuthorization: %s\r\n"
               "X-Forwarded-For: 198.51.100.7\r\n\r\n"
               % wirelib.basic_auth("source", SOURCE_PASSWORD)).encode())
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    s.sendall(DATA[:32 * 1024])
    wirelib.wait_until(lambda: "/live" in [m.get("mount") for m in adminlib.admin(
        srv, "/admin/listmounts").xml().iter("source")], 5, "the source")
    meta = "/admin/metadata?mount=/live&mode=updinfo&song="
    creds = ("source", SOURCE_PASSWORD)
    # the proxy's own address is not the source's
    head, body = request_from(srv, "127.0.0.2", meta + "proxy", auth=creds)
    assert b"Mountpoint will not accept URL updates" in body
    # the same forwarded address through the proxy is
    head, body = request_from(srv, "127.0.0.2", meta + "fwd", auth=creds,
                              headers="X-Forwarded-For: 198.51.100.7\r\n")
    assert head.status == 200 and b"Metadata update successful" in body
    assert title_of(srv, "fwd") == "fwd"
    # a header from an untrusted address is not believed
    head, body = request_from(srv, "127.0.0.1", meta + "forged", auth=creds,
                              headers="X-Forwarded-For: 198.51.100.7\r\n")
    assert b"Mountpoint will not accept URL updates" in body
    assert title_of(srv) == "fwd"
    srv.wait_log("source credentials are accepted from the source's address only")
    s.close()


# ---------------------------------------------------------------- back-off

def put_from(srv, bind_ip, mount, user, password):
    """A source PUT from bind_ip; the answer's head."""
    s = socket.socket()
    s.bind((bind_ip, 0))
    s.settimeout(5)
    s.connect((srv.host, srv.port))
    s.sendall(("PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\n"
               "Authorization: %s\r\n\r\n" % (mount, wirelib.basic_auth(user, password))).encode())
    head, _ = wirelib.read_head(s, 5)
    s.close()
    return head


def admin_from(srv, bind_ip, password):
    head, _ = request_from(srv, bind_ip, "/admin/stats", auth=(ADMIN_USER, password))
    return head


def assert_blocked(head):
    assert head.status == 429, head
    assert int(head.header("Retry-After")) >= 1


@pytest.mark.rimecast_only
def test_repeated_bad_admin_and_source_logins_back_off_the_address(server):
    """src/auth/guard.h: the 5th failed login of an address within 60 s blocks it (2 s at
    first); while blocked, the credentials are not checked: even the right ones get 429 with
    Retry-After. Admin and
    source failures count together; other addresses are not affected. (Loopback counts here
    like a remote address: it is exempt by default, test_backoff.py.)"""
    srv = server(security_xml="<login-backoff><exempt-local>0</exempt-local></login-backoff>")
    for _ in range(5):  # bad admin logins from one address
        assert admin_from(srv, "127.0.0.4", "wrong").status == 401
    assert_blocked(admin_from(srv, "127.0.0.4", ADMIN_PASSWORD))
    assert_blocked(put_from(srv, "127.0.0.4", "/a", "source", SOURCE_PASSWORD))
    srv.wait_log("127.0.0.4 blocked for 2 s after 5 failed logins")
    assert srv.error_log().count("failed login from 127.0.0.4 for admin stats") == 5
    assert admin_from(srv, "127.0.0.1", ADMIN_PASSWORD).status == 200
    for _ in range(5):  # bad source logins from another
        assert put_from(srv, "127.0.0.5", "/b", "source", "wrong").status == 401
    assert_blocked(put_from(srv, "127.0.0.5", "/b", "source", SOURCE_PASSWORD))
    srv.wait_log("127.0.0.5 blocked for 2 s after 5 failed logins")
    assert srv.error_log().count("failed login from 127.0.0.5 for source /b") == 5
    for _ in range(3):  # and a mix of both from a third
        assert admin_from(srv, "127.0.0.6", "wrong").status == 401
    for _ in range(2):
        assert put_from(srv, "127.0.0.6", "/c", "source", "wrong").status == 401
    assert_blocked(put_from(srv, "127.0.0.6", "/c", "source", SOURCE_PASSWORD))
    assert_blocked(admin_from(srv, "127.0.0.6", ADMIN_PASSWORD))
    srv.wait_log("127.0.0.6 blocked for 2 s after 5 failed logins")
    # the block ends: the right credentials work again
    deadline = time.monotonic() + 5
    while admin_from(srv, "127.0.0.4", ADMIN_PASSWORD).status == 429:
        assert time.monotonic() < deadline, "still blocked"
        time.sleep(0.2)
    assert admin_from(srv, "127.0.0.4", ADMIN_PASSWORD).status == 200
