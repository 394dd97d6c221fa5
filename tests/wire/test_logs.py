# SPDX-License-Identifier: GPL-2.0-or-later
"""The log files: rotation by size, secrets kept out, UTF-8, reopening after privileges drop.

Covers: <logsize> (KB) renames a full log to <name>.old (replacing the last one) and starts a
new one; with <logarchive>1 to <name>.YYYYMMDD_HHMMSS as Icecast names them; SIGHUP after a
rotation reopens the new file; pass= and password= query values never reach the access log;
a UTF-8 title set through /admin/metadata is written to the error log as UTF-8; started as
root with <changeowner>, the server can reopen its logs on SIGHUP (they belong to the user it
runs as) and creates them anew after an external rotation.
"""

import os
import pwd
import re
import signal
import time
import urllib.parse

import pytest

import conftest
import wirelib
from conftest import ADMIN_PASSWORD, ADMIN_USER


def start(server, logging_xml="", **cfg):
    srv = server(start=False, **cfg)
    srv.cfg["port"] = conftest.free_port()
    srv.write_config(conftest.render_config(srv.cfg).replace(
        "</logging>", logging_xml + "\n  </logging>"))
    assert srv._spawn(10), srv.diagnostics()
    return srv


def get(srv, path, auth=None):
    extra = "Authorization: %s\r\n" % wirelib.basic_auth(*auth) if auth else ""
    raw = "GET %s HTTP/1.0\r\nHost: x\r\nUser-Agent: log-test\r\n%s\r\n" % (path, extra)
    resp, body = wirelib.simple_request(srv.host, srv.port, raw.encode())
    assert resp is not None
    return resp.status, body


def size(path):
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return -1


@pytest.mark.rimecast_only
def test_logsize_renames_a_full_log_to_old_and_sighup_reopens_the_new_one(server):
    srv = start(server, "<logsize>2</logsize>")
    old = srv.access_log_path + ".old"
    for i in range(40):                       # ~100 bytes a line: past 2 KB
        get(srv, "/nothing-%03d" % i)
    wirelib.wait_until(lambda: os.path.exists(old), 5, "access.log.old")
    assert size(old) > 2048 and size(srv.access_log_path) < 2048
    assert "/nothing-000" in open(old).read()
    first_old = open(old).read()
    for i in range(40, 80):
        get(srv, "/nothing-%03d" % i)
    wirelib.wait_until(lambda: open(old).read() != first_old, 5, "a second rotation")
    assert "/nothing-000" not in open(old).read()            # .old replaced, not appended
    assert sorted(n for n in os.listdir(srv.logdir) if n.startswith("access.log")) == \
        ["access.log", "access.log.old"]
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    get(srv, "/after-hup")
    srv.wait_log("/after-hup", log="access")
    assert "/after-hup" not in open(old).read()
    assert size(srv.error_log_path) > 0


@pytest.mark.rimecast_only
def test_logarchive_adds_a_timestamp_instead_of_old(server):
    srv = start(server, "<logsize>1</logsize><logarchive>1</logarchive>")
    for i in range(30):
        get(srv, "/archive-%03d" % i)

    def archived():
        return [n for n in os.listdir(srv.logdir)
                if re.fullmatch(r"access\.log\.\d{8}_\d{6}(\.\d+)?", n)]
    names = wirelib.wait_until(archived, 5, "an archived access log")
    assert not os.path.exists(srv.access_log_path + ".old")
    stamp = names[0].split(".")[2]
    assert abs(time.mktime(time.strptime(stamp, "%Y%m%d_%H%M%S")) - time.time()) < 120
    assert "/archive-000" in "".join(open(os.path.join(srv.logdir, n)).read() for n in names)


def test_passwords_in_query_strings_are_redacted_in_the_access_log(server):
    srv = start(server)
    get(srv, "/admin.cgi?pass=sekrit-one&mode=updinfo&mount=/x&song=hello")
    get(srv, "/status.xsl?mount=/x&password=sekrit-two")
    get(srv, "/status.xsl?PASS=sekrit-three&p%61ss=sekrit-four")
    srv.wait_log("PASS=", log="access")
    log = srv.access_log()
    assert "sekrit" not in log, log
    assert "/admin.cgi?pass=<redacted>&mode=updinfo&mount=/x&song=hello" in log, log
    assert "password=<redacted>" in log and "PASS=<redacted>&p%61ss=<redacted>" in log, log


def test_utf8_title_is_written_as_utf8_in_the_error_log(server, data):
    srv = start(server)
    src = srv.source("/utf8.mp3", data, rate=128 * 1024)
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(8192, 5)
        title = "Café – Ünïcode ♫ \"q\""
        status, body = get(srv, "/admin/metadata?mode=updinfo&mount=/utf8.mp3&song="
                           + urllib.parse.quote(title), auth=(ADMIN_USER, ADMIN_PASSWORD))
        assert status == 200, body
        srv.wait_log("metadata of /utf8.mp3 set to")
        line = [ln for ln in srv.error_log().splitlines() if "metadata of /utf8.mp3" in ln][0]
        assert 'set to "Café – Ünïcode ♫ "q""' in line, line
    finally:
        src.stop()


def owner(path):
    return pwd.getpwuid(os.stat(path).st_uid).pw_name


@pytest.mark.rimecast_only
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start as root and drop to nobody")
def test_started_as_root_the_logs_can_be_reopened_as_nobody(server):
    srv = start(server)
    srv.wait_log("running as user nobody")
    assert owner(srv.error_log_path) == "nobody" and owner(srv.access_log_path) == "nobody"
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    assert "cannot open the" not in srv.stderr(), srv.stderr()
    # an external rotation: the files moved away, SIGHUP makes new ones (as nobody)
    os.rename(srv.error_log_path, srv.error_log_path + ".1")
    os.rename(srv.access_log_path, srv.access_log_path + ".1")
    srv.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: "config reloaded" in srv.error_log(), 5, "a new error.log")
    get(srv, "/after-rotation")
    srv.wait_log("/after-rotation", log="access")
    assert owner(srv.error_log_path) == "nobody"
    assert "cannot open the" not in srv.stderr(), srv.stderr()
