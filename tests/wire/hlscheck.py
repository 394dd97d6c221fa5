# SPDX-License-Identifier: GPL-2.0-or-later
"""A checker of HLS media playlists (RFC 8216 and the low-latency tags of its second edition),
fed one reload after another: each playlist must hold on its own, and follow from the ones
before it (sequence numbers never go back, a segment keeps its duration, the discontinuity
sequence counts the discontinuities that left the window)."""

import datetime
import re


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
          "open_discontinuity": False, "open_pdt": None}
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
            pl["segments"].append({"uri": line, "duration": duration, **pending})
            pending = {"discontinuity": False, "pdt": None, "parts": []}
            duration = None
    pl["open_parts"] = pending["parts"]
    pl["open_discontinuity"] = pending["discontinuity"]
    pl["open_pdt"] = pending["pdt"]
    for tag in ("version", "target", "msn"):
        if pl[tag] is None:
            raise PlaylistError("no %s tag" % tag)
    for i, s in enumerate(pl["segments"]):
        s["seq"] = pl["msn"] + i
    return pl


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
            key = (s["uri"], round(s["duration"], 5), s["discontinuity"])
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

    def window_ok(self, pl=None):
        """The window lasts at least min_window_targets target durations."""
        pl = pl or self.last
        total = sum(s["duration"] for s in pl["segments"])
        return total >= self.min_window_targets * pl["target"]
