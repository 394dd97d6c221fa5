# SPDX-License-Identifier: GPL-2.0-or-later
"""Session logs out: /admin/audience/sessions in the W3C extended log format and as TSV, and
<audience><export-dir>'s file of each UTC day, on the SQLite store and on PostgreSQL.

Covers: a store of known sessions (some over midnight, user agents with quotes, backslashes,
tabs, newlines and control characters, records without a key or an agent, robots, HLS
sessions, two servers, more than one chunk of them) gives, for a period, exactly the sessions
that ended in it, read back by a strict reader of each format written here (every line has
exactly the #Fields' or the header's count of fields, the text comes back byte for byte);
mount= and server= pick; admin credentials are needed; a reload naming an export directory
writes the file of each of the last days (the finished ones only), complete, none left under
its temporary name, each listing the sessions that ended that day.
"""

import calendar
import os
import pwd
import re
import signal
import sqlite3
import tempfile
import time

import pytest

import adminlib
import wirelib
from test_audience_pg import cluster  # noqa: F401 (a fixture)
from test_audience_store import db_path
from test_sessions import start_server

pytestmark = pytest.mark.rimecast_only

DAY = 86400
HOSTILE = ['say "hi" \\ back\\slash', "tab\there", "new\nline\r", "bell\x07 del\x7f",
           "caf\u00e9 \u2603", "", None]
W3C_FIELDS = ["date", "time", "x-start", "time-taken", "sc-bytes", "cs-uri-stem",
              "s-computername", "x-listener", "cs(User-Agent)", "x-country", "x-ended",
              "x-invalid", "x-kind"]
TSV_FIELDS = ["start", "end", "seconds", "bytes", "mount", "server", "listener", "user_agent",
              "country", "ended", "invalid", "kind"]


def sessions(day0):
    """The known sessions: (mount, server, start_ms, end_ms, bytes, ip, agent, country, key,
    invalid, hls) over the three days from day0 (unix s), a few crossing midnight."""
    out = []
    for i in range(2300):    # more than a chunk (2000) in the first day
        start = (day0 + (i * 37) % (3 * DAY)) * 1000 + i % 1000
        length = (i % 7) * 61000 + (i % 13) * 1000 + (DAY * 1000 // 2 if i % 97 == 0 else 0)
        out.append(("/a" if i % 3 else "/b", "edge-1" if i % 5 else "edge-2", start,
                    start + length, 1000 + i, "192.0.2.%d" % (i % 250),
                    HOSTILE[i % len(HOSTILE)] if i % 4 == 0 else "player-%d/1" % (i % 9),
                    "DE" if i % 2 else None, None if i % 6 == 0 else "%032x" % (i % 40),
                    "bot" if i % 11 == 0 else "concurrent" if i % 17 == 0 else "",
                    1 if i % 8 == 0 else 0))
    return out


# ---- strict readers ----

W3C_TOKEN = re.compile(r'"((?:[^"\\]|""|\\\\|\\x[0-9A-F]{2})*)"|([^\s"]+)')


def w3c_text(quoted):
    out, i = [], 0
    while i < len(quoted):
        c = quoted[i]
        if c == '"':
            assert quoted[i + 1] == '"'
            out.append('"')
            i += 2
        elif c == "\\":
            if quoted[i + 1] == "\\":
                out.append("\\")
                i += 2
            else:
                assert quoted[i + 1] == "x"
                out.append(chr(int(quoted[i + 2:i + 4], 16)))
                i += 4
        else:
            out.append(c)
            i += 1
    return "".join(out)


def read_w3c(text):
    """The W3C extended log: its directives and its rows as dicts by #Fields; every line must
    have exactly as many fields, separated by one space, text quoted."""
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    assert lines[0] == "#Version: 1.0"
    directives = {}
    rows = []
    fields = None
    for line in lines:
        assert "\r" not in line and "\t" not in line, repr(line)
        if line.startswith("#"):
            name, _, value = line[1:].partition(": ")
            directives[name] = value
            if name == "Fields":
                fields = value.split(" ")
            continue
        assert fields, "a row before #Fields"
        pos, row = 0, []
        while pos < len(line):
            m = W3C_TOKEN.match(line, pos)
            assert m, (line, pos)
            row.append(w3c_text(m.group(1)) if m.group(1) is not None else
                       None if m.group(2) == "-" else m.group(2))
            pos = m.end()
            if pos < len(line):
                assert line[pos] == " ", (line, pos)
                pos += 1
        assert len(row) == len(fields), (line, row)
        rows.append(dict(zip(fields, row)))
    assert re.match(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$", directives["Date"]), directives
    return directives, rows


def tsv_text(field):
    if field == "\\N":
        return None
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\":
            out.append({"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}[field[i + 1]])
            i += 2
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def read_tsv(text):
    assert text.endswith("\n")
    lines = text[:-1].split("\n")
    header = lines[0].split("\t")
    assert header == TSV_FIELDS
    rows = []
    for line in lines[1:]:
        assert "\r" not in line
        fields = line.split("\t")
        assert len(fields) == len(header), repr(line)
        rows.append(dict(zip(header, [tsv_text(f) for f in fields])))
    return rows


# ---- what each format should say ----

def iso(ms):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + ".%03dZ" % (ms % 1000)


def listener(s):
    ip, key = s[5], s[8]
    return key if key else ip.rsplit(".", 1)[0] + ".0"


def want_row(s):
    mount, server, start, end, nbytes, ip, agent, cc, key, invalid, hls = s
    ms = end - start
    return {"start": iso(start), "end": iso(end), "seconds": "%d.%03d" % divmod(ms, 1000),
            "bytes": str(nbytes), "mount": mount, "server": server, "listener": listener(s),
            "user_agent": agent, "country": cc, "ended": "client_left", "invalid": invalid,
            "kind": "hls" if hls else "stream"}


def as_tsv_row(w3c):
    """A W3C row in TSV's names."""
    return {"start": w3c["x-start"], "end": w3c["date"] + "T" + w3c["time"] + "Z",
            "seconds": w3c["time-taken"], "bytes": w3c["sc-bytes"],
            "mount": w3c["cs-uri-stem"], "server": w3c["s-computername"],
            "listener": w3c["x-listener"], "user_agent": w3c["cs(User-Agent)"],
            "country": w3c["x-country"], "ended": w3c["x-ended"], "invalid": w3c["x-invalid"],
            "kind": w3c["x-kind"]}


def ended_in(rows, t0, t1, mount=None, server=None):
    got = [s for s in rows if t0 * 1000 <= s[3] < t1 * 1000 and (not mount or s[0] == mount)
           and (not server or s[1] == server)]
    return sorted((want_row(s) for s in got), key=lambda r: (r["start"], r["end"], r["bytes"]))


def by_start(rows):
    return sorted(rows, key=lambda r: (r["start"], r["end"], r["bytes"]))


def export(srv, query):
    r = adminlib.admin(srv, "/admin/audience/sessions?" + query)
    assert r.status == 200, r.text
    return r


# ---- the stores ----

def fill_sqlite(srv, rows):
    con = sqlite3.connect(db_path(srv), timeout=10)
    with con:
        con.executemany(
            "INSERT INTO sessions (conn_id, mount, served, server, start_ms, end_ms, bytes, ip,"
            " user_agent, country, listener_key, invalid, hls, ended) VALUES"
            " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'client_left')",
            [(i + 1, s[0], s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9], s[10])
             for i, s in enumerate(rows)])
    con.close()


def pg_literal(v):
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    assert "$q$" not in v
    return "$q$%s$q$" % v


def fill_pg(cluster, db, rows):
    for k in range(0, len(rows), 500):
        values = ",".join("(gen_random_uuid(), %s, %d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
                          " 'client_left', %s)" % (
                              pg_literal(s[1]), i + k + 1, pg_literal(s[0]), pg_literal(s[0]),
                              s[2], s[3], s[4], pg_literal(s[5]), pg_literal(s[6]),
                              pg_literal(s[7]), pg_literal(s[8]), pg_literal(s[9]), s[10])
                          for i, s in enumerate(rows[k:k + 500]))
        cluster.psql("INSERT INTO sessions (record_id, server, conn_id, mount, served, start_ms,"
                     " end_ms, bytes, ip, user_agent, country, listener_key, invalid, ended, hls)"
                     " VALUES " + values, db)


def export_dir():
    d = tempfile.mkdtemp(prefix="rimecast-export-")
    nobody = pwd.getpwnam("nobody")
    os.chown(d, nobody.pw_uid, nobody.pw_gid)
    return d


def reload_with(srv, xml):
    with open(srv.config_path) as f:
        text = f.read()
    srv.write_config(text.replace("</audience>", xml + "</audience>"))
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")


@pytest.mark.parametrize("store", ["sqlite", "postgresql"])
def test_the_sessions_of_a_period_as_w3c_and_tsv_logs_and_daily_files(server, request, store):
    day0 = (int(time.time()) // DAY - 3) * DAY
    rows = sessions(day0)
    if store == "sqlite":
        srv = start_server(server, audience_xml="<server-name>edge-1</server-name>")
        wirelib.wait_until(lambda: os.path.exists(db_path(srv)), 10, "the store made")
        srv.wait_log("audience store: sessions are kept in", 10)
        fill_sqlite(srv, rows)
    else:
        cluster = request.getfixturevalue("cluster")
        name = cluster.new_database()
        srv = start_server(server, audience_xml="<database>%s</database><server-name>edge-1"
                           "</server-name>" % cluster.uri(name))
        srv.wait_log("audience store: sessions are kept in", 10)
        fill_pg(cluster, name, rows)
    # the whole first day, and a few hours over a midnight, both formats
    for t0, t1 in ((day0, day0 + DAY), (day0 + DAY - 5 * 3600, day0 + DAY + 7 * 3600)):
        q = "from=%d&to=%d" % (t0, t1)
        want = ended_in(rows, t0, t1)
        assert len(want) > 100
        r = export(srv, q + "&format=w3c")
        assert r.header("content-type").startswith("text/plain")
        directives, got = read_w3c(r.text)
        assert directives["Fields"].split(" ") == W3C_FIELDS
        assert by_start(as_tsv_row(g) for g in got) == want
        r = export(srv, q + "&format=tsv")
        assert r.header("content-type").startswith("text/tab-separated-values")
        assert by_start(read_tsv(r.text)) == want
        # in order of start
        assert [g["start"] for g in read_tsv(r.text)] == sorted(w["start"] for w in want)
    assert sum(1 for s in rows if day0 * 1000 <= s[3] < (day0 + DAY) * 1000) > 2000
    # day=, mount= and server= pick
    day = time.strftime("%Y-%m-%d", time.gmtime(day0 + DAY))
    got = read_tsv(export(srv, "day=%s&format=tsv&mount=/b&server=edge-2" % day).text)
    assert by_start(got) == ended_in(rows, day0 + DAY, day0 + 2 * DAY, "/b", "edge-2") and got
    # period=: that day too, the last 7 days (every row, all ended in them), the month
    assert read_tsv(export(srv, "period=%s&format=tsv&mount=/b&server=edge-2" % day).text) == got
    assert by_start(read_tsv(export(srv, "period=7d&format=tsv").text)) == by_start(
        ended_in(rows, int(time.time()) - 7 * DAY, int(time.time()) + 1))
    month = time.strftime("%Y-%m", time.gmtime(day0 + DAY))
    m0 = calendar.timegm(time.strptime(month + "-01", "%Y-%m-%d"))
    m1 = calendar.timegm(time.strptime(time.strftime("%Y-%m-01", time.gmtime(m0 + 32 * DAY)),
                                       "%Y-%m-%d"))
    assert by_start(read_tsv(export(srv, "period=%s&format=tsv" % month).text)) == by_start(
        ended_in(rows, m0, m1))
    for bad in ("period=week", "period=2026-13", "period=7d&day=%s" % day,
                "period=24h&from=%d" % day0):
        assert adminlib.admin(srv, "/admin/audience/sessions?" + bad).status == 400, bad
    # every text came back byte for byte (the rows are equal), hostile ones among them, and
    # robots and HLS sessions
    first = ended_in(rows, day0, day0 + DAY)
    assert {h for h in HOSTILE if h is not None} <= {w["user_agent"] for w in first}
    assert {"bot", "concurrent", ""} == {w["invalid"] for w in first}
    assert {"hls", "stream"} == {w["kind"] for w in first}
    # admin credentials, a format that is not one, a bad day
    assert adminlib.request(srv, "/admin/audience/sessions").status == 401
    assert adminlib.admin(srv, "/admin/audience/sessions?format=csv").status == 400
    assert adminlib.admin(srv, "/admin/audience/sessions?day=2026-13-45").status == 400
    # <export-dir>: the files of the last days, written when a reload names it
    d = export_dir()
    reload_with(srv, "<export-dir>%s</export-dir>" % d)
    today = int(time.time()) // DAY * DAY
    days = [today - k * DAY for k in range(7, 0, -1)]
    names = ["sessions-%s.log" % time.strftime("%Y-%m-%d", time.gmtime(t)) for t in days]
    wirelib.wait_until(lambda: sorted(os.listdir(d)) == sorted(names), 30,
                       lambda: "the files of the last 7 days, not %s" % sorted(os.listdir(d)))
    for t, n in zip(days, names):
        with open(os.path.join(d, n), encoding="utf-8", newline="") as f:
            _, got = read_w3c(f.read())
        assert by_start(as_tsv_row(g) for g in got) == ended_in(rows, t, t + DAY, server="edge-1")
    # each written once, none left under its temporary name
    assert srv.error_log().count("written to %s" % d) == 7
