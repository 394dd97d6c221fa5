# SPDX-License-Identifier: GPL-2.0-or-later
"""A checker of HLS media playlists (RFC 8216 and the low-latency tags of its second edition),
fed one reload after another: each playlist must hold on its own, and follow from the ones
before it (sequence numbers never go back, a segment keeps its duration, the discontinuity
sequence counts the discontinuities that left the window). Fragmented MP4 segments (an Opus
mount's) are read with the box readers at the end: the init segment's sample entry and each
fragment's timing."""

import datetime
import re
import struct


class PlaylistError(AssertionError):
    pass


def _attrs(text):
    """KEY=VALUE,KEY="VALUE" -> dict."""
    out = {}
    for m in re.finditer(r'([A-Z0-9-]+)=("[^"]*"|[^,]*)', text):
        v = m.group(2)
        out[m.group(1)] = v[1:-1] if v.startswith('"') else v
    return out


def parse(text):
    """The playlist as a dict: version, target, msn, dseq, segments (each: seq, uri, duration,
    pdt, discontinuity, parts), open_parts (parts after the last segment), server_control,
    part_target, hint."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if not lines or lines[0] != "#EXTM3U":
        raise PlaylistError("no #EXTM3U first line")
    pl = {"version": None, "target": None, "msn": None, "dseq": 0, "segments": [],
          "open_parts": [], "server_control": None, "part_target": None, "hint": None,
          "open_discontinuity": False, "open_pdt": None, "open_map": None}
    map_uri = None
    pending = {"discontinuity": False, "pdt": None, "parts": []}
    duration = None
    for line in lines[1:]:
        tag, _, value = line.partition(":")
        if tag == "#EXT-X-VERSION":
            pl["version"] = int(value)
        elif tag == "#EXT-X-TARGETDURATION":
            pl["target"] = int(value)
        elif tag == "#EXT-X-MEDIA-SEQUENCE":
            pl["msn"] = int(value)
        elif tag == "#EXT-X-DISCONTINUITY-SEQUENCE":
            pl["dseq"] = int(value)
        elif tag == "#EXT-X-SERVER-CONTROL":
            pl["server_control"] = _attrs(value)
        elif tag == "#EXT-X-PART-INF":
            pl["part_target"] = float(_attrs(value)["PART-TARGET"])
        elif tag == "#EXT-X-DISCONTINUITY":
            pending["discontinuity"] = True
        elif tag == "#EXT-X-MAP":
            map_uri = _attrs(value)["URI"]
        elif tag == "#EXT-X-PROGRAM-DATE-TIME":
            pending["pdt"] = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
        elif tag == "#EXT-X-PART":
            a = _attrs(value)
            pending["parts"].append({"uri": a["URI"], "duration": float(a["DURATION"]),
                                     "independent": a.get("INDEPENDENT") == "YES"})
        elif tag == "#EXT-X-PRELOAD-HINT":
            pl["hint"] = _attrs(value)
        elif tag == "#EXTINF":
            duration = float(value.split(",")[0])
        elif not line.startswith("#"):
            if duration is None:
                raise PlaylistError("URI %s without #EXTINF" % line)
            pl["segments"].append({"uri": line, "duration": duration, "map": map_uri,
                                   **pending})
            pending = {"discontinuity": False, "pdt": None, "parts": []}
            duration = None
    pl["open_parts"] = pending["parts"]
    pl["open_discontinuity"] = pending["discontinuity"]
    pl["open_pdt"] = pending["pdt"]
    pl["open_map"] = map_uri
    for tag in ("version", "target", "msn"):
        if pl[tag] is None:
            raise PlaylistError("no %s tag" % tag)
    for i, s in enumerate(pl["segments"]):
        s["seq"] = pl["msn"] + i
    return pl


def part_uris(pl):
    """The URIs of every part a parsed playlist lists, oldest first."""
    return [q["uri"] for seg in pl["segments"] for q in seg["parts"]] + \
        [q["uri"] for q in pl["open_parts"]]


def parse_multivariant(text):
    """The one variant of a multivariant playlist: its attributes (BANDWIDTH as an int) and
    its uri."""
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    if not lines or lines[0] != "#EXTM3U":
        raise PlaylistError("no #EXTM3U first line")
    for i, line in enumerate(lines):
        if line.startswith("#EXT-X-STREAM-INF:"):
            a = _attrs(line.partition(":")[2])
            a["BANDWIDTH"] = int(a["BANDWIDTH"])
            a["uri"] = lines[i + 1]
            return a
    raise PlaylistError("no #EXT-X-STREAM-INF")


class Checker:
    """Feed it reloads (check(text)); it raises PlaylistError on the first rule broken."""

    def __init__(self, min_window_targets=3):
        self.min_window_targets = min_window_targets
        self.last = None
        self.known = {}          # seq -> (uri, duration, discontinuity)
        self.reloads = 0
        self.discontinuities = set()

    def check(self, text):
        pl = parse(text)
        self._alone(pl)
        if self.last:
            self._after(self.last, pl)
        for s in pl["segments"]:
            key = (s["uri"], round(s["duration"], 5), s["discontinuity"], s["map"])
            if self.known.setdefault(s["seq"], key) != key:
                raise PlaylistError("segment %d changed: %r then %r" % (s["seq"],
                                                                        self.known[s["seq"]], key))
            if s["discontinuity"]:
                self.discontinuities.add(s["seq"])
        self.last = pl
        self.reloads += 1
        return pl

    def _alone(self, pl):
        t = pl["target"]
        if not pl["segments"]:
            raise PlaylistError("no segment")
        for s in pl["segments"]:
            if round(s["duration"]) > t:
                raise PlaylistError("EXTINF %.5f of %d rounds above the target %d" % (
                    s["duration"], s["seq"], t))
            if s["duration"] <= 0:
                raise PlaylistError("segment %d lasts %r" % (s["seq"], s["duration"]))
            if s["pdt"] is None:
                raise PlaylistError("segment %d has no program date" % s["seq"])
            if s["uri"].endswith(".mp4") and not s["map"]:
                raise PlaylistError("fMP4 segment %d without an EXT-X-MAP" % s["seq"])
        for a, b in zip(pl["segments"], pl["segments"][1:]):
            if a["map"] != b["map"] and not b["discontinuity"]:
                raise PlaylistError("the map changes at %d without a discontinuity" % b["seq"])
        for a, b in zip(pl["segments"], pl["segments"][1:]):
            if not b["discontinuity"]:
                gap = (b["pdt"] - a["pdt"]).total_seconds() - a["duration"]
                if abs(gap) > 0.01:
                    raise PlaylistError("program dates of %d and %d are %.3f s off their "
                                        "durations" % (a["seq"], b["seq"], gap))
        pt = pl["part_target"]
        if pt is not None:
            sc = pl["server_control"] or {}
            if sc.get("CAN-BLOCK-RELOAD") != "YES":
                raise PlaylistError("parts without CAN-BLOCK-RELOAD=YES")
            if float(sc.get("PART-HOLD-BACK", 0)) < 3 * pt:
                raise PlaylistError("PART-HOLD-BACK %s under three part targets" %
                                    sc.get("PART-HOLD-BACK"))
            for s in pl["segments"] + [{"parts": pl["open_parts"], "seq": None}]:
                for p in s["parts"]:
                    if p["duration"] > pt + 1e-6:
                        raise PlaylistError("part %s lasts %.5f > %.3f" % (p["uri"],
                                                                           p["duration"], pt))
                if s["seq"] is not None and s["parts"]:
                    total = sum(p["duration"] for p in s["parts"])
                    if abs(total - s["duration"]) > 0.001:
                        raise PlaylistError("parts of %d last %.5f, the segment %.5f" % (
                            s["seq"], total, s["duration"]))
            if not pl["hint"] or pl["hint"].get("TYPE") != "PART":
                raise PlaylistError("no EXT-X-PRELOAD-HINT:TYPE=PART")

    def _after(self, old, new):
        if new["msn"] < old["msn"]:
            raise PlaylistError("media sequence went back: %d then %d" % (old["msn"], new["msn"]))
        if new["target"] != old["target"]:
            raise PlaylistError("target duration changed")
        if new["segments"][-1]["seq"] < old["segments"][-1]["seq"]:
            raise PlaylistError("the last segment went back")
        left = [s for s in old["segments"] if s["seq"] < new["msn"]]
        if len(left) == len(old["segments"]) and new["msn"] > old["segments"][-1]["seq"] + 1:
            return  # everything we knew left: nothing to compare the sequence with
        expected = old["dseq"] + sum(1 for s in left if s["discontinuity"])
        if new["dseq"] != expected:
            raise PlaylistError("discontinuity sequence %d, expected %d" % (new["dseq"], expected))

    def reload_until(self, load, cond, timeout, what, interval=0.3):
        """Checks reloads (load() -> the playlist's text) until cond(playlist) holds; returns
        its value (wirelib.WaitTimeout past the timeout)."""
        import wirelib
        return wirelib.wait_until(lambda: cond(self.check(load())), timeout, what, interval)

    def window_ok(self, pl=None):
        """The window lasts at least min_window_targets target durations."""
        pl = pl or self.last
        total = sum(s["duration"] for s in pl["segments"])
        return total >= self.min_window_targets * pl["target"]


# ---- fragmented MP4 (ISO/IEC 14496-12) ----

def boxes(data):
    """The boxes of data back to back: [(type, body)], raising PlaylistError when one does
    not fit."""
    out, pos = [], 0
    while pos < len(data):
        if len(data) - pos < 8:
            raise PlaylistError("a box header cut at byte %d" % pos)
        size, kind = struct.unpack_from(">I4s", data, pos)
        if size < 8 or pos + size > len(data):
            raise PlaylistError("box %r of %d bytes at %d of %d" % (kind, size, pos, len(data)))
        out.append((kind.decode("latin-1"), data[pos + 8:pos + size]))
        pos += size
    return out


def box(data, *path):
    """The body of the first box along path ("moov", "trak", ...); PlaylistError if none."""
    for kind in path:
        found = [b for t, b in boxes(data) if t == kind]
        if not found:
            raise PlaylistError("no %s box (path %s)" % (kind, "/".join(path)))
        data = found[0]
    return data


def opus_init(data):
    """An Opus init segment's description: its top boxes, the sample entry's channel count
    and the dOps fields (channels, pre_skip, rate, gain, family)."""
    top = [t for t, _ in boxes(data)]
    stsd = box(data, "moov", "trak", "mdia", "minf", "stbl", "stsd")
    entry = boxes(stsd[8:])  # version/flags, entry count
    if len(entry) != 1 or entry[0][0] != "Opus":
        raise PlaylistError("sample entries %r" % [t for t, _ in entry])
    body = entry[0][1]
    channelcount = struct.unpack_from(">H", body, 16)[0]
    dops = box(body[28:], "dOps")
    version, channels, pre_skip, rate, gain, family = struct.unpack_from(">BBHIhB", dops)
    timescale = struct.unpack_from(">I", box(data, "moov", "trak", "mdia", "mdhd"), 12)[0]
    box(data, "moov", "mvex", "trex")
    return {"top": top, "channelcount": channelcount, "version": version, "channels": channels,
            "pre_skip": pre_skip, "rate": rate, "gain": gain, "family": family,
            "timescale": timescale}


def emsg_id3(body):
    """An emsg box (version 1) of the ID3 scheme: (presentation time, timescale, the ID3 tag)."""
    if body[0] != 1:
        raise PlaylistError("emsg version %d" % body[0])
    timescale, time = struct.unpack_from(">IQ", body, 4)
    scheme_end = body.index(b"\0", 24)
    if body[24:scheme_end] != b"https://aomedia.org/emsg/ID3":
        raise PlaylistError("emsg scheme %r" % body[24:scheme_end])
    value_end = body.index(b"\0", scheme_end + 1)
    return time, timescale, body[value_end + 1:]


def fragments(data):
    """A segment or part's fragments: [{tfdt, durations, sizes, mdat, emsg}] ([emsg] moof +
    mdat; emsg: the emsg boxes in front, as emsg_id3 reads them)."""
    out, emsg, top = [], [], boxes(data)
    while top:
        kind, body = top.pop(0)
        if kind == "emsg":
            emsg.append(emsg_id3(body))
            continue
        if kind != "moof" or not top or top[0][0] != "mdat":
            raise PlaylistError("%s where a moof and its mdat belong" % kind)
        moof, mdat = body, top.pop(0)[1]
        traf = box(moof, "traf")
        tfdt = box(traf, "tfdt")
        t = struct.unpack_from(">Q" if tfdt[0] == 1 else ">I", tfdt, 4)[0]
        trun = box(traf, "trun")
        flags = struct.unpack_from(">I", trun)[0] & 0xffffff
        count = struct.unpack_from(">I", trun, 4)[0]
        pos = 8 + (4 if flags & 1 else 0) + (4 if flags & 4 else 0)
        durations, sizes = [], []
        for _ in range(count):
            if flags & 0x100:
                durations.append(struct.unpack_from(">I", trun, pos)[0])
                pos += 4
            if flags & 0x200:
                sizes.append(struct.unpack_from(">I", trun, pos)[0])
                pos += 4
            pos += (4 if flags & 0x400 else 0) + (4 if flags & 0x800 else 0)
        out.append({"tfdt": t, "durations": durations, "sizes": sizes, "mdat": mdat,
                    "emsg": emsg})
        emsg = []
    if emsg:
        raise PlaylistError("an emsg box after the last fragment")
    return out


# ---------------------------------------------------------------- issued session tokens

TOKEN_RE = re.compile(r"hls\.m3u8\?session=([0-9a-f]{32})")


def issue_token(host, port, mount, headers=None, timeout=30, source_ip=None):
    """A new session token for `mount`, as a player gets one: the one its multivariant playlist
    (<mount>/hls.m3u8 without a session) names. source_ip: the local address to ask from."""
    import http.client
    c = http.client.HTTPConnection(host, port, timeout=timeout,
                                   source_address=(source_ip, 0) if source_ip else None)
    try:
        c.request("GET", mount + "/hls.m3u8", headers=headers or {})
        r = c.getresponse()
        body = r.read().decode(errors="replace")
    finally:
        c.close()
    m = TOKEN_RE.search(body)
    if r.status != 200 or not m:
        raise AssertionError("no session token from %s/hls.m3u8: %d %s" % (mount, r.status,
                                                                          body[:200]))
    return m.group(1)


def token(srv, mount, label="", headers=None):
    """The token of the session named `label` on `mount` of server srv: issued on first ask
    (issue_token), the same one after (a test's several sessions each have a label)."""
    tokens = srv.__dict__.setdefault("_hls_tokens", {})
    key = (mount, label)
    if key not in tokens:
        tokens[key] = issue_token(srv.host, srv.port, mount, headers)
    return tokens[key]


def fetch_first_piece(host, port, mount, playlist_text, headers=None, timeout=30):
    """Fetches the newest complete segment a media playlist lists (its URI as listed: with the
    session's token where the mount's pieces need one), as a player does once it starts: the
    session becomes a listener. Its status and body."""
    import http.client
    uri = parse(playlist_text)["segments"][-1]["uri"]
    c = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        c.request("GET", mount + "/" + uri, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def listen(srv, mount, label="", headers=None, timeout=30):
    """Session `label` of `mount` starts playing as a player does: its media playlist, then a
    segment (so that it counts as a listener). Returns (token, playlist text)."""
    import http.client
    t = token(srv, mount, label, headers)
    c = http.client.HTTPConnection(srv.host, srv.port, timeout=timeout)
    try:
        c.request("GET", "%s/hls.m3u8?session=%s" % (mount, t), headers=headers or {})
        r = c.getresponse()
        text = r.read().decode(errors="replace")
    finally:
        c.close()
    if r.status != 200:
        raise AssertionError("%s/hls.m3u8 of session %r: %d %s" % (mount, label, r.status,
                                                                   text[:200]))
    status, _ = fetch_first_piece(srv.host, srv.port, mount, text, headers, timeout)
    if status != 200:
        raise AssertionError("the first segment of session %r: %d" % (label, status))
    return t, text
