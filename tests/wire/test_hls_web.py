# SPDX-License-Identifier: GPL-2.0-or-later
"""The public page's player and HLS, in a real headless Chromium: a mount with HLS gets an
"HLS" toggle by its player (web/status.xsl, web/app.js); pressed, the player plays the
mount's low-latency HLS through the vendored hls.js (web/vendor), served by the server
itself; released, it goes back to the direct stream. Without JavaScript the toggle is not
shown. Needs chromium, chromedriver, python3-selenium and ffmpeg; skipped without them.
Screenshots at 1280 px and 360 px go to $WEBUI_SHOTS (as in test_webui_mobile.py).
"""


import pytest

import formatlib as fl
import hlscheck
import webuilib
import wirelib
from test_hls import playlist
from test_webui import ADMIN, WEB, browsers  # noqa: F401 (browsers: the fixture)
from test_webui_mobile import DESKTOP, PHONE, check_fits, emulate

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]


@pytest.fixture
def web_source(server):
    """Factory: (mount, codec) -> a server with our web/ and that mount fed by a real-time
    ffmpeg (stopped at teardown)."""
    procs = []

    def start(mount, codec):
        srv = server(webroot=WEB, adminroot=ADMIN,
                     extra_xml=fl.opus_titles_xml(mount) if codec == "opus" else "")
        procs.append(fl.ffmpeg_source(srv, mount, codec))
        fl.wait_mount(srv, mount, procs[-1])
        return srv
    yield start
    for p in procs:
        fl.stop_process(p)


@pytest.fixture
def live(web_source):
    """A server with our web/ and an MP3 mount fed by a real-time ffmpeg."""
    return web_source("/live.mp3", "mp3")


AUDIO = "li[data-mount='/live.mp3'] .player audio"
TOGGLE = "li[data-mount='/live.mp3'] .player .hls-toggle"


def played(b):
    return b.js_run("return document.querySelector(arguments[0]).currentTime", AUDIO)


def test_hls_toggle_plays_low_latency_hls_through_hls_js(live, browsers):
    srv = live
    assert fl.json_source(srv, "/live.mp3").get("hls_url", "").endswith("/live.mp3/hls.m3u8")
    b = browsers(js=True)
    emulate(b, *DESKTOP)
    b.get(srv.url("/status.xsl"))
    toggle = b.one(TOGGLE)
    assert toggle.is_displayed() and toggle.text == "HLS"
    assert toggle.get_attribute("aria-pressed") == "false"
    assert toggle.get_attribute("data-hls") == "/live.mp3/hls.m3u8"
    b.js_run("document.querySelector(arguments[0]).muted = true", AUDIO)
    toggle.click()
    b.wait(lambda: b.js_run("return document.querySelector(arguments[0]).getAttribute('data-hls-engine')",
                            AUDIO) == "hls.js", 15, "hls.js to take the player")
    assert b.js_run("return typeof window.Hls") == "function"           # loaded on demand
    assert b.js_run("return document.querySelector(arguments[0]).currentSrc", AUDIO).startswith("blob:")
    b.wait(lambda: played(b) > 0.2, 30, "the HLS player to start")
    t0 = played(b)
    b.wait(lambda: played(b) >= t0 + 3, 15, "the HLS player to advance 3 s")
    state = b.js_run("""var a = document.querySelector(arguments[0]), h = a.__hls,
        d = h.levels[0] && h.levels[0].details;
        return {ll: h.lowLatencyMode, parts: d ? d.partList && d.partList.length : -1,
                url: h.url, error: a.error && a.error.code, paused: a.paused};""", AUDIO)
    assert state["ll"] is True and state["parts"] > 0, state     # LL-HLS: parts in use
    assert "/live.mp3/hls.m3u8" in state["url"] and state["error"] is None and not state["paused"], state
    assert fl.json_source(srv, "/live.mp3")["listeners"] >= 1               # an HLS session
    assert b.one(TOGGLE).get_attribute("aria-pressed") == "true"
    assert check_fits(b, "hls-playing", DESKTOP[0]) == ""

    # released: the direct stream again, hls.js gone
    b.one(TOGGLE).click()
    b.wait(lambda: b.js_run("return document.querySelector(arguments[0]).currentSrc", AUDIO)
           == srv.url("/live.mp3"), 10, "the direct stream back")
    assert b.js_run("var a = document.querySelector(arguments[0]);"
                    " return [a.hasAttribute('data-hls-engine'), !!a.__hls]", AUDIO) == [False, False]
    b.wait(lambda: played(b) > 0.2, 20, "the direct stream to play")
    assert not [e for e in b.console_errors() if "hls" in e.lower()], b.console_errors()


def test_hls_toggle_fits_a_narrow_screen_and_is_not_shown_without_js(live, browsers):
    srv = live
    b = browsers(js=True)
    emulate(b, *PHONE)
    b.get(srv.url("/status.xsl"))
    toggle, audio = b.one(TOGGLE), b.one(AUDIO)
    card = b.one("li[data-mount='/live.mp3']")
    assert toggle.is_displayed()
    t, a, c = toggle.rect, audio.rect, card.rect
    assert a["width"] >= 180, a                                        # the player stays usable
    assert t["x"] + t["width"] <= c["x"] + c["width"] and abs(t["y"] - a["y"]) < a["height"], (t, a, c)
    assert check_fits(b, "hls", PHONE[0]) == ""

    nojs = browsers(js=False)
    nojs.get(srv.url("/status.xsl"))
    assert nojs.find(TOGGLE) and not nojs.one(TOGGLE).is_displayed()
    assert nojs.one(AUDIO).is_displayed()


def test_vendored_hls_js_is_served_with_its_licence(live):
    import http.client
    c = http.client.HTTPConnection(live.host, live.port, timeout=10)
    try:
        for path, needle in (("/vendor/hls.light.min.js", b"lowLatencyMode"),
                             ("/vendor/hls.js.LICENSE", b"Apache License")):
            c.request("GET", path)
            r = c.getresponse()
            body = r.read()
            assert r.status == 200 and needle in body, (path, r.status)
    finally:
        c.close()


def before_scripts(b, js):
    """Runs js in every page before its own scripts (to stand for another browser)."""
    b.cdp("Page.addScriptToEvaluateOnNewDocument", {"source": js})


def test_hls_is_picked_when_the_browser_cannot_play_the_mount_format(live, browsers):
    srv = live
    b = browsers(js=True)
    # a browser without MP3: canPlayType says "" for audio/mpeg
    before_scripts(b, """(function () {
        var own = HTMLMediaElement.prototype.canPlayType;
        HTMLMediaElement.prototype.canPlayType = function (t) {
            return /^audio\\/mpeg/i.test(t) ? "" : own.call(this, t); };
    })();""")
    b.get(srv.url("/status.xsl"))
    b.wait(lambda: b.one(TOGGLE).get_attribute("aria-pressed") == "true", 10, "HLS picked")
    assert not b.js_run("return document.querySelector(arguments[0]).hasAttribute('src')", AUDIO)
    assert b.js_run("return typeof window.Hls") == "undefined"  # nothing loaded before play
    assert fl.json_source(srv, "/live.mp3")["listeners"] == 0    # no HLS session either
    b.js_run("var a = document.querySelector(arguments[0]); a.muted = true;"
             " a.play().catch(function () {});", AUDIO)
    b.wait(lambda: b.js_run("return document.querySelector(arguments[0]).getAttribute('data-hls-engine')",
                            AUDIO) == "hls.js", 15, "hls.js to take the player")
    b.wait(lambda: played(b) > 1.0, 30, "the HLS player to advance")
    assert fl.json_source(srv, "/live.mp3")["listeners"] >= 1


def test_hls_plays_natively_where_the_browser_has_no_media_source(live, browsers):
    srv = live
    b = browsers(js=True)
    # a browser that plays HLS itself and has no Media Source Extensions (an older iPhone)
    before_scripts(b, """(function () {
        delete window.MediaSource; delete window.ManagedMediaSource; delete window.WebKitMediaSource;
        Object.defineProperty(window, "MediaSource", {value: undefined});
        HTMLMediaElement.prototype.canPlayType = function (t) {
            return /mpegurl|audio\\/mpeg/i.test(t) ? "maybe" : ""; };
    })();""")
    b.get(srv.url("/status.xsl"))
    b.js_run("document.querySelector(arguments[0]).muted = true", AUDIO)
    b.one(TOGGLE).click()
    b.wait(lambda: b.js_run("return document.querySelector(arguments[0]).getAttribute('data-hls-engine')",
                            AUDIO) == "native", 15, "the browser's own HLS to take the player")
    assert b.js_run("return typeof window.Hls") == "undefined"          # hls.js not loaded
    assert b.js_run("return document.querySelector(arguments[0]).src", AUDIO) \
        == srv.url("/live.mp3/hls.m3u8")
    # (Chromium's own HLS is not Safari's: whether it plays is not this page's to test)


def play_hls(srv, browsers, mount):
    """A browser playing mount's HLS (muted) from the page's toggle, once its time runs:
    (browser, the player's selector)."""
    audio = "li[data-mount='%s'] .player audio" % mount
    b = browsers(js=True)
    emulate(b, *DESKTOP)
    b.get(srv.url("/status.xsl"))
    b.js_run("document.querySelector(arguments[0]).muted = true", audio)
    b.one("li[data-mount='%s'] .player .hls-toggle" % mount).click()
    b.wait(lambda: b.js_run("return document.querySelector(arguments[0]).getAttribute('data-hls-engine')",
                            audio) == "hls.js", 15, "hls.js to take the player")
    b.wait(lambda: b.js_run("return document.querySelector(arguments[0]).currentTime",
                            audio) > 0.2, 30, "the HLS player to start")
    return b, audio


def title_cues(b, audio):
    """The TIT2 cues of the player's metadata text tracks: their titles, in order."""
    return b.js_run("""var a = document.querySelector(arguments[0]), out = [];
        for (var i = 0; i < a.textTracks.length; i++) {
            var t = a.textTracks[i];
            if (t.kind !== 'metadata' || !t.cues) continue;
            for (var j = 0; j < t.cues.length; j++) {
                var v = t.cues[j].value;
                if (v && v.key === 'TIT2') out.push(v.data);
            }
        }
        return out;""", audio)


def hls_js_raises_a_title_cue(srv, browsers, mount):
    """Plays mount's HLS through the page's toggle, sets a title on the mount, and waits for
    hls.js to add it as a TIT2 cue of the player's metadata text track."""
    b, audio = play_hls(srv, browsers, mount)
    title = "Cue Test – Ünïcode"
    assert fl.set_metadata(srv, mount, song=title).status == 200
    b.wait(lambda: title in title_cues(b, audio), 30, "the title cue")


def test_hls_js_raises_the_title_as_an_id3_cue(live, browsers):
    """A title set on the mount travels in the ID3 tag of the next HLS part (TIT2): hls.js
    reads it and adds it as a cue of the player's metadata text track."""
    hls_js_raises_a_title_cue(live, browsers, "/live.mp3")


OPUS_AUDIO = "li[data-mount='/live.opus'] .player audio"


def test_hls_js_plays_an_opus_mount_in_fragmented_mp4(web_source, browsers):
    """hls.js takes the Opus mount's fMP4 HLS (init segment, parts) into Chromium's Media
    Source, and the player advances."""
    srv = web_source("/live.opus", "opus")
    wirelib.wait_until(lambda: fl.json_source(srv, "/live.opus").get("hls_url"), 10,
                       "the Opus mount's hls_url (its codec headers)", interval=0.1)
    b, _ = play_hls(srv, browsers, "/live.opus")
    opus_played = "return document.querySelector(arguments[0]).currentTime"
    t0 = b.js_run(opus_played, OPUS_AUDIO)
    b.wait(lambda: b.js_run(opus_played, OPUS_AUDIO) >= t0 + 3, 15, "the player to advance 3 s")
    state = b.js_run("""var a = document.querySelector(arguments[0]), h = a.__hls,
        d = h.levels[0] && h.levels[0].details;
        return {parts: d ? d.partList && d.partList.length : -1, codec: h.levels[0].audioCodec,
                error: a.error && a.error.code, paused: a.paused};""", OPUS_AUDIO)
    assert state["parts"] > 0 and state["error"] is None and not state["paused"], state
    assert "opus" in (state["codec"] or "").lower(), state
    assert not [e for e in b.console_errors() if "hls" in e.lower()], b.console_errors()


def test_hls_js_reads_an_opus_title_from_its_emsg_box(web_source, browsers):
    """An Opus mount's title travels in an emsg box (ID3 scheme) in front of the next
    fragment: hls.js in Chromium reads it and hands it to the page as an ID3 metadata sample
    (its FRAG_PARSING_METADATA event) holding the TIT2 frame."""
    srv = web_source("/live.opus", "opus")
    wirelib.wait_until(lambda: fl.json_source(srv, "/live.opus").get("hls_url"), 10,
                       "the Opus mount's hls_url (its codec headers)", interval=0.1)
    b, audio = play_hls(srv, browsers, "/live.opus")
    b.js_run("""var h = document.querySelector(arguments[0]).__hls; window.emsgTitles = [];
        h.on(window.Hls.Events.FRAG_PARSING_METADATA, function (e, d) {
            d.samples.forEach(function (s) {
                if (/emsg/.test(s.type)) window.emsgTitles.push(new TextDecoder().decode(s.data));
            });
        });""", audio)
    title = "Cue Test – Ünïcode"
    assert fl.set_metadata(srv, "/live.opus", song=title).status == 200
    tit2 = "TIT2\x00\x00\x00%s\x00\x00\x03%s" % (chr(1 + len(title.encode())), title)
    b.wait(lambda: any(t.endswith(tit2) for t in b.js_run("return window.emsgTitles")), 30,
           "hls.js to read the title's emsg box")


def test_hls_js_raises_an_opus_title_as_a_cue_that_stays(web_source, browsers):
    """hls.js makes its metadata track (a <track> element, whose cues Chromium clears when it
    loads the element's empty source) when the first metadata comes: every Opus fragment
    carries its time in an emsg ID3 tag, so the track is there before a title comes, and the
    title's cue stays in it, as a packed-audio part's does."""
    srv = web_source("/live.opus", "opus")
    wirelib.wait_until(lambda: fl.json_source(srv, "/live.opus").get("hls_url"), 10,
                       "the Opus mount's hls_url (its codec headers)", interval=0.1)
    hls_js_raises_a_title_cue(srv, browsers, "/live.opus")


def test_the_page_plays_an_mp3_mount_low_latency_hls_without_a_stall(live, browsers):
    """hls.js appends an MP3 mount's parts to an audio/mpeg SourceBuffer (Chromium), and left
    to itself puts every part after a segment's first at a fixed offset: the player stalls at
    each segment and skips to the next. The page's player keeps each part after the one
    before: over two segment boundaries it plays on, its buffer in one piece, and hls.js
    neither stalls nor jumps a hole."""
    b, audio = play_hls(live, browsers, "/live.mp3")
    b.js_run("""var a = document.querySelector(arguments[0]), h = a.__hls;
        window.hlsTrouble = [];
        h.on(window.Hls.Events.ERROR, function (e, d) {
            window.hlsTrouble.push(d.details + ' at ' + a.currentTime.toFixed(2)); });
        window.hlsFrom = [a.currentTime, Date.now()];""", audio)
    target = hlscheck.parse(playlist(live, "/live.mp3"))["target"]
    state = """var a = document.querySelector(arguments[0]), r = [];
        for (var i = 0; i < a.buffered.length; i++) r.push([a.buffered.start(i), a.buffered.end(i)]);
        return {played: a.currentTime - window.hlsFrom[0], wall: (Date.now() - window.hlsFrom[1]) / 1000,
                buffered: r, at: a.currentTime, trouble: window.hlsTrouble};"""

    def two_segments_played():
        s = b.js_run(state, audio)
        return s if s["wall"] >= 2 * target + 1 else None
    s = b.wait(two_segments_played, 2 * target + 15, "two segments of play")
    around = [r for r in s["buffered"] if r[0] <= s["at"] <= r[1] + 0.1]
    assert not s["trouble"], s
    assert around and s["at"] - around[0][0] >= 2 * target - 1, s     # one piece, no holes
    assert s["played"] >= 0.8 * s["wall"], s
