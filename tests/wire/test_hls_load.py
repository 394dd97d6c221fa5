# SPDX-License-Identifier: GPL-2.0-or-later
"""HLS under the load of many low-latency players at once, driven by the project's HLS load
generator (loadtest/hlsswarm: players that hold the part the preload hint names open and ask
for the next hint with a blocking reload, as in docs/PERFORMANCE.md). Skipped when the
generator was not built. Icecast has no HLS: Rimecast only."""
import os
import re
import subprocess
import time

import pytest

import conftest
import formatlib as fl
import wirelib

pytestmark = [pytest.mark.rimecast_only, pytest.mark.slow]

HLSSWARM = os.environ.get("HLSSWARM_BIN") or os.path.join(os.path.dirname(conftest.BINARY),
                                                           "loadtest", "hlsswarm")


@pytest.mark.skipif(not os.access(HLSSWARM, os.X_OK), reason="loadtest/hlsswarm is not built")
def test_thousands_of_players_following_parts_as_they_fill_keep_the_server_bounded(server, tmp_path):
    """3 000 players following the part being cut: a player's connection may drain (and ask
    for the part again) before the wake-up posted for it ran; the server keeps serving every
    one, in bounded memory, and still answers others."""
    players = 3000
    # one address plays them all: its share of the mount is lifted
    srv = server(clients=players + 50,
                 extra_xml="<hls><sessions-per-address>0</sessions-per-address></hls>")
    mount = "/live.mp3"
    p = fl.ffmpeg_source(srv, mount, "mp3")
    status = tmp_path / "hlsswarm.status"
    gen = None
    try:
        fl.wait_mount(srv, mount, p)
        rss0 = wirelib.proc_rss_kb(srv.pid)
        gen = subprocess.Popen([HLSSWARM, "--host", srv.host, "--port", str(srv.port), "--mount",
                                mount, "--ll", "--clients", str(players), "--connect-rate", "3000",
                                "--duration", "15", "--status", str(status)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        peak = rss0
        while gen.poll() is None:
            peak = max(peak, wirelib.proc_rss_kb(srv.pid))
            # a waiter linked twice turns the waiting list into a loop that posts wake-ups
            # without end: hundreds of MB a second
            assert peak - rss0 < 256 * 1024, "server RSS grew by %d KB" % (peak - rss0)
            time.sleep(0.25)
        final = [l for l in status.read_text().splitlines() if l.startswith("final ")]
        assert final, status.read_text()[-2000:]
        fig = dict(re.findall(r"(\w+)=(\S+)", final[0]))
        assert int(fig["active"]) == players, final[0]
        assert int(fig["pieces"]) >= players, final[0]
        # and still answers others
        resp, _ = wirelib.simple_request(srv.host, srv.port, b"GET %s/hls.m3u8 HTTP/1.0\r\n\r\n"
                                         % mount.encode(), timeout=5)
        assert resp is not None and resp.status == 200
    finally:
        if gen and gen.poll() is None:
            gen.kill()
            gen.wait()
        fl.stop_process(p)
