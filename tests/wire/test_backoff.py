# SPDX-License-Identifier: GPL-2.0-or-later
"""The login back-off (src/auth/guard.h, <security><login-backoff>): only a wrong user or
password counts, a success clears the address, blocks are forgotten after a quiet period,
loopback and the trusted proxies (and <exempt> ranges) are never blocked, an IPv6 /64 is one
address, blocks and their ends are logged; and the address it counts is the one a trusted
proxy names (every X-Forwarded-For line, Forwarded too), never one a client forged.

Every test here runs from loopback: a "remote" client is one named by a trusted proxy
(127.0.0.9) in X-Forwarded-For, or loopback itself with <exempt-local>0."""

import os
import socket
import subprocess
import time

import pytest

import adminlib
import formatlib
import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER, SOURCE_PASSWORD, run_config

pytestmark = pytest.mark.rimecast_only

PROXY = "127.0.0.9"


def backoff(**settings):
    return "<login-backoff>%s</login-backoff>" % "".join(
        "<%s>%s</%s>" % (k.replace("_", "-"), v, k.replace("_", "-"))
        for k, v in settings.items())


def exchange(srv, raw, bind_ip="127.0.0.1"):
    """Sends a raw request from bind_ip; its answer's head."""
    s = socket.socket()
    s.bind((bind_ip, 0))
    s.settimeout(5)
    s.connect((srv.host, srv.port))
    try:
        s.sendall(raw.encode())
        head, _ = wirelib.read_head(s, 5)
        return head
    finally:
        s.close()


def admin(srv, password, bind_ip="127.0.0.1", forwarded=None, path="/admin/stats"):
    fwd = "".join("X-Forwarded-For: %s\r\n" % f for f in forwarded or [])
    return exchange(srv, "GET %s HTTP/1.0\r\nHost: x\r\n%sAuthorization: %s\r\n\r\n"
                    % (path, fwd, wirelib.basic_auth(ADMIN_USER, password)), bind_ip)


def put(srv, mount, password, bind_ip="127.0.0.1", forwarded=None):
    """A source PUT (no body follows: the answer to its head is what counts); the head."""
    fwd = "".join("X-Forwarded-For: %s\r\n" % f for f in forwarded or [])
    creds = "Authorization: %s\r\n" % wirelib.basic_auth("source", password) if password else ""
    return exchange(srv, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Type: audio/mpeg\r\n%s%s\r\n"
                    % (mount, fwd, creds), bind_ip)


def proxies_file(srv):
    path = os.path.join(srv.dir, "proxies")
    with open(path, "w") as f:
        f.write(PROXY + "\n")
    os.chmod(path, 0o644)
    return path


def proxied_server(server, **settings):
    """A server that trusts PROXY, with the back-off settings given."""
    srv = server(start=False, security_xml=backoff(**settings) if settings else "")
    srv.cfg["extra_xml"] = "<paths><trusted-proxies>%s</trusted-proxies></paths>" % \
        proxies_file(srv)
    srv.start()
    return srv


def wait_unblocked(srv, status_fn, timeout):
    deadline = time.monotonic() + timeout
    while True:
        head = status_fn()
        if head.status != 429:
            return head
        assert time.monotonic() < deadline, "still blocked after %s s" % timeout
        time.sleep(0.2)


def test_an_operator_on_the_servers_host_is_never_locked_out(server):
    """Ten wrong admin passwords from the server's own host, then the right one: in at once.
    The encoder on the same host goes on air meanwhile; every failure is still logged."""
    srv = server()
    for _ in range(10):
        assert admin(srv, "wrong").status == 401
    assert admin(srv, ADMIN_PASSWORD).status == 200
    src = srv.source("/live", b"\xff\xfb\x90\x00" * 256)
    assert src.connect().status == 200
    src.close()
    log = srv.error_log()
    assert log.count("failed login from 127.0.0.1 for admin stats") == 10, log
    assert "blocked" not in log


def test_a_remote_guesser_is_still_slowed_and_the_block_is_logged_with_its_end(server):
    srv = proxied_server(server)
    guesser = ["203.0.113.5"]
    for _ in range(5):
        assert admin(srv, "wrong", PROXY, guesser).status == 401
    head = admin(srv, ADMIN_PASSWORD, PROXY, guesser)
    assert head.status == 429 and int(head.header("Retry-After")) >= 1
    assert put(srv, "/live", SOURCE_PASSWORD, PROXY, guesser).status == 429
    srv.wait_log("auth: 203.0.113.5 blocked for 2 s after 5 failed logins")
    # the proxy itself, and another client behind it, are not blocked
    assert admin(srv, ADMIN_PASSWORD, PROXY).status == 200
    assert admin(srv, ADMIN_PASSWORD, PROXY, ["198.51.100.20"]).status == 200
    srv.wait_log("auth: 203.0.113.5 no longer blocked (a block of 2 s ended)", timeout=6)
    assert admin(srv, ADMIN_PASSWORD, PROXY, guesser).status == 200


def test_a_request_without_credentials_is_no_failed_login(server, tmp_path):
    """libshout asks first without a password: a challenge, not a failure. With loopback
    counted like any address, ezstream (libshout) connects again and again and is never
    blocked, and no failed login is logged; neither is a bare PUT or an admin GET."""
    srv = server(security_xml=backoff(exempt_local=0, failures=2))
    for _ in range(4):
        assert put(srv, "/bare", None).status == 401
        assert exchange(srv, "GET /admin/stats HTTP/1.0\r\n\r\n").status == 401
    mp3 = str(tmp_path / "tone.mp3")
    subprocess.run([formatlib.FFMPEG, "-hide_banner", "-v", "error", "-f", "lavfi", "-i",
                    "sine=frequency=440:sample_rate=44100:duration=1", "-c:a", "libmp3lame",
                    "-b:a", "128k", mp3], check=True, timeout=60)
    os.chmod(str(tmp_path), 0o755)
    for i in range(3):
        ez = formatlib.ezstream_source(srv, "/ez%d.mp3" % i, [mp3], str(tmp_path), fmt="MP3")
        try:
            wirelib.wait_until(lambda: adminlib.source_elements(
                adminlib.admin(srv, "/admin/stats").xml(), "/ez%d.mp3" % i) is not None, 15,
                "ezstream on the air", interval=0.2)
        finally:
            ez.terminate()
            ez.wait(10)
    log = srv.error_log()
    assert "failed login" not in log, log
    assert "blocked" not in log


def test_a_success_clears_the_address_completely(server):
    """Two blocks with a successful login between them: the second is as short as the first
    (before, the address kept its strikes for ever and each block doubled)."""
    srv = server(security_xml=backoff(exempt_local=0, failures=2, block=1, block_max=8))
    ip = "127.0.0.21"
    for _ in range(2):
        assert admin(srv, "wrong", ip).status == 401
    srv.wait_log("auth: 127.0.0.21 blocked for 1 s after 2 failed logins")
    assert wait_unblocked(srv, lambda: admin(srv, ADMIN_PASSWORD, ip), 4).status == 200
    for _ in range(2):
        assert admin(srv, "wrong", ip).status == 401
    assert admin(srv, ADMIN_PASSWORD, ip).status == 429
    log = srv.error_log()
    assert log.count("auth: 127.0.0.21 blocked for 1 s") == 2, log
    assert "127.0.0.21 blocked for 2 s" not in log
    assert "auth: 127.0.0.21 no longer blocked (a block of 1 s ended)" in log, log


def test_blocks_double_and_are_forgotten_after_a_quiet_period(server):
    srv = server(security_xml=backoff(exempt_local=0, failures=2, block=1, block_max=8,
                                      forget=3))
    ip = "127.0.0.22"

    def block_once():
        for _ in range(2):
            assert admin(srv, "wrong", ip).status == 401
        assert admin(srv, ADMIN_PASSWORD, ip).status == 429
        wait_unblocked(srv, lambda: put(srv, "/x", None, ip), 10)

    block_once()
    block_once()                       # soon after: twice as long
    srv.wait_log("auth: 127.0.0.22 blocked for 2 s after 2 failed logins")
    last_failure = time.monotonic()
    time.sleep(max(0.0, last_failure + 3.5 - time.monotonic()))  # one quiet period: -1 block
    block_once()
    log = srv.error_log()
    assert [l.split("blocked for ")[1].split(" s")[0] for l in log.splitlines()
            if "127.0.0.22 blocked for" in l] == ["1", "2", "2"], log


def test_an_ipv6_64_counts_as_one_address(server):
    srv = proxied_server(server, failures=3)
    for host in ("2001:db8:1:2::a", "2001:db8:1:2::b", "2001:db8:1:2:ffff::c"):
        assert admin(srv, "wrong", PROXY, [host]).status == 401
    assert admin(srv, ADMIN_PASSWORD, PROXY, ["2001:db8:1:2::d"]).status == 429
    srv.wait_log("auth: 2001:db8:1:2::/64 blocked for 2 s after 3 failed logins")
    assert admin(srv, ADMIN_PASSWORD, PROXY, ["2001:db8:1:3::a"]).status == 200


def test_the_exempt_list_and_the_settings(server):
    srv = server(security_xml=backoff(exempt_local=0, failures=2) +
                 "<login-backoff><exempt>127.0.0.30/31</exempt></login-backoff>")
    for _ in range(4):
        assert admin(srv, "wrong", "127.0.0.31").status == 401
    assert admin(srv, ADMIN_PASSWORD, "127.0.0.31").status == 200
    for _ in range(2):
        assert admin(srv, "wrong", "127.0.0.32").status == 401
    assert admin(srv, ADMIN_PASSWORD, "127.0.0.32").status == 429


def test_failures_zero_never_blocks(server):
    srv = server(security_xml=backoff(exempt_local=0, failures=0))
    for _ in range(8):
        assert admin(srv, "wrong", "127.0.0.33").status == 401
    assert admin(srv, ADMIN_PASSWORD, "127.0.0.33").status == 200


@pytest.mark.parametrize("xml, message", [
    ("<exempt>not-an-address</exempt>", '<exempt> "not-an-address" is not an address'),
    ("<exempt>10.0.0.0/33</exempt>", "is not an address or a range"),
    ("<block>20</block><block-max>10</block-max>", "<block> (20 s) is longer than <block-max>"),
    ("<ipv6-prefix>8</ipv6-prefix>", "out of range"),
])
def test_bad_backoff_settings_are_refused_at_start_up(xml, message):
    code, out, _ = run_config("<security><login-backoff>%s</login-backoff></security>" % xml)
    assert code not in (0, None), out
    assert message in out, out


def test_the_query_password_of_admin_cgi_is_blocked_too(server):
    """/admin.cgi?pass= is a login like any other: blocked addresses get 429 there as well."""
    srv = server(security_xml=backoff(exempt_local=0, failures=2))
    ip = "127.0.0.34"
    for _ in range(2):
        assert exchange(srv, "GET /admin.cgi?mode=updinfo&song=x&pass=wrong HTTP/1.0\r\n\r\n",
                        ip).status == 401
    head = exchange(srv, "GET /admin.cgi?mode=updinfo&song=x&pass=%s HTTP/1.0\r\n\r\n"
                    % SOURCE_PASSWORD, ip)
    assert head.status == 429


# ---------------------------------------------------------------- forwarded addresses

def test_a_forwarded_for_line_a_client_put_in_front_counts_for_nothing(server):
    """A client sends its own X-Forwarded-For line; its proxy adds another line (HAProxy
    does): the address is the proxy's line, so the client can neither hide behind another
    address nor walk past deny-ip."""
    srv = server(start=False)
    deny = os.path.join(srv.dir, "deny")
    with open(deny, "w") as f:
        f.write("203.0.113.66\n")
    os.chmod(deny, 0o644)
    srv.cfg["extra_xml"] = ("<paths><trusted-proxies>%s</trusted-proxies><deny-ip>%s</deny-ip>"
                            "</paths>" % (proxies_file(srv), deny))
    srv.start()
    head = exchange(srv, "GET /status-json.xsl HTTP/1.0\r\nX-Forwarded-For: 198.51.100.1\r\n"
                    "X-Forwarded-For: 203.0.113.66\r\n\r\n", PROXY)
    assert head.status == 403
    srv.wait_log("access: 203.0.113.66 (through proxy 127.0.0.9) refused")
    # the back-off counts the proxy's client, not the forged one
    for _ in range(5):
        assert admin(srv, "wrong", PROXY, ["127.0.0.1", "192.0.2.44"]).status == 401
    assert admin(srv, ADMIN_PASSWORD, PROXY, ["192.0.2.44"]).status == 429
    assert admin(srv, ADMIN_PASSWORD).status == 200


def test_forwarded_and_x_forwarded_for_naming_different_clients_are_refused(server):
    srv = proxied_server(server)
    conflict = exchange(srv, "GET /status-json.xsl HTTP/1.0\r\nForwarded: for=192.0.2.7\r\n"
                        "X-Forwarded-For: 198.51.100.8\r\n\r\n", PROXY)
    assert conflict.status == 400
    srv.wait_log("its X-Forwarded-For and Forwarded headers name different clients")
    # the same client in both, or a header naming only trusted proxies, is no conflict
    same = exchange(srv, "GET /status-json.xsl HTTP/1.0\r\nForwarded: for=192.0.2.7\r\n"
                    "X-Forwarded-For: 192.0.2.7\r\n\r\n", PROXY)
    assert same.status == 200
    only_proxy = exchange(srv, "GET /status-json.xsl HTTP/1.0\r\nForwarded: for=%s\r\n"
                          "X-Forwarded-For: 192.0.2.7\r\n\r\n" % PROXY, PROXY)
    assert only_proxy.status == 200
