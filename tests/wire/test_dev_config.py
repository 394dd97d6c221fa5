# SPDX-License-Identifier: GPL-2.0-or-later
"""conf/rimecast-dev.xml, the config README gives for running from the source tree: it starts
without an error or a warning (no log folder is needed), serves, and says where session
records go; and an audience store that cannot be opened says truly where sessions are
recorded (in the session log only, or nowhere). Rimecast only: its own config."""

import os
import re
import socket
import subprocess
import tempfile

import pytest

import conftest
import wirelib

pytestmark = pytest.mark.rimecast_only


def run_briefly(config_text, cwd, until):
    """Runs the server on config_text from cwd until `until`(port, stderr so far) is true or
    10 s passed, then stops it: its standard error."""
    port = conftest.free_port()
    text = re.sub(r"<port>\d+</port>", "<port>%d</port>" % port, config_text, count=1)
    d = tempfile.mkdtemp(dir=conftest.run_dir())
    os.chmod(d, 0o755)
    path, errpath = os.path.join(d, "dev.xml"), os.path.join(d, "stderr.txt")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o644)

    def stderr_text():
        with open(errpath, errors="replace") as f:
            return f.read()
    with open(errpath, "wb") as errf:
        p = subprocess.Popen([conftest.BINARY, "-c", path], cwd=cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=errf)
    try:
        wirelib.wait_until(lambda: p.poll() is not None or until(port, stderr_text()), 10,
                           "the server")
    finally:
        p.terminate()
        p.wait(10)
    return stderr_text()


def serves(port):
    try:
        with socket.create_connection(("127.0.0.1", port), 1) as s:
            s.sendall(b"GET /status-json.xsl HTTP/1.0\r\n\r\n")
            return s.recv(12).startswith(b"HTTP/1.")
    except OSError:
        return False


def test_the_dev_config_starts_from_the_source_tree_without_errors_or_warnings():
    with open(os.path.join(conftest.SRCDIR, "conf", "rimecast-dev.xml")) as f:
        text = f.read()
    err = run_briefly(text, conftest.SRCDIR, lambda port, _: serves(port))
    assert "started with" in err, err
    bad = [l for l in err.splitlines() if re.search(r"\] (EROR|WARN) ", l)]
    assert bad == [], bad


@pytest.mark.parametrize("session_log", ["-", "none"])
def test_a_store_that_cannot_be_opened_says_where_sessions_are_recorded(session_log):
    d = tempfile.mkdtemp(dir=conftest.run_dir())
    os.chmod(d, 0o755)
    text = ("<icecast><listen-socket><port>1</port></listen-socket>"
            "<authentication><admin-password>x</admin-password></authentication>"
            "<paths><logdir>%s</logdir></paths>"
            "<logging><errorlog>-</errorlog><accesslog>-</accesslog></logging>"
            "<audience><session-log>%s</session-log>"
            "<database>no-such-folder/audience.db</database></audience>"
            "<security><changeowner><user>nobody</user><group>nogroup</group></changeowner>"
            "</security></icecast>" % (d, session_log))
    err = run_briefly(text, d, lambda port, err: "audience store" in err)
    line = [l for l in err.splitlines() if "audience store: cannot use" in l]
    assert line, err
    if session_log == "-":
        assert "sessions are recorded in the session log only" in line[0], line
    else:
        assert "sessions are recorded nowhere" in line[0], line
