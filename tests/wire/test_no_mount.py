# SPDX-License-Identifier: GPL-2.0-or-later
"""<no-mount>1: a mount listeners cannot open directly (403), still served as a fallback."""

import wirelib

DATA = wirelib.make_data(256 * 1024, seed=5)


def test_no_mount_refuses_direct_listeners_but_serves_as_fallback(server):
    srv = server(mounts=[{"mount_name": "/inner", "no_mount": 1},
                         {"mount_name": "/outer", "fallback_mount": "/inner"}])
    src = srv.source("/inner", DATA)
    assert src.connect().status == 200
    src.start()
    wirelib.wait_until(lambda: src.sent > 32 * 1024, 5, "source data")
    direct = srv.listener("/inner")
    resp = direct.open()
    assert resp is None or resp.status == 403, resp
    direct.close()
    # /outer has no source: its listeners are served the fallback, /inner
    via = srv.listener("/outer")
    resp = via.open()
    assert resp.status == 200, resp
    via.wait_bytes(16 * 1024, 5)
    body = via.snapshot()
    wirelib.locate_slice(DATA, body[-8192:])
    via.close()
    src.stop()
