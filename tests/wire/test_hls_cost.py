# SPDX-License-Identifier: GPL-2.0-or-later
"""What a low-latency HLS player costs the server, seen from outside: the writes a part followed
as it fills is sent in (arrival bursts at a client), and the eventfd writes that wake players
when a part closes (strace of the daemon while the project's HLS load generator plays).
docs/PERFORMANCE.md, "HLS". Icecast has no HLS: Rimecast only."""
import http.client
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

import adminlib
import conftest
import formatlib as fl
import hlscheck
import wirelib
from test_hls import _chunk_times, _hint_just_begun, start_source

pytestmark = pytest.mark.rimecast_only

HLSSWARM = os.environ.get("HLSSWARM_BIN") or os.path.join(os.path.dirname(conftest.BINARY),
                                                           "loadtest", "hlsswarm")
PART_S = 0.984  # the default part target (1 s) in whole MP3 frames at 44.1 kHz


def _requests(status):
    """The requests hlsswarm made so far (its latest status line)."""
    found = re.findall(r"^t=.* requests=(\d+) ", status.read_text(), re.M)
    return int(found[-1]) if found else 0


def _bursts(chunks, gap=0.15):
    """The chunks grouped by arrival: a new burst after `gap` seconds without one."""
    bursts = []
    for t, size in chunks:
        if bursts and t - bursts[-1][-1][0] < gap:
            bursts[-1].append((t, size))
        else:
            bursts.append([(t, size)])
    return bursts


def test_a_part_followed_as_it_fills_is_written_once_a_window_from_its_start(server):
    """Asked for the moment it begins, a part of about 1 s (asked for: the default is 500 ms)
    at the default window (500 ms)
    arrives in two writes: what was cut in its first window, then the rest with its end. Not a
    write for the head and tag when asked, then one at each tick of a clock of its own phase,
    then the end (three or four)."""
    srv = server(write_window=500, extra_xml="<hls><sessions>0</sessions>"
                 "<part-target-ms>1000</part-target-ms></hls>")
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    try:
        runs = [_bursts(_chunk_times(srv, _hint_just_begun(srv, mount))) for _ in range(3)]
    finally:
        fl.stop_process(p)
    for bursts in runs:
        # every byte still comes within a window of being cut, the end at once
        assert len(bursts) == 2, [[round(t - bursts[0][0][0], 3) for t, _ in b] for b in bursts]
        assert bursts[0][-1][1] > 0 and bursts[1][-1][1] == 0


def _traced_players(server, tmp_path, players, seconds, syscalls):
    """`players` low-latency players of hlsswarm on a one-worker server, the server traced
    (strace of `syscalls`) from when all are active until they made `seconds` worth of
    requests (two a second each): (the trace, the requests made meanwhile, the reads done
    ahead meanwhile: entered through the worker's io_uring, which strace does not show)."""
    srv = server(workers=1)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    status = tmp_path / "hlsswarm.status"
    gen = subprocess.Popen([HLSSWARM, "--host", srv.host, "--port", str(srv.port), "--mount",
                            mount, "--ll", "--clients", str(players), "--duration", "60",
                            "--status", str(status)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fd, out = tempfile.mkstemp(prefix="trace.", dir=srv.dir)
    os.close(fd)
    try:
        deadline = time.monotonic() + 30
        while "all_active clients=%d " % players not in (status.read_text()
                                                         if status.exists() else ""):
            assert time.monotonic() < deadline and gen.poll() is None, "players never all active"
            time.sleep(0.1)
        tracer = subprocess.Popen(["strace", "-f", "-y", "-e", "trace=" + syscalls, "-e",
                                   "signal=none", "-o", out, "-p", str(srv.pid)],
                                  stderr=subprocess.PIPE, text=True)
        try:
            assert "attached" in tracer.stderr.readline()
            ahead = _reads_ahead(srv)
            start = _requests(status)
            deadline = time.monotonic() + 6 * seconds
            while _requests(status) < start + 2 * players * seconds:
                assert time.monotonic() < deadline, status.read_text()[-1000:]
                time.sleep(0.1)
            made = _requests(status) - start
            ahead = _reads_ahead(srv) - ahead
        finally:
            tracer.terminate()
            tracer.wait(10)
    finally:
        gen.terminate()
        gen.wait(10)
        fl.stop_process(p)
    with open(out) as f:
        return f.read(), made, ahead


def _reads_ahead(srv):
    text = adminlib.admin(srv, "/metrics").text
    return int(re.search(r"^rimecast_worker_reads_ahead_total (\d+)$", text, re.M).group(1))


@pytest.mark.skipif(not os.access(HLSSWARM, os.X_OK) or not shutil.which("strace"),
                    reason="needs loadtest/hlsswarm and strace")
def test_a_part_close_wakes_its_waiting_players_with_one_eventfd_write_not_one_each(server,
                                                                                 tmp_path):
    """40 low-latency players on one worker: each part close (and window tick) posts a wake-up
    to every player waiting for it; the worker's eventfd is written once for the batch, not
    once a player (about two a second each before)."""
    players, seconds = 40, 4
    trace, _, _ = _traced_players(server, tmp_path, players, seconds, "write,writev")
    wakes = len(re.findall(r"^\d+ +write\(\d+<anon_inode:\[eventfd\]>", trace, re.M))
    sends = len(re.findall(r"^\d+ +writev\(\d+<(?:TCP|socket)", trace, re.M))
    conftest.note("%d players, %d s: %d writev, %d eventfd writes" % (players, seconds, sends,
                                                                     wakes))
    # the players were served meanwhile: a playlist and a part's two writes a second each
    assert sends >= players * seconds, (sends, wakes)
    # one write per part close and tick (about three a second), not one per player woken
    assert wakes < players * seconds / 4, (sends, wakes)


def _answer(sock, buf=b""):
    """One answer with a Content-Length read off sock: (status, body, bytes after it)."""
    resp, buf = wirelib.read_head(sock, 10, buf=buf)
    assert resp is not None, "closed before an answer"
    size = int(resp.header("content-length"))
    deadline = time.monotonic() + 10
    while len(buf) < size:
        assert time.monotonic() < deadline, "body incomplete"
        chunk = sock.recv(65536)
        assert chunk, "closed within a body"
        buf += chunk
    return resp.status, buf[:size], buf[size:]


def test_a_hundred_requests_pipelined_in_one_packet_are_all_answered(server):
    """A client that sends many requests at once gets every answer on the same connection: past
    a few answered in one go, the rest are read on the loop's next turns (the connection was
    closed after sixteen)."""
    srv = server()
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    hlscheck.token(srv, mount)  # the window's first segment is there
    s = wirelib.connect(srv.host, srv.port, 10)
    try:
        s.sendall(b"GET %s/hls.m3u8 HTTP/1.1\r\nHost: x\r\n\r\n" % mount.encode() * 100)
        rest, tokens = b"", set()
        for _ in range(100):
            status, body, rest = _answer(s, rest)
            assert status == 200
            tokens.add(hlscheck.TOKEN_RE.search(body.decode()).group(1))
        assert len(tokens) == 100  # each a new session's
    finally:
        s.close()
        fl.stop_process(p)


def test_requests_pipelined_in_one_packet_or_split_across_packets_are_all_answered(server):
    """A keep-alive player's requests however they come: the rest of the first packet read is
    parsed after each answer, and a request whose end comes in a later packet is read when it
    arrives (edge-triggered input, no read made in vain in between)."""
    srv = server()
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    req = ("GET %s/hls.m3u8?session=%s HTTP/1.1\r\nHost: x\r\n\r\n"
           % (mount, hlscheck.token(srv, mount))).encode()
    s = wirelib.connect(srv.host, srv.port, 10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        # two whole requests and half of a third in one packet
        s.sendall(req + req + req[:len(req) // 2])
        rest = b""
        for _ in range(2):
            status, body, rest = _answer(s, rest)
            assert status == 200 and body.startswith(b"#EXTM3U")
        # the third's end alone, once the first two were answered, then two more in one packet
        s.sendall(req[len(req) // 2:])
        status, body, rest = _answer(s, rest)
        assert status == 200 and body.startswith(b"#EXTM3U")
        s.sendall(req + req[:-1])
        status, body, rest = _answer(s, rest)
        assert status == 200 and body.startswith(b"#EXTM3U")
        s.sendall(req[-1:])
        status, body, rest = _answer(s, rest)
        assert status == 200 and body.startswith(b"#EXTM3U") and rest == b""
    finally:
        s.close()
        fl.stop_process(p)


@pytest.mark.skipif(not os.access(HLSSWARM, os.X_OK) or not shutil.which("strace"),
                    reason="needs loadtest/hlsswarm and strace")
def test_after_an_answer_a_drained_socket_is_not_read_again_in_vain(server, tmp_path):
    """40 low-latency players: each request is read once. A read that came back short drained
    the socket, and the next request raises a new input event: the read that found nothing
    after an answer (about one request in five) is not made. Requests read ahead (two or more
    in a turn, through the worker's io_uring) are counted by the server, not seen by strace;
    after them too the next read is the next event's."""
    players, seconds = 40, 4
    trace, made, ahead = _traced_players(server, tmp_path, players, seconds, "read")
    # the players' sockets: those a request head was read from (not the source's)
    heads = set(re.findall(r"^\d+ +read\((\d+)<(?:TCP|socket)[^,]*, \"GET ", trace, re.M))
    reads = [r for fd, r in re.findall(r"^\d+ +read\((\d+)<(?:TCP|socket)[^\n]*\) += (-?\d+)",
                                       trace, re.M) if fd in heads]
    empty = sum(1 for r in reads if r == "-1")
    conftest.note("%d players, %d requests: %d socket reads, %d found nothing, %d read ahead"
                  % (players, made, len(reads), empty, ahead))
    # the requests were read meanwhile, one call each or ahead
    assert len(reads) - empty + ahead >= made // 2, (made, len(reads), empty, ahead)
    # only an input event raced by its own data finds nothing: not one request in five
    assert empty <= made // 50, (made, len(reads), empty, ahead)


@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
def test_a_complete_part_or_segment_is_answered_in_one_writev(server):
    """A part or segment that exists is answered with its head, ID3 tag and audio in one
    writev (two before: the head and tag, then the audio), over a keep-alive connection as
    hls.js fetches each listed part; a range and a HEAD still give the right bytes."""
    import hlscheck
    from test_hls import get, playlist
    srv = server(workers=1)
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    fd, out = tempfile.mkstemp(prefix="trace.", dir=srv.dir)
    os.close(fd)
    try:
        pl = hlscheck.Checker().check(playlist(srv, mount))
        pieces = [seg["uri"] for seg in pl["segments"][-3:]]
        pieces += [part["uri"] for seg in pl["segments"][-2:] for part in seg["parts"]][:6]
        whole = {u: get(srv, mount + "/" + u)[2] for u in pieces}
        conn = wirelib.connect(srv.host, srv.port)
        port = conn.getsockname()[1]
        tracer = subprocess.Popen(["strace", "-f", "-yy", "-e", "trace=writev,write,sendmsg",
                                   "-e", "signal=none", "-o", out, "-p", str(srv.pid)],
                                  stderr=subprocess.PIPE, text=True)
        try:
            assert "attached" in tracer.stderr.readline()
            for u in pieces:
                resp, body = wirelib.get_kept_alive(conn, mount + "/" + u)
                assert resp.status == 200 and body == whole[u], u
        finally:
            tracer.terminate()
            tracer.wait(10)
        conn.close()
        status, _, ranged = get(srv, mount + "/" + pieces[-1], {"Range": "bytes=5-99"})
        assert status == 206 and ranged == whole[pieces[-1]][5:100]
    finally:
        fl.stop_process(p)
    with open(out) as f:
        trace = f.read()
    ours = [ln for ln in trace.splitlines() if ":%d]>" % port in ln]
    calls = [re.match(r"^\d+ +(\w+)\(", ln).group(1) for ln in ours]
    conftest.note("%d pieces over one keep-alive connection: %s" % (len(pieces), calls))
    assert len(calls) == len(pieces) and set(calls) == {"writev"}, ours

def _player_requests(srv, conn, mount, token):
    """A low-latency player's round on one kept-alive connection: a reload, a blocking reload
    for the hinted part (parked until it exists), that part's successor followed as it fills,
    and a last reload. Each moves the connection's deadline (read, parked, followed, read again)."""
    def get(path):
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        assert r.status == 200 and r.getheader("connection", "").lower() != "close", r.status
        return body
    base = "%s/hls.m3u8?session=%s" % (mount, token)
    msn, part = _next_part_of(get(base))
    pl = get("%s&_HLS_msn=%d&_HLS_part=%d" % (base, msn, part))
    get("%s/%s" % (mount, hlscheck.parse(pl.decode())["hint"]["URI"]))
    get(base)
    return time.monotonic()


def _next_part_of(body):
    m = re.search(r"/(\d+)\.(\d+)\.\w+$", "/" + hlscheck.parse(body.decode())["hint"]["URI"])
    return int(m.group(1)), int(m.group(2))


def test_an_idle_or_slow_player_connection_and_an_idle_session_still_end_on_time(server):
    """A player's connection whose deadline moved with each of its requests is still closed at
    header-timeout from its last answer, not before: idle, it is closed without a word; with
    half a request sent, it gets a 408. Its session ends when it has not polled for four target
    durations (at least 10 s), and not before."""
    header_timeout = 3
    srv = server(header_timeout=header_timeout,
                 extra_xml="<hls><target-duration>2</target-duration>"
                           "<part-target-ms>500</part-target-ms></hls>")
    mount = "/live.mp3"
    p = start_source(srv, mount, "mp3")
    idle = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    slow = http.client.HTTPConnection(srv.host, srv.port, timeout=30)
    try:
        idle_token = hlscheck.token(srv, mount, "idle")
        slow_token = hlscheck.token(srv, mount, "slow")
        wirelib.wait_until(lambda: _has_segment(srv, mount, idle_token), 15,
                           "the first segment")
        last_idle = _player_requests(srv, idle, mount, idle_token)
        last_slow = _player_requests(srv, slow, mount, slow_token)
        assert fl.json_source(srv, mount)["listeners"] == 2
        slow.sock.sendall(("GET %s/hls.m3u8?session=%s HTTP/1.1\r\nHo"
                           % (mount, slow_token)).encode())
        # the idle one: closed, nothing sent
        idle.sock.settimeout(header_timeout + 5)
        assert idle.sock.recv(4096) == b""
        waited = time.monotonic() - last_idle
        assert header_timeout - 0.2 <= waited <= header_timeout + 1.0, waited
        # the slow one: 408 at the same time from its last answer
        resp, _ = wirelib.read_head(slow.sock, header_timeout + 5)
        waited = time.monotonic() - last_slow
        assert resp is not None and resp.status == 408, resp
        assert header_timeout - 0.2 <= waited <= header_timeout + 1.0, waited
        # the sessions: 10 s after their last polls (checked once a second)
        wirelib.wait_until(lambda: fl.json_source(srv, mount)["listeners"] == 0, 20,
                           "the sessions to end")
        ended = time.monotonic()
        assert 10 - 0.2 <= ended - last_slow <= 10 + 2.0, ended - last_slow
    finally:
        idle.close()
        slow.close()
        fl.stop_process(p)


def _has_segment(srv, mount, token):
    """The session's playlist lists a segment."""
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=10)
    try:
        c.request("GET", "%s/hls.m3u8?session=%s" % (mount, token))
        r = c.getresponse()
        return r.status == 200 and b"#EXTINF" in r.read()
    finally:
        c.close()
