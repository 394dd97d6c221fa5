# SPDX-License-Identifier: GPL-2.0-or-later
"""No gap at a break's start (docs/ADS.md, "Splicing"): a listener over HTTP goes on with the
live stream while its ads are decided, and hears them from the next block boundary once they
come, cut to what is left of the break. The fake ad server answers late (adserver.py .delay),
the listener's socket records when each chunk arrived.

Covers: with an ad server that answers 2 s (Ogg: 3 s) after the break's start, an MP3
listener (with and without ICY metadata) and an Ogg Vorbis one receive the live stream all
along (no wait between two arrivals longer than the write window and the source's pace, as the
listener got it before the break), the live stream's audio goes
on past the signal for about as long as the decision took, then the creative whole (a chain
link for Ogg), and ffmpeg decodes the capture; tracking fires each event once and /metrics
counts one fill; a pod of which only the first ad fits in what is left plays that one, and the
listener rejoins the live stream before the break's end; an ad server that answers after the
break's end, or leaves too little of it for its ad, leaves the listener on the live stream
with no gap, no ad and one no fill; a listener whose ads are still being decided at an upgrade
is carried as a live listener and stays on the live stream (its decision stays behind).
"""

import time

import pytest

import adminlib
import adserver
import formatlib as fl
import wirelib
import test_ads
import test_ads_ogg
import test_ads_upgrade
from test_ads import ads, ads_xml, audio_of, offer  # noqa: F401
from test_fallback import mount_xml

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

MOUNT = "/live.mp3"
DELAY = 2.0             # the ad server answers this late
WINDOW = 0.5            # the default <write-window>
PACE = 0.125            # the test source's pace: a chunk of 1000 bytes every 125 ms
# the longest wait between two arrivals on the live stream: a write window, the source's pace
# between the window's passes, and the scheduling of a shared test machine; waiting for the
# decision would be DELAY
LONGEST = WINDOW + 2 * PACE + 0.25
OGG_DELAY = 3.0         # the ad server answers an Ogg mount's this late (its pages come a second
                        # apart)
RATE = 8000             # bytes a second of the live MP3 (64 kbit/s)
EVENTS = ("impression", "start", "firstQuartile", "midpoint", "thirdQuartile", "complete")


class TimedListener(wirelib.Listener):
    """A listener that records when each chunk arrived: [(monotonic time, bytes so far)]."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.arrivals = []

    def _add(self, chunk):
        super()._add(chunk)
        with self.lock:
            self.arrivals.append((time.monotonic(), self.received))

    def when(self, index):
        """When the byte at index (of the capture) arrived."""
        with self.lock:
            return next(t for t, end in self.arrivals if end > index)

    def longest_wait(self, since, index):
        """The longest time between two arrivals from `since` until the byte at index came."""
        with self.lock:
            times = [t for t, end in self.arrivals if t >= since]
        until = self.when(index)
        times = [since] + [t for t in times if t <= until]
        return max(b - a for a, b in zip(times, times[1:]))


def timed_listener(srv, mount, n, headers=None):
    lis = TimedListener(srv.host, srv.port, mount, headers=headers)
    assert lis.open(timeout=10).status == 200
    lis.wait_bytes(n, 10)
    return lis


def metrics(srv):
    fams = adminlib.parse_prometheus(adminlib.admin(srv, "/metrics").text)
    return {name: fam["samples"][0][2] for name, fam in fams.items()
            if name.startswith("rimecast_ads_")}


def icy_audio(raw, metaint):
    """The audio of a capture with ICY metadata every metaint bytes, and a function from an
    index in it to the index in the capture."""
    audio = bytearray()
    runs = []               # (audio index, raw index) where each run of audio begins
    pos = 0
    while pos < len(raw):
        take = min(metaint, len(raw) - pos)
        runs.append((len(audio), pos))
        audio += raw[pos:pos + take]
        pos += take
        if pos >= len(raw):
            break
        pos += 1 + raw[pos] * 16

    def to_raw(i):
        a, r = max(run for run in runs if run[0] <= i)
        return r + i - a
    return bytes(audio), to_raw


def live_station(server, ads, tmp_path, extra):
    """A mount with the fake ad server and a source of known bytes at real time (64 kbit/s);
    the live stream's audio."""
    live = audio_of(adserver.encode(str(tmp_path / "live.mp3"), 90, freq=440))
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads, extra=extra) + "</mount>")
    srv = server(extra_xml=xml)
    src = srv.source(MOUNT, live, rate=RATE, chunk=1000)
    assert src.connect().status == 200
    src.start()
    return srv, src, live


def capture(lis, metaint):
    """The listener's audio so far, and the function from its indexes to the capture's."""
    raw = lis.snapshot()
    return icy_audio(raw, metaint) if metaint else (raw, lambda i: i)


def capture_of(raw, metaint):
    return icy_audio(raw, metaint)[0] if metaint else raw


# ---------------------------------------------------------------- MP3

@pytest.mark.parametrize("icy", [False, True], ids=["plain", "icy"])
def test_a_listener_hears_the_live_stream_until_its_late_ads_come(server, ads, tmp_path, icy):
    data = offer(ads, tmp_path, seconds=3)
    ad = audio_of(data)
    srv, src, live = live_station(server, ads, tmp_path,
                                  "<request-timeout-ms>4000</request-timeout-ms>")
    lis = timed_listener(srv, MOUNT, 16384, headers={"Icy-MetaData": "1"} if icy else None)
    metaint = int(lis.response.header("icy-metaint")) if icy else 0
    ads.delay = DELAY
    signalled_at = lis.received
    t0 = time.monotonic()
    assert test_ads.adbreak(srv, 10).status == 200

    def spliced():
        got, _ = capture(lis, metaint)
        at = got.find(ad)
        return at + 1 if at >= 0 and len(got) >= at + len(ad) + 16384 else 0
    wirelib.wait_until(spliced, 30, lambda: "the creative in the capture (%d bytes)"
                       % lis.received)
    got, to_raw = capture(lis, metaint)
    at = got.find(ad)
    came = lis.when(to_raw(at))
    assert came - t0 >= DELAY * 0.9, "the ads came before the ad server answered"
    wait = lis.longest_wait(t0, to_raw(at))
    assert wait <= LONGEST, "a gap of %.2f s before the ad (the decision took %.2f s)" % (
        wait, came - t0)
    # the live stream went on past the signal for about as long as the decision took
    sa = len(capture_of(lis.snapshot()[:signalled_at], metaint))   # in the audio
    signalled = live.find(got[sa - 1024:sa])
    before = live.find(got[at - 1024:at])
    assert signalled >= 0 and before >= 0
    assert before - signalled >= (DELAY - WINDOW) * RATE, (before - signalled, DELAY * RATE)
    # then the ad, and the live stream as far on as the ad lasted (to a frame)
    after = live.find(got[at + len(ad):at + len(ad) + 1024])
    assert abs(after - (before + 1024) - len(ad)) <= 2 * 209, (after, before, len(ad))
    test_ads.decodes(tmp_path, got, "mp3", "gap.mp3")
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 15, "complete")
    assert ads.events("a1") == {e: 1 for e in EVENTS}
    m = metrics(srv)
    assert m["rimecast_ads_fills_total"] == 1 and m["rimecast_ads_no_fills_total"] == 0
    lis.close()
    src.close()


def test_of_a_late_pod_only_the_ads_that_fit_what_is_left_of_the_break_play(server, ads,
                                                                            tmp_path):
    """A 7 s break, a pod of two 3 s ads decided 2 s in: the first plays, the second would end
    after the break's end and does not; the listener rejoins the live stream before it."""
    first = audio_of(offer(ads, tmp_path, "first", seconds=3))
    second = audio_of(offer(ads, tmp_path, "second", seconds=3, freq=660))
    srv, src, live = live_station(server, ads, tmp_path,
                                  "<request-timeout-ms>4000</request-timeout-ms>")
    lis = timed_listener(srv, MOUNT, 16384)
    ads.delay = DELAY
    signalled_at = lis.received
    assert test_ads.adbreak(srv, 7).status == 200
    at = test_ads.wait_spliced(lis, first, after=3 * RATE)
    got = lis.snapshot()
    assert got.find(second[:1024]) < 0
    signalled = live.find(got[signalled_at - 1024:signalled_at]) + 1024
    after = live.find(got[at + len(first):at + len(first) + 1024])
    # the break's end: 7 s of live audio after its start (the capture at the signal may be a
    # write window behind it)
    assert after - signalled <= (7 + WINDOW) * RATE, (after - signalled, 7 * RATE)
    test_ads.decodes(tmp_path, got, "mp3", "fit.mp3")
    wirelib.wait_until(lambda: ads.events("first").get("complete") == 1, 15, "complete")
    assert not ads.of("/t/second/")
    srv.wait_log("those that fit are played", 10)
    m = metrics(srv)
    assert m["rimecast_ads_fills_total"] == 1 and m["rimecast_ads_no_fills_total"] == 0
    lis.close()
    src.close()


@pytest.mark.parametrize("case", ["after_the_end", "too_little_left"])
def test_ads_that_come_too_late_leave_the_listener_on_the_live_stream(server, ads, tmp_path,
                                                                      case):
    """The ad server answers after the break's end (a 2 s break, 3 s late), or with less of it
    left than its ad lasts (a 3 s break, a 2 s ad, 2 s late)."""
    seconds, brk, ads.delay = (2, 2, 3.0) if case == "after_the_end" else (2, 3, DELAY)
    data = offer(ads, tmp_path, seconds=seconds)
    srv, src, live = live_station(server, ads, tmp_path,
                                  "<request-timeout-ms>5000</request-timeout-ms>")
    lis = timed_listener(srv, MOUNT, 16384)
    t0 = time.monotonic()
    assert test_ads.adbreak(srv, brk).status == 200
    wirelib.wait_until(lambda: ads.of("/media/"), 15, "the ad server's answer")
    m = wirelib.wait_until(lambda: (lambda m: m if m["rimecast_ads_no_fills_total"] else None)(
        metrics(srv)), 10, "a no fill")
    assert m["rimecast_ads_fills_total"] == 0
    lis.wait_bytes(lis.received + 2 * RATE, 10)
    got = lis.snapshot()
    wait = lis.longest_wait(t0, len(got) - 1)
    assert wait <= LONGEST, "a gap of %.2f s" % wait
    assert got.find(audio_of(data)[:1024]) < 0
    tail = got[len(got) - 64000:]                       # the live stream, byte for byte
    assert live.find(tail[-1024:]) - live.find(tail[:1024]) == len(tail) - 1024
    test_ads.decodes(tmp_path, got, "mp3", "late.mp3")
    srv.wait_log("stays on the live stream", 5)
    assert not ads.of("/t/a1/")
    lis.close()
    src.close()


# ---------------------------------------------------------------- Ogg

def test_an_ogg_listener_hears_the_live_link_until_its_late_ad_link_comes(server, ads,
                                                                          tmp_path):
    data = test_ads_ogg.ogg_offer(ads, tmp_path, "vorbis", seconds=3)
    srv, src = test_ads_ogg.ogg_station(server, ads, "vorbis",
                                        extra="<request-timeout-ms>5000</request-timeout-ms>")
    lis = timed_listener(srv, test_ads_ogg.MOUNT, 6144)
    # the source's pace as the listener gets it: the encoder sends a page when it has one
    # (about a second of a sine wave), the server writes it within a write window
    since, arrived = time.monotonic(), len(lis.arrivals)
    wirelib.wait_until(lambda: len(lis.arrivals) >= arrived + 4, 15, "four pages")
    pace = lis.longest_wait(since, lis.received - 1)
    ads.delay = OGG_DELAY
    signalled_at = lis.received
    t0 = time.monotonic()
    assert test_ads_ogg.adbreak(srv, 10).status == 200
    at = test_ads_ogg.wait_pages(lis, data)
    came = lis.when(at)
    assert came - t0 >= OGG_DELAY * 0.9, "the ad came before the ad server answered"
    wait = lis.longest_wait(t0, at)
    assert wait <= pace + WINDOW + 0.25, (
        "a gap of %.2f s before the ad (the decision took %.2f s; the source's pace %.2f s)"
        % (wait, came - t0, pace))
    body = fl.strict_capture("vorbis", lis.snapshot())
    pages = [p for p in fl.ogg_pages(body[:at])[0] if 0 <= p.granule < 2 ** 63]
    had = [p for p in pages if p.offset + len(p.raw) <= signalled_at]
    gone = (pages[-1].granule - had[-1].granule) / 44100
    assert gone >= OGG_DELAY - pace - WINDOW, "%.2f s of the live link after the signal" % gone
    check, got = test_ads_ogg.links(body)
    live = test_ads_ogg.serial_of(body)
    assert [s for s, _, _ in got[:3]] == [[live], [test_ads_ogg.serial_of(data)],
                                          [got[2][0][0]]]
    errors = fl.ffmpeg_stream_decode_errors(body)
    assert errors == "", errors
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 15, "complete")
    assert ads.events("a1") == {e: 1 for e in EVENTS}
    lis.close()
    fl.stop_process(src)


# ---------------------------------------------------------------- upgrade

def test_a_listener_whose_ads_are_being_decided_at_an_upgrade_stays_live(server, ads,
                                                                         tmp_path):
    data = offer(ads, tmp_path, seconds=2)
    srv, src = test_ads.station(server, ads,
                                extra="<request-timeout-ms>8000</request-timeout-ms>")
    lis = timed_listener(srv, MOUNT, 16384)
    ads.delay = 4.0
    assert test_ads.adbreak(srv, 20).status == 200
    wirelib.wait_until(lambda: ads.of("/vast"), 10, "the ad request")
    was = lis.received
    test_ads_upgrade.upgrade_by_command(srv)
    lis.wait_bytes(was + 4 * RATE, 15)                  # the live stream goes on
    wirelib.wait_until(lambda: time.monotonic() >= ads.of("/vast")[0].time + ads.delay + 1, 10,
                       "the ad server's answer")
    lis.wait_bytes(lis.received + 2 * RATE, 10)
    assert not lis.closed
    body = lis.snapshot()
    assert body.find(audio_of(data)[:1024]) < 0 and not ads.of("/t/a1/")
    test_ads.decodes(tmp_path, body, "mp3", "upgraded.mp3")
    m = metrics(srv)                                    # the new process's: no break of its own
    assert m["rimecast_ads_fills_total"] == 0 and m["rimecast_ads_requests_total"] == 0
    lis.close()
    fl.stop_process(src)
