# SPDX-License-Identifier: GPL-2.0-or-later
"""The pidfile: written as root before privileges are dropped, so it must never follow a
symlink planted at its path, and it must not outlive the server."""

import os
import pwd
import tempfile

import pytest

import wirelib
from conftest import Server, render_config

pytestmark = pytest.mark.rimecast_only


class PidfileServer(Server):
    """A server whose <pidfile> is `pidfile` instead of the default one in its directory."""

    def __init__(self, pidfile, **cfg):
        super().__init__(**cfg)
        self.pidfile = pidfile

    def write_config(self, text=None, **changes):
        self.cfg.update(changes)
        if text is None:
            default = "<pidfile>%s/server.pid</pidfile>" % self.dir
            text = render_config(self.cfg).replace(default, "<pidfile>%s</pidfile>" % self.pidfile)
        super().write_config(text)


def nobody_dir(parent):
    """A directory the service user (nobody) may write: where a pidfile can be removed."""
    d = tempfile.mkdtemp(prefix="run-", dir=parent)
    nobody = pwd.getpwnam("nobody")
    os.chown(d, nobody.pw_uid, nobody.pw_gid)
    os.chmod(d, 0o755)
    return d


def test_pidfile_symlink_is_not_followed(server):
    outside = tempfile.mkdtemp(prefix="outside-")
    target = os.path.join(outside, "precious.txt")
    with open(target, "w") as f:
        f.write("precious\n")
    srv = server(start=False)
    link = os.path.join(srv.dir, "server.pid")
    os.symlink(target, link)
    srv.start()
    try:
        srv.wait_log("not writing pidfile")
        assert "symbolic link" in srv.error_log()
        with open(target) as f:
            assert f.read() == "precious\n", "the symlink's target was overwritten"
        assert os.path.islink(link)
    finally:
        srv.stop()
        with open(target) as f:
            assert f.read() == "precious\n"
        os.unlink(target)
        os.rmdir(outside)


def test_pidfile_hard_link_is_refused(server):
    srv = server(start=False)
    target = os.path.join(srv.dir, "other.txt")
    with open(target, "w") as f:
        f.write("other\n")
    os.link(target, os.path.join(srv.dir, "server.pid"))
    srv.start()
    srv.wait_log("not writing pidfile")
    with open(target) as f:
        assert f.read() == "other\n"


def test_pidfile_written_then_removed_on_sigterm(server):
    tmp = tempfile.mkdtemp(prefix="pid-")
    os.chmod(tmp, 0o755)
    run = nobody_dir(tmp)
    path = os.path.join(run, "rimecast.pid")
    srv = PidfileServer(path)
    srv.start()
    try:
        pid = wirelib.wait_until(lambda: open(path).read().strip() if os.path.exists(path) else "",
                                 5, "pidfile")
        assert int(pid) == srv.pid
    finally:
        code = srv.stop()
    assert code == 0
    assert not os.path.exists(path), "pidfile left behind after SIGTERM"
    os.rmdir(run)
    os.rmdir(tmp)


def test_pidfile_unremovable_is_emptied(server):
    """Its directory is root's: the server, running as nobody by then, cannot remove it, so it
    empties it rather than leave a stale pid."""
    srv = server()
    path = os.path.join(srv.dir, "server.pid")
    assert int(open(path).read()) == srv.pid
    assert srv.stop() == 0
    assert not os.path.exists(path) or open(path).read() == ""
