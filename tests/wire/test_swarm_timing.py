# SPDX-License-Identifier: GPL-2.0-or-later
"""The load generator's latency on a loaded mount (loadtest/swarm --time-listeners): the probe
source feeds the mount the listeners are on, a marker every 100 ms, and a random sample of
those listeners times every marker, at the read and at its arrival in the socket (the
kernel's receive timestamp), as docs/PERFORMANCE.md measures the low-latency tail. Skipped
when the generator was not built."""
import os
import re
import subprocess
import time

import pytest

import conftest

pytestmark = [pytest.mark.rimecast_only, pytest.mark.slow]

SWARM = os.environ.get("SWARM_BIN") or os.path.join(os.path.dirname(conftest.BINARY),
                                                     "loadtest", "swarm")


def figures(line):
    return {k: float(v) for k, v in re.findall(r"(\w+)=(-?[0-9.]+)", line)}


@pytest.mark.skipif(not os.access(SWARM, os.X_OK), reason="loadtest/swarm is not built")
def test_a_sample_of_the_loaded_mounts_listeners_times_every_marker(server, tmp_path):
    """40 listeners on /live, 10 of them timed: each second about 10 x 10 markers are timed
    (not 40 x 10: the sample, not every listener; not 0: the mount's own listeners, not probe
    listeners of a mount of their own), each also at its arrival, never later than its read."""
    srv = server(write_window=0)
    src_status, status = tmp_path / "source.status", tmp_path / "swarm.status"
    common = ["--host", srv.host, "--port", str(srv.port), "--password", conftest.SOURCE_PASSWORD]
    feed = subprocess.Popen([SWARM, *common, "--probe-mount", "/live", "--probe-listeners", "0",
                             "--probe-tick", "0.1", "--duration", "12", "--drain", "1",
                             "--status", str(src_status)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    gen = None
    try:
        deadline = time.monotonic() + 5
        while "sources_up=1" not in (src_status.read_text() if src_status.exists() else ""):
            assert feed.poll() is None and time.monotonic() < deadline, feed.stderr.read()
            time.sleep(0.05)
        gen = subprocess.run([SWARM, *common, "--listeners", "40", "--mounts", "/live",
                              "--time-listeners", "10", "--duration", "6", "--drain", "1",
                              "--status", str(status)], capture_output=True, timeout=30)
        lines = status.read_text().splitlines()
        final = [figures(l) for l in lines if l.startswith("final ")]
        assert gen.returncode == 0 and final, gen.stderr + status.read_bytes()[-2000:]
        final = final[0]
        # whole seconds with every listener streaming, the first one left out (the burst)
        steady = [figures(l) for l in lines if l.startswith("t=")]
        steady = [f for f in steady if f["connected"] == 40 and 2 <= f["t"] <= 6]
        assert len(steady) >= 3, lines
        for f in steady:
            assert 70 <= f["lat_n"] <= 130, f
            assert 0 < f["lat_p50_ms"] <= f["lat_p99_ms"] < 1000, f
            assert 0 < f["arr_p50_ms"] <= f["lat_p50_ms"], f
            assert f["arr_max_ms"] <= f["lat_max_ms"], f
        assert final["arr_n"] == final["lat_n"] > 0, final
        assert final["listeners"] == 40 and final["server_closed"] == 0, final
    finally:
        if feed.poll() is None:
            feed.terminate()
        feed.wait(timeout=10)
