# SPDX-License-Identifier: GPL-2.0-or-later
"""The listeners table of a mount (/admin/listclients.xsl) in a real Chromium at 1280 and 360 px:
the Kick cell of each row is that row's cell, top and bottom (its lines are the row's lines),
as served and as admin.js rebuilds the rows live. The other tables with an actions cell (the
mounts, the move destinations, a mount's users) too. At 360 px each row is a card and its
buttons sit inside it. Screenshots under $TMPDIR (test_webui_mobile.shots_dir).
"""

import os

import pytest

import webuilib
from test_webui import AUTH, browsers, settle, station  # noqa: F401 (fixtures)
from test_webui_mobile import emulate, shoot, shots_dir

_missing = webuilib.missing_requirements()
pytestmark = [pytest.mark.skipif(_missing is not None, reason=_missing or ""),
              pytest.mark.rimecast_only]

AGENTS = ("VLC/3.0.20 LibVLC/3.0.20",
          "Mozilla/5.0 (Linux; Android 14; Pixel 8 Pro) AppleWebKit/537.36 (KHTML, like Gecko) "
          "Chrome/121.0.6167.178 Mobile Safari/537.36",
          "Lavf/60.16.100")

# For each row of a data table with an actions cell: the row's rect, each cell's rect and the
# line under it, and the rect of each button in the actions cell.
ROWS_JS = """
function box(e) { var r = e.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; }
var rows = Array.prototype.filter.call(document.querySelectorAll("table.data tbody tr"),
  function (tr) { return tr.querySelector("td.actions"); });
return rows.map(function (tr) {
  return {row: box(tr),
          cells: Array.prototype.map.call(tr.cells, function (td) {
            return {cls: td.className, box: box(td), display: getComputedStyle(td).display,
                    line: getComputedStyle(td).borderBottomWidth}; }),
          buttons: Array.prototype.map.call(tr.querySelectorAll("td.actions button, td.actions a"), box)};
});
"""


def misaligned(rows, width):
    """What is out of line in the rows ([] when all is well)."""
    bad = []
    for i, r in enumerate(rows):
        kick = [c for c in r["cells"] if c["cls"] == "actions"]
        if len(kick) != 1:
            bad.append("row %d: %d actions cells" % (i, len(kick)))
            continue
        k = kick[0]["box"]
        row = r["row"]
        if width > 720:
            # a table row: every cell, the actions one too, is a table cell spanning the row
            # from top to bottom and draws the same line under it
            for c in r["cells"]:
                if c["display"] != "table-cell":
                    bad.append("row %d: cell %s is display: %s" % (i, c["cls"], c["display"]))
                if abs(c["box"]["top"] - row["top"]) > 0.5 or abs(c["box"]["bottom"] - row["bottom"]) > 0.5:
                    bad.append("row %d: cell %s %r is not the row %r" % (i, c["cls"], c["box"], row))
            lines = {c["line"] for c in r["cells"]}
            if i < len(rows) - 1 and len(lines) != 1:
                bad.append("row %d: lines under the cells differ: %r" % (i, lines))
        else:
            # a card: the actions cell inside the card
            if not (row["top"] <= k["top"] and k["bottom"] <= row["bottom"] + 0.5 and
                    row["left"] <= k["left"] and k["right"] <= row["right"] + 0.5):
                bad.append("row %d: actions cell %r outside its card %r" % (i, k, row))
        if not r["buttons"]:
            bad.append("row %d: no button in the actions cell" % i)
        for b in r["buttons"]:
            if not (k["top"] - 0.5 <= b["top"] and b["bottom"] <= k["bottom"] + 0.5 and
                    k["left"] - 0.5 <= b["left"] and b["right"] <= k["right"] + 0.5):
                bad.append("row %d: button %r outside its cell %r" % (i, b, k))
            if b["right"] > width:
                bad.append("row %d: button %r beyond the window" % (i, b))
    return bad


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_kick_cell_lines_up_with_its_row(station, browsers, size):
    width, height = size
    st = station({"/a.mp3": {}})
    for ua in AGENTS:
        st.listen("/a.mp3", headers={"User-Agent": ua})
    webuilib.wait_listeners(st.srv, "/a.mp3", len(AGENTS))
    b = browsers(js=False, auth=AUTH, width=width, height=height)
    emulate(b, width, height)
    b.get(st.url("/admin/listclients.xsl?mount=/a.mp3"))
    b.wait_rows("tr[data-id]", len(AGENTS))
    rows = b.js_run(ROWS_JS)
    shoot(b, os.path.join(shots_dir(), "listclients-rows-nojs-%d.png" % width))
    assert len(rows) == len(AGENTS) and misaligned(rows, width) == [], rows
    # the rows admin.js rebuilds live are the same
    b = browsers(js=True, auth=AUTH, width=width, height=height)
    emulate(b, width, height)
    b.get(st.url("/admin/listclients.xsl?mount=/a.mp3"))
    settle(b)
    b.wait_rows("tr[data-id]", len(AGENTS))
    rows = b.js_run(ROWS_JS)
    shoot(b, os.path.join(shots_dir(), "listclients-rows-%d.png" % width))
    assert len(rows) == len(AGENTS) and misaligned(rows, width) == [], rows


@pytest.mark.parametrize("size", [(1280, 800), (360, 740)], ids=["1280px", "360px"])
def test_the_actions_cells_of_the_other_tables_line_up(station, browsers, size):
    width, height = size
    st = station({"/a.mp3": {}, "/b.mp3": {}, "/c.mp3": {}})
    b = browsers(js=True, auth=AUTH, width=width, height=height)
    emulate(b, width, height)
    for name, path, count in (("listmounts", "/admin/listmounts.xsl", 3),
                              ("moveclients", "/admin/moveclients.xsl?mount=/a.mp3", 2)):
        b.get(st.url(path))
        b.wait_rows("table.data tbody tr td.actions", count)
        rows = b.js_run(ROWS_JS)
        shoot(b, os.path.join(shots_dir(), "%s-rows-%d.png" % (name, width)))
        assert len(rows) == count and misaligned(rows, width) == [], (name, rows)
