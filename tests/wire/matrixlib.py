# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the kinds x rules matrix (tests/README.md): servers kept for a whole test module,
and one way per listener kind to ask for a mount's audio from a given address with given
headers, each returning the status it got (0: closed without an answer, as a TLS handshake
refused at accept is).

Kinds: a plain GET listener, a TLS listener, an HLS session (a token, its media playlist, then
a segment), an HLS piece without a session (a segment, part or HEAD of one, asked for bare),
an intro segment (<mount>/hls/intro/...), a relay listener (a GET of a relayed mount, always
on or on demand). KindStation is a station that has them all; the rules are the test files'
to set."""

import hashlib
import http.client
import os
import re
import shutil
import socket
import ssl
import subprocess
import tempfile

import adminlib
import conftest
import formatlib as fl
import hlscheck
import wirelib

SHORT_HLS = ("<hls><target-duration>2</target-duration><part-target-ms>500</part-target-ms>"
             "<segments>3</segments></hls>")


# ---------------------------------------------------------------- servers for a module

def stop_checked(srv):
    """Stops srv as the server fixture does: it must still run and exit 0 at SIGTERM."""
    if srv.proc is None:
        return  # never started
    alive = srv.is_alive()
    code = srv.stop()
    if not alive or code != 0:
        print(srv.diagnostics())
    assert alive and code == 0, "server %s (exit %r)" % ("died" if not alive else "stopped", code)
    shutil.rmtree(srv.dir, ignore_errors=True)


class Bench:
    """What a module's tests share (servers, sources, files), closed in the reverse order it
    was made, also when making it failed halfway: a fixture runs `with Bench() as b:`."""

    def __init__(self):
        self._undo = []

    def keep(self, thing, close):
        """Registers close(thing) for the end; returns thing."""
        self._undo.append((close, thing))
        return thing

    def server(self, srv=None, **cfg):
        """srv (or a new Server of cfg), started and stopped (checked) at the end."""
        srv = srv or conftest.Server(**cfg)
        self.keep(srv, stop_checked)
        return srv.start()

    def dir(self, made):
        return self.keep(made, lambda d: shutil.rmtree(d, ignore_errors=True))

    def close(self):
        errors = []
        while self._undo:
            close, thing = self._undo.pop()
            try:
                close(thing)
            except Exception as e:  # the rest is closed all the same
                errors.append(e)
        if errors:
            raise errors[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def private_dir():
    """A directory the server (running as nobody) may read and write."""
    d = tempfile.mkdtemp(prefix="wire-matrix-")
    os.chmod(d, 0o777)
    return d


def write_file(path, text, mode=0o644):
    with open(path, "wb") as f:
        f.write(text.encode() if isinstance(text, str) else text)
    os.chmod(path, mode)
    return path


def users_file(directory, **users):
    """An htpasswd file of Icecast's form (user:md5 hex) with these users and passwords."""
    return write_file(os.path.join(directory, "users"), "".join(
        "%s:%s\n" % (u, hashlib.md5(p.encode()).hexdigest()) for u, p in users.items()), 0o666)


def web_dir(intro_seconds=2):
    """A webroot with the server's status-json.xsl and an MP3 intro (/intro.mp3) of the
    stream's codec and rate."""
    d = tempfile.mkdtemp(prefix="wire-matrix-web-")
    os.chmod(d, 0o755)
    shutil.copy(os.path.join(conftest.SRCDIR, "web", "status-json.xsl"), d)
    os.chmod(os.path.join(d, "status-json.xsl"), 0o644)
    fl.encode_file(os.path.join(d, "intro.mp3"), "mp3", intro_seconds, freq=880)
    return d


def mount_xml(name, users=None, url_auth=None, **settings):
    """A <mount> block: settings as elements (underscores as dashes), users an htpasswd file,
    url_auth a dict of URL-authentication options."""
    body = "".join("<%s>%s</%s>" % (k.replace("_", "-"), v, k.replace("_", "-"))
                   for k, v in settings.items())
    if users:
        body += ('<authentication type="htpasswd"><option name="filename" value="%s"/>'
                 '</authentication>' % users)
    if url_auth:
        body += '<authentication type="url">%s</authentication>' % "".join(
            '<option name="%s" value="%s"/>' % kv for kv in url_auth.items())
    return '<mount type="normal"><mount-name>%s</mount-name>%s</mount>' % (name, body)


def relay_xml(origin, upstream, local, on_demand=False):
    return ("<relay><server>%s</server><port>%d</port><mount>%s</mount><local-mount>%s"
            "</local-mount><on-demand>%d</on-demand></relay>"
            % (origin.host, origin.port, upstream, local, 1 if on_demand else 0))


def mp3_source(srv, mount):
    """A real-time ffmpeg MP3 encoder on srv's mount, once the mount is live (stop it with
    fl.stop_process)."""
    p = fl.ffmpeg_source(srv, mount, "mp3")
    fl.wait_mount(srv, mount, p)
    return p


_MP3 = {}


def mp3_bytes(seconds=20):
    """`seconds` of a 64 kbit/s MP3 sine (no ID3 tag, no Xing frame): a paced source's loop."""
    if seconds not in _MP3:
        _MP3[seconds] = subprocess.run(
            [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
             "sine=frequency=440:sample_rate=44100:duration=%d" % seconds, "-c:a", "libmp3lame",
             "-b:a", "64k", "-id3v2_version", "0", "-write_xing", "0", "-f", "mp3", "-"],
            capture_output=True, check=True, timeout=60).stdout
    return _MP3[seconds]


def paced_source(srv, mount):
    """A source looping an MP3 file to mount at its bit rate (real time), once the mount is
    live: lighter than an encoder, for stations with many mounts (stop it with .stop())."""
    src = srv.source(mount, mp3_bytes(), rate=8000, chunk=1024, loop=True)
    if src.connect().status != 200:
        src.stop()
        raise AssertionError("source of %s refused: %r" % (mount, src.response))
    src.start()
    fl.wait_mount(srv, mount)
    return src


def make_cert(directory):
    """A self-signed certificate and its key in one PEM file the server can read."""
    from test_tls import make_cert as tls_cert
    return tls_cert(directory, "server")[0]


def listeners(srv, mount):
    """The listeners /admin/listclients shows on mount (plain ones and HLS sessions)."""
    r = adminlib.admin(srv, "/admin/listclients?mount=" + mount)
    assert r.status == 200, r.status
    return r.xml().findall("source/listener")


def live_mounts(srv):
    """The mounts /admin/listmounts lists: those live now."""
    return [m.get("mount") for m in adminlib.admin(srv, "/admin/listmounts").xml().findall(
        "source")]


def listener_count(srv, mount):
    s = fl.stats_source(srv, mount)
    return int(s.findtext("listeners")) if s is not None else None


def subprocess_run(cmd, timeout=60):
    """A client program's run: its CompletedProcess (text output)."""
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def metric(srv, name):
    text = adminlib.admin(srv, "/metrics").body.decode()
    m = re.search(r"^%s (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- asking, kind by kind

def connect(srv, tls=False, source_ip=None, timeout=10.0):
    """A connection to srv's plain (or TLS) port from source_ip; None when a TLS handshake was
    refused (the server closes a refused client's TLS connection before its handshake)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if source_ip:
        s.bind((source_ip, 0))
    s.connect((srv.host, srv.tls_port if tls else srv.port))
    if not tls:
        return s
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        return ctx.wrap_socket(s)
    except (ssl.SSLError, OSError):
        s.close()
        return None


def request_bytes(method, path, headers=None, version="1.0"):
    lines = ["%s %s HTTP/%s" % (method, path, version), "Host: 127.0.0.1",
             "User-Agent: %s" % (headers or {}).get("User-Agent", "wire-matrix/1")]
    lines += ["%s: %s" % kv for kv in (headers or {}).items() if kv[0] != "User-Agent"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def stream(srv, mount, headers=None, source_ip=None, tls=False, want=8192, timeout=10.0):
    """A plain or TLS GET of a mount: (status, the body it got: at least `want` bytes of a 200
    or what came until the close); status 0 when the connection closed without an answer."""
    s = connect(srv, tls, source_ip, timeout)
    if s is None:
        return 0, b""
    try:
        s.sendall(request_bytes("GET", mount, headers))
        resp, body = wirelib.read_head(s, timeout)
        if resp is None:
            return 0, b""
        if resp.status == 200:
            while len(body) < want:
                chunk = s.recv(65536)
                if not chunk:
                    break
                body += chunk
        return resp.status, body
    except (ConnectionResetError, BrokenPipeError):
        return 0, b""
    finally:
        s.close()


class Listener(wirelib.Listener):
    """wirelib's threaded listener from a given address, over TLS when tls."""

    def __init__(self, srv, mount, tls=False, source_ip=None, **kw):
        super().__init__(srv.host, srv.tls_port if tls else srv.port, mount, **kw)
        self.srv, self.tls, self.source_ip = srv, tls, source_ip

    def request_bytes(self):
        return request_bytes(self.method, self.mount, self.extra_headers, self.version)

    def open(self, timeout=10.0, start=True):
        self.sock = connect(self.srv, self.tls, self.source_ip, timeout)
        if self.sock is None:
            self.closed, self.close_reason = True, "refused before the handshake"
            return None
        self.sock.sendall(self.request_bytes())
        self.response, rest = wirelib.read_head(self.sock, timeout)
        if self.response is None:
            self.closed, self.close_reason = True, "closed before response"
            return None
        self._add(rest)
        if start:
            self.start()
        return self.response


def listen(srv, mount, want=4096, **kw):
    """A Listener that got its 200 and `want` bytes (AssertionError otherwise)."""
    lis = Listener(srv, mount, **kw)
    resp = lis.open()
    assert resp is not None and resp.status == 200, (mount, resp)
    lis.wait_bytes(want, 10)
    return lis


def exchange(srv, path, headers=None, method="GET", source_ip=None, tls=False, timeout=30):
    """One complete HTTP/1.1 exchange: (status, {header: value} lower-cased, body)."""
    if tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        c = http.client.HTTPSConnection(srv.host, srv.tls_port, timeout=timeout, context=ctx,
                                        source_address=(source_ip, 0) if source_ip else None)
    else:
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout,
                                       source_address=(source_ip, 0) if source_ip else None)
    try:
        c.request(method, path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
        return 0, {}, b""
    finally:
        c.close()


def issue(srv, mount, headers=None, source_ip=None):
    """A session token from mount's multivariant playlist: (status, token or None)."""
    status, _, body = exchange(srv, mount + "/hls.m3u8", headers, source_ip=source_ip)
    m = hlscheck.TOKEN_RE.search(body.decode(errors="replace"))
    return status, m.group(1) if status == 200 and m else None


def media(srv, mount, token, headers=None, source_ip=None):
    """A session's media playlist: (status, its text)."""
    status, _, body = exchange(srv, "%s/hls.m3u8?session=%s" % (mount, token), headers,
                           source_ip=source_ip)
    return status, body.decode(errors="replace")


def newest_segment(text):
    return hlscheck.parse(text)["segments"][-1]["uri"]


def intro_segments(text):
    """The intro segments a media playlist lists (their URIs as listed)."""
    return [s["uri"] for s in hlscheck.parse(text)["segments"] if s["uri"].startswith("hls/intro/")]


def without_token(uri):
    return re.sub(r"[?&]session=[0-9a-f]+", "", uri).replace("?&", "?")


class Session:
    """An HLS session as a player runs it: a token, its media playlist (the first one with the
    login headers), then its newest segment. .status is the first answer that was not 200 (or
    200), .token, .text its last playlist."""

    def __init__(self, srv, mount, headers=None, source_ip=None, play=True):
        self.srv, self.mount, self.source_ip = srv, mount, source_ip
        self.agent = {"User-Agent": (headers or {}).get("User-Agent", "wire-matrix/1")}
        self.text = ""
        self.status, self.token = issue(srv, mount, self.agent, source_ip)
        if self.token:
            self.status, self.text = media(srv, mount, self.token, headers, source_ip)
        if self.status == 200 and play:
            self.status = self.piece(newest_segment(self.text))[0]

    def poll(self, headers=None):
        status, text = media(self.srv, self.mount, self.token,
                             dict(self.agent, **(headers or {})), self.source_ip)
        if status == 200:
            self.text = text
        return status

    def piece(self, uri, method="GET"):
        """A piece its playlist lists (uri as listed): (status, headers, body)."""
        return exchange(self.srv, self.mount + "/" + uri, self.agent, method, self.source_ip)


def session_status(srv, mount, headers=None, source_ip=None):
    return Session(srv, mount, headers, source_ip).status


def bare_piece_status(srv, mount, uri, headers=None, source_ip=None, method="GET"):
    """A piece of mount asked for without a session (its URI without a token)."""
    return exchange(srv, mount + "/" + without_token(uri), headers, method, source_ip)[0]


# ---------------------------------------------------------------- one station, every kind

KINDS = ["plain", "tls", "hls_session", "bare_piece", "intro", "relay", "relay_on_demand"]


class KindStation(Bench):
    """An origin (/up.mp3) and an edge with a TLS socket, MOUNT (HLS with an intro), and two
    relays of the origin's mount: /relay.mp3 always on, /od.mp3 on demand. With an htpasswd
    file (users) all three ask for its login. attempt(kind) asks for audio as each kind
    does."""

    MOUNT = "/live.mp3"
    RELAYED = {"relay": "/relay.mp3", "relay_on_demand": "/od.mp3"}

    def start(self, users=None, more="", **cfg):
        self.more = more
        self.origin = self.server()
        self.keep(paced_source(self.origin, "/up.mp3"), lambda s: s.stop())
        web = self.dir(web_dir())
        self.srv = conftest.Server(tls_mode="1", webroot=web, extra_xml=self.edge_xml(users),
                                   **cfg)
        self.srv.cfg["ssl_certificate"] = make_cert(self.srv.dir)
        self.server(self.srv)
        self.keep(mp3_source(self.srv, self.MOUNT), fl.stop_process)
        fl.wait_mount(self.srv, "/relay.mp3")
        return self

    def edge_xml(self, users=None):
        return (mount_xml(self.MOUNT, users, intro="/intro.mp3") + SHORT_HLS +
                mount_xml("/relay.mp3", users) + mount_xml("/od.mp3", users) +
                relay_xml(self.origin, "/up.mp3", "/relay.mp3") +
                relay_xml(self.origin, "/up.mp3", "/od.mp3", on_demand=True) + self.more)

    def reload(self, users=None):
        """The edge's config rewritten (users: its mounts' htpasswd file, None: open) and
        applied by SIGHUP."""
        import signal
        srv = self.srv
        before = srv.error_log().count("config reloaded")
        srv.write_config(extra_xml=self.edge_xml(users))
        srv.send_signal(signal.SIGHUP)
        wirelib.wait_until(lambda: srv.error_log().count("config reloaded") > before, 10,
                           "the reload")

    def mount_of(self, kind):
        return self.RELAYED.get(kind, self.MOUNT)

    def piece_uri(self, kind, headers=None):
        """A piece of MOUNT as a session's playlist lists it (a session of its own, with the
        login headers): its newest segment, or for "intro" its first intro segment."""
        text = Session(self.srv, self.MOUNT, headers, play=False).text
        return intro_segments(text)[0] if kind == "intro" else newest_segment(text)

    def attempt(self, kind, uri=None):
        """A function of (headers, source_ip) asking for audio as `kind` does: the status it
        got. A piece's kind asks for uri bare (without a token), else for one it finds now."""
        srv = self.srv
        if kind in ("plain", "tls", "relay", "relay_on_demand"):
            mount = self.mount_of(kind)
            return lambda headers, ip: stream(srv, mount, headers, ip, tls=kind == "tls")[0]
        if kind == "hls_session":
            return lambda headers, ip: session_status(srv, self.MOUNT, headers, ip)
        uri = uri or self.piece_uri(kind)
        return lambda headers, ip: bare_piece_status(srv, self.MOUNT, uri, headers, ip)
