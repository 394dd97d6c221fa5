# SPDX-License-Identifier: GPL-2.0-or-later
"""The kinds x rules matrix (tests/README.md), the ad break's cells for the TLS listener and the
listeners of a relayed mount (always on and on demand): each hears the ads the ad server chose
for it spliced into its stream, and each is counted as an advertiser counts it.

Covers: a listener over HTTPS in a break gets the creative's frames whole in its capture,
which ffmpeg decodes without an error, its ad request names it, and its impression, quartiles
and complete fire once; a listener of a mount relayed from an origin (always on, and on
demand, whose relay connects for that listener) in a break asked for on the edge gets the
same; the origin's source setting the break's title (ADBREAK_LENGTH_<ms>) starts a break on
the edge, whose relay reads the title from the origin's inline ICY metadata.
"""

import pytest

import adminlib
import formatlib as fl
import matrixlib as mx
import wirelib
from test_ads import MOUNT, adbreak, ads, ads_xml, audio_of, decodes, offer, wait_spliced  # noqa: F401
from test_ads_tracking import EVENTS
from test_fallback import mount_xml

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks


def counted_once(ads, n=1, ad_id="a1"):
    """Every tracking event of the ad fired n times, none more (once the complete came)."""
    wirelib.wait_until(lambda: ads.events(ad_id).get("complete") == n, 20,
                       lambda: "%d completes: %r" % (n, ads.events(ad_id)))
    assert ads.events(ad_id) == {e: n for e in EVENTS}


def test_a_tls_listener_hears_its_ads_spliced_and_counted(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=3)
    xml = mount_xml(MOUNT).replace("</mount>", ads_xml(ads) + "</mount>")
    srv = server(start=False, tls_mode="1", extra_xml=xml)
    srv.cfg["ssl_certificate"] = mx.make_cert(srv.dir)
    srv.start()
    src = fl.ffmpeg_source(srv, MOUNT, "mp3", freq=440)
    fl.wait_mount(srv, MOUNT, src)
    lis = mx.listen(srv, MOUNT, want=16384, tls=True)
    assert adbreak(srv, 8).status == 200
    at = wait_spliced(lis, audio_of(data))
    assert at > 0, "the stream played before the break"
    decodes(tmp_path, lis.snapshot(), "mp3", "tls-break.mp3")
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "8" and vast.params["ip"] == "127.0.0.1"
    counted_once(ads)
    lis.wait_bytes(lis.received + 16384, 10)                 # and the live stream goes on
    lis.close()
    fl.stop_process(src)


def relay_station(server, ads, on_demand, signal_xml=""):
    """An origin with a live MP3 source on /up.mp3, and an edge relaying it to MOUNT, which
    has the fake ad server."""
    origin = server()
    up = fl.ffmpeg_source(origin, "/up.mp3", "mp3", freq=440)
    fl.wait_mount(origin, "/up.mp3", up)
    xml = (mount_xml(MOUNT).replace("</mount>", ads_xml(ads, extra=signal_xml) + "</mount>") +
           mx.relay_xml(origin, "/up.mp3", MOUNT, on_demand=on_demand))
    edge = server(extra_xml=xml)
    if not on_demand:
        fl.wait_mount(edge, MOUNT)
    return origin, up, edge


@pytest.mark.parametrize("way", ["always", "on_demand"])
def test_a_relay_listener_hears_its_ads_spliced_and_counted(server, ads, tmp_path, way):
    data = offer(ads, tmp_path, seconds=3)
    origin, up, edge = relay_station(server, ads, way == "on_demand")
    lis = mx.listen(edge, MOUNT, want=16384)
    assert adbreak(edge, 8).status == 200
    at = wait_spliced(lis, audio_of(data))
    assert at > 0, "the stream played before the break"
    decodes(tmp_path, lis.snapshot(), "mp3", "relay-break.mp3")
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "8" and vast.params["m"] == MOUNT
    counted_once(ads)
    lis.wait_bytes(lis.received + 16384, 10)
    # the origin's own listeners are not the edge's: its mount has no ads
    assert adbreak(origin, 8, mount="/up.mp3").status == 400
    lis.close()
    fl.stop_process(up)


def test_the_origins_break_title_starts_a_break_on_the_relaying_edge(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=3)
    origin, up, edge = relay_station(server, ads, False)
    lis = mx.listen(edge, MOUNT, want=16384)
    assert fl.set_metadata(origin, "/up.mp3", song="ADBREAK_LENGTH_9000").status == 200
    wait_spliced(lis, audio_of(data))
    [vast] = ads.of("/vast")
    assert vast.params["d"] == "9"
    counted_once(ads)
    assert "ADBREAK_LENGTH_9000" in adminlib.admin(edge, "/admin/stats").text
    lis.close()
    fl.stop_process(up)
