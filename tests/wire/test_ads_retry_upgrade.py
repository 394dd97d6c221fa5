# SPDX-License-Identifier: GPL-2.0-or-later
"""Ad tracking retries across `rimecast --upgrade` (docs/ADS.md, "Counting"; docs/UPGRADE.md):
a tracking URL that failed and waits to be tried again goes to the new process with the state,
which tries it when it is due; the old process forgets it, so it is sent once.

Covers: an impression URL that answers 500 three times is tried the fourth time (and answered)
by the new process after an upgrade in the middle of its retries, exactly four hits in all.
"""

import pytest

import formatlib as fl
import wirelib
from test_ads import adbreak, ads, audio_of, listen, offer, station, wait_spliced  # noqa: F401
from test_ads_upgrade import upgrade_by_command

pytestmark = pytest.mark.rimecast_only      # Icecast has no ad breaks


def test_a_tracking_url_waiting_for_a_retry_is_tried_by_the_new_process(server, ads, tmp_path):
    data = offer(ads, tmp_path, seconds=2)
    hits = lambda: ads.of("/t/a1/impression")       # noqa: E731
    ads.fail["/t/a1/impression"] = 3        # tried at t, t+1, t+3 in vain; the 4th, at t+7, goes
    srv, src = station(server, ads)
    lis = listen(srv)
    assert adbreak(srv, 10).status == 200
    wait_spliced(lis, audio_of(data), after=4096)
    wirelib.wait_until(lambda: len(hits()) >= 2, 15, "the impression's first retry")
    upgrade_by_command(srv)
    before = len(hits())
    assert before < 4, "the retries ended before the upgrade: nothing was left to carry"
    wirelib.wait_until(lambda: len(hits()) >= 4, 15,
                       lambda: "the fourth try, from the new process (%d hits)" % len(hits()))
    assert len(hits()) == 4
    srv.wait_log("1 ad tracking URL to try again taken over", 5)
    wirelib.wait_until(lambda: ads.events("a1").get("complete") == 1, 15, "complete")
    lis.close()
    fl.stop_process(src)
