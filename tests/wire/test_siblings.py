# SPDX-License-Identifier: GPL-2.0-or-later
"""Spreading listeners over sibling servers by load (<redirect-siblings><redirect-share>).

Servers on loopback name each other as siblings and poll each other's /room.txt every second.
Past its share of its limits, a server sends a new listener (a GET of a mount, or an HLS
player's first playlist request) with a 302 to the sibling with the most room among those less
loaded than itself, keeping the path and query and marking the URL (sibling-redirect=1): a
marked request is never redirected again. A sibling that is down, or says it is stopping, is
never chosen. An https:// sibling whose certificate a private CA signed is polled (and sent TLS
listeners) once that CA is in <ssl-cafile>, and takes no listeners without it.
"""

import shutil
import socket
import subprocess
import threading
import time
from urllib.parse import urlsplit

import pytest

import formatlib as fl
import hlscheck
import matrixlib as mx
import testca
import wirelib
from conftest import SOURCE_PASSWORD, free_port

pytestmark = pytest.mark.rimecast_only

MARK = "sibling-redirect=1"


def siblings_xml(ports, share, interval=1):
    return ("<redirect-siblings><poll-interval>%d</poll-interval><redirect-share>%d"
            "</redirect-share>%s</redirect-siblings>"
            % (interval, share, "".join("<sibling>http://127.0.0.1:%d</sibling>" % p
                                         for p in ports)))


def start_siblings(server, count, share, extra_xml="", last_xml="", **cfg):
    """count servers, each naming all the others as siblings (the last one with last_xml
    too)."""
    ports = [free_port() for _ in range(count)]
    return [server(port=p, extra_xml=siblings_xml([q for q in ports if q != p], share)
                   + extra_xml + (last_xml if p == ports[-1] else ""), **cfg) for p in ports]


def feed(srv, mount="/live.mp3"):
    """A real-time MP3 source (8 KB/s: a listener that reads nothing lags little)."""
    return mx.paced_source(srv, mount)


def wait_polled(srv, others, timeout=10):
    """Until srv has had an answer from each of others (its log says so)."""
    for o in others:
        srv.wait_log("sibling http://127.0.0.1:%d answers" % o.port, timeout)


def polls(srv):
    return srv.access_log().count("GET /room.txt ")


def wait_seen(srv, pollers, timeout=10):
    """Until each of srv's `pollers` siblings has read its room document since now: two more
    polls from each (a poller asks again only once it stored the answer to its last poll)."""
    want = polls(srv) + 2 * pollers
    wirelib.wait_until(lambda: polls(srv) >= want, timeout, "the siblings' polls of srv")


def room(srv):
    """srv's room document as {"clients": (n, max), ..., "/mount": (n, max)}."""
    resp, body = wirelib.simple_request(srv.host, srv.port, b"GET /room.txt HTTP/1.0\r\n\r\n")
    lines = body.decode().splitlines()
    assert lines[0] == "rimecast-room 1", body
    out = {"status": resp.status}
    for line in lines[1:]:
        f = line.split(" ")
        out[f[1] if f[0] == "mount" else f[0]] = tuple(f[1:]) if f[0] == "state" else \
            tuple(int(x) for x in f[-2:])
    return out


def arrive(port, path, timeout=5.0):
    """A listener asks 127.0.0.1:port for path and follows one 302: (socket held open or None,
    [(port, status, location)] of each answer)."""
    hops = []
    target = path
    for _ in range(3):
        s = wirelib.connect("127.0.0.1", port, timeout)
        s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: wiretest-arrival\r\n\r\n" % target).encode())
        resp, _ = wirelib.read_head(s, timeout)
        status = resp.status if resp else None
        loc = resp.header("location") if resp else None
        hops.append((port, status, loc))
        if status != 302:
            if status == 200:
                return s, hops
            s.close()
            return None, hops
        s.close()
        u = urlsplit(loc)
        port, target = u.port, u.path + ("?" + u.query if u.query else "")
    return None, hops


# ---------------------------------------------------------------- spreading

def test_listeners_arriving_at_one_server_spread_evenly_over_three_siblings(server):
    sibs = start_siblings(server, 3, share=20)
    srcs = [feed(s) for s in sibs]
    for s in sibs:
        wait_polled(s, [o for o in sibs if o is not s])
    a = sibs[0]
    held, served = [], {s.port: 0 for s in sibs}
    try:
        t0 = time.monotonic()
        for i in range(300):
            sock, hops = arrive(a.port, "/live.mp3?n=%d" % i)
            assert sock is not None, hops
            held.append(sock)
            assert len(hops) <= 2, hops  # redirected once at most
            if len(hops) == 2:
                # the path and query kept, the URL marked
                assert hops[0][2] == "http://127.0.0.1:%d/live.mp3?n=%d&%s" % (
                    hops[1][0], i, MARK), hops
            served[hops[-1][0]] += 1
        elapsed = time.monotonic() - t0
        counts = {s.port: room(s)["/live.mp3"][0] for s in sibs}
        assert counts == served, (counts, served)
        # a's first listeners stay, up to its share (20 % of 200 clients)
        assert served[a.port] >= 40
        for port, n in served.items():
            assert 90 <= n <= 110, (served, "%.1f s" % elapsed)
    finally:
        for sock in held:
            sock.close()
        for s in srcs:
            s.stop()


def hold(srv, count, mount="/live.mp3"):
    """count listeners of mount on srv itself (marked: never sent away), held open."""
    socks = []
    for _ in range(count):
        sock, hops = arrive(srv.port, "%s?%s" % (mount, MARK))
        assert sock is not None and len(hops) == 1, hops
        socks.append(sock)
    wirelib.wait_until(lambda: room(srv)[mount][0] >= count, 5, "the held listeners counted")
    return socks


def close_all(*groups):
    for g in groups:
        for x in g:
            x.close()


@pytest.fixture
def busy_pair(server):
    """Servers a and b, siblings with <redirect-share> 0, each with a source on /live.mp3; a
    holds five listeners, so it is loaded more than b: a new listener of a goes to b."""
    a, b = start_siblings(server, 2, share=0)
    srcs = [feed(a), feed(b)]
    wait_polled(a, [b])
    wait_polled(b, [a])
    held = hold(a, 5)
    wait_seen(a, 1)
    yield a, b
    close_all(held)
    for s in srcs:
        s.stop()


def test_a_plain_listener_of_a_loaded_server_goes_to_the_less_loaded_sibling(busy_pair):
    a, b = busy_pair
    sock, hops = arrive(a.port, "/live.mp3?who=x&n=1")
    assert sock is not None
    assert hops == [(a.port, 302, "http://127.0.0.1:%d/live.mp3?who=x&n=1&%s" % (b.port, MARK)),
                    (b.port, 200, None)], hops
    # a query that ends in "?" or "&" gets the mark without an empty parameter
    for target, want in (("/live.mp3", "/live.mp3?" + MARK), ("/live.mp3?", "/live.mp3?" + MARK),
                         ("/live.mp3?a=1&", "/live.mp3?a=1&" + MARK)):
        resp, _ = wirelib.simple_request(a.host, a.port,
                                         ("HEAD %s HTTP/1.0\r\n\r\n" % target).encode())
        assert resp.status == 302 and resp.header("location") == \
            "http://127.0.0.1:%d%s" % (b.port, want), (target, resp)
        assert resp.header("access-control-allow-origin") == "*"
    # a slave relaying from its master logs in as the relay user: never sent away
    lis = wirelib.Listener(a.host, a.port, "/live.mp3",
                           headers={"Authorization": wirelib.basic_auth("relay",
                                                                        SOURCE_PASSWORD)})
    assert lis.open().status == 200
    lis.close()
    sock.close()


def test_the_server_with_the_fewer_listeners_keeps_its_own(busy_pair):
    a, b = busy_pair
    # b is the less loaded: its new listeners stay, whatever its share
    socks = []
    for _ in range(3):
        sock, hops = arrive(b.port, "/live.mp3")
        assert sock is not None and hops == [(b.port, 200, None)], hops
        socks.append(sock)
    close_all(socks)


class LyingFront:
    """A server as its siblings see it a moment after their last poll: /room.txt through here
    is an old answer with plenty of room; anything else goes through to the server."""

    DOC = ("rimecast-room 1\nstate serving\nclients 0 1000\nlisteners 0 -1\n"
           "mount /live.mp3 0 -1\n")

    def __init__(self, target):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", free_port()))
        self.lsock.listen(64)
        self.port = self.lsock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _serve(self, c):
        c.settimeout(10)
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = c.recv(65536)
            if not chunk:
                c.close()
                return
            buf += chunk
        c.settimeout(None)
        if buf.startswith(b"GET /room.txt "):
            body = self.DOC.encode()
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                      b"\r\n%s" % (len(body), body))
            c.close()
            return
        up = socket.create_connection(("127.0.0.1", self.target.port))
        up.sendall(buf)
        threading.Thread(target=self._pipe, args=(up, c), daemon=True).start()
        self._pipe(c, up)

    def close(self):
        self.closed = True
        self.lsock.close()


def test_a_redirected_listener_is_never_redirected_again(server):
    # a and b see each other through fronts that answer their polls with a moment-old room
    # document: each believes the other has all the room it wants
    pa, pb = free_port(), free_port()
    a = server(port=pa, start=False, mounts=[{"mount_name": "/live.mp3", "max_listeners": 2}])
    b = server(port=pb, start=False, mounts=[{"mount_name": "/live.mp3", "max_listeners": 2}])
    front_a, front_b = LyingFront(a), LyingFront(b)
    a.cfg["extra_xml"] = siblings_xml([front_b.port], share=10)
    b.cfg["extra_xml"] = siblings_xml([front_a.port], share=10)
    a.start()
    b.start()
    srcs = [feed(a), feed(b)]
    try:
        a.wait_log("sibling http://127.0.0.1:%d answers" % front_b.port, 10)
        b.wait_log("sibling http://127.0.0.1:%d answers" % front_a.port, 10)
        held = hold(a, 1) + hold(b, 1)  # both past their share (1 of 2), neither full
        # past its share, a sends the listener to b, which is past its share too and believes
        # a has room: it serves the marked request instead of sending it back
        sock, hops = arrive(a.port, "/live.mp3?n=1")
        assert hops == [(a.port, 302, "http://127.0.0.1:%d/live.mp3?n=1&%s" % (front_b.port,
                                                                                MARK)),
                        (front_b.port, 200, None)], hops
        held.append(sock)
        assert room(b)["/live.mp3"][0] == 2  # b is full now
        held += hold(a, 1)                    # and so is a
        # full, a sends the next one to b (its answer said room), and b, full, gives the
        # marked request the full mount's answer: no ping-pong between full siblings
        sock, hops = arrive(a.port, "/live.mp3?n=2")
        assert sock is None
        assert hops == [(a.port, 302, "http://127.0.0.1:%d/live.mp3?n=2&%s" % (front_b.port,
                                                                                MARK)),
                        (front_b.port, 403, None)], hops
        # unmarked, b would have sent it back to a
        resp, _ = wirelib.simple_request(b.host, b.port, b"GET /live.mp3 HTTP/1.0\r\n\r\n")
        assert resp.status == 302 and resp.header("location").startswith(
            "http://127.0.0.1:%d/" % front_a.port)
        close_all(held)
    finally:
        for s in srcs:
            s.stop()
        front_a.close()
        front_b.close()


def test_a_stopped_sibling_is_never_chosen(server):
    a, b, c = start_siblings(server, 3, share=0)
    srcs = [feed(s) for s in (a, b, c)]
    wait_polled(a, [b, c])
    held = hold(a, 10)
    wait_seen(a, 2)
    served = {s.port: 0 for s in (a, b, c)}
    socks = []
    for i in range(30):  # while all three serve, c takes its part
        sock, hops = arrive(a.port, "/live.mp3?n=%d" % i)
        assert sock is not None, hops
        socks.append(sock)
        served[hops[-1][0]] += 1
    assert served[c.port] >= 5, served
    srcs.pop().stop()
    c.stop()  # SIGTERM to its PID: it exits at once (no <shutdown-grace>)
    assert not c.is_alive()
    a.wait_log("sibling http://127.0.0.1:%d takes no listeners" % c.port, 10)
    after = {s.port: 0 for s in (a, b, c)}
    for i in range(40):
        sock, hops = arrive(a.port, "/live.mp3?m=%d" % i)
        assert sock is not None, hops  # nobody sent where nothing answers
        socks.append(sock)
        after[hops[-1][0]] += 1
    assert after[c.port] == 0 and after[b.port] > 0, after
    close_all(held, socks)
    for s in srcs:
        s.stop()


# ---------------------------------------------------------------- the kinds of listener

def test_an_hls_player_sent_away_at_its_first_playlist_plays_on_the_sibling(busy_pair):
    a, b = busy_pair
    # the first playlist request, which has no session yet, goes to b with its query
    status, headers, _ = mx.exchange(a, "/live.mp3/hls.m3u8?x=1")
    assert status == 302, status
    assert headers["location"] == "http://127.0.0.1:%d/live.mp3/hls.m3u8?x=1&%s" % (b.port,
                                                                                      MARK)
    # ffmpeg follows it: its session begins on b, which issued its token, and plays there
    cmd = [fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i",
           a.url("/live.mp3/hls.m3u8"), "-t", "6", "-f", "null", "-"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        def players(srv):
            return [x for x in mx.listeners(srv, "/live.mp3")
                    if (x.findtext("UserAgent") or "").startswith("Lavf")]
        wirelib.wait_until(lambda: players(b), 20, "ffmpeg's session on b")
        assert players(a) == []
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    complaints = [line for line in fl._decode_complaints(err).splitlines()
                  if "non monotonically increasing dts" not in line]  # see test_hls.py
    assert complaints == [], err


def test_pieces_and_a_sessions_own_requests_are_never_sent_away(busy_pair):
    a, b = busy_pair
    # a session a began (its first request came marked) polls on and fetches its pieces on a,
    # however loaded a is: only a session's first request is ever sent away
    status, headers, body = mx.exchange(a, "/live.mp3/hls.m3u8?" + MARK)
    assert status == 200, status
    token = hlscheck.TOKEN_RE.search(body.decode()).group(1)
    status, text = mx.media(a, "/live.mp3", token)
    assert status == 200
    uri = mx.newest_segment(text)
    assert mx.exchange(a, "/live.mp3/" + uri)[0] == 200
    # a bare piece (a cache's fetch) is no new listener either
    assert mx.exchange(a, "/live.mp3/" + mx.without_token(uri))[0] == 200


def test_a_tls_listener_is_never_sent_to_a_plain_http_sibling(server):
    pa, pb = free_port(), free_port()
    a = server(port=pa, start=False, tls_mode="1", extra_xml=siblings_xml([pb], share=0))
    a.cfg["ssl_certificate"] = mx.make_cert(a.dir)
    a.start()
    b = server(port=pb, extra_xml=siblings_xml([pa], share=0))
    srcs = [feed(a), feed(b)]
    try:
        wait_polled(a, [b])
        held = hold(a, 5)
        wait_seen(a, 1)
        # past its share, a sends a plain listener to b (http://), a TLS one it keeps: its
        # only sibling would take it out of TLS
        sock, hops = arrive(a.port, "/live.mp3")
        assert [h[:2] for h in hops] == [(a.port, 302), (b.port, 200)], hops
        held.append(sock)
        status, body = mx.stream(a, "/live.mp3", tls=True)
        assert status == 200 and len(body) >= 8192
        close_all(held)
    finally:
        for s in srcs:
            s.stop()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl tool")
@pytest.mark.parametrize("cafile", [True, False], ids=["ssl-cafile", "no-cafile"])
def test_an_https_sibling_with_a_private_ca_is_polled_through_ssl_cafile(server, cafile):
    """Two siblings on TLS with certificates of a private CA: with the CA in a's <ssl-cafile>,
    a polls b over https:// and sends b a TLS listener (curl, trusting that CA alone, follows
    the 302); without it, a says b cannot be verified and keeps its listeners."""
    pa, pb = free_port(), free_port()
    a = server(port=pa, start=False, tls_mode="1")
    b = server(port=pb, start=False, tls_mode="1")
    ca = testca.make_ca(a.dir)
    for s in (a, b):
        s.cfg["tls_port"] = free_port()
        s.cfg["ssl_certificate"] = testca.make_leaf(ca, s.dir, "sibling")[2]
    sibling = "https://127.0.0.1:%d" % b.tls_port
    a.cfg["extra_xml"] = ("<redirect-siblings><poll-interval>1</poll-interval><redirect-share>0"
                          "</redirect-share><sibling>%s</sibling></redirect-siblings>" % sibling)
    if cafile:
        a.cfg["ssl_cafile"] = ca[0]
    b.start()
    a.start()
    srcs = [feed(a), feed(b)]
    try:
        if not cafile:
            a.wait_log("sibling %s takes no listeners" % sibling, 10)
            line = [x for x in a.error_log().splitlines() if sibling in x][0]
            assert "certificate" in line, line
            held = hold(a, 5)
            status, headers, _ = mx.exchange(a, "/live.mp3", method="HEAD", tls=True)
            assert status == 200, (status, headers)
            close_all(held)
            return
        a.wait_log("sibling %s answers" % sibling, 10)
        assert "GET /room.txt " in b.access_log()
        held = hold(a, 5)
        curl = subprocess.run(
            ["curl", "-sS", "-I", "-L", "--max-redirs", "1", "--cacert", ca[0], "-m", "10",
             "-o", "/dev/null", "-w", "%{num_redirects} %{http_code} %{url_effective}",
             "https://127.0.0.1:%d/live.mp3" % a.tls_port],
            capture_output=True, text=True, timeout=20)
        assert curl.stdout == "1 200 %s/live.mp3?%s" % (sibling, MARK), (curl.stdout,
                                                                         curl.stderr)
        close_all(held)
    finally:
        for s in srcs:
            s.stop()


@pytest.mark.parametrize("on_demand", [False, True], ids=["always", "on_demand"])
def test_a_relayed_mounts_listener_goes_to_the_less_loaded_sibling(server, on_demand):
    origin = server()
    srcs = [feed(origin, "/live.mp3"), feed(origin, "/od.mp3")]
    relays = (mx.relay_xml(origin, "/live.mp3", "/live.mp3") +
              mx.relay_xml(origin, "/od.mp3", "/od.mp3", on_demand=on_demand))
    a, b = start_siblings(server, 2, share=0, extra_xml=relays)
    try:
        for s in (a, b):
            fl.wait_mount(s, "/live.mp3")
            if not on_demand:
                fl.wait_mount(s, "/od.mp3")
        held = hold(a, 5)  # a is the more loaded
        wait_seen(a, 1)
        sock, hops = arrive(a.port, "/od.mp3?n=1")
        assert hops == [(a.port, 302, "http://127.0.0.1:%d/od.mp3?n=1&%s" % (b.port, MARK)),
                        (b.port, 200, None)], hops
        sock.recv(1)
        held.append(sock)
        # the origin feeds b's relay (and a's too when it relays all the time); an on-demand
        # relay of a did not connect for a listener it sent away
        want = 2 if not on_demand else 1
        wirelib.wait_until(lambda: mx.listener_count(origin, "/od.mp3") == want, 10,
                           "the origin's relay listeners of /od.mp3")
        if on_demand:
            assert "/od.mp3" not in mx.live_mounts(a)
        close_all(held)
    finally:
        for s in srcs:
            s.stop()


def test_a_full_servers_hls_player_is_sent_to_a_sibling_with_room(server):
    # <redirect-share> left at 100: only a full server sends listeners away
    pa, pb = free_port(), free_port()
    a = server(port=pa, extra_xml=siblings_xml([pb], share=100),
               mounts=[{"mount_name": "/live.mp3", "max_listeners": 1}])
    b = server(port=pb, extra_xml=siblings_xml([pa], share=100))
    srcs = [feed(a), feed(b)]
    try:
        wait_polled(a, [b])
        # not full: a issues sessions itself, and keeps its first listener
        assert mx.exchange(a, "/live.mp3/hls.m3u8")[0] == 200
        held = hold(a, 1)
        wait_seen(a, 1)
        # full: a new session would be refused at its first media playlist; it goes to b at
        # its first playlist request instead, and a plain listener too
        status, headers, _ = mx.exchange(a, "/live.mp3/hls.m3u8")
        assert status == 302, status
        assert headers["location"] == "http://127.0.0.1:%d/live.mp3/hls.m3u8?%s" % (b.port, MARK)
        status, _, body = mx.exchange(b, "/live.mp3/hls.m3u8?" + MARK)
        assert status == 200 and hlscheck.TOKEN_RE.search(body.decode())
        sock, hops = arrive(a.port, "/live.mp3")
        assert [h[:2] for h in hops] == [(a.port, 302), (b.port, 200)], hops
        close_all(held, [sock])
    finally:
        for s in srcs:
            s.stop()


def test_a_server_past_its_clients_sends_an_hls_players_first_playlist_to_a_sibling(server):
    b = server()  # no siblings of its own: nobody's poll takes one of a's places
    a = server(clients=3, extra_xml=siblings_xml([b.port], share=100))
    srcs = [feed(a), feed(b)]
    try:
        wait_polled(a, [b])
        held = []
        for _ in range(2):  # the source and two listeners fill a's <clients>
            sock, hops = arrive(a.port, "/live.mp3?" + MARK)
            assert sock is not None, hops
            held.append(sock)
        status, headers, _ = mx.exchange(a, "/live.mp3/hls.m3u8?x=1")
        assert status == 302, status
        assert headers["location"] == "http://127.0.0.1:%d/live.mp3/hls.m3u8?x=1&%s" % (b.port,
                                                                                          MARK)
        # a session's own poll is no new listener: refused as before
        assert mx.exchange(a, "/live.mp3/hls.m3u8?session=" + "0" * 32)[0] == 403
        close_all(held)
    finally:
        for s in srcs:
            s.stop()
