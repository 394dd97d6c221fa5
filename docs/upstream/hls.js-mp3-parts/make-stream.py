#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Makes a small static LL-HLS stream of packed MP3 audio (RFC 8216 section 3.4) in DIR:
ffmpeg encodes a tone, this cuts it on frame boundaries into parts of 19 MPEG-1 Layer III
frames (0.496 s at 44.1 kHz) and segments of PARTS parts, each segment and each part behind
an ID3v2.4 tag whose PRIV frame com.apple.streaming.transportStreamTimestamp gives the 90 kHz
time of its first sample, and writes index.m3u8 (EXT-X-PART for every part, EXT-X-ENDLIST).
The same bytes are reachable as a whole segment (<n>.mp3) or as its parts (<n>.<k>.mp3).

    python3 make-stream.py DIR [--hls hls.light.min.js] [--segments N] [--parts N] [--start S]

Needs ffmpeg with libmp3lame. index.html (next to this script) is copied into DIR; --hls
copies an hls.js build there too, and beside it hls.fixed.min.js, the same build with the
proposed fix (an audio/mpeg append is not given the fragmented MP4 timestampOffset).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

RATE = 44100
SAMPLES = 1152                  # per MPEG-1 Layer III frame
PART_FRAMES = 19                # 0.496 s, the part target 0.5 s
BITRATES = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)  # kbit/s
RATES = (44100, 48000, 32000)


def encode(seconds):
    """A tone of the given length as raw MP3 frames (no ID3, no Xing/Info frame)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "tone.mp3")
        subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y",
                        "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=%d" % RATE,
                        "-t", "%.3f" % seconds, "-ac", "1", "-c:a", "libmp3lame", "-b:a", "64k",
                        "-write_xing", "0", "-id3v2_version", "0", "-f", "mp3", out],
                       check=True)
        with open(out, "rb") as f:
            return f.read()


def frames(data):
    """The MPEG-1 Layer III frames of data, as a list of bytes."""
    out, i = [], 0
    while i + 4 <= len(data):
        h = int.from_bytes(data[i:i + 4], "big")
        if h >> 21 != 0x7FF or (h >> 19) & 3 != 3 or (h >> 17) & 3 != 1:
            sys.exit("make-stream: no MPEG-1 Layer III frame at byte %d" % i)
        br, sr, pad = BITRATES[(h >> 12) & 15], RATES[(h >> 10) & 3], (h >> 9) & 1
        if sr != RATE or not br:
            sys.exit("make-stream: unexpected frame header at byte %d" % i)
        n = 144000 * br // sr + pad
        out.append(data[i:i + n])
        i += n
    return out


def syncsafe(n):
    return bytes(((n >> 21) & 127, (n >> 14) & 127, (n >> 7) & 127, n & 127))


def id3_timestamp(pts):
    """An ID3v2.4 tag with the PRIV transport stream timestamp pts (90 kHz, 33 bits)."""
    body = (b"com.apple.streaming.transportStreamTimestamp\0"
            + (pts & (2**33 - 1)).to_bytes(8, "big"))
    frame = b"PRIV" + syncsafe(len(body)) + b"\0\0" + body
    return b"ID3\x04\x00\x00" + syncsafe(len(frame)) + frame


# The else branch of BufferController.onBufferAppending in a minified build (1.7.4's; by the
# source, 1.6.6 on): the append's offset, when defined and finite, made the SourceBuffer's
# timestampOffset (tolerance 1e-6). Groups, whatever names the minifier gave: 1 the offset,
# 2 isFinite, 3 the controller, 4 the SourceBuffer, 5 the type.
MINIFIED_OFFSET = re.compile(r"void 0!==([\w$]+)&&([\w$]+)\(\1\)&&([\w$]+)\.updateTimestampOffset"
                             r"\(([\w$]+),\1,1e-6,([\w$]+),")


def fixed(js):
    """js (a minified hls.js) with the proposed fix, or None where the code is not found."""
    fix = (r'void 0!==\1&&\2(\1)&&!("audio"===\5&&"audio/mpeg"===(\3.tracks.audio&&'
           r'\3.tracks.audio.container))&&\3.updateTimestampOffset(\4,\1,1e-6,\5,')
    out, n = MINIFIED_OFFSET.subn(fix, js)
    return out if n == 1 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--hls", help="an hls.js build (hls.light.min.js) to copy, fixed and not")
    ap.add_argument("--segments", type=int, default=12)
    ap.add_argument("--parts", type=int, default=4, help="parts per segment")
    ap.add_argument("--start", type=float, default=10.0,
                    help="the first sample's ID3 timestamp, in seconds")
    a = ap.parse_args()

    per_seg = a.parts * PART_FRAMES
    need = a.segments * per_seg
    fr = frames(encode((need + 4) * SAMPLES / RATE))
    if len(fr) < need:
        sys.exit("make-stream: ffmpeg gave %d frames, %d needed" % (len(fr), need))
    os.makedirs(a.dir, exist_ok=True)
    part_s = PART_FRAMES * SAMPLES / RATE
    lines = ["#EXTM3U", "#EXT-X-VERSION:6",
             "#EXT-X-TARGETDURATION:%d" % -(-per_seg * SAMPLES // RATE),
             "#EXT-X-PART-INF:PART-TARGET=0.5", "#EXT-X-MEDIA-SEQUENCE:0",
             "#EXT-X-INDEPENDENT-SEGMENTS"]
    start = round(a.start * 90000)
    for s in range(a.segments):
        seg = b""
        for k in range(a.parts):
            first = s * per_seg + k * PART_FRAMES
            pts = start + first * SAMPLES * 90000 // RATE
            audio = b"".join(fr[first:first + PART_FRAMES])
            with open(os.path.join(a.dir, "%d.%d.mp3" % (s, k)), "wb") as f:
                f.write(id3_timestamp(pts) + audio)
            seg += audio
            lines.append('#EXT-X-PART:DURATION=%.5f,URI="%d.%d.mp3",INDEPENDENT=YES'
                         % (part_s, s, k))
        pts = start + s * per_seg * SAMPLES * 90000 // RATE
        with open(os.path.join(a.dir, "%d.mp3" % s), "wb") as f:
            f.write(id3_timestamp(pts) + seg)
        lines += ["#EXTINF:%.5f," % (per_seg * SAMPLES / RATE), "%d.mp3" % s]
    lines.append("#EXT-X-ENDLIST")
    with open(os.path.join(a.dir, "index.m3u8"), "w") as f:
        f.write("\n".join(lines) + "\n")
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.copy(os.path.join(here, "index.html"), os.path.join(a.dir, "index.html"))
    if a.hls:
        with open(a.hls, encoding="utf-8") as f:
            js = f.read()
        with open(os.path.join(a.dir, "hls.light.min.js"), "w", encoding="utf-8") as f:
            f.write(js)
        js = fixed(js)
        if js is None:
            sys.exit("make-stream: %s: the code the fix changes is not found" % a.hls)
        with open(os.path.join(a.dir, "hls.fixed.min.js"), "w", encoding="utf-8") as f:
            f.write(js)
    print("%s: %d segments of %d parts (%.3f s each), first timestamp %.3f s"
          % (a.dir, a.segments, a.parts, part_s, a.start))


if __name__ == "__main__":
    main()
