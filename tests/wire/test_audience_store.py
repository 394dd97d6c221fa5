# SPDX-License-Identifier: GPL-2.0-or-later
"""The audience store: ended listener sessions kept in an SQLite database (<audience><database>).

Covers: each session becomes a row with the fields of its session-log line; rows survive a
restart and a SIGHUP; the database is in WAL mode with an index on (mount, start_ms) and
belongs to the user the server runs as; <database>none</database> keeps no database,
and a reload can move the store to another file; a database locked by another program
(BEGIN EXCLUSIVE), read-only or on a full disk costs records (counted lost in /metrics, said
once), never listeners, and records are kept again once that is over; sessions ending one
after another are written a few to a transaction; a store made with the columns' old names is
brought to the published ones; each record carries the server's name (<server-name>), and
server= keeps one server's sessions (those of records without a name are this server's);
<retention-days> removes the records of sessions that ended before it when the store opens
and after a reload, and without it old records stay.
"""

import os
import pwd
import signal
import sqlite3
import subprocess
import tempfile
import time

import pytest

import adminlib
import conftest
import wirelib
from test_sessions import MOUNT, live, records, start_server, wait_records

pytestmark = pytest.mark.rimecast_only


def db_path(srv, name="audience.db"):
    return os.path.join(srv.logdir, name)


def rows(srv, name="audience.db"):
    if not os.path.exists(db_path(srv, name)):
        return []
    con = sqlite3.connect("file:%s?mode=ro" % db_path(srv, name), uri=True, timeout=5)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT * FROM sessions ORDER BY id")]
    except sqlite3.OperationalError:
        return []           # not created yet
    finally:
        con.close()


def wait_rows(srv, n, name="audience.db", timeout=10):
    return wirelib.wait_until(lambda: len(rows(srv, name)) >= n and rows(srv, name), timeout,
                              "%d rows in %s" % (n, name))


def one_session(srv, agent):
    s = wirelib.connect(srv.host, srv.port, 5)
    s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: %s\r\nReferer: http://r.example/\r\n\r\n"
               % (MOUNT, agent)).encode())
    head, _ = wirelib.read_head(s, 5)
    assert head.status == 200
    s.close()


def restart(srv):
    assert srv.stop() == 0
    srv.stopped = False
    assert srv._spawn(10), srv.diagnostics()


def test_sessions_are_stored_and_survive_a_restart_and_sighup(server, data):
    srv = start_server(server)
    src = live(srv, data)
    one_session(srv, "first")
    [row] = wait_rows(srv, 1)
    [rec] = wait_records(srv, 1)
    # the row holds what the session log line says
    assert row["mount"] == rec["mount"] == MOUNT and row["served"] == MOUNT
    assert row["conn_id"] == rec["id"] and row["bytes"] == rec["bytes"]
    assert row["ip"] == rec["ip"] == "127.0.0.1"
    assert row["user_agent"] == "first" and row["referer"] == "http://r.example/"
    assert row["user"] is None and row["country"] is None
    assert row["ended"] == rec["ended"] == "client_left"
    assert abs((row["end_ms"] - row["start_ms"]) / 1000.0 - rec["seconds"]) < 0.002
    # the published columns: times in Unix seconds, as in the session log
    assert (row["start"], row["end"], row["seconds"]) == (rec["start"], rec["end"],
                                                          rec["seconds"])
    con = sqlite3.connect(db_path(srv))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    index = con.execute("SELECT sql FROM sqlite_master WHERE type='index' AND "
                        "tbl_name='sessions'").fetchall()
    con.close()
    assert any("(mount, start_ms)" in (sql or "") for (sql,) in index), index
    nobody = pwd.getpwnam("nobody").pw_uid
    assert os.stat(db_path(srv)).st_uid == nobody
    held = srv.listener(MOUNT)      # still listening when the server stops
    assert held.open().status == 200
    restart(srv)                    # the record of the one cut by the stop is written too
    held.close()
    src.stop()
    src = live(srv, data)
    one_session(srv, "after-restart")
    got = wait_rows(srv, 3)
    assert [(r["user_agent"], r["ended"]) for r in got] == [
        ("first", "client_left"), ("wiretest-listener/1.0", "shutdown"),
        ("after-restart", "client_left")]
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    one_session(srv, "after-hup")
    assert [r["user_agent"] for r in wait_rows(srv, 4)][-1] == "after-hup"
    src.stop()
    assert "audience store: cannot" not in srv.error_log()


def test_audience_db_none_keeps_no_database_and_a_reload_can_start_one(server, data):
    srv = start_server(server, audience_xml="<database>none</database>")
    src = live(srv, data)
    one_session(srv, "unstored")
    wait_records(srv, 1)
    assert not os.path.exists(db_path(srv)) and not os.path.exists(db_path(srv, "none"))
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "</icecast>", "<audience><database>other.db</database></audience>\n</icecast>"))
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("audience store: sessions are kept in")
    one_session(srv, "stored")
    assert [r["user_agent"] for r in wait_rows(srv, 1, "other.db")] == ["stored"]
    assert len(records(srv)) == 2
    src.stop()


def metric(srv, name):
    for line in adminlib.admin(srv, "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return int(line.split()[1])
    return None


def lost_while(srv, failing, lifted, what, name="audience.db"):
    """Sessions end while the store fails (failing() sets the failure up, lifted() ends it):
    a listener keeps streaming all along, every session is in the session log, the records
    the store could not keep are counted lost and said once; once lifted, records are kept
    again."""
    keeper = srv.listener(MOUNT)
    assert keeper.open().status == 200
    keeper.wait_bytes(1, 5)
    before = len(rows(srv, name))
    stored = metric(srv, "rimecast_audience_records_written_total")
    failing()
    try:
        for i in range(3):
            one_session(srv, "%s-%d" % (what, i))
        wirelib.wait_until(lambda: metric(srv, "rimecast_audience_records_lost_total") == 3,
                           20, "three records lost")
        got = keeper.received
        keeper.wait_bytes(got + 16384, 10)      # still streaming
        assert not keeper.closed
    finally:
        lifted()
    assert len(rows(srv, name)) == before
    assert srv.error_log().count("session records dropped") == 1
    one_session(srv, "%s-after" % what)
    assert wait_rows(srv, before + 1, name)[-1]["user_agent"] == "%s-after" % what
    assert metric(srv, "rimecast_audience_records_lost_total") == 3
    assert metric(srv, "rimecast_audience_records_written_total") == stored + 1
    # the three failing ones end as the server notices each close, on either worker: in any
    # order among themselves, all before the one after
    last = [r["user_agent"] for r in records(srv)][-4:]
    assert sorted(last[:3]) == ["%s-%d" % (what, i) for i in range(3)], last
    assert last[3] == "%s-after" % what, last
    keeper.close()


def stored_once(server, data, name="audience.db", **kw):
    """A server whose store holds one session, and its live source."""
    srv = start_server(server, **kw)
    src = live(srv, data)
    one_session(srv, "before")
    wait_rows(srv, 1, name)
    return srv, src


def test_a_locked_database_costs_records_never_listeners(server, data):
    srv, src = stored_once(server, data)
    con = sqlite3.connect(db_path(srv), timeout=5, isolation_level=None)

    def unlock():
        con.execute("ROLLBACK")
        con.close()
    lost_while(srv, lambda: con.execute("BEGIN EXCLUSIVE"), unlock, "locked")
    src.stop()


def test_a_read_only_database_costs_records_never_listeners(server, data):
    srv, src = stored_once(server, data)
    src.stop()
    assert srv.stop() == 0
    os.chmod(db_path(srv), 0o444)   # the server's user may not write it
    srv.stopped = False
    assert srv._spawn(10), srv.diagnostics()
    src = live(srv, data)

    def writable_again():
        """The database and the WAL files SQLite made with its mode are writable again."""
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db_path(srv) + suffix):
                os.chmod(db_path(srv) + suffix, 0o644)
    lost_while(srv, lambda: None, writable_again, "read-only")
    src.stop()


def test_a_full_disk_costs_records_never_listeners(server, data):
    disk = tempfile.mkdtemp()
    os.chmod(disk, 0o755)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0777", "tmpfs", disk],
                      capture_output=True).returncode != 0:
        os.rmdir(disk)
        pytest.skip("cannot mount a small tmpfs here")
    name = os.path.join(disk, "audience.db")
    filler = os.path.join(disk, "filler")

    def fill():
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
    try:
        srv, src = stored_once(server, data, name,
                               audience_xml="<database>%s</database>" % name)
        lost_while(srv, fill, lambda: os.unlink(filler), "full", name)
        src.stop()
        srv.stop()
    finally:
        subprocess.run(["umount", "-l", disk])
        os.rmdir(disk)


def wal_commits(path):
    """Transactions in a WAL file since it was last reset: its frames that end a commit (a
    non-zero database size in the frame header) and carry the header's salts."""
    with open(path, "rb") as f:
        wal = f.read()
    page = int.from_bytes(wal[8:12], "big")
    salts, n, off = wal[16:24], 0, 32
    while off + 24 + page <= len(wal):
        frame = wal[off:off + 24]
        if frame[8:16] != salts:
            break
        n += int.from_bytes(frame[4:8], "big") != 0
        off += 24 + page
    return n


def test_sessions_ending_one_after_another_are_written_in_a_few_transactions(server, data):
    srv, src = stored_once(server, data)
    socks = []
    for _ in range(30):
        s = wirelib.connect(srv.host, srv.port, 5)
        s.sendall(("GET %s HTTP/1.0\r\nUser-Agent: trickle\r\n\r\n" % MOUNT).encode())
        assert wirelib.read_head(s, 5)[0].status == 200
        socks.append(s)
    before = wal_commits(db_path(srv) + "-wal")
    for s in socks:         # a trickle: one session ends every 20 ms, for 0.6 s
        s.close()
        time.sleep(0.02)
    wait_rows(srv, 31)
    # a transaction per record would be 30; they are written a quarter second's worth at a time
    assert wal_commits(db_path(srv) + "-wal") - before <= 8
    src.stop()


OLD_SCHEMA = """
CREATE TABLE sessions (id INTEGER PRIMARY KEY, conn_id INTEGER NOT NULL, mount TEXT NOT NULL,
 served TEXT NOT NULL, start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL,
 bytes INTEGER NOT NULL, address TEXT NOT NULL, agent TEXT, referer TEXT, user TEXT,
 country TEXT, ended TEXT NOT NULL);
INSERT INTO sessions VALUES (1, 7, '/live', '/live', 1000, 2000, 10, '192.0.2.9', 'old', NULL,
 NULL, NULL, 'client_left');
"""


def test_a_store_with_the_columns_old_names_is_brought_to_the_published_ones(server, data):
    srv = server(start=False)
    con = sqlite3.connect(db_path(srv))
    con.executescript(OLD_SCHEMA)
    con.close()
    os.chown(db_path(srv), pwd.getpwnam("nobody").pw_uid, -1)
    srv.start()
    src = live(srv, data)
    one_session(srv, "new")
    got = wait_rows(srv, 2)
    assert [(r["ip"], r["user_agent"], r["preroll"]) for r in got] == [
        ("192.0.2.9", "old", 0), ("127.0.0.1", "new", 0)]
    assert (got[0]["start"], got[0]["end"], got[0]["seconds"]) == (1.0, 2.0, 1.0)
    assert "audience store: cannot" not in srv.error_log()
    src.stop()


def test_records_carry_the_server_name_and_server_picks_one_server(server, data):
    srv = start_server(server, audience_xml="<server-name>edge-s</server-name>")
    src = live(srv, data)
    t0 = int(time.time()) - 1
    one_session(srv, "named")
    [row] = wait_rows(srv, 1)
    assert row["server"] == "edge-s"
    # a record written before records had a name counts as this server's
    con = sqlite3.connect(db_path(srv))
    con.execute("INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip,"
                " ended) VALUES (9, ?, ?, ?, ?, 1, '192.0.2.9', 'client_left')",
                (MOUNT, MOUNT, row["start_ms"], row["end_ms"]))
    con.commit()
    con.close()
    span = "period=all&from=%d&to=%d" % (t0, int(time.time()) + 1)
    def server_sessions(q):
        periods = adminlib.admin(srv, "/admin/audience.json?" + q).json()["periods"]
        return [p["sessions"] for p in periods if p["mount"] is None]
    assert server_sessions(span) == [2]
    assert server_sessions("server=edge-s&" + span) == [2]
    assert server_sessions("server=edge-other&" + span) == [0]
    doc = adminlib.admin(srv, "/admin/audience?server=edge-s&" + span).xml()
    assert doc.findtext("server") == "edge-s"
    top = adminlib.admin(srv, "/admin/audience/top.json?server=edge-other&" + span[11:]).json()
    assert top["audience_top"]["sessions"] == 0
    src.stop()


def store_to_nobody(srv):
    """The store's files (written by the test as root) given to the user the server runs as."""
    nobody = pwd.getpwnam("nobody")
    for name in os.listdir(srv.logdir):
        if name.startswith("audience.db"):
            os.chown(os.path.join(srv.logdir, name), nobody.pw_uid, nobody.pw_gid)


def old_rows(srv, ages_days):
    """Rows of sessions that ended `ages_days` days ago (each a minute long), written while the
    server is stopped, as the user it runs as."""
    assert srv.stop() == 0
    srv.stopped = False
    now = int(time.time())
    con = sqlite3.connect(db_path(srv))
    con.executemany(
        "INSERT INTO sessions (conn_id, mount, served, start_ms, end_ms, bytes, ip, user_agent,"
        " referer, user, country, ended) VALUES (?, '/live', '/live', ?, ?, 1, '192.0.2.1',"
        " ?, NULL, NULL, NULL, 'client_left')",
        [(i + 1, (now - int(d * 86400) - 60) * 1000, (now - int(d * 86400)) * 1000,
          "aged-%s" % d) for i, d in enumerate(ages_days)])
    con.commit()
    con.close()
    store_to_nobody(srv)
    assert srv._spawn(10), srv.diagnostics()


def test_retention_days_removes_older_records_when_opened_and_after_a_reload(server, data):
    srv = start_server(server, audience_xml="<retention-days>3</retention-days>")
    wirelib.wait_until(lambda: os.path.exists(db_path(srv)), 10, "the store created")
    old_rows(srv, [10, 4, 3.01, 2.9, 0.5])
    srv.wait_log("audience store: 3 session records removed (ended over 3 days ago)", 10)
    assert [r["user_agent"] for r in rows(srv)] == ["aged-2.9", "aged-0.5"]
    # the figures of the last ten days have the records kept only
    j = adminlib.admin(srv, "/admin/audience.json?period=all&from=%d" %
                       (time.time() - 11 * 86400)).json()
    assert j["periods"][0]["sessions"] == 2
    # a reload that shortens it removes what is older than the new one
    with open(srv.config_path) as f:
        text = f.read()
    assert "<retention-days>3</retention-days>" in text
    srv.write_config(text.replace("<retention-days>3<", "<retention-days>1<"))
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("audience store: 1 session record removed (ended over 1 day ago)", 10)
    assert [r["user_agent"] for r in rows(srv)] == ["aged-0.5"]
    # new sessions are kept
    src = live(srv, data)
    one_session(srv, "new")
    assert [r["user_agent"] for r in wait_rows(srv, 2)] == ["aged-0.5", "new"]
    src.stop()


def test_without_retention_days_old_records_stay(server, data):
    srv = start_server(server)
    wirelib.wait_until(lambda: os.path.exists(db_path(srv)), 10, "the store created")
    old_rows(srv, [400, 10])
    srv.wait_log("audience store: sessions are kept in", 10)
    src = live(srv, data)
    one_session(srv, "new")
    assert [r["user_agent"] for r in wait_rows(srv, 3)] == ["aged-400", "aged-10", "new"]
    assert "session records removed" not in srv.error_log()
    src.stop()
