# SPDX-License-Identifier: GPL-2.0-or-later
"""No config setting is silently ignored.

A setting the server does not implement yet either stops the start (when
ignoring it would open access; none is left at present), also on SIGHUP reload,
or is warned about once in the error log and listed on the admin pages
(/admin/stats, /admin/stats.json, /admin/stats.xsl). A broken reload keeps the
running config and its warnings.
"""

import json
import re
import shutil
import signal

import pytest

import adminlib
import wirelib
from conftest import free_port, run_config

pytestmark = pytest.mark.rimecast_only

# a setting warned about for good (it does nothing in Icecast 2.4 either)
# No setting is waiting for an implementation at present: a deprecated one warns the same way.
WARNED = "<limits><threadpool>4</threadpool></limits>"
WARNED_MSG = "<threadpool> in <limits> is deprecated"
WARNED_SETTING = "threadpool"


def _line_of(srv, needle):
    """The line of the last occurrence (the extra XML comes after the generated part)."""
    text = open(srv.config_path).read()
    return [i + 1 for i, ln in enumerate(text.splitlines()) if needle in ln][-1]


def test_disabled_values_of_refused_settings_start(server):
    srv = server(extra_xml="<listen-socket><port>%d</port><ssl>0</ssl></listen-socket>"
                 "<mount><mount-name>/m</mount-name><no-mount>0</no-mount>"
                 "<max-listener-duration>0</max-listener-duration></mount>" % free_port())
    r = adminlib.admin(srv, "/admin/stats")
    assert r.status == 200
    assert r.xml().find("config-warnings") is None
    assert "not supported yet" not in srv.error_log()


def test_a_warned_setting_warns_once_and_the_admin_pages_show_it(server):
    # the setting twice, one warning; a mount name with markup checks the escaping on every page
    srv = server(extra_xml=WARNED + "\n" + WARNED.replace("4", "5") + "\n"
                 "<mount><mount-name>/x&lt;y&amp;z</mount-name></mount>\n"
                 "<mount><mount-name>/x&lt;y&amp;z</mount-name></mount>")
    line = [i + 1 for i, ln in enumerate(open(srv.config_path).read().splitlines())
            if "<threadpool>" in ln][0]
    wirelib.wait_until(lambda: WARNED_MSG in srv.error_log(), 5, "the warning in the error log")
    log = srv.error_log()
    assert log.count(WARNED_MSG) == 1, log
    assert "%s:%d: %s" % (srv.config_path, line, WARNED_MSG) in log, log

    r = adminlib.admin(srv, "/admin/stats")
    assert r.status == 200
    warnings = r.xml().findall("config-warnings/warning")
    found = [w for w in warnings if w.findtext("setting") == WARNED_SETTING]
    assert len(found) == 1, r.body
    assert found[0].findtext("line") == str(line)
    assert found[0].findtext("file") == srv.config_path
    assert "deprecated" in found[0].findtext("message")
    twice = [w for w in warnings if w.findtext("setting") == "mount-name"]
    assert len(twice) == 1 and "/x<y&z" in twice[0].findtext("message"), r.body

    j = adminlib.admin(srv, "/admin/stats.json")
    assert j.status == 200
    doc = json.loads(j.body.decode("utf-8"))
    listed = doc["icestats"]["config-warnings"]["warning"]
    assert isinstance(listed, list) and len(listed) == len(warnings)
    assert {"setting": WARNED_SETTING, "file": srv.config_path, "line": line,
            "message": found[0].findtext("message")} in listed

    page = adminlib.admin(srv, "/admin/stats.xsl")
    assert page.status == 200
    html = page.body.decode("utf-8")
    assert 'class="notice bad config-warnings"' in html, html
    assert 'data-setting="%s"' % WARNED_SETTING in html, html
    assert "&lt;threadpool&gt; in &lt;limits&gt; is deprecated" in html
    assert "/x<y&z" not in html and "/x&lt;y&amp;z" in html


def test_one_warning_is_still_a_list_in_json(server):
    srv = server(extra_xml=WARNED)
    doc = adminlib.admin(srv, "/admin/stats.json").json()
    listed = doc["icestats"]["config-warnings"]["warning"]
    assert isinstance(listed, list) and len(listed) == 1
    assert listed[0]["setting"] == WARNED_SETTING


def test_clean_config_has_no_warning(server):
    srv = server()
    r = adminlib.admin(srv, "/admin/stats")
    assert r.xml().find("config-warnings") is None, r.body
    assert "config-warnings" not in adminlib.admin(srv, "/admin/stats.json").json()["icestats"]
    assert "config-warnings" not in adminlib.admin(srv, "/admin/stats.xsl").body.decode()
    assert "not supported yet" not in srv.error_log()
    # the public status document never carries them
    srv2 = server(extra_xml=WARNED)
    pub = adminlib.request(srv2, "/status-json.xsl")
    assert pub.status == 200 and b"config-warnings" not in pub.body


def test_reload_with_a_broken_config_keeps_the_running_config(server):
    srv = server(extra_xml=WARNED)
    srv.write_config(extra_xml="<limits><queue-size>lots</queue-size></limits>")
    srv.send_signal(signal.SIGHUP)
    srv.wait_log("reload failed")
    assert "queue-size" in srv.error_log()
    assert srv.is_alive()
    # still the old config: its warning is what the admin page lists
    r = adminlib.admin(srv, "/admin/stats")
    assert [w.findtext("setting") for w in r.xml().findall("config-warnings/warning")] == [WARNED_SETTING]
    # a reload to an accepted config replaces the list
    srv.write_config(extra_xml="")
    srv.send_signal(signal.SIGHUP)
    wirelib.wait_until(lambda: adminlib.admin(srv, "/admin/stats").xml()
                       .find("config-warnings") is None, 5, "the warnings to go")


def test_an_unknown_htpasswd_option_stops_the_start_with_its_file_and_line():
    # a misspelt access option (here the duplicate-login rule) must not be dropped silently
    code, out, srv = run_config(
        "<mount><mount-name>/m</mount-name>\n<authentication type=\"htpasswd\">\n"
        "<option name=\"filename\" value=\"users\"/>\n"
        "<option name=\"allow_duplicate_user\" value=\"0\"/>\n</authentication></mount>")
    try:
        assert code not in (None, 0), out
        line = _line_of(srv, '<authentication type="htpasswd">')
        assert ('%s:%d: <authentication type="htpasswd"> has an unknown option '
                '"allow_duplicate_user"' % (srv.config_path, line)) in out, out
    finally:
        shutil.rmtree(srv.dir, ignore_errors=True)
