# SPDX-License-Identifier: GPL-2.0-or-later
"""The files the server writes (error, access and playlist logs, dump files, the pidfile) are
opened as root before privileges are dropped, in directories the service user (nobody) may
write: a link planted there must lead the server to no other file. Each case plants a link to
a file of root's (mode 0600) outside; the server must neither write it nor give it away, and
must say why: a log it cannot open refuses the start (error and access logs, on stderr) or is
logged (playlist log, dump file, pidfile). On SIGHUP, logs that cannot be opened refuse the
reload, said in the error log in use."""

import os
import pwd
import signal
import stat
import subprocess
import tempfile

import pytest

import adminlib
import wirelib
from conftest import BINARY, free_port, render_config

pytestmark = [
    pytest.mark.rimecast_only,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start as root and drop to nobody"),
]

PRECIOUS = b"root's own file\n"
NOBODY = pwd.getpwnam("nobody")


@pytest.fixture
def precious():
    """A file of root's, mode 0600, outside every server directory."""
    d = tempfile.mkdtemp(prefix="outside-")
    os.chmod(d, 0o755)
    path = os.path.join(d, "precious")
    with open(path, "wb") as f:
        f.write(PRECIOUS)
    os.chown(path, 0, 0)
    os.chmod(path, 0o600)
    yield path
    os.unlink(path)
    os.rmdir(d)


def assert_untouched(path):
    st = os.stat(path)
    with open(path, "rb") as f:
        assert f.read() == PRECIOUS, "the link's target was written"
    assert (st.st_uid, st.st_gid) == (0, 0), "the link's target was given away"
    assert stat.S_IMODE(st.st_mode) == 0o600


def plant_symlink(target, link):
    os.symlink(target, link)
    os.lchown(link, NOBODY.pw_uid, NOBODY.pw_gid)  # as the service user would have made it


def configured(server, logging_xml="", mount_xml=""):
    srv = server(start=False)
    srv.cfg["extra_xml"] = mount_xml
    srv.cfg["port"] = free_port()
    srv.write_config(render_config(srv.cfg).replace("</logging>", logging_xml + "</logging>"))
    return srv


def start_refused(srv):
    """Runs the server on its config, which it should refuse at once: (exit code, stderr); the
    code is None when it started instead (stopped then)."""
    p = subprocess.Popen([BINARY, "-c", srv.config_path], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, cwd=srv.dir,
                         stdin=subprocess.DEVNULL)
    try:
        return p.wait(10), p.stderr.read()
    except subprocess.TimeoutExpired:
        p.terminate()
        p.wait(10)
        return None, p.stderr.read()


@pytest.mark.parametrize("name", ["error", "access"])
def test_a_symlink_at_a_log_refuses_the_start(server, precious, name):
    srv = configured(server)
    link = os.path.join(srv.logdir, name + ".log")
    plant_symlink(precious, link)
    code, err = start_refused(srv)
    assert_untouched(precious)
    assert os.path.islink(link)
    assert code == 1
    assert "cannot open the %s log %s: it is a symbolic link" % (name, link) in err, err


def test_a_hard_link_at_the_error_log_is_neither_written_nor_given_away(server, precious):
    srv = configured(server)
    link = os.path.join(srv.logdir, "error.log")
    os.link(precious, link)  # what nobody can do where hard links to others' files are allowed
    code, err = start_refused(srv)
    assert_untouched(precious)
    assert code == 1
    assert "cannot open the error log %s: it is not a plain file with a single link" % link in err


def test_a_symlinked_directory_the_service_user_planted_is_not_followed(server, precious):
    """The log directory is reached through a link nobody put in its own directory: opening as
    nobody fails (the target directory is root's, 0700), and root does not follow it."""
    outside = os.path.dirname(precious)
    os.chmod(outside, 0o700)
    srv = server(start=False)
    srv.cfg["port"] = free_port()
    sub = os.path.join(srv.logdir, "sub")  # srv.logdir belongs to nobody
    plant_symlink(outside, sub)
    os.rename(precious, os.path.join(outside, "error.log"))
    try:
        srv.write_config(render_config(srv.cfg).replace(
            "<logdir>%s</logdir>" % srv.logdir, "<logdir>%s</logdir>" % sub))
        code, err = start_refused(srv)
        assert_untouched(os.path.join(outside, "error.log"))
        assert not os.path.exists(os.path.join(outside, "access.log"))
        assert code == 1
        assert "a directory on its path is a symbolic link" in err, err
    finally:
        os.rename(os.path.join(outside, "error.log"), precious)


def test_a_symlink_at_the_playlist_log_is_logged_and_not_followed(server, precious):
    srv = configured(server, "<playlistlog>playlist.log</playlistlog>")
    link = os.path.join(srv.logdir, "playlist.log")
    plant_symlink(precious, link)
    assert srv._spawn(10), srv.diagnostics()
    srv.wait_log("running as user nobody")
    assert_untouched(precious)
    srv.wait_log("cannot open the playlist log %s: it is a symbolic link" % link)


def test_a_symlink_at_a_dump_file_is_logged_and_not_followed(server, precious):
    srv = server(start=False)
    link = os.path.join(srv.logdir, "rec.mp3")
    srv.cfg["extra_xml"] = ("<mount><mount-name>/rec.mp3</mount-name><dump-file>%s</dump-file>"
                            "</mount>" % link)
    plant_symlink(precious, link)
    srv.start()
    src = srv.source("/rec.mp3", wirelib.make_data(64 << 10), loop=True)
    assert src.connect().status == 200
    src.start()
    try:
        srv.wait_log("dump file %s of /rec.mp3: cannot open: it is a symbolic link" % link)
        assert_untouched(precious)
    finally:
        src.stop()
    assert_untouched(precious)


def test_a_symlink_at_the_pidfile_is_logged_and_not_followed(server, precious):
    srv = server(start=False)
    link = os.path.join(srv.dir, "server.pid")
    plant_symlink(precious, link)
    srv.start()
    srv.wait_log("not writing pidfile %s: it is a symbolic link" % link)
    srv.stop()
    assert os.path.islink(link)
    assert_untouched(precious)


def test_logs_in_the_service_users_directory_are_its_own(server):
    """The control: with nothing planted the logs are created by nobody, reopened on SIGHUP."""
    srv = server()
    srv.wait_log("running as user nobody")
    for path in (srv.error_log_path, srv.access_log_path):
        assert os.stat(path).st_uid == NOBODY.pw_uid


def test_a_reload_whose_logs_cannot_be_opened_is_refused_and_says_why(server):
    """SIGHUP with a <logdir> that does not exist: the running config and logs stay, and the
    error log in use says why, like any broken config on reload."""
    srv = server(location="Before")
    srv.wait_log("running as user nobody")
    missing = os.path.join(srv.dir, "no-such-dir")
    srv.write_config(render_config(dict(srv.cfg, location="After")).replace(
        "<logdir>%s</logdir>" % srv.logdir, "<logdir>%s</logdir>" % missing))
    os.kill(srv.pid, signal.SIGHUP)
    srv.wait_log("reload failed, keeping the running config: cannot open the error log %s/"
                 "error.log: No such file or directory" % missing)
    assert "config reloaded" not in srv.error_log()
    doc = adminlib.admin(srv, "/admin/stats").xml()
    assert doc.findtext("location") == "Before"
    # the logs in use still take lines; a good config reloads again
    srv.write_config(render_config(dict(srv.cfg, location="After")))
    os.kill(srv.pid, signal.SIGHUP)
    srv.wait_log("config reloaded")
    assert adminlib.admin(srv, "/admin/stats").xml().findtext("location") == "After"
    srv.wait_log("/admin/stats", log="access")
    assert not os.path.exists(missing)
