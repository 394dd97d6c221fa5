# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS behind a real cache: Debian's nginx, run as a child of the test with the proxy_cache
configuration docs/HLS.md gives, in front of a server that is a CDN's origin
(<hls><sessions>0</sessions></hls>), and many players (threads) going through it as hls.js
does in low-latency mode: a blocking reload for the part the preload hint names, then the new
parts and segments. The origin must see about one request per segment, part and playlist
reload, not one per player, and every player must get whole segments, the same bytes as the
origin's. HLS_CDN_PLAYERS=N sets the number of players (200). Needs nginx (Debian: nginx)
and ffmpeg; skipped without them.
"""

import collections
import hashlib
import http.client
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse

import pytest

import adminlib
import formatlib as fl
import hlscheck
import wirelib
from conftest import SRCDIR

pytestmark = pytest.mark.rimecast_only

NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)
MOUNT = "/live.mp3"
PLAYERS = int(os.environ.get("HLS_CDN_PLAYERS", "200"))
RUN_S = 16.0

# The location block of docs/HLS.md ("Behind a CDN or a cache"), with the origin's address.
NGINX_CONF = """
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 2048; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    proxy_cache_path {d}/cache keys_zone=hls:10m max_size=1g inactive=10m;
    server {{
        listen 127.0.0.1:{port};
{location}
    }}
}}
"""


def docs_location(origin):
    """The nginx location block of docs/HLS.md, pointed at origin ("host:port")."""
    with open(os.path.join(SRCDIR, "docs", "HLS.md")) as f:
        text = f.read()
    m = re.search(r"```\n(proxy_cache_path [^\n]*\n)(location .*?\n})\n```", text, re.S)
    assert m, "docs/HLS.md has no nginx example"
    return m.group(2).replace("127.0.0.1:8000", origin)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    def __init__(self, origin):
        self.dir = tempfile.mkdtemp(prefix="wire-nginx-")
        for sub in ("tmp", "cache"):
            os.makedirs(os.path.join(self.dir, sub))
        for sub in ("", "tmp", "cache"):
            os.chmod(os.path.join(self.dir, sub), 0o777)      # its workers run as nobody
        self.port = free_port()
        loc = "\n".join("        " + line for line in docs_location(origin).splitlines())
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(NGINX_CONF.format(d=self.dir, port=self.port, location=loc))
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf"),
                                      "-g", "daemon off;"], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def up():
            if self.proc.poll() is not None:
                raise AssertionError("nginx exited: %s" % self.proc.stderr.read().decode(errors="replace"))
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return True
            except OSError:
                return False
        wirelib.wait_until(up, 10, "nginx to listen")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def cdn(server):
    if not NGINX:
        pytest.skip("nginx is not installed (Debian: nginx)")
    srv = server(extra_xml="<hls><sessions>0</sessions></hls>")
    p = fl.ffmpeg_source(srv, MOUNT, "mp3")
    fl.wait_mount(srv, MOUNT, p)
    ng = Nginx("%s:%d" % (srv.host, srv.port))
    yield srv, ng
    ng.stop()
    fl.stop_process(p)


def hint_of(pl):
    m = re.search(r"(\d+)\.(\d+)\.\w+$", pl["hint"]["URI"])
    return int(m.group(1)), int(m.group(2))


class Player(threading.Thread):
    """One low-latency player through the cache: blocking reloads for the hinted part, then
    each new part and segment fetched once (whole, checked against its Content-Length)."""

    def __init__(self, port, deadline, bodies, errors):
        super().__init__(daemon=True)
        self.port, self.deadline, self.bodies, self.errors = port, deadline, bodies, errors
        self.requests = 0
        self.got = set()

    def get(self, conn, path):
        self.requests += 1
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        return r.status, r.getheader("Content-Length"), body

    def run(self):
        base = MOUNT + "/hls.m3u8"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            status, _, body = self.get(conn, base)
            assert status == 200, (status, body[:200])
            while time.monotonic() < self.deadline:
                pl = hlscheck.parse(body.decode())
                uris = [s["uri"] for s in pl["segments"][-2:]]
                uris += [p["uri"] for s in pl["segments"][-1:] for p in s["parts"]]
                uris += [p["uri"] for p in pl["open_parts"]]
                for uri in uris:
                    if uri in self.got:
                        continue
                    path = urllib.parse.urljoin(base, uri)
                    status, length, data = self.get(conn, path)
                    assert status == 200 and length is not None and int(length) == len(data), \
                        (path, status, length, len(data))
                    assert data[:3] == b"ID3", path
                    self.got.add(uri)
                    self.bodies[uri].add(hashlib.sha256(data).hexdigest())
                msn, part = hint_of(pl)
                status, _, body = self.get(conn, "%s?_HLS_msn=%d&_HLS_part=%d" % (base, msn, part))
                assert status == 200, (msn, part, status, body[:200])
        except Exception as e:             # noqa: BLE001 -- reported by the test
            self.errors.append("%s: %r" % (self.name, e))
        finally:
            conn.close()


def origin_hls_requests(srv):
    """The origin's access-log lines for HLS URLs: (playlist lines, piece lines)."""
    lines = [l for l in srv.access_log().splitlines() if MOUNT + "/hls" in l]
    playlists = [l for l in lines if "/hls.m3u8" in l]
    return playlists, [l for l in lines if l not in playlists]


def test_many_players_through_nginx_cost_the_origin_one_request_per_piece(cdn):
    srv, ng = cdn
    bodies = collections.defaultdict(set)
    errors = []
    deadline = time.monotonic() + RUN_S
    players = [Player(ng.port, deadline, bodies, errors) for _ in range(PLAYERS)]
    for p in players:
        p.start()
    for p in players:
        p.join(RUN_S + 40)
    assert not [p for p in players if p.is_alive()], "players still running"
    assert not errors, errors[:5]

    client_requests = sum(p.requests for p in players)
    pieces = set(bodies)
    segments = {u for u in pieces if re.search(r"/\d+\.mp3$", "/" + u)}
    parts = pieces - segments
    # every player got the same bytes for each piece, whole: those of the origin
    assert all(len(h) == 1 for h in bodies.values()), {u: h for u, h in bodies.items() if len(h) > 1}
    for uri in sorted(segments)[:3]:
        c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
        c.request("GET", urllib.parse.urljoin(MOUNT + "/hls.m3u8", uri))
        r = c.getresponse()
        data = r.read()
        c.close()
        assert r.status == 200 and hashlib.sha256(data).hexdigest() in bodies[uri], uri

    def origin_counts():
        pl, pc = origin_hls_requests(srv)
        return len(pl), len(pc)

    # the origin logs a line when a request ends: wait for the last ones
    wirelib.wait_until(lambda: origin_counts()[1] >= len(pieces), 10, "the origin's log lines")
    n_pl, n_pc = origin_counts()
    n_pc -= min(3, len(segments))                  # the direct fetches above
    playlist_requests = client_requests - sum(len(p.got) for p in players)
    summary = ("%d players, %d client requests (%d playlists, %d pieces) -> origin %d playlist "
               "requests, %d piece requests for %d pieces (%d segments, %d parts)"
               % (PLAYERS, client_requests, playlist_requests, client_requests - playlist_requests,
                  n_pl, n_pc, len(pieces), len(segments), len(parts)))
    print(summary)
    assert len(segments) >= 2 and len(parts) >= 8, summary
    # about one origin request per piece (a few more when a lock times out or an entry ages)
    assert n_pc <= len(pieces) * 1.2 + 2, summary
    # one playlist per reload window: the blocking reloads are asked for each part once
    assert n_pl <= (len(parts) + len(segments)) * 1.5 + 10, summary
    assert n_pl * PLAYERS / 2 <= playlist_requests, summary


def test_a_session_played_through_the_docs_block_has_the_players_address(server):
    """The block sends the player's address (X-Forwarded-For) and the server believes nginx, a
    trusted proxy: a session played through it is listed and counted with the player's
    address, not nginx's."""
    if not NGINX:
        pytest.skip("nginx is not installed (Debian: nginx)")
    d = tempfile.mkdtemp(prefix="wire-proxies-")
    os.chmod(d, 0o755)
    proxies = os.path.join(d, "proxies")
    with open(proxies, "w") as f:
        f.write("127.0.0.1\n")
    os.chmod(proxies, 0o644)
    srv = server(extra_xml="<paths><trusted-proxies>%s</trusted-proxies></paths>"
                 "<hls><target-duration>2</target-duration></hls>" % proxies)
    p = fl.ffmpeg_source(srv, MOUNT, "mp3")
    ng = None
    try:
        fl.wait_mount(srv, MOUNT, p)
        ng = Nginx("%s:%d" % (srv.host, srv.port))
        player = "127.0.0.7"

        def via_nginx(path):
            c = http.client.HTTPConnection("127.0.0.1", ng.port, timeout=20,
                                           source_address=(player, 0))
            try:
                c.request("GET", path)
                r = c.getresponse()
                return r.status, r.read().decode(errors="replace")
            finally:
                c.close()
        status, text = via_nginx(MOUNT + "/hls.m3u8")
        token = hlscheck.TOKEN_RE.search(text).group(1)
        status, text = via_nginx("%s/hls.m3u8?session=%s" % (MOUNT, token))
        assert status == 200, text[:200]
        seg = hlscheck.parse(text)["segments"][-1]["uri"]
        assert via_nginx(MOUNT + "/" + seg)[0] == 200
        doc = adminlib.admin(srv, "/admin/listclients?mount=" + MOUNT).xml()
        assert [l.findtext("IP") for l in doc.findall("source/listener")] == [player]
    finally:
        if ng:
            ng.stop()
        fl.stop_process(p)
        shutil.rmtree(d, ignore_errors=True)
