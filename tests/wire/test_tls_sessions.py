# SPDX-License-Identifier: GPL-2.0-or-later
"""TLS suites and sessions: which TLS 1.3 suite the server picks (AES-128-GCM for a client that
offers them all, ChaCha20-Poly1305 for one that puts it first), and session resumption for
listeners that reconnect, also after a SIGHUP reload re-read the certificate (the session-ticket
keys are kept), over TLS 1.2 and 1.3, with Python's ssl and the openssl command line client."""

import os
import re
import shutil
import signal
import ssl
import subprocess

import pytest

import wirelib
from test_tls import client_context, make_cert, tls_server

pytestmark = [pytest.mark.rimecast_only,
              pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")]


def fetch_status(srv, ctx, session=None):
    """One HTTPS request read to its end; returns (cipher name, protocol, session, reused)."""
    with ctx.wrap_socket(wirelib.connect(srv.host, srv.tls_port), session=session) as s:
        s.sendall(b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
        body = wirelib.read_until_closed(s, 5)
        assert body.startswith(b"HTTP/1.0 200") or body.startswith(b"HTTP/1.1 200"), body[:80]
        name, proto, _ = s.cipher()
        return name, proto, s.session, s.session_reused


def openssl_client(srv, *args):
    """openssl s_client against the TLS port asking for the status page (read to the server's
    close: a TLS 1.3 session ticket comes after the handshake); returns its stdout."""
    p = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % srv.tls_port,
                        "-ign_eof"] + list(args), input=b"GET /status-json.xsl HTTP/1.0\r\n\r\n",
                       capture_output=True, timeout=20)
    return p.stdout.decode("latin-1")


# ---------------------------------------------------------------- suites

def test_a_client_offering_every_tls13_suite_gets_aes128_gcm(server):
    """OpenSSL's clients list TLS_AES_256_GCM_SHA384 first; the server's order has
    AES-128-GCM first (less work per byte sent) and wins."""
    srv, _, _ = tls_server(server)
    name, proto, _, _ = fetch_status(srv, client_context())
    assert (proto, name) == ("TLSv1.3", "TLS_AES_128_GCM_SHA256")
    # curl as a listener's player would connect
    p = subprocess.run(["curl", "-sk", "-v", "-o", os.devnull,
                        "https://127.0.0.1:%d/status-json.xsl" % srv.tls_port],
                       capture_output=True, timeout=20)
    assert p.returncode == 0, p.stderr[-300:]
    used = re.search(rb"SSL connection using (\S+) / (\S+)", p.stderr)
    assert used and used.groups() == (b"TLSv1.3", b"TLS_AES_128_GCM_SHA256"), p.stderr[-500:]


def test_a_client_that_puts_chacha20_first_gets_it(server):
    """A client without AES instructions lists ChaCha20-Poly1305 first: it gets it, over TLS 1.3
    and over TLS 1.2."""
    srv, _, _ = tls_server(server)
    out = openssl_client(srv, "-ciphersuites",
                         "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256")
    assert re.search(r"New, TLSv1.3, Cipher is TLS_CHACHA20_POLY1305_SHA256", out), out[-800:]
    out = openssl_client(srv, "-tls1_2", "-cipher",
                         "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256")
    assert re.search(r"New, TLSv1.2, Cipher is ECDHE-RSA-CHACHA20-POLY1305", out), out[-800:]
    # the same client listing AES-128-GCM first gets that
    out = openssl_client(srv, "-ciphersuites",
                         "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256")
    assert re.search(r"New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256", out), out[-800:]


# ---------------------------------------------------------------- sessions

def test_a_session_made_before_a_reload_resumes_after_it(server):
    """Sessions given out before a SIGHUP that re-read a renewed certificate still resume
    after it: TLS 1.3 and TLS 1.2 (session tickets), Python's ssl and openssl s_client."""
    srv, cert, _ = tls_server(server)
    ctx13 = client_context()
    ctx12 = client_context()
    ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
    sessions = {}
    for label, ctx in (("1.3", ctx13), ("1.2", ctx12)):
        _, _, sess, reused = fetch_status(srv, ctx)
        assert sess is not None and not reused
        # resumed before the reload too
        _, _, _, reused = fetch_status(srv, ctx, sess)
        assert reused, "TLS %s session not resumed before the reload" % label
        sessions[label] = sess
    saved = os.path.join(srv.dir, "openssl.sess")
    out = openssl_client(srv, "-sess_out", saved)
    assert "New, TLSv1.3" in out and os.path.getsize(saved) > 0, out[-800:]

    new_path, _ = make_cert(srv.dir, "renewed")
    os.replace(new_path, cert)
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("certificate re-read")

    for label, ctx in (("1.3", ctx13), ("1.2", ctx12)):
        _, proto, _, reused = fetch_status(srv, ctx, sessions[label])
        assert reused, "TLS %s session made before the reload not resumed" % label
        assert proto == "TLSv" + label
    out = openssl_client(srv, "-sess_in", saved)
    assert "Reused, TLSv1.3" in out, out[-800:]
    # a client without a session still gets the renewed certificate
    out = openssl_client(srv)
    assert "New, TLSv1.3" in out
    with open(cert) as f:
        renewed = f.read()
    served = re.search(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", out, re.S)
    assert served and served.group(0) in renewed


def test_a_session_made_before_an_upgrade_resumes_in_the_new_process(server):
    """`rimecast --upgrade`: the old process hands its session-ticket keys to the new one over
    the upgrade's socket, so a listener that reconnects after the upgrade with a session of the
    old process makes an abbreviated handshake with the new one: TLS 1.3 and TLS 1.2 (Python's
    ssl) and openssl s_client's saved session ("Reused")."""
    from test_upgrade import Adopted, pidfile_pid
    from test_upgrade_command import upgrade
    srv, _, _ = tls_server(server)
    ctx13 = client_context()
    ctx12 = client_context()
    ctx12.maximum_version = ssl.TLSVersion.TLSv1_2
    sessions = {}
    for label, ctx in (("1.3", ctx13), ("1.2", ctx12)):
        _, _, sess, reused = fetch_status(srv, ctx)
        assert sess is not None and not reused
        sessions[label] = sess
    saved = os.path.join(srv.dir, "openssl.sess")
    out = openssl_client(srv, "-sess_out", saved)
    assert "New, TLSv1.3" in out and os.path.getsize(saved) > 0, out[-800:]

    old = srv.pid
    rc, out, err = upgrade(srv, timeout=60)
    assert rc == 0, (rc, out, err)
    new = pidfile_pid(srv)
    assert new != old
    srv.proc.wait(30)  # no TLS listener to keep: the old process leaves once it handed over
    srv.proc = Adopted(new, srv)
    srv.wait_log("upgrade: TLS session tickets of the old process resume here")

    out = openssl_client(srv, "-sess_in", saved)
    assert "Reused, TLSv1.3" in out, out[-800:]
    for label, ctx in (("1.3", ctx13), ("1.2", ctx12)):
        _, proto, _, reused = fetch_status(srv, ctx, sessions[label])
        assert reused, "TLS %s session made before the upgrade not resumed" % label
        assert proto == "TLSv" + label
    # a client without a session makes a full handshake, and its session resumes in turn
    _, _, sess, reused = fetch_status(srv, ctx13)
    assert not reused
    assert fetch_status(srv, ctx13, sess)[3]
