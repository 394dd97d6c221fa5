# SPDX-License-Identifier: GPL-2.0-or-later
"""What an edge takes from the servers it pulls from: a master's stream list and a relay's
upstream are other parties, trusted with nothing but the audio they send.

- No mount may be created on a name the server answers itself (its web UI's files, pages,
  admin routes), whether it comes from a source, a <relay>'s <local-mount> (on demand or not),
  a master's list or a fallback file: the refusal is logged (once per list line), the upstream is never asked
  for it, and a GET of such a name always gets the server's own bytes.
- A master's list names mounts on the master: a line that is a full URL is relayed only when
  it names the master's own scheme, host and port; any other is refused and logged once while
  listed, and the master's credentials never go to another server.
- A redirect never takes a TLS relay to plain HTTP (refused), and one to another host than
  the configured one is followed without the relay's credentials.
"""

import os
import ssl

import pytest

import adminlib
import formatlib
import wirelib
from conftest import web_dirs
from upstreamlib import FakeUpstream

pytestmark = pytest.mark.rimecast_only


def master_xml(master_port, interval=1, user="relay", password="master-secret"):
    return ("<master-server>127.0.0.1</master-server>"
            "<master-server-port>%d</master-server-port>"
            "<master-update-interval>%d</master-update-interval>"
            "<master-username>%s</master-username><master-password>%s</master-password>"
            % (master_port, interval, user, password))


def relay_xml(port, mount, local, on_demand=0):
    return ("<relay><server>127.0.0.1</server><port>%d</port><mount>%s</mount>"
            "<local-mount>%s</local-mount><on-demand>%d</on-demand></relay>"
            % (port, mount, local, on_demand))


def log_lines(srv, needle):
    return [line for line in srv.error_log().splitlines() if needle in line]


def wait_list_fetches(up, n, timeout=15):
    wirelib.wait_until(lambda: len(up.requests_for("/admin/streamlist.txt")) >= n, timeout,
                       "%d stream list requests" % n)


def own_file(name):
    with open(os.path.join(web_dirs()[0], name.lstrip("/")), "rb") as f:
        return f.read()


def get(srv, path):
    return wirelib.simple_request(srv.host, srv.port,
                                  b"GET %s HTTP/1.0\r\n\r\n" % path.encode(), timeout=3)


# ---------------------------------------------------------------- the server's own names

def test_master_list_and_relays_cannot_take_the_servers_own_files(server, data):
    up = FakeUpstream(listing=b"/admin.js\r\n/ok.mp3\r\n",
                      streams={p: data[:1 << 20] for p in ("/admin.js", "/ok.mp3", "/x.mp3")})
    try:
        edge = server(extra_xml=master_xml(up.port) + relay_xml(up.port, "/x.mp3", "/app.js")
                      + relay_xml(up.port, "/x.mp3", "/style.css", on_demand=1))
        formatlib.wait_mount(edge, "/ok.mp3")      # the list was applied
        wait_list_fetches(up, 3)
        # the admin page's script and the web UI's files come from the server whatever the
        # list and the relays say
        for name in ("/admin.js", "/app.js", "/style.css"):
            resp, body = get(edge, name)
            assert resp.status == 200, (name, resp)
            assert body == own_file(name), name
        edge.wait_log("list entry /admin.js refused: mountpoint /admin.js names a file")
        edge.wait_log("relay /app.js refused: mountpoint /app.js names a file")
        edge.wait_log("relay /style.css refused: mountpoint /style.css names a file")
        assert len(log_lines(edge, "list entry /admin.js refused")) == 1  # once while listed
        assert "/admin.js" not in up.paths() and "/x.mp3" not in up.paths(), up.paths()
        listed = [s.get("mount") for s in
                  adminlib.admin(edge, "/admin/listmounts").xml().findall("source")]
        assert listed == ["/ok.mp3"], listed
    finally:
        up.close()


def test_a_file_put_in_the_webroot_is_served_before_a_live_mount_of_that_name(server, data):
    """GET prefers the server's own files over any mount, also one that was live before the
    file appeared."""
    srv = server(start=False)
    web = os.path.join(srv.dir, "web")      # a directory the server's user can read
    os.mkdir(web)
    os.chmod(web, 0o755)
    srv.cfg["webroot"] = web
    srv.start()
    src = srv.source("/late.txt", data[:1 << 20])
    assert src.connect().status == 200
    src.start()
    lis = srv.listener("/late.txt")
    assert lis.open().status == 200
    lis.wait_bytes(8192, 5)
    lis.close()
    with open(os.path.join(web, "late.txt"), "wb") as f:
        f.write(b"the server's own file\n")
    os.chmod(os.path.join(web, "late.txt"), 0o644)
    resp, body = get(srv, "/late.txt")
    assert resp.status == 200 and body == b"the server's own file\n", (resp, body[:64])
    src.close()



def test_a_file_mount_cannot_take_a_name_the_server_answers_itself(server):
    """A fallback naming a webroot file under /admin/ is not played as a file mount."""
    srv = server(start=False, extra_xml='<mount type="normal"><mount-name>/a.mp3</mount-name>'
                 '<fallback-mount>/admin/x.mp3</fallback-mount></mount>'
                 '<mount type="normal"><mount-name>/b.mp3</mount-name>'
                 '<fallback-mount>/x.mp3</fallback-mount></mount>')
    web = os.path.join(srv.dir, "web")
    os.makedirs(os.path.join(web, "admin"))
    for d in (web, os.path.join(web, "admin")):
        os.chmod(d, 0o755)
    mp3 = formatlib.encode_file(os.path.join(web, "x.mp3"), "mp3", 2)
    formatlib.save(os.path.join(web, "admin"), "x.mp3", mp3)
    os.chmod(os.path.join(web, "admin", "x.mp3"), 0o644)
    srv.cfg["webroot"] = web
    srv.start()
    lis = srv.listener("/b.mp3")                       # the same file elsewhere plays
    assert lis.open().status == 200
    lis.wait_bytes(4096, 5)
    lis.close()
    resp, _ = get(srv, "/a.mp3")
    assert resp.status == 404, resp
    srv.wait_log("file mount /admin/x.mp3 refused: mountpoint /admin/x.mp3 is a URL the server "
                 "answers itself")


# ---------------------------------------------------------------- a master's list

def test_a_masters_list_cannot_send_the_slave_or_its_password_elsewhere(server, data):
    other = FakeUpstream(listing=b"/x.mp3\r\n", streams={"/x.mp3": data[:1 << 20]})
    foreign = "http://127.0.0.1:%d/x.mp3" % other.port

    def listing():
        return ("%s\r\nhttp://127.0.0.1:%d/self.mp3\r\n/ok.mp3\r\n"
                % (foreign, master.port)).encode()

    master = FakeUpstream(listing=listing,
                          streams={p: data[:1 << 20] for p in ("/x.mp3", "/ok.mp3", "/self.mp3")})
    try:
        edge = server(extra_xml=master_xml(master.port))
        # a full URL of the master itself is one of its mounts
        formatlib.wait_mount(edge, "/self.mp3")
        formatlib.wait_mount(edge, "/ok.mp3")
        wait_list_fetches(master, 3)
        assert other.requests == [], other.requests      # never asked, so never given the password
        edge.wait_log("list entry %s refused: it names another server than the master" % foreign)
        assert len(log_lines(edge, "list entry %s refused" % foreign)) == 1  # once while listed
        assert "/x.mp3" not in [s.get("mount") for s in
                                adminlib.admin(edge, "/admin/listmounts").xml().findall("source")]
        # what did go to the master carried the master's credentials
        auth = wirelib.basic_auth("relay", "master-secret")
        for path in ("/admin/streamlist.txt", "/self.mp3", "/ok.mp3"):
            assert master.requests_for(path)[0].headers.get("authorization") == auth, path
    finally:
        master.close()
        other.close()


# ---------------------------------------------------------------- redirects

def relay_with_credentials(port, mount, local, tls=False):
    return ("<relay><server>127.0.0.1</server><port>%d</port><mount>%s</mount>"
            "<local-mount>%s</local-mount><username>edge</username>"
            "<password>upstream-secret</password>%s</relay>"
            % (port, mount, local, "<tls>1</tls>" if tls else ""))


def test_a_redirect_from_https_to_http_is_refused(server, data, tmp_path):
    from test_relay_tls import make_cert
    pem, ca = make_cert(str(tmp_path), "origin", "IP:127.0.0.1")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pem)
    plain = FakeUpstream(streams={"/live.mp3": data[:1 << 20]})
    origin = FakeUpstream(redirects={"/live.mp3": plain.url("/live.mp3")}, tls=ctx)
    try:
        edge = server(ssl_cafile=ca, extra_xml=relay_with_credentials(
            origin.port, "/live.mp3", "/edge.mp3", tls=True))
        refused = "redirect from https to plain http refused"
        wirelib.wait_until(lambda: plain.requests or refused in edge.error_log(), 10,
                           "the redirect refused, or followed")
        assert plain.requests == [], plain.requests   # never asked, never given the password
        edge.wait_log(refused)
        # retried with backoff, refused each time
        wirelib.wait_until(lambda: len(origin.requests_for("/live.mp3")) >= 2, 10,
                           "a second attempt")
        assert origin.requests_for("/live.mp3")[0].headers.get("authorization") == \
            wirelib.basic_auth("edge", "upstream-secret")     # over TLS to the configured host
        assert plain.requests == [], plain.requests
        assert get(edge, "/edge.mp3")[0].status == 404
    finally:
        origin.close()
        plain.close()


def test_a_redirect_to_another_host_is_followed_without_the_credentials(server, data):
    other = FakeUpstream(streams={"/live.mp3": data[:1 << 20]}, host="127.0.0.2")
    same = FakeUpstream(streams={"/live.mp3": data[:1 << 20]})
    origin = FakeUpstream(redirects={"/live.mp3": other.url("/live.mp3"),
                                     "/same.mp3": same.url("/live.mp3")})
    try:
        edge = server(extra_xml=relay_with_credentials(origin.port, "/live.mp3", "/edge.mp3")
                      + relay_with_credentials(origin.port, "/same.mp3", "/same.mp3"))
        formatlib.wait_mount(edge, "/edge.mp3")
        formatlib.wait_mount(edge, "/same.mp3")
        auth = wirelib.basic_auth("edge", "upstream-secret")
        assert origin.requests_for("/live.mp3")[0].headers.get("authorization") == auth
        assert "authorization" not in other.requests_for("/live.mp3")[0].headers
        # another port of the configured host still gets them
        assert same.requests_for("/live.mp3")[0].headers.get("authorization") == auth
        edge.wait_log("relay /edge.mp3: redirected to 127.0.0.2:%d (another host: followed "
                      "without the credentials)" % other.port)
        lis = edge.listener("/edge.mp3")
        assert lis.open().status == 200
        lis.wait_bytes(8192, 5)
        lis.close()
    finally:
        origin.close()
        other.close()
        same.close()
