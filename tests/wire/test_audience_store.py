# SPDX-License-Identifier: GPL-2.0-or-later
"""The audience store: ended listener sessions kept in an SQLite database (<audience-db>).

Covers: each session becomes a row with the fields of its session-log line; rows survive a
restart and a SIGHUP; the database is in WAL mode with an index on (mount, start_ms) and
belongs to the user the server runs as; <audience-db>none</audience-db> keeps no database,
and a reload can move the store to another file.
"""

import os
import pwd
import signal
import sqlite3

import pytest

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
    assert row["address"] == rec["address"] == "127.0.0.1"
    assert row["agent"] == "first" and row["referer"] == "http://r.example/"
    assert row["user"] is None and row["country"] is None
    assert row["ended"] == rec["ended"] == "client_left"
    assert abs((row["end_ms"] - row["start_ms"]) / 1000.0 - rec["seconds"]) < 0.002
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
    assert [(r["agent"], r["ended"]) for r in got] == [
        ("first", "client_left"), ("wiretest-listener/1.0", "shutdown"),
        ("after-restart", "client_left")]
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    one_session(srv, "after-hup")
    assert [r["agent"] for r in wait_rows(srv, 4)][-1] == "after-hup"
    src.stop()
    assert "audience store: cannot" not in srv.error_log()


def test_audience_db_none_keeps_no_database_and_a_reload_can_start_one(server, data):
    srv = start_server(server, "<audience-db>none</audience-db>")
    src = live(srv, data)
    one_session(srv, "unstored")
    wait_records(srv, 1)
    assert not os.path.exists(db_path(srv)) and not os.path.exists(db_path(srv, "none"))
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "</logging>", "<audience-db>other.db</audience-db>\n  </logging>"))
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("audience store: sessions are kept in")
    one_session(srv, "stored")
    assert [r["agent"] for r in wait_rows(srv, 1, "other.db")] == ["stored"]
    assert len(records(srv)) == 2
    src.stop()
