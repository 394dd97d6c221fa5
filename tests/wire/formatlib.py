# SPDX-License-Identifier: GPL-2.0-or-later
"""Helpers for the stream format, ICY and Shoutcast wire tests.

Owns: an Ogg page reader with CRC check, packet reassembly and the check that
a listener's capture starts with complete codec headers on page boundaries;
ICY demuxing of a listener stream; real encoders (ffmpeg, ezstream) as
sources and real decoders (ffmpeg, oggdec) as judges of what listeners got;
small HTTP helpers for stats. Knows nothing about starting the daemon
(conftest.py) or the basic stream clients (wirelib.py).
"""

import json
import os
import shutil
import struct
import subprocess
import urllib.parse
import xml.etree.ElementTree as ET

import adminlib
import wirelib
from conftest import SOURCE_PASSWORD

FFMPEG = shutil.which("ffmpeg")
OGGDEC = shutil.which("oggdec")
EZSTREAM = shutil.which("ezstream")


# ---------------------------------------------------------------- Ogg pages

def _crc_table():
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) if r & 0x80000000 else (r << 1)
        table.append(r & 0xFFFFFFFF)
    return table


CRC_TABLE = _crc_table()


def ogg_crc(data):
    crc = 0
    table = CRC_TABLE
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ table[((crc >> 24) ^ b) & 0xFF]
    return crc


class Page:
    __slots__ = ("offset", "flags", "granule", "serial", "seqno", "lacing", "body", "raw")

    @property
    def continued(self):
        return bool(self.flags & 1)

    @property
    def bos(self):
        return bool(self.flags & 2)

    @property
    def eos(self):
        return bool(self.flags & 4)

    def __repr__(self):
        return "<Page @%d serial=%d seq=%d flags=%d len=%d>" % (
            self.offset, self.serial, self.seqno, self.flags, len(self.raw))


def parse_page(data, pos):
    """The page at data[pos:], or None if it is incomplete. Raises AssertionError if the bytes
    there are not a valid page (capture pattern, version, CRC)."""
    if len(data) - pos < 27:
        return None
    assert data[pos:pos + 4] == b"OggS", "no capture pattern at byte %d: %r" % (
        pos, bytes(data[pos:pos + 16]))
    assert data[pos + 4] == 0, "page version %d at byte %d" % (data[pos + 4], pos)
    flags, granule, serial, seqno, crc, nseg = struct.unpack_from("<BqIIIB", data, pos + 5)
    if len(data) - pos < 27 + nseg:
        return None
    lacing = bytes(data[pos + 27:pos + 27 + nseg])
    end = pos + 27 + nseg + sum(lacing)
    if len(data) < end:
        return None
    raw = bytes(data[pos:end])
    check = raw[:22] + b"\0\0\0\0" + raw[26:]
    assert ogg_crc(check) == crc, "bad CRC on the page at byte %d" % pos
    p = Page()
    p.offset, p.flags, p.granule, p.serial, p.seqno = pos, flags, granule, serial, seqno
    p.lacing, p.body, p.raw = lacing, raw[27 + nseg:], raw
    return p


def ogg_pages(data):
    """Every page of data, which must be nothing but back-to-back valid pages; an incomplete
    page at the very end (a capture cut off) is ignored. Returns (pages, complete_len)."""
    pages = []
    pos = 0
    while pos < len(data):
        p = parse_page(data, pos)
        if p is None:
            break
        pages.append(p)
        pos += len(p.raw)
    return pages, pos


def page_packets(page):
    """Split a page body by its lacing: list of (bytes, complete) pieces."""
    out, start, size = [], 0, 0
    for v in page.lacing:
        size += v
        if v < 255:
            out.append((page.body[start:start + size], True))
            start += size
            size = 0
    if size or (page.lacing and page.lacing[-1] == 255):
        out.append((page.body[start:start + size], False))
    return out


# Codec signatures of the BOS packet and how many header packets a stream has.
def codec_of(bos_packet):
    p = bos_packet
    if p[:7] == b"\x01vorbis":
        return "vorbis"
    if p[:8] == b"OpusHead":
        return "opus"
    if p[:5] == b"\x7fFLAC":
        return "flac"
    if p[:8] == b"Speex   ":
        return "speex"
    if p[:7] == b"\x80theora":
        return "theora"
    return "unknown"


def expected_headers(codec, bos_packet):
    """Header packets (BOS included) a stream of this codec has, None if not fixed."""
    if codec in ("vorbis", "theora"):
        return 3
    if codec == "opus":
        return 2
    if codec == "flac":
        count = struct.unpack(">H", bos_packet[7:9])[0]
        return 1 + count if count else None
    if codec == "speex":
        extra = struct.unpack("<I", bos_packet[68:72])[0] if len(bos_packet) >= 72 else 0
        return 2 + extra
    return None


def is_header_packet(codec, index, packet, bos_packet):
    """index: packets of this stream before this one (the BOS packet is index 0)."""
    if index == 0:
        return True
    if codec == "vorbis":
        return index < 3 and packet[:7] == bytes([2 * index + 1]) + b"vorbis"
    if codec == "opus":
        return index == 1 and packet[:8] == b"OpusTags"
    if codec == "flac":
        count = struct.unpack(">H", bos_packet[7:9])[0]
        if count:
            return index <= count
        return len(packet) > 0 and packet[0] != 0xFF
    if codec == "speex":
        extra = struct.unpack("<I", bos_packet[68:72])[0] if len(bos_packet) >= 72 else 0
        return index < 2 + extra
    if codec == "theora":
        return index < 3 and len(packet) > 0 and packet[0] & 0x80
    return False


class OggCheck:
    """What a listener's Ogg capture looks like, checked page by page.

    groups: one dict per group of BOS pages (a chain link): {serial: codec};
    headers_per_group: header packets seen; tags: Vorbis comments per group."""

    def __init__(self, data):
        self.pages, self.complete = ogg_pages(data)
        assert self.pages, "no complete Ogg page in %d bytes" % len(data)
        self.groups = []
        self.tags = []
        self.first_audio_page = []
        self.first_data = []     # per group: {serial: first packet after the headers}
        self._check()

    def _check(self):
        streams = {}         # serial -> dict(codec, bos, index, partial, seq, done)
        in_bos_run = False
        for page in self.pages:
            if page.bos:
                if not in_bos_run:
                    for s in streams.values():
                        assert s["done"], "a new group began before the headers of stream %d " \
                            "were complete" % s["serial"]
                    streams = {}
                    self.groups.append({})
                    self.tags.append({})
                    self.first_audio_page.append(None)
                    self.first_data.append({})
                in_bos_run = True
                pk = page_packets(page)
                assert len(pk) == 1 and pk[0][1], "BOS page %r must hold exactly one packet" % page
                codec = codec_of(pk[0][0])
                self.groups[-1][page.serial] = codec
                streams[page.serial] = dict(serial=page.serial, codec=codec, bos=pk[0][0],
                                            index=1, partial=None, seq=page.seqno,
                                            done=codec == "unknown")
                continue
            assert self.groups, "the capture does not start with a BOS page: %r" % page
            in_bos_run = False
            s = streams.get(page.serial)
            assert s is not None, "page of stream %d without its BOS page in the group" % (
                page.serial)
            self._stream_page(s, page)

    def _stream_page(self, s, page):
        if page.continued:
            assert s["partial"] is not None and page.seqno == s["seq"] + 1, \
                "page %r continues a packet whose start the listener never got" % page
        elif s["partial"] is not None:
            raise AssertionError("page %r drops the rest of a packet" % page)
        g = len(self.groups) - 1
        if s["done"] and self.first_audio_page[g] is None:
            self.first_audio_page[g] = page
        s["seq"] = page.seqno
        pieces = page_packets(page)
        for i, (piece, complete) in enumerate(pieces):
            if i == 0 and s["partial"] is not None:
                piece = s["partial"] + piece
                s["partial"] = None
            if not complete:
                s["partial"] = piece
                continue
            if s["done"]:
                continue
            if is_header_packet(s["codec"], s["index"], piece, s["bos"]):
                if s["index"] == 1 and (s["codec"] != "flac" or piece[:1] in (b"\x04", b"\x84")):
                    self.tags[g].update(vorbis_comments(s["codec"], piece))
                s["index"] += 1
                continue
            # the first audio packet: all headers came before it, and it opens a page
            want = expected_headers(s["codec"], s["bos"])
            assert want is None or s["index"] == want, \
                "stream %d (%s) has %d header packets before its audio, not %d" % (
                    s["serial"], s["codec"], s["index"], want)
            assert i == 0 and not page.continued, \
                "the first audio packet of stream %d shares %r with header data" % (
                    s["serial"], page)
            s["done"] = True
            self.first_data[g][s["serial"]] = piece
            if self.first_audio_page[g] is None:
                self.first_audio_page[g] = page

    def codecs(self):
        return [sorted(g.values()) for g in self.groups]


def vorbis_comments(codec, packet):
    """KEY=value comments of a comment header packet (lowercase keys)."""
    skip = {"vorbis": 7, "opus": 8, "flac": 4, "speex": 0, "theora": 7}.get(codec)
    if skip is None:
        return {}
    p = packet[skip:]
    out = {}
    try:
        n = struct.unpack_from("<I", p, 0)[0]
        pos = 4 + n
        count = struct.unpack_from("<I", p, pos)[0]
        pos += 4
        for _ in range(count):
            n = struct.unpack_from("<I", p, pos)[0]
            entry = p[pos + 4:pos + 4 + n].decode("utf-8", "replace")
            pos += 4 + n
            if "=" in entry:
                k, v = entry.split("=", 1)
                out.setdefault(k.lower(), v)
    except struct.error:
        pass
    return out


# ---------------------------------------------------------------- MP3 and ADTS frames

MP3_BITRATES = {  # kbit/s by (MPEG-1?, index), Layer III
    True: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
    False: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
}
MP3_RATES = {3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000]}


def mp3_frame_len(data, pos):
    """Length of the MPEG audio Layer III frame at pos, or 0 if there is none."""
    if len(data) - pos < 4 or data[pos] != 0xFF or (data[pos + 1] & 0xE0) != 0xE0:
        return 0
    version = (data[pos + 1] >> 3) & 3
    layer = (data[pos + 1] >> 1) & 3
    br_idx = data[pos + 2] >> 4
    sr_idx = (data[pos + 2] >> 2) & 3
    if version == 1 or layer != 1 or br_idx in (0, 15) or sr_idx == 3:
        return 0
    mpeg1 = version == 3
    br = MP3_BITRATES[mpeg1][br_idx] * 1000
    sr = MP3_RATES[version][sr_idx]
    pad = (data[pos + 2] >> 1) & 1
    return (144 if mpeg1 else 72) * br // sr + pad


def adts_frame_len(data, pos):
    """Length of the ADTS frame at pos, or 0 if there is none."""
    if len(data) - pos < 7 or data[pos] != 0xFF or (data[pos + 1] & 0xF6) != 0xF0:
        return 0
    n = ((data[pos + 3] & 3) << 11) | (data[pos + 4] << 3) | (data[pos + 5] >> 5)
    return n if n >= 7 else 0


def whole_frames(data, frame_len):
    """data up to the end of its last complete frame: the frames are followed from the first
    run of three back-to-back frames (a listener may join mid-frame), the tail a capture was
    cut in is dropped."""
    for start in range(min(len(data), 1 << 16)):
        pos, run = start, 0
        while run < 3:
            n = frame_len(data, pos)
            if not n:
                break
            pos += n
            run += 1
        if run == 3:
            break
    else:
        raise AssertionError("no three consecutive frames in %d bytes" % len(data))
    pos = start
    while True:
        n = frame_len(data, pos)
        if not n or pos + n > len(data):
            return data[:pos]
        pos += n


def id3v2_len(data, pos):
    """Length of the ID3v2 tag at pos (header, body and footer), 0 if none starts there."""
    h = data[pos:pos + 10]
    if len(h) < 10 or h[:3] != b"ID3" or h[3] == 0xFF or h[4] == 0xFF or \
            any(b & 0x80 for b in h[6:10]):
        return 0
    size = (h[6] << 21) | (h[7] << 14) | (h[8] << 7) | h[9]
    return 10 + size + (10 if h[5] & 0x10 else 0)


def mp3_audio(data):
    """An MP3 file's audio as the server splices it as an ad or an intro: no ID3v2 tag, no
    Xing/Info frame, no ID3v1 tag."""
    pos = id3v2_len(data, 0)
    n = mp3_frame_len(data, pos)
    if n and (b"Info" in data[pos:pos + 48] or b"Xing" in data[pos:pos + 48]):
        pos += n
    end = len(data) - 128 if len(data) - pos >= 128 and data[-128:-125] == b"TAG" else len(data)
    return data[pos:end]


def whole_frames_from_start(data, frame_len):
    """A capture that is back-to-back frames from its first byte to its last (an ID3v2 tag may
    stand between two frames: a source's first bytes), but for one last frame cut where the
    capture ended: returns the capture up to that frame. Anything else fails, so nothing is
    left out silently: a cut frame in the middle, or an end that is no beginning of a frame."""
    pos = 0
    while pos < len(data):
        n = id3v2_len(data, pos) or frame_len(data, pos)
        if not n or pos + n > len(data):
            break
        pos += n
    rest = bytes(data[pos:pos + 16])
    cut_frame = frame_len(data, pos) > len(data) - pos
    cut_header = len(data) - pos < 7 and rest[:1] == b"\xff"
    cut_tag = b"ID3".startswith(rest[:3]) and (len(data) - pos < 10 or
                                              id3v2_len(data, pos) > len(data) - pos)
    assert pos == len(data) or cut_frame or cut_header or cut_tag, \
        "frames stop at byte %d of %d (%d bytes left): %r" % (pos, len(data), len(data) - pos,
                                                              rest)
    return data[:pos]


def whole_pages_from_start(data):
    """A capture that is whole Ogg pages from its first byte to its last, but for one last page
    cut where the capture ended (checked as OggCheck does: CRCs, headers before data, no
    packet continued from nowhere): returns (OggCheck, the capture up to that page)."""
    check = OggCheck(data)
    rest = bytes(data[check.complete:check.complete + 4])
    assert b"OggS".startswith(rest), "pages stop at byte %d of %d: %r" % (
        check.complete, len(data), rest)
    return check, data[:check.complete]


def strict_capture(codec, data):
    """What a listener got, without the one frame or page the capture was cut in; fails when
    more than that would have to go (see whole_frames_from_start, whole_pages_from_start)."""
    if codec == "mp3":
        return whole_frames_from_start(data, mp3_frame_len)
    if codec == "aac":
        return whole_frames_from_start(data, adts_frame_len)
    return whole_pages_from_start(data)[1]


def ogg_links(check):
    """The pages of each chain link of an OggCheck, by serial: [{serial: [Page, ...]}]."""
    links, in_bos_run = [], False
    for page in check.pages:
        if page.bos and not in_bos_run:
            links.append({})
        in_bos_run = page.bos
        links[-1].setdefault(page.serial, []).append(page)
    return links


def assert_ogg_links_whole(check, ended_with_eos=0):
    """Every link of a chained capture is a whole stream: its pages numbered one after the
    other (a listener's own start, from the header pages to the first audio page it got, may
    skip), and every link but the last one ends on a packet boundary; the first
    ended_with_eos links (sources that ended cleanly) end with an EOS page."""
    links = ogg_links(check)
    for g, link in enumerate(links):
        start = check.first_audio_page[g]
        for serial, pages in link.items():
            for a, b in zip(pages, pages[1:]):
                assert b.seqno == a.seqno + 1 or b is start, \
                    "link %d, stream %d: page %d follows page %d" % (g, serial, b.seqno, a.seqno)
            if g < len(links) - 1:
                last = pages[-1]
                assert not last.lacing or last.lacing[-1] != 255, \
                    "link %d, stream %d ends in the middle of a packet: %r" % (g, serial, last)
                assert g >= ended_with_eos or last.eos, \
                    "link %d, stream %d ends without its EOS page: %r" % (g, serial, last)


def chain_progress(data):
    """(groups, audio pages of the last group) of a capture; (0, 0) if it does not parse."""
    try:
        chk = OggCheck(data)
    except AssertionError:
        return 0, 0
    first = chk.first_audio_page[-1]
    if first is None:
        return len(chk.groups), 0
    return len(chk.groups), sum(1 for p in chk.pages if p.offset >= first.offset)


def trim_capture(codec, data):
    """What a listener got, without the incomplete end where the capture was cut."""
    if codec == "mp3":
        return whole_frames(data, mp3_frame_len)
    if codec == "aac":
        return whole_frames(data, adts_frame_len)
    return data[:ogg_pages(data)[1]]


# ---------------------------------------------------------------- ICY

def icy_demux(body, metaint):
    """Split a listener stream with ICY metadata every metaint bytes.

    Returns (audio, blocks) where blocks is a list of (audio_offset, text) for every complete
    metadata block (empty blocks as ''). Each block must be NUL padded after its text."""
    audio = bytearray()
    blocks = []
    pos = 0
    n = len(body)
    while pos < n:
        take = min(metaint, n - pos)
        audio += body[pos:pos + take]
        pos += take
        if take < metaint or pos >= n:
            break
        length = body[pos] * 16
        if pos + 1 + length > n:
            break
        raw = bytes(body[pos + 1:pos + 1 + length])
        pos += 1 + length
        text = raw.rstrip(b"\0")
        assert b"\0" not in text, "NUL inside metadata block %r" % raw
        blocks.append((len(audio), text))
    return bytes(audio), blocks


def icy_fields(text):
    """StreamTitle and StreamUrl of a metadata block text (bytes) -> dict of str."""
    out = {}
    s = text.decode("utf-8")
    for key in ("StreamTitle", "StreamUrl"):
        tag = key + "='"
        i = s.find(tag)
        if i < 0:
            continue
        j = s.find("';", i + len(tag))
        # a value may hold "';" itself: the field ends at the last "';" before the next key
        nxt = s.find("';Stream", i + len(tag))
        end = nxt if nxt >= 0 else s.rfind("';")
        assert j >= 0 and end >= 0, "unterminated %s in %r" % (key, s)
        out[key] = s[i + len(tag):end]
    return out


def icy_block(text):
    """An ICY metadata block (length byte + NUL padding) for a source to send inline."""
    raw = text.encode("utf-8") if isinstance(text, str) else text
    blocks = (len(raw) + 15) // 16
    return bytes([blocks]) + raw + b"\0" * (blocks * 16 - len(raw))


def icy_interleave(audio, metaint, meta_at):
    """Build what an ICY source sends: audio with a metadata block every metaint bytes.
    meta_at(index) returns the block for the index-th metadata point (b'\\0' for none)."""
    out = bytearray()
    for i, pos in enumerate(range(0, len(audio), metaint)):
        chunk = audio[pos:pos + metaint]
        out += chunk
        if len(chunk) == metaint:
            out += meta_at(i)
    return bytes(out)


# ---------------------------------------------------------------- processes

def stop_process(p):
    if p is None or p.poll() is not None:
        return
    p.terminate()
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)


ENCODERS = {
    # name: (ffmpeg output args, content type, muxer)
    "vorbis": (["-c:a", "libvorbis", "-q:a", "0"], "audio/ogg", "ogg"),
    "opus": (["-c:a", "libopus", "-b:a", "32k"], "audio/ogg", "ogg"),
    "flac": (["-c:a", "flac", "-ar", "16000"], "audio/ogg", "ogg"),
    "mp3": (["-c:a", "libmp3lame", "-b:a", "64k"], "audio/mpeg", "mp3"),
    "aac": (["-c:a", "aac", "-b:a", "64k"], "audio/aac", "adts"),
    "speex": (["-c:a", "libspeex", "-ar", "16000"], "audio/ogg", "ogg"),
    "theora": (["-c:v", "libtheora", "-g", "10", "-q:v", "3", "-c:a", "libvorbis", "-q:a", "0"],
               "video/ogg", "ogg"),
}
VIDEO_INPUT = ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=10"]


def ffmpeg_source(srv, mount, codec, title=None, freq=440, duration=None, readrate=None):
    """A real-time ffmpeg encoder streaming a sine wave to srv's mount (readrate: that many
    times real time instead, e.g. 1.05 for a source whose clock runs fast)."""
    args, ctype, muxer = ENCODERS[codec]
    url = "icecast://source:%s@%s:%d%s" % (SOURCE_PASSWORD, srv.host, srv.port, mount)
    src = "sine=frequency=%d:sample_rate=44100" % freq
    if duration:
        src += ":duration=%g" % duration
    pace = ["-readrate", "%g" % readrate] if readrate else ["-re"]
    cmd = [FFMPEG, "-hide_banner", "-nostdin", "-v", "error"] + pace + ["-f", "lavfi", "-i", src]
    if codec == "theora":
        cmd += ["-re"] + VIDEO_INPUT
    cmd += args
    if title is not None:
        cmd += ["-metadata", "title=" + title]
    cmd += ["-content_type", ctype, "-ice_name", "Format " + codec, "-f", muxer, url]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)


def encode_file(path, codec, seconds, title=None, freq=440):
    """Encode a short sine wave to a file (for ezstream and the bad-input tests)."""
    args, _, muxer = ENCODERS[codec]
    cmd = [FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
           "sine=frequency=%d:sample_rate=44100:duration=%g" % (freq, seconds)] + args
    if title is not None:
        cmd += ["-metadata", "title=" + title]
    cmd += ["-f", muxer, path]
    subprocess.run(cmd, check=True, timeout=60, capture_output=True)
    os.chmod(path, 0o644)
    with open(path, "rb") as f:
        return f.read()


EZSTREAM_CONFIG = """<?xml version="1.0" encoding="UTF-8"?>
<ezstream>
  <servers>
    <server>
      <protocol>HTTP</protocol>
      <hostname>{host}</hostname>
      <port>{port}</port>
      <user>source</user>
      <password>{password}</password>
      <tls>None</tls>
      <reconnect_attempts>1</reconnect_attempts>
    </server>
  </servers>
  <streams>
    <stream>
      <mountpoint>{mount}</mountpoint>
      <format>{fmt}</format>
      <stream_name>{name}</stream_name>
    </stream>
  </streams>
  <intakes>
    <intake>
      <type>playlist</type>
      <filename>{playlist}</filename>
      <stream_once>No</stream_once>
    </intake>
  </intakes>
</ezstream>
"""


def ezstream_source(srv, mount, files, workdir, fmt="Ogg", name="Chain"):
    """Starts ezstream looping a playlist of `files` to `mount` (fmt: Ogg or MP3)."""
    playlist = os.path.join(workdir, "ezstream.m3u")
    with open(playlist, "w") as f:
        f.write("\n".join(files) + "\n")
    cfg = os.path.join(workdir, "ezstream.xml")
    with open(cfg, "w") as f:
        f.write(EZSTREAM_CONFIG.format(host=srv.host, port=srv.port, password=SOURCE_PASSWORD,
                                       mount=mount, fmt=fmt, name=name, playlist=playlist))
    os.chmod(cfg, 0o600)        # ezstream refuses a config others can read (it has a password)
    return subprocess.Popen([EZSTREAM, "-c", cfg], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


# libgcrypt's notice when it cannot lock memory (in a container without CAP_IPC_LOCK, e.g.
# systemd-nspawn or Docker); it says nothing about the decoding
NOT_A_DECODE_ERROR = ("Warning: using insecure memory!",)


def _decode_complaints(text):
    return "\n".join(l for l in text.strip().splitlines() if l.strip() not in NOT_A_DECODE_ERROR)


def ffmpeg_decode_errors(path, fmt=None):
    """Decode a file with ffmpeg; return its error output ('' = clean)."""
    cmd = [FFMPEG, "-hide_banner", "-nostdin", "-v", "error"]
    if fmt:
        cmd += ["-f", fmt]
    cmd += ["-i", path, "-f", "null", "-"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    out = _decode_complaints(p.stderr)
    return out if p.returncode == 0 else "exit %d: %s" % (p.returncode, out)


def ffmpeg_stream_decode_errors(data, fmt=None):
    """Decode bytes fed to ffmpeg through a pipe, as a player reading a stream does; return its
    error output ('' = clean). For chained Ogg: on a seekable file ffmpeg 5 probes the duration
    from the last pages, and when they belong to a later link than the headers it has read, it
    reports "failed to create or replace stream" (it does for two ffmpeg-made files joined with
    cat as well); over a pipe there is no such probe."""
    cmd = [FFMPEG, "-hide_banner", "-nostdin", "-v", "error"]
    if fmt:
        cmd += ["-f", fmt]
    cmd += ["-i", "pipe:0", "-f", "null", "-"]
    p = subprocess.run(cmd, input=data, capture_output=True, timeout=60)
    out = _decode_complaints(p.stderr.decode("utf-8", "replace"))
    return out if p.returncode == 0 else "exit %d: %s" % (p.returncode, out)


def oggdec_errors(path):
    """Decode an Ogg Vorbis file with oggdec; return its complaints ('' = clean)."""
    p = subprocess.run([OGGDEC, "-Q", "-o", "/dev/null", path], capture_output=True,
                       text=True, timeout=60)
    out = _decode_complaints(p.stdout + p.stderr)
    return out if p.returncode == 0 else "exit %d: %s" % (p.returncode, out)


def save(workdir, name, data):
    path = os.path.join(workdir, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---------------------------------------------------------------- mounts and stats

def wait_mount(srv, mount, proc=None, timeout=15):
    """Poll /admin/listmounts until the mount is live (a source logged in)."""
    def up():
        if proc is not None:
            assert proc.poll() is None, "source process exited with %s: %s" % (
                proc.returncode, proc.stderr.read() if proc.stderr else "")
        r = adminlib.admin(srv, "/admin/listmounts")
        return mount in [s.get("mount") for s in r.xml().findall("source")]
    wirelib.wait_until(up, timeout, "mount %s to come up" % mount, interval=0.05)


def stats_source(srv, mount):
    """The <source> element of a mount in /admin/stats (the XML must parse)."""
    r = adminlib.admin(srv, "/admin/stats")
    assert r.status == 200
    doc = ET.fromstring(r.body)
    for s in doc.findall("source"):
        if s.get("mount") == mount:
            return s
    return None


def json_source(srv, mount):
    """The status-json.xsl source object of a mount (the JSON must parse)."""
    r = adminlib.request(srv, "/status-json.xsl")
    assert r.status == 200, r.status
    doc = json.loads(r.body.decode("utf-8"))
    sources = doc["icestats"].get("source", [])
    if isinstance(sources, dict):
        sources = [sources]
    for s in sources:
        if s.get("listenurl", "").endswith(mount):
            return s
    return None


def wait_title(srv, mount, title, timeout=10):
    """Wait until /admin/stats shows the title, then check status-json agrees."""
    def shown():
        s = stats_source(srv, mount)
        return s is not None and s.findtext("title") == title
    wirelib.wait_until(shown, timeout, lambda: "title %r on %s (stats: %r)" % (
        title, mount, (stats_source(srv, mount) or ET.Element("x")).findtext("title")))
    s = json_source(srv, mount)
    assert s is not None and s.get("title") == title, s


def opus_titles_xml(mount):
    """A <mount> block that lets an Ogg Opus mount take admin title updates (refused without
    it, as Icecast 2.4 refuses them: test_opus_title_updates.py)."""
    return ('<mount type="normal"><mount-name>%s</mount-name>'
            '<opus-title-updates>1</opus-title-updates></mount>' % mount)


def set_metadata(srv, mount, **params):
    """GET /admin/metadata with mode=updinfo and the given parameters (str or bytes values)."""
    q = [("mount", mount), ("mode", "updinfo")] + list(params.items())
    return adminlib.admin(srv, "/admin/metadata?" + urllib.parse.urlencode(q))
