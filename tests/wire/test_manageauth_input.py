# SPDX-License-Identifier: GPL-2.0-or-later
"""/admin/manageauth refuses a user the htpasswd file could not hold.

A name starting with '#' would be read back as a comment line (the user could never log in,
and the file would hold a line nobody can see in the list), an empty password is no
password, and ':' or a control character (a newline would start a line of its own) break
the "user:hash" line. Each is answered with a message in the XML and HTML views, return 0,
and the file is not rewritten.
"""

import os
import shutil
import urllib.parse

import pytest

import adminlib
from test_auth_htpasswd import MOUNT, auth_mount, md5_line, user_dir, write_users

REFUSED = [
    ("#hidden", "pw", "Invalid user name"),
    ("#", "pw", "Invalid user name"),
    ("a:b", "pw", "Invalid user name"),
    ("a\nb", "pw", "Invalid user name"),
    ("a\rb", "pw", "Invalid user name"),
    ("a\x01b", "pw", "Invalid user name"),
    ("a\x7fb", "pw", "Invalid user name"),
    ("", "pw", "Invalid user name"),
    ("newbie", "", "Empty password"),
]


@pytest.fixture
def users_server(server):
    d = user_dir()
    path = os.path.join(d, "users")
    write_users(path, md5_line("old", "pw"))
    srv = server(mounts=[auth_mount(path)])
    yield srv, path
    shutil.rmtree(d, ignore_errors=True)


def add(srv, user, password, view=""):
    q = urllib.parse.urlencode({"mount": MOUNT, "action": "add", "username": user,
                                "password": password})
    return adminlib.admin(srv, "/admin/manageauth%s?%s" % (view, q))


@pytest.mark.rimecast_only
@pytest.mark.parametrize("user,password,why", REFUSED,
                         ids=["hash", "hash-only", "colon", "newline", "cr", "control",
                              "del", "empty-name", "empty-password"])
def test_manageauth_refuses_names_and_passwords_the_file_cannot_hold(users_server, user,
                                                                     password, why):
    srv, path = users_server
    before = os.stat(path)
    text = open(path).read()
    r = add(srv, user, password)
    assert r.status == 200, r.body
    doc = r.xml()
    assert doc.findtext("iceresponse/return") == "0"
    assert why in doc.findtext("iceresponse/message")
    assert "not added" in doc.findtext("iceresponse/message")
    html = add(srv, user, password, ".xsl")
    assert html.status == 200 and why in html.text
    # the file is not rewritten (same inode: it is replaced by rename when it changes)
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert open(path).read() == text
    users = [u.findtext("username") for u in doc.findall("source/User")]
    assert users == ["old"]
    srv.wait_log("not added on %s" % MOUNT)


@pytest.mark.rimecast_only
def test_manageauth_still_adds_a_name_with_a_hash_inside(users_server):
    srv, path = users_server
    r = add(srv, "dj#2", "pw")
    assert r.xml().findtext("iceresponse/return") == "1", r.body
    assert "dj#2:$6$" in open(path).read()
