# SPDX-License-Identifier: GPL-2.0-or-later
"""The HLS window moves with its mount across an upgrade (SIGUSR2): the segments and parts a
playlist listed before the hand-over are listed after it and answer the same bytes, the
numbering, the 90 kHz clock (ID3 timestamps, fMP4 tfdt) and the discontinuity sequence run
on, and the new process answers a playlist at once. Requests in flight go over too: a
blocking reload parked in the old process is answered by the new one, a part being sent as it
fills and a segment being written complete. MP3, AAC and Opus (fMP4) mounts, with sessions
and as a CDN's origin (<sessions>0); ffmpeg and hls.js play on across it. Rimecast only."""

import http.client
import re
import select
import subprocess
import time

import pytest

import formatlib as fl
import hlscheck
import webuilib
import wirelib
from test_hls import _id3_frames, _lists_part, _next_part, start_source
from test_hls_web import play_hls, web_source  # noqa: F401 (web_source: the fixture)
from test_upgrade import upgrade
from test_webui import browsers  # noqa: F401 (the fixture)

pytestmark = pytest.mark.rimecast_only

HOLD_BACK = 1.5  # the part hold-back at the default part target (500 ms)
# short segments, so that a window of several fills within seconds; burst-size 0 makes a
# window begin at the live edge, as a window made again after a hand-over would
HLS_XML = ("<hls><target-duration>3</target-duration><segments>3</segments></hls>"
           "<mount><mount-name>/cdn.aac</mount-name><hls><sessions>0</sessions></hls></mount>"
           "<mount><mount-name>/cdn.opus</mount-name><hls><sessions>0</sessions></hls></mount>")
CODEC = {"mp3": "mp3", "aac": "aac", "opus": "opus"}


def hls_server(server):
    return server(extra_xml=HLS_XML, burst_size=0)


def codec_of(mount):
    return CODEC[mount.rsplit(".", 1)[1]]


def sessions(mount):
    return not mount.startswith("/cdn.")


def get(srv, path, headers=None, timeout=30):
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def playlist_path(srv, mount, query=""):
    """The media playlist's path: a session's (the same one all along), or the CDN origin's."""
    if not sessions(mount):
        return mount + "/hls.m3u8" + ("?" + query if query else "")
    return mount + "/hls.m3u8?session=" + hlscheck.token(srv, mount) + ("&" + query if query
                                                                         else "")


def load(srv, mount, query=""):
    status, _, body = get(srv, playlist_path(srv, mount, query))
    assert status == 200, (status, body[:300])
    return body.decode()


def fetch(srv, mount, uri):
    status, _, body = get(srv, mount + "/" + uri)
    assert status == 200, (uri, status, body[:200])
    return body


def uris(pl):
    """Every URI a parsed playlist lists: init segments, segments, parts."""
    out = []
    for s in pl["segments"]:
        if s["map"] and s["map"] not in out:
            out.append(s["map"])
        out.append(s["uri"])
    out += hlscheck.part_uris(pl)
    return out


def start(srv, mount):
    p = start_source(srv, mount, codec_of(mount))
    if codec_of(mount) == "opus":  # 503 until its codec headers came
        wirelib.wait_until(lambda: get(srv, mount + "/hls.m3u8")[0] == 200, 15,
                           "the Opus mount's HLS", interval=0.1)
    return p


def piece_time(body):
    """A piece's first sample: its ID3 timestamp (90 kHz), or for fMP4 its first fragment's
    tfdt (48 kHz)."""
    if body[:3] == b"ID3":
        frames = _id3_frames(body)
        owner = b"com.apple.streaming.transportStreamTimestamp\0"
        return int.from_bytes(frames["PRIV"][len(owner):], "big"), 90000
    return hlscheck.fragments(body)[0]["tfdt"], 48000


def assert_times_run_on(srv, mount, pl):
    """Each segment of pl begins where the one before it ended (its duration on the clock of
    the pieces: 90 kHz timestamps, or tfdt in 48 kHz)."""
    segs = pl["segments"]
    times = [piece_time(fetch(srv, mount, s["uri"])) for s in segs]
    for a, b, (ta, scale), (tb, _) in zip(segs, segs[1:], times, times[1:]):
        assert not b["discontinuity"], b
        gap = (tb - ta) / scale - a["duration"]
        assert abs(gap) < 2.0 / scale + 1e-6, "segment %d begins %.6f s off the end of %d" % (
            b["seq"], gap, a["seq"])


def window_before(srv, mount, check, segments=2):
    """Reloads until the window holds `segments` complete segments; then every URI it lists
    and its bytes."""
    check.reload_until(lambda: load(srv, mount), lambda pl: len(pl["segments"]) >= segments,
                       30, "%d segments in the window" % segments)
    pl = check.check(load(srv, mount))
    return pl, {u: fetch(srv, mount, u) for u in uris(pl)}


def first_playlist_after(srv, mount):
    """A new player's first playlist after the hand-over (a new session: its multivariant
    playlist first): the seconds it took."""
    t0 = time.monotonic()
    if sessions(mount):
        status, _, body = get(srv, mount + "/hls.m3u8")
        assert status == 200, status
        media = hlscheck.parse_multivariant(body.decode())["uri"]
        status, _, body = get(srv, mount + "/" + media)
    else:
        status, _, body = get(srv, mount + "/hls.m3u8")
    took = time.monotonic() - t0
    assert status == 200, (status, body[:200])
    hlscheck.parse(body.decode())
    return took


CASES = [("/live.mp3", False), ("/live.mp3", True), ("/live.aac", False), ("/live.aac", True),
         ("/live.opus", False), ("/live.opus", True), ("/cdn.aac", True), ("/cdn.opus", False)]


def window_moves_with_the_mount(srv, mount, ll, upgrades=1):
    p = start(srv, mount)
    try:
        check = hlscheck.Checker(min_window_targets=0)
        before, pieces = window_before(srv, mount, check)
        if not ll:  # a classic player fetches segments only
            pieces = {u: b for u, b in pieces.items() if u.count(".") == 1 or "init" in u}
        for _ in range(upgrades):
            upgrade(srv)
        took = first_playlist_after(srv, mount)
        after = check.check(load(srv, mount))  # numbering and discontinuities run on
        assert took < HOLD_BACK, "the first playlist took %.2f s" % took
        listed = uris(after)
        kept = [u for u in pieces if u in listed]
        # what was listed is listed still: at most a segment (and its parts) left meanwhile
        assert len(kept) >= len(pieces) - (1 + (8 if ll else 0)), (sorted(pieces), listed)
        for u in kept:
            assert fetch(srv, mount, u) == pieces[u], "%s answers other bytes" % u
        assert after["dseq"] == before["dseq"]
        assert not any(s["discontinuity"] for s in after["segments"]), after
        assert after["segments"][0]["seq"] <= before["segments"][-1]["seq"]
        # the window goes on: a segment cut wholly by the new process follows on the clock
        last = before["segments"][-1]["seq"]
        after = check.reload_until(lambda: load(srv, mount),
                                   lambda pl: pl["segments"][-1]["seq"] >= last + 2 and pl, 20,
                                   "segments cut after the hand-over")
        assert not any(s["discontinuity"] for s in after["segments"]), after
        assert_times_run_on(srv, mount, after)
    finally:
        fl.stop_process(p)


@pytest.mark.parametrize("mount,ll", CASES, ids=["%s-%s" % (m[1:], "ll" if ll else "classic")
                                                  for m, ll in CASES])
def test_the_window_moves_with_the_mount(server, mount, ll):
    window_moves_with_the_mount(hls_server(server), mount, ll)


def test_the_window_moves_on_over_upgrades_in_a_row(server):
    """Three upgrades one after the other: each new process hands on the window it took."""
    window_moves_with_the_mount(hls_server(server), "/live.opus", True, upgrades=3)


def test_segments_of_a_source_before_go_over_too(server):
    """A source reconnected shortly before the upgrade: the window still lists segments of
    the source before (in blocks of its own, no longer the mount's), then the discontinuity
    and the new source's; all of them go over, with the discontinuity where it was."""
    srv = hls_server(server)
    mount = "/live.aac"
    p = [start(srv, mount)]
    try:
        check = hlscheck.Checker(min_window_targets=0)
        window_before(srv, mount, check)
        fl.stop_process(p[0])
        p[0] = start(srv, mount)
        before = check.reload_until(
            lambda: load(srv, mount),
            lambda pl: any(s["discontinuity"] for s in pl["segments"][1:]) and pl, 30,
            "the new source's first segment")
        old = [s["uri"] for s in before["segments"]
               if s["seq"] < min(x["seq"] for x in before["segments"] if x["discontinuity"])]
        assert old, before
        pieces = {u: fetch(srv, mount, u) for u in uris(before)}
        upgrade(srv)
        after = check.check(load(srv, mount))
        assert [s["seq"] for s in after["segments"] if s["discontinuity"]] == \
            [s["seq"] for s in before["segments"] if s["discontinuity"]]
        assert after["dseq"] == before["dseq"]
        assert [u for u in old if u in uris(after)] == old  # the source before's, all listed
        for u in uris(after):
            if u in pieces:
                assert fetch(srv, mount, u) == pieces[u], "%s answers other bytes" % u
    finally:
        fl.stop_process(p[0])


# ---------------------------------------------------------------- requests in flight

def server_side(srv, sock):
    """The server's end of sock in /proc/net/tcp: (state, bytes it has not read yet), or None
    (also while it waits in the backlog, before it is accepted)."""
    port = sock.getsockname()[1]
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if (int(fields[1].split(":")[1], 16) == srv.port and
                    int(fields[2].split(":")[1], 16) == port):
                return fields[3], int(fields[4].split(":")[1], 16)
    return None


def send_request(srv, path, version="1.1"):
    """A GET of path on a connection of its own, once the server read it (its end has nothing
    left to read): then it is being answered, or parked."""
    s = wirelib.connect(srv.host, srv.port, timeout=30)
    s.sendall(("GET %s HTTP/%s\r\nHost: x\r\n\r\n" % (path, version)).encode())
    wirelib.wait_until(lambda: server_side(srv, s) == ("01", 0), 10, "the server to read " + path)
    return s


class Answers:
    """The answers on a connection, one after another: answer() is (status, head, body) of
    the next, read by its length, chunked, or to the end."""

    def __init__(self, sock, timeout=30):
        self.sock, self.timeout, self.buf = sock, timeout, b""

    def _more(self):
        try:
            b = self.sock.recv(65536)
        except ConnectionResetError:
            b = b""
        if not b:
            raise AssertionError("the connection closed inside an answer")
        self.buf += b

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def answer(self):
        head, self.buf = wirelib.read_head(self.sock, self.timeout, buf=self.buf)
        assert head is not None, "the connection closed without an answer"
        self.sock.settimeout(self.timeout)
        if head.header("content-length") is not None:
            return head.status, head, self._take(int(head.header("content-length")))
        if (head.header("transfer-encoding") or "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._line(), 16)
                chunk = self._take(size + 2)
                if size == 0:
                    return head.status, head, body
                body += chunk[:size]
        return head.status, head, self.buf + wirelib.read_until_closed(self.sock, self.timeout)


def read_answer(sock):
    return Answers(sock).answer()


def part_after(pl, msn, part, n):
    """The part n after (msn, part) in pl's geometry."""
    per = round(pl["target"] / pl["part_target"])
    k = msn * per + part + n
    return k // per, k % per


@pytest.mark.parametrize("mount", ["/live.aac", "/cdn.aac"])
def test_requests_waiting_at_the_hand_over_are_answered(server, mount):
    """A blocking reload and a part asked for before it exists (HTTP/1.0: answered once it is
    complete), both parked in the old process, are answered by the new one when their part
    comes."""
    srv = hls_server(server)
    p = start(srv, mount)
    try:
        check = hlscheck.Checker(min_window_targets=0)
        pl = check.reload_until(lambda: load(srv, mount), lambda pl: pl["segments"] and pl, 20,
                                "a segment")
        msn, part = _next_part(pl)
        # seconds ahead: they wait across the whole hand-over
        r_msn, r_part = part_after(pl, msn, part, 4)
        p_msn, p_part = part_after(pl, msn, part, 5)
        reload = send_request(srv, playlist_path(srv, mount, query="_HLS_msn=%d&_HLS_part=%d" % (
            r_msn, r_part)))
        piece = send_request(srv, "%s/hls/%d.%d.aac" % (mount, p_msn, p_part), "1.0")
        assert load(srv, mount).count("hls/%d.%d.aac" % (p_msn, p_part)) == 0  # still to come
        upgrade(srv)
        status, _, body = read_answer(reload)
        assert status == 200, body[:300]
        answered = check.check(body.decode())
        assert _lists_part(answered, r_msn, r_part), body.decode()
        status, _, body = read_answer(piece)
        assert status == 200 and body == fetch(srv, mount, "hls/%d.%d.aac" % (p_msn, p_part))
    finally:
        fl.stop_process(p)


def test_a_part_being_sent_as_it_fills_completes_after_the_hand_over(server):
    """A part asked for while it is being cut is sent as it fills (chunked); at the hand-over
    the new process goes on with it (and hands it on at the next): the answer ends with the
    part's last frame, the same bytes the part answers later."""
    srv = server(extra_xml="<hls><target-duration>8</target-duration>"
                 "<part-target-ms>4000</part-target-ms></hls>", burst_size=0)
    mount = "/live.mp3"
    p = start(srv, mount)
    try:
        pl = hlscheck.parse(load(srv, mount))
        msn, part = _next_part(pl)
        # the hinted part complete, the next one begins: asked for at once, it fills 4 s
        pl = hlscheck.parse(load(srv, mount, query="_HLS_msn=%d&_HLS_part=%d" % (msn, part)))
        msn, part = _next_part(pl)
        uri = "hls/%d.%d.mp3" % (msn, part)
        # one answer not begun (its head waits for the first write window, 500 ms) ...
        early = send_request(srv, "%s/%s" % (mount, uri))
        upgrade(srv)
        # ... one whose head and first frames went out, to the second process; which also
        # hands on the first, as the first process handed it over
        begun = send_request(srv, "%s/%s" % (mount, uri))
        wirelib.wait_until(lambda: select.select([begun], [], [], 0)[0], 10, "the first chunk")
        assert load(srv, mount).count(uri) == 1  # only the hint names it: still being cut
        upgrade(srv)
        for s in (early, begun):
            status, head, body = read_answer(s)
            assert status == 200 and (head.header("transfer-encoding") or "").lower() == "chunked"
            assert body == fetch(srv, mount, uri)
    finally:
        fl.stop_process(p)


def send_buffer_full(srv, sock):
    """Whether the server's end of sock has its send buffer full (ss: the bytes it queued, w,
    up to its size, tb): then what it has yet to write waits in the server."""
    out = subprocess.run(["ss", "-tmnH", "state", "established", "( sport = :%d and dport = :%d )"
                          % (srv.port, sock.getsockname()[1])],
                         capture_output=True, text=True, timeout=10).stdout
    m = re.search(r"skmem:\(([^)]*)\)", out)
    mem = {k: int(v) for k, v in re.findall(r"([a-z]+)(\d+)", m.group(1))} if m else {}
    return mem and mem["w"] >= mem["tb"]


@pytest.fixture(scope="module")
def mp3_320k():
    """A minute of MP3 at 320 kbit/s: 12 s segments of 480 kB."""
    p = subprocess.run([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi",
                        "-i", "anoisesrc=d=60:c=pink:r=44100", "-c:a", "libmp3lame", "-b:a",
                        "320k", "-id3v2_version", "0", "-f", "mp3", "-"],
                       capture_output=True, check=True, timeout=120)
    return p.stdout


def test_segments_being_written_complete_after_the_hand_over(server, mp3_320k):
    """A player that reads slowly, with segments asked for one after another on one
    connection (pipelined), more than the kernel takes: the new process writes the rest of the
    segment being written, then answers the requests after it."""
    srv = server(extra_xml="<hls><target-duration>12</target-duration></hls>", burst_size=0)
    mount = "/live.mp3"
    src = srv.source(mount, mp3_320k, rate=120000, chunk=4000, loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        fl.wait_mount(srv, mount)
        pl = hlscheck.Checker(min_window_targets=0).reload_until(
            lambda: load(srv, mount), lambda pl: pl["segments"] and pl, 30, "a segment")
        uri = pl["segments"][-1]["uri"]
        whole = fetch(srv, mount, uri)
        count = 1 + (5 << 20) // len(whole)  # more than the kernel holds of one connection
        s = wirelib.connect(srv.host, srv.port, timeout=30, rcvbuf=4096)
        s.sendall(("GET %s/%s HTTP/1.1\r\nHost: x\r\n\r\n" % (mount, uri)).encode() * count)
        wirelib.wait_until(lambda: send_buffer_full(srv, s), 20,
                           "the server's send buffer to fill")
        upgrade(srv)
        answers = Answers(s)
        for i in range(count):
            status, _, body = answers.answer()
            assert status == 200 and body == whole, "answer %d of %d" % (i + 1, count)
        assert src.error is None, src.error
    finally:
        src.stop()


# ---------------------------------------------------------------- players

def progress_seconds(path):
    """The media time ffmpeg's -progress file says it reached (0 before the first report)."""
    try:
        with open(path) as f:
            times = re.findall(r"^out_time_us=(\d+)$", f.read(), re.M)
    except FileNotFoundError:
        return 0
    return int(times[-1]) / 1e6 if times else 0


@pytest.mark.parametrize("mount", ["/live.aac", "/live.opus", "/cdn.aac"])
def test_ffmpeg_plays_on_across_the_hand_over(server, tmp_path, mount):
    """ffmpeg playing the mount's HLS (decoding it) across an upgrade: no error, no segment
    skipped, and the time it played is the time it ran."""
    srv = hls_server(server)
    p = start(srv, mount)
    progress = str(tmp_path / "progress")
    seconds = 24
    player = subprocess.Popen([fl.FFMPEG, "-hide_banner", "-nostdin", "-v", "warning",
                               "-progress", progress, "-i", srv.url(mount + "/hls.m3u8"),
                               "-t", str(seconds), "-f", "null", "-"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wirelib.wait_until(lambda: progress_seconds(progress) >= 4, 30, "ffmpeg to play 4 s")
        t0 = time.monotonic()
        upgrade(srv)
        _, err = player.communicate(timeout=60)
        ran = time.monotonic() - t0
    finally:
        fl.stop_process(player)
        fl.stop_process(p)
    assert player.returncode == 0, err
    # (ffmpeg's mov demuxer warns of each fMP4 segment's init segment, upgrade or not)
    complaints = [l for l in fl._decode_complaints(err).splitlines()
                  if "duplicated MOOV Atom" not in l and "Last message repeated" not in l]
    assert "skipping" not in err and complaints == [], err
    assert progress_seconds(progress) >= seconds - 0.1, err
    # it played on in real time: the rest of its 24 s, less what it had buffered (a window)
    assert ran >= seconds - 4 - 3 * 3 - 1, ran


_missing = webuilib.missing_requirements()


@pytest.mark.skipif(_missing is not None, reason=_missing or "")
@pytest.mark.parametrize("mount", ["/live.aac", "/live.opus"])
def test_hls_js_plays_on_across_the_hand_over(web_source, browsers, mount):
    """hls.js in Chromium (the public page's player, low-latency HLS) across `SIGUSR2`: its
    time runs on with the wall clock, its buffer in one piece, and it raises no error."""
    srv = web_source(mount, codec_of(mount))
    wirelib.wait_until(lambda: fl.json_source(srv, mount).get("hls_url"), 10,
                       "the mount's hls_url", interval=0.1)
    b, audio = play_hls(srv, browsers, mount)
    b.js_run("""var a = document.querySelector(arguments[0]), h = a.__hls;
        window.hlsTrouble = [];
        h.on(window.Hls.Events.ERROR, function (e, d) {
            window.hlsTrouble.push(d.details + (d.fatal ? ' (fatal)' : '') + ' at ' +
                                   a.currentTime.toFixed(2)); });""", audio)
    state = """var a = document.querySelector(arguments[0]), r = [];
        for (var i = 0; i < a.buffered.length; i++) r.push([a.buffered.start(i), a.buffered.end(i)]);
        return {at: a.currentTime, buffered: r, trouble: window.hlsTrouble, paused: a.paused,
                error: a.error && a.error.code};"""
    target = hlscheck.parse(load(srv, mount))["target"]
    b.wait(lambda: b.js_run(state, audio)["at"] > 2, 30, "two seconds played")
    upgrade(srv)
    t0, at0 = time.monotonic(), b.js_run(state, audio)["at"]

    def played_on():
        s = b.js_run(state, audio)
        return s if time.monotonic() - t0 >= 2 * target + 2 else None
    s = b.wait(played_on, 2 * target + 20, "two segments of play after the hand-over")
    wall = time.monotonic() - t0
    assert not s["trouble"] and s["error"] is None and not s["paused"], s
    assert s["at"] - at0 >= 0.8 * wall, (s, at0, wall)
    around = [r for r in s["buffered"] if r[0] <= s["at"] <= r[1] + 0.1]
    assert around and around[0][0] <= at0, (s, at0)  # one piece from before the hand-over
