# SPDX-License-Identifier: GPL-2.0-or-later
"""The shipped Prometheus rules and Grafana dashboard against real servers: docs/METRICS.md
names exactly the families /metrics serves; the rules and the dashboard read only those (and
the recording rules); and Debian's Prometheus, scraping three servers with the shipped rules,
computes the network's listeners, HLS listeners, bandwidth and sources up as they are, and
follows a change. Rimecast only."""

import http.client
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request

import pytest

import formatlib as fl
import hlscheck
import wirelib
from adminlib import Station, admin, family_sum, parse_prometheus
from conftest import ADMIN_PASSWORD, ADMIN_USER, SRCDIR, free_port

pytestmark = pytest.mark.rimecast_only

PROMETHEUS = shutil.which("prometheus") or ("/usr/bin/prometheus"
                                            if os.access("/usr/bin/prometheus", os.X_OK) else None)
PROMTOOL = shutil.which("promtool")
CHECK = os.path.join(SRCDIR, "tests", "check-prometheus.sh")
RULES = [os.path.join(SRCDIR, "conf", "prometheus", f)
         for f in ("rimecast.rules.yml", "rimecast.alerts.yml")]

# The audience store's queue and spool families come with its change that also renames
# rimecast_audience_records_stored_total to _written_total. While a server still serves the old
# name, the new ones stand in for it here; once it serves the new names this changes nothing.
STORE_OLD = "rimecast_audience_records_stored_total"
STORE_NEW = {"rimecast_audience_records_written_total", "rimecast_audience_records_queued",
             "rimecast_audience_records_spooled"}


def served_families(text):
    fams = set(parse_prometheus(text))
    if STORE_OLD in fams:
        fams = (fams - {STORE_OLD}) | STORE_NEW
    return fams


def documented_families():
    with open(os.path.join(SRCDIR, "docs", "METRICS.md"), encoding="utf-8") as f:
        return set(re.findall(r"^\| `(rimecast_\w+)` \| (?:gauge|counter) \|", f.read(), re.M))


def test_documented_families_are_the_served_ones(server):
    """docs/METRICS.md's table names each family /metrics serves, and nothing else."""
    st = Station(server, ["/a.mp3"], mounts=[dict(mount_name="/conf.mp3")])
    try:
        served = served_families(admin(st.srv, "/metrics").text)
    finally:
        st.close()
    documented = documented_families()
    assert served - documented == set(), "served, not documented"
    assert documented - served == set(), "documented, not served"


@pytest.mark.skipif(PROMTOOL is None, reason="promtool (Debian's prometheus) not installed")
def test_rules_and_dashboard_read_served_families(server, tmp_path):
    """tests/check-prometheus.sh with a live server's families as its catalogue: the rules
    pass promtool and their unit tests, and every name the rules and the dashboard read is a
    family this server serves or a recording rule."""
    st = Station(server, ["/a.mp3"], mounts=[dict(mount_name="/conf.mp3")])
    try:
        text = admin(st.srv, "/metrics").text
    finally:
        st.close()
    catalogue = tmp_path / "metrics.txt"
    catalogue.write_text("".join("# TYPE %s gauge\n" % f for f in sorted(served_families(text))))
    r = subprocess.run([CHECK, "--metrics", str(catalogue)], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, RIMECAST_SRCDIR=SRCDIR))
    assert r.returncode == 0, r.stdout + r.stderr


class Prometheus:
    """Debian's prometheus scraping `targets` every second with the shipped rules, evaluated
    every second; its own storage in a temporary folder; stopped by its PID."""

    def __init__(self, targets):
        self.dir = tempfile.mkdtemp(prefix="wire-prometheus-")
        self.port = free_port()
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n%s"
                    "scrape_configs:\n  - job_name: rimecast\n"
                    "    basic_auth: {username: %s, password: %s}\n"
                    "    static_configs:\n      - targets: [%s]\n"
                    % ("".join("  - %s\n" % json.dumps(r) for r in RULES), ADMIN_USER,
                       ADMIN_PASSWORD, ", ".join('"%s"' % t for t in targets)))
        self.log = open(os.path.join(self.dir, "prometheus.log"), "wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + config,
             "--storage.tsdb.path=" + os.path.join(self.dir, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        wirelib.wait_until(self.ready, 60, "prometheus ready", interval=0.2)

    def ready(self):
        assert self.proc.poll() is None, "prometheus exited:\n" + self.output()
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/-/ready" % self.port,
                                        timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def output(self):
        with open(os.path.join(self.dir, "prometheus.log"), errors="replace") as f:
            return f.read()[-3000:]

    def api(self, path, **params):
        url = "http://127.0.0.1:%d/api/v1/%s?%s" % (self.port, path,
                                                     urllib.parse.urlencode(params))
        with urllib.request.urlopen(url, timeout=10) as r:
            doc = json.load(r)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr, at=None):
        """{labels without __name__ as a sorted tuple: (time, value)} of an instant query."""
        params = {"query": expr}
        if at is not None:
            params["time"] = "%.3f" % at
        out = {}
        for s in self.api("query", **params)["result"]:
            labels = tuple(sorted((k, v) for k, v in s["metric"].items() if k != "__name__"))
            out[labels] = (float(s["value"][0]), float(s["value"][1]))
        return out

    def values(self, expr, key):
        """{label `key`'s value: value} of an instant query."""
        return {dict(l).get(key): v for l, (_, v) in self.query(expr).items()}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.mark.skipif(PROMETHEUS is None or fl.FFMPEG is None,
                    reason="needs Debian's prometheus and ffmpeg")
def test_prometheus_computes_the_network_totals(server):
    """Three servers: a with /a.mp3 and /b.mp3, b with /a.mp3, c with /c.mp3 (a real MP3
    encoder, for HLS) and a <mount> /conf.mp3 without a source. Listeners: a 2 on /a.mp3 and 1
    on /b.mp3, b 3 on /a.mp3, c 1 streaming and 1 HLS session on /c.mp3. Prometheus, scraping
    them with the shipped rules, finds 8 listeners in the network (1 HLS), /a.mp3 with 5 of
    them, per server 3, 3 and 2, sources up on 4 mounts of 5, bandwidth that is the same
    summed by server or by mount, and /conf.mp3's alert pending; when b's listeners leave, the
    network has 5."""
    sa = Station(server, ["/a.mp3", "/b.mp3"])
    sb = Station(server, ["/a.mp3"])
    c = server(mounts=[dict(mount_name="/conf.mp3")])
    encoder = fl.ffmpeg_source(c, "/c.mp3", "mp3")
    listeners, prom = [], None
    try:
        fl.wait_mount(c, "/c.mp3", encoder)
        for srv, mount, n in ((sa.srv, "/a.mp3", 2), (sa.srv, "/b.mp3", 1),
                              (sb.srv, "/a.mp3", 3), (c, "/c.mp3", 1)):
            for _ in range(n):
                lis = srv.listener(mount)
                assert lis.open().status == 200
                listeners.append((srv, lis))
        token = hlscheck.token(c, "/c.mp3")
        playlist_url = "/c.mp3/hls.m3u8?session=" + token

        def poll_hls():
            """The HLS session polls its playlist, as a player does: it stays a listener."""
            conn = http.client.HTTPConnection(c.host, c.port, timeout=30)
            try:
                conn.request("GET", playlist_url)
                r = conn.getresponse()
                body = r.read().decode()
            finally:
                conn.close()
            assert r.status == 200, body
            return body
        status, _ = hlscheck.fetch_first_piece(c.host, c.port, "/c.mp3", poll_hls())
        assert status == 200
        servers = {"a": sa.srv, "b": sb.srv, "c": c}
        for srv in servers.values():  # what each server says itself
            fams = parse_prometheus(admin(srv, "/metrics").text)
            assert family_sum(fams, "rimecast_listeners") == {sa.srv: 3, sb.srv: 3, c: 2}[srv]
        inst = {"127.0.0.1:%d" % s.port: name for name, s in servers.items()}
        prom = Prometheus(sorted(inst))

        last = []

        def settled(want_network):
            poll_hls()
            last[:] = [prom.values("job:rimecast_listeners:sum", "job"),
                       prom.values("job:rimecast_hls_listeners:sum", "job"),
                       prom.values("job:rimecast_source_up:sum", "job")]
            return last == [{"rimecast": want_network}, {"rimecast": 1}, {"rimecast": 4}]
        wirelib.wait_until(lambda: settled(8), 60, lambda: "the network totals (listeners, "
                           "HLS listeners, sources up: %r)" % last, interval=0.5)
        per_server = {inst[k]: v for k, v in
                      prom.values("instance:rimecast_listeners:sum", "instance").items()}
        assert per_server == {"a": 3, "b": 3, "c": 2}
        assert prom.values("job_mount:rimecast_listeners:sum", "mount") == \
            {"/a.mp3": 5, "/b.mp3": 1, "/c.mp3": 2}
        assert prom.values("job_mount:rimecast_hls_listeners:sum", "mount") == \
            {"/a.mp3": 0, "/b.mp3": 0, "/c.mp3": 1}
        assert prom.values("job_mount:rimecast_source_up:sum", "mount") == \
            {"/a.mp3": 2, "/b.mp3": 1, "/c.mp3": 1, "/conf.mp3": 0}

        # bandwidth: once two scrapes of every counter are in, the network's rate is the sum
        # of the servers' and of the mounts' from the same evaluation, HLS among it
        def bandwidth():
            poll_hls()
            total = prom.query("job:rimecast_sent_bytes:rate1m")
            hls = prom.query("job:rimecast_hls_sent_bytes:rate1m")
            if len(total) != 1 or len(hls) != 1:
                return None
            (at, value), = total.values()
            (_, hls_value), = hls.values()
            return (at, value) if value > 0 and hls_value > 0 else None
        at, network = wirelib.wait_until(bandwidth, 30, "bandwidth in the rules", interval=0.5)
        by_server = sum(v for _, v in prom.query("instance:rimecast_sent_bytes:rate1m",
                                                 at).values())
        by_mount = sum(v for _, v in prom.query("job_mount:rimecast_sent_bytes:rate1m",
                                                at).values())
        assert by_server == pytest.approx(network, rel=1e-9)
        assert by_mount == pytest.approx(network, rel=1e-9)

        # the alert rules read the same series: /conf.mp3 has had no source since the start
        # (pending for the rule's 2 minutes, then firing), and nothing else is wrong
        alerts = prom.api("alerts")["alerts"]
        assert [(a["labels"]["alertname"], a["labels"]["mount"], inst[a["labels"]["instance"]])
                for a in alerts] == [("RimecastMountWithoutSource", "/conf.mp3", "c")], alerts
        assert alerts[0]["state"] in ("pending", "firing")

        for srv, lis in listeners:
            if srv is sb.srv:
                lis.close()
        wirelib.wait_until(lambda: settled(5), 30, lambda: "b's listeners gone (%r)" % last,
                           interval=0.5)
        assert prom.values("job_mount:rimecast_listeners:sum", "mount") == \
            {"/a.mp3": 2, "/b.mp3": 1, "/c.mp3": 2}
    except AssertionError:
        if prom:
            print("--- prometheus\n" + prom.output())
        raise
    finally:
        if prom:
            prom.stop()
        for _, lis in listeners:
            lis.close()
        fl.stop_process(encoder)
        sa.close()
        sb.close()
