# SPDX-License-Identifier: GPL-2.0-or-later
"""A webroot or adminroot the running server cannot read (missing, or closed to the user it
drops to) is named in the error log once at start-up, with its path: without it, "/" and
"/admin/" are bare 404s and nothing says why."""

import os
import signal

import pytest

from conftest import ADMIN_PASSWORD, ADMIN_USER
from wirelib import basic_auth, simple_request, wait_until

pytestmark = pytest.mark.rimecast_only

STARTED = "started with"


def get(srv, path, auth=False):
    head = "GET %s HTTP/1.0\r\nHost: x\r\n" % path
    if auth:
        head += "Authorization: %s\r\n" % basic_auth(ADMIN_USER, ADMIN_PASSWORD)
    return simple_request(srv.host, srv.port, (head + "\r\n").encode())[0]


def started_log(srv):
    wait_until(lambda: STARTED in srv.error_log(), 5, "the start-up line")
    return srv.error_log()


def root_warnings(log):
    return [line for line in log.splitlines() if "<webroot>" in line or "<adminroot>" in line]


def test_missing_webroot_and_adminroot_are_named_once_at_start_up(server):
    srv = server(start=False)
    web, adm = os.path.join(srv.dir, "no-web"), os.path.join(srv.dir, "no-admin")
    srv.cfg.update(webroot=web, adminroot=adm)
    srv.start()
    warnings = root_warnings(started_log(srv))
    assert len(warnings) == 2, warnings
    assert "<webroot> %s: No such file or directory" % web in warnings[0]
    assert "<adminroot> %s: No such file or directory" % adm in warnings[1]
    assert all("WARN" in w for w in warnings)
    assert get(srv, "/").status == 404
    assert get(srv, "/admin/", auth=True).status == 404
    assert len(root_warnings(srv.error_log())) == 2  # requests do not repeat it


def test_a_webroot_the_service_user_cannot_read_is_named(server):
    if os.geteuid() != 0:
        pytest.skip("needs root: the server drops to nobody")
    srv = server(start=False)
    web = os.path.join(srv.dir, "web")
    os.mkdir(web, 0o700)  # root's only, as a checkout in a home folder closed to others
    srv.cfg.update(webroot=web)
    srv.start()
    warnings = root_warnings(started_log(srv))
    assert len(warnings) == 1 and "<webroot> %s: Permission denied" % web in warnings[0], warnings


def test_readable_roots_give_no_warning(server):
    srv = server()
    assert root_warnings(started_log(srv)) == []
    assert get(srv, "/admin/", auth=True).status == 200


def test_reload_names_a_webroot_that_went_missing(server):
    srv = server()
    started_log(srv)
    web = os.path.join(srv.dir, "gone")
    srv.write_config(webroot=web)
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("config reloaded")
    warnings = root_warnings(srv.error_log())
    assert len(warnings) == 1 and "<webroot> %s:" % web in warnings[0], warnings
