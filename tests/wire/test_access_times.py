# SPDX-License-Identifier: GPL-2.0-or-later
"""The access log's time: a line is written when the connection ends and stamped with that
moment, as Icecast does; its last field is how long the connection lasted. So a log reader
gets each session's start as stamp - duration, and the lines come in the order of their
stamps."""

import datetime
import re
import time

import wirelib

LINE = re.compile(r'^\S+ - \S+ \[([^\]]+)\] "GET /live\.mp3 HTTP/1\.0" 200 \d+ "([^"]*)" '
                  r'"[^"]*" (\d+)$')


def sessions(srv):
    """(stamp, referer, duration) of each /live.mp3 listener line, in file order."""
    out = []
    for line in srv.access_log().splitlines():
        m = LINE.match(line)
        if m:
            stamp = datetime.datetime.strptime(m.group(1), "%d/%b/%Y:%H:%M:%S %z").timestamp()
            out.append((stamp, m.group(2), int(m.group(3))))
    return out


def test_access_lines_are_stamped_when_the_connection_ends(server):
    srv = server()
    src = srv.source("/live.mp3", wirelib.make_data(1 << 20), rate=32 * 1024, loop=True)
    assert src.connect().status == 200
    src.start()
    src.wait_sent(8192, 5)
    connected = {}

    def join(name):
        lis = srv.listener("/live.mp3", headers={"Referer": "http://%s/" % name})
        connected[name] = time.time()
        assert lis.open().status == 200
        lis.wait_bytes(1024, 5)
        return lis

    def leave(lis, name):
        lis.close()
        wirelib.wait_until(lambda: any(r.startswith("http://%s/" % name)
                                       for _, r, _ in sessions(srv)), 5, name + "'s line")

    try:
        long_one = join("long")
        time.sleep(1.5)  # the sessions' lengths are what is measured: they must last
        short_one = join("short")
        time.sleep(1.5)
        leave(short_one, "short")
        time.sleep(1.5)
        leave(long_one, "long")
    finally:
        src.stop()
    lines = sessions(srv)
    assert [r for _, r, _ in lines] == ["http://short/", "http://long/"], lines
    for stamp, referer, duration in lines:
        name = referer[len("http://"):-1]
        assert abs(stamp - duration - connected[name]) <= 2, (name, stamp, duration, connected)
    assert lines[1][2] >= 4 and lines[0][2] <= 3, lines
    assert lines[0][0] <= lines[1][0], "lines out of the order of their stamps: %r" % lines
