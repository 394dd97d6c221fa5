# SPDX-License-Identifier: GPL-2.0-or-later
"""Counting ads as an advertiser counts them: the server fires each ad's VAST tracking URLs
by the bytes of the ad it delivered to each listener (docs/ADS.md, "Counting"), and counts
them in /metrics.

Covers: N listeners in a break give N impressions, starts, quartiles and completes (and the
creative is fetched once for all of them); a listener that leaves halfway through an ad
gives impression, start, first quartile and midpoint only; a tracking URL that fails is
tried again until it answers; /metrics counts requests, fills, impressions, completes and
errors, over the server and per mount.
"""

import pytest

import adminlib
import formatlib as fl
import wirelib
from test_ads import adbreak, ads, audio_of, listen, offer, station, wait_spliced  # noqa: F401

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks

MOUNT = "/live.mp3"
EVENTS = ("impression", "start", "firstQuartile", "midpoint", "thirdQuartile", "complete")


def metrics(srv):
    """The ad families of /metrics: the server's totals by name, the mount's with "@mount"."""
    fams = adminlib.parse_prometheus(adminlib.admin(srv, "/metrics").text)
    out = {name: fam["samples"][0][2] for name, fam in fams.items()
           if name.startswith("rimecast_ads_")}
    for name, fam in fams.items():
        if name.startswith("rimecast_mount_ad_"):
            for _, labels, value in fam["samples"]:
                out[name + "@" + labels["mount"]] = value
    return out


def test_n_listeners_give_n_impressions_and_n_completes(server, ads, tmp_path):
    n = 5
    data = offer(ads, tmp_path, seconds=3)
    srv, src = station(server, ads)
    listeners = [listen(srv) for _ in range(n)]
    assert adbreak(srv, 10).status == 200
    for lis in listeners:
        wait_spliced(lis, audio_of(data), after=8192)
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == n, 15,
                       lambda: "%d completes: %r" % (n, ads.events("a1")))
    assert ads.events("a1") == {e: n for e in EVENTS}
    assert len(ads.of("/vast")) == n and len(ads.of("/media/")) == 1
    sessions = {h.params["s"] for h in ads.of("/vast")}
    assert len(sessions) == n                                  # one ad request per listener
    m = wirelib.wait_until(lambda: (lambda m: m if m["rimecast_ads_beacons_sent_total"] >=
                                    n * len(EVENTS) else None)(metrics(srv)), 10, "beacons")
    assert m["rimecast_ads_requests_total"] == n and m["rimecast_ads_fills_total"] == n
    assert m["rimecast_ads_impressions_total"] == n and m["rimecast_ads_completes_total"] == n
    assert m["rimecast_ads_creatives_total"] == 1 and m["rimecast_ads_errors_total"] == 0
    assert m["rimecast_ads_no_fills_total"] == 0 and m["rimecast_ads_beacons_dropped_total"] == 0
    for family in ("breaks", "fills", "impressions", "completes"):
        assert m["rimecast_mount_ad_%s_total@%s" % (family, MOUNT)] == n, family
    for lis in listeners:
        lis.close()
    fl.stop_process(src)


def test_a_listener_leaving_halfway_gives_impression_start_first_quartile_and_midpoint_only(
        server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=30)
    audio = audio_of(data)
    srv, src = station(server, ads, sndbuf=8192)
    lis = srv.listener(MOUNT, rcvbuf=4096)
    assert lis.open(timeout=10, start=False).status == 200
    got = bytearray(lis.snapshot())
    lis.sock.settimeout(10)
    while len(got) < 16384:
        got += lis.sock.recv(4096)
    assert adbreak(srv, 40).status == 200
    half = int(len(audio) * 0.52)
    while True:                                # reads until it has 52 % of the ad, then leaves
        at = got.find(audio[:1024])
        if at >= 0 and len(got) >= at + half:
            break
        chunk = lis.sock.recv(4096)
        assert chunk, "closed"
        got += chunk
    lis.sock.close()
    assert got[at:at + half] == audio[:half]
    wirelib.wait_until(lambda: listeners_on(srv) == 0, 10, "the listener gone")
    want = {"impression": 1, "start": 1, "firstQuartile": 1, "midpoint": 1}
    wirelib.wait_until(lambda: ads.events("a1") == want, 10,
                       lambda: "events %r" % ads.events("a1"))
    m = metrics(srv)
    assert m["rimecast_ads_impressions_total"] == 1 and m["rimecast_ads_completes_total"] == 0
    fl.stop_process(src)


def listeners_on(srv):
    return int(fl.stats_source(srv, MOUNT).findtext("listeners"))


def test_a_tracking_url_that_fails_is_tried_again(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=2)
    ads.fail["/t/a1/impression"] = 2
    srv, src = station(server, ads)
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wait_spliced(lis, audio_of(data), after=4096)
    hits = wirelib.wait_until(lambda: (lambda h: h if len(h) == 3 else None)(
        ads.of("/t/a1/impression")), 15, lambda: "three tries: %r" % ads.of("/t/a1/impression"))
    assert hits[1].time - hits[0].time >= 0.9 and hits[2].time - hits[1].time >= 1.9
    wirelib.wait_until(lambda: metrics(srv)["rimecast_ads_beacons_sent_total"] ==
                       len(EVENTS), 10, "every beacon sent")
    assert metrics(srv)["rimecast_ads_beacons_failed_total"] == 0
    lis.close()
    fl.stop_process(src)
