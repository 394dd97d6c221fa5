# SPDX-License-Identifier: GPL-2.0-or-later
"""The ad break button on a mount's admin page, in a real headless Chromium at 360 and
1280 px: shown for a mount with an ad server only, it fits the window, and submitting it
(without JavaScript, as the page's plain form) starts a break of the length typed in: the ad
server is asked with that duration and the answer page says so. Needs chromium, chromedriver
and python3-selenium; skipped without them.
"""

import pytest

import adserver
import webuilib
import wirelib
from test_webui import AUTH, browsers, station  # noqa: F401 (fixtures)
from test_webui_mobile import check_fits, emulate

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]


@pytest.fixture
def ads():
    a = adserver.AdServer()
    yield a
    a.close()


@pytest.mark.parametrize("size", [(360, 740), (1280, 800)], ids=["360px", "1280px"])
def test_the_ad_break_button_fits_and_starts_a_break(station, browsers, ads, size):
    ads.answer = lambda path, query: (200, "application/xml", b'<VAST version="4.0"/>')
    xml = ('<mount type="normal"><mount-name>/live.mp3</mount-name><ads><vast-url>%s'
           '</vast-url><allow-private>1</allow-private></ads></mount>'
           % ads.url("/vast?d={duration}"))
    st = station({"/live.mp3": {}, "/plain.mp3": {}}, extra_xml=xml)
    st.listen("/live.mp3")
    b = browsers(js=False, auth=AUTH)
    emulate(b, *size)
    b.get(st.url("/admin/stats.xsl?mount=/plain.mp3"))
    assert not b.find("form.adbreak")                     # no ad server: no button
    b.get(st.url("/admin/stats.xsl?mount=/live.mp3"))
    form = b.one("form.adbreak")
    assert check_fits(b, "adbreak", size[0]) == ""
    field = form.find_element("css selector", "input[name=duration]")
    field.clear()
    field.send_keys("7")
    form.find_element("css selector", "button").click()
    b.wait(lambda: "Ad break started" in b.html, 10, "the answer page")
    wirelib.wait_until(lambda: ads.of("/vast"), 10, "the ad server asked")
    assert ads.of("/vast")[0].params["d"] == "7"
    assert check_fits(b, "adbreak-answer", size[0]) == ""
