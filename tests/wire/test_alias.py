# SPDX-License-Identifier: GPL-2.0-or-later
"""<alias source= destination= [port=] [bind-address=]>: an exact rewrite of the request path,
limited to one port and to one local address when those are given."""

import wirelib

ALIASES = ('<paths><alias source="/here" destination="/status-json.xsl" bind-address="127.0.0.1"/>'
           '<alias source="/elsewhere" destination="/status-json.xsl" bind-address="127.0.0.2"/>'
           '<alias source="/anyaddr" destination="/status-json.xsl"/></paths>')


def get(srv, path):
    raw = ("GET %s HTTP/1.0\r\n\r\n" % path).encode()
    return wirelib.simple_request(srv.host, srv.port, raw)


def test_alias_applies_on_its_bind_address_only(server):
    srv = server(extra_xml=ALIASES)
    for path, want in (("/here", 200), ("/anyaddr", 200), ("/elsewhere", 404)):
        resp, body = get(srv, path)
        assert resp.status == want, (path, resp)
        if want == 200:
            assert b'"icestats"' in body
    assert "not supported" not in srv.error_log()
