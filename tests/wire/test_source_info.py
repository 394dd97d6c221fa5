# SPDX-License-Identifier: GPL-2.0-or-later
"""What listeners are told about the stream from the source's headers, as Icecast 2.4 does.

Covers: icy-br from ice-bitrate, from icy-br, and from the bitrate= key of ice-audio-info
(ice-bitrate= too, as libshout sends it), sent once; ice-audio-info itself passed on. Runs against icecast2 as well (RIMECAST_BIN=icecast2).
"""

import pytest

CASES = [
    ({"ice-bitrate": "128"}, "128", None),
    ({"icy-br": "96"}, "96", None),
    ({"ice-audio-info": "bitrate=64"}, "64", "bitrate=64"),
    ({"ice-audio-info": "ice-samplerate=44100;ice-bitrate=160;ice-channels=2"}, "160",
     "ice-samplerate=44100;ice-bitrate=160;ice-channels=2"),
    ({"ice-audio-info": "samplerate=44100;channels=2"}, None, "samplerate=44100;channels=2"),
    # Icecast 2.4 sends icy-br twice here (64 then 128); one header, the explicit one, is right
    pytest.param({"ice-bitrate": "128", "ice-audio-info": "bitrate=64"}, "128", "bitrate=64",
                 marks=pytest.mark.rimecast_only),
]


def head_values(resp, name):
    return [v for k, v in resp.headers if k.lower() == name]


@pytest.mark.parametrize("headers,icy_br,audio_info", CASES,
                         ids=["ice-bitrate", "icy-br", "audio-info-bitrate",
                              "audio-info-ice-bitrate", "audio-info-no-bitrate", "both"])
def test_listener_gets_icy_br_from_the_source_headers(server, data, headers, icy_br, audio_info):
    srv = server()
    src = srv.source("/info.mp3", data, rate=128 * 1024, headers=headers)
    assert src.connect().status == 200
    src.start()
    try:
        src.wait_sent(16384, 5)
        lis = srv.listener("/info.mp3")
        resp = lis.open()
        assert resp.status == 200
        lis.close()
        assert head_values(resp, "icy-br") == ([icy_br] if icy_br else []), resp.raw
        assert head_values(resp, "ice-audio-info") == ([audio_info] if audio_info else []), \
            resp.raw
    finally:
        src.stop()
