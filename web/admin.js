// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * admin.js: live admin pages. Listens to the server-sent events at /admin/events
 * (listener_join, listener_leave, source_connect, source_disconnect, metadata; JSON
 * data) and, on any event, refetches /admin/stats (and /admin/listclients on a
 * listener page) to refresh the numbers, titles and listener rows in place. Falls
 * back to polling when the event stream is unavailable. A failing refresh is shown
 * ("Live updates unavailable: <reason>") and retried with a growing delay. Requests go
 * to location.origin + path: a page opened as http://user:pw@host/ has the credentials
 * in its URL, and fetch refuses URLs that carry them (the browser still sends the
 * page's own credentials to the origin). Kick buttons act in place.
 * The log page (/admin/log.xsl) polls /admin/log every 2 s (log lines are no events) and
 * shows new error-log lines as they are written, failures shown and retried the same way.
 * Shows uptimes relative to now. Draws the history charts ([data-history]: listeners and
 * bandwidth of the last hour, inline SVG) from /admin/history.json, every 10 s: the time axis
 * is the whole hour up to the server's now, and a time without samples (server down, mount
 * off the air) is left blank, not bridged by a line.
 * Text is set with textContent only; every page works without this script (plain links
 * and GET forms).
 */
(function () {
  "use strict";

  var POLL_MS = 5000;
  var LOG_POLL_MS = 2000;
  var pollMs = POLL_MS;
  var RETRY_MIN_MS = 1000;
  var RETRY_MAX_MS = 60000;
  var EVENT_TYPES = ["message", "listener_join", "listener_leave", "source_connect",
                     "source_disconnect", "metadata", "title"];
  var refreshTimer = null;
  var pollTimer = null;
  var source = null;
  var streamOpen = false;
  var failures = 0;
  var retryTimer = null;

  // Absolute URL of a server path without the page's user:password@ (see the header).
  function api(path) {
    return location.origin + path;
  }

  function $all(sel, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(sel));
  }

  function byAttr(attr, value, root) {
    return $all("[" + attr + "]", root).filter(function (el) {
      return el.getAttribute(attr) === value;
    });
  }

  function childText(el, name) {
    for (var c = el && el.firstElementChild; c; c = c.nextElementSibling) {
      if (c.nodeName === name) return c.textContent;
    }
    return null;
  }

  // ------------------------------------------------------------ formatting

  function bytes(n) {
    var v = Number(n);
    if (!isFinite(v)) return String(n);
    var units = [[1073741824, " GiB"], [1048576, " MiB"], [1024, " KiB"]];
    for (var i = 0; i < units.length; i++) {
      if (v >= units[i][0]) return (v / units[i][0]).toFixed(1) + units[i][1];
    }
    return v + " B";
  }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  function duration(s) {
    s = Math.max(0, Math.floor(s));
    if (s >= 86400) return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
    if (s >= 3600) return Math.floor(s / 3600) + " h " + pad(Math.floor((s % 3600) / 60)) + " min";
    if (s >= 60) return Math.floor(s / 60) + " min " + pad(s % 60) + " s";
    return s + " s";
  }

  // "2026-11-22T12:04:52+0000" (Icecast's form) -> Date
  function parseIso(text) {
    if (!text) return null;
    var t = Date.parse(String(text).replace(/([+-]\d\d)(\d\d)$/, "$1:$2"));
    return isNaN(t) ? null : new Date(t);
  }

  function tickUptimes() {
    $all("[data-since]").forEach(function (el) {
      var d = parseIso(el.getAttribute("data-since"));
      if (d) el.textContent = (el.getAttribute("data-prefix") || "") + duration((Date.now() - d.getTime()) / 1000);
    });
  }

  // Listener rows: "Connected" counts on from the value the server gave.
  function tickConnected() {
    $all("[data-seconds]").forEach(function (el) {
      var secs = Number(el.getAttribute("data-seconds"));
      if (el.getAttribute("data-seconds") === "" || !isFinite(secs)) return;
      if (!el.rimecastT0) el.rimecastT0 = Date.now();
      el.textContent = duration(secs + (Date.now() - el.rimecastT0) / 1000);
    });
  }

  function nowPlaying(artist, title) {
    artist = (artist || "").trim();
    title = (title || "").trim();
    if (artist && title) return artist + " - " + title;
    return title || artist || "\u2014";
  }

  function setField(root, field, value, format) {
    if (value == null) return;
    $all('[data-field="' + field + '"]', root).forEach(function (el) {
      var text = (format || el.getAttribute("data-format")) === "bytes" ? bytes(value) : String(value);
      if (el.textContent === text) return;
      el.textContent = text;
      if (field === "title") {
        el.classList.remove("flash");
        void el.offsetWidth;
        el.classList.add("flash");
      }
    });
  }

  // ------------------------------------------------------------ notes

  function note(text, withReload) {
    var el = document.querySelector(".live-note");
    if (!el) return;
    el.textContent = text ? text + " " : "";
    if (text && withReload) {
      var a = document.createElement("a");
      a.href = location.href;
      a.textContent = "Reload";
      el.appendChild(a);
    }
    el.hidden = !text;
  }

  function setConn(state, reason) {
    var el = document.querySelector(".conn");
    if (!el) return;
    el.hidden = false;
    el.setAttribute("data-state", state);
    el.textContent = state === "live" ? "Live" : state === "poll" ? "Refreshing every " + pollMs / 1000 + " s" :
      state === "error" ? "Live updates unavailable: " + (reason || "unknown error") : "Offline";
  }

  // The state to show when refreshes work: live with an open stream, else polling.
  function connState() {
    return streamOpen ? "live" : "poll";
  }

  function busyEditing() {
    var a = document.activeElement;
    return (a && /^(INPUT|SELECT|TEXTAREA)$/.test(a.nodeName)) || !!document.querySelector("details[open]");
  }

  function mayReload() {
    try {
      var last = Number(sessionStorage.getItem("rimecast-admin-reload") || 0);
      if (Date.now() - last < 30000) return false;
      sessionStorage.setItem("rimecast-admin-reload", String(Date.now()));
      return true;
    } catch (e) {
      return false;
    }
  }

  // ------------------------------------------------------------ stats refresh

  function fetchXml(url) {
    return fetch(api(url), { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "application/xml");
      if (doc.getElementsByTagName("parsererror").length) throw new Error("bad XML");
      return doc;
    });
  }

  // The mount of a one-mount page (/admin/stats.xsl?mount=...), else null.
  function onePageMount() {
    try {
      return new URLSearchParams(location.search).get("mount");
    } catch (e) {
      return null;
    }
  }

  function applyStats(doc) {
    var root = doc.documentElement;
    var totals = document.querySelector('[data-live="stats"]');
    if (totals) {
      ["listeners", "sources", "clients", "connections", "listener_connections"].forEach(function (f) {
        setField(totals, f, childText(root, f));
      });
    }
    ["source_total_connections", "file_connections"].forEach(function (f) {
      setField(document, f, childText(root, f));
    });
    var live = {};
    $all("source", root).forEach(function (src) { live[src.getAttribute("mount")] = src; });
    var cards = $all("[data-mount]").filter(function (el) { return !el.closest("form"); });
    var changed = false;
    var gone = false;
    cards.forEach(function (card) {
      var src = live[card.getAttribute("data-mount")];
      if (!src) { changed = true; gone = true; return; }
      ["listeners", "listener_peak", "source_ip", "slow_listeners",
       "total_bytes_sent", "total_bytes_read"].forEach(function (f) {
        setField(card, f, childText(src, f));
      });
      setField(card, "title", nowPlaying(childText(src, "artist"), childText(src, "title")));
    });
    // Only the overview lists every mount; one mount's page (?mount=) ignores the others.
    var list = onePageMount() == null ? document.querySelector('[data-live="mounts"]') : null;
    if (list && !document.querySelector("[data-clients-mount]")) {
      var shown = {};
      cards.forEach(function (c) { shown[c.getAttribute("data-mount")] = true; });
      Object.keys(live).forEach(function (m) { if (!shown[m]) changed = true; });
    }
    sortMountTable();
    if (changed && !list && gone) {
      note("This mount is not live any more.", true);
    } else if (changed) {
      if (!busyEditing() && mayReload()) { location.reload(); return; }
      note("Mounts have changed.", true);
    }
  }

  // ------------------------------------------------------------ mount table

  var mountSort = { key: "name", dir: 1 };

  function sortKey(tr, key) {
    if (key === "listeners") {
      var cell = tr.querySelector('[data-field="listeners"]');
      return Number(cell ? cell.textContent : 0) || 0;
    }
    if (key === "bitrate") return Number(tr.getAttribute("data-bitrate")) || 0;
    if (key === "uptime") {
      var d = parseIso(tr.getAttribute("data-start"));
      return d ? -d.getTime() : -Infinity;  // earlier start: longer uptime
    }
    return (tr.getAttribute("data-name") || "").toLowerCase();
  }

  // Sorts the rows in place (moving only when the order changed), ties by name.
  function sortMountTable() {
    var table = document.querySelector("[data-mount-table]");
    if (!table) return;
    var tbody = table.tBodies[0];
    var rows = $all("tr[data-mount]", tbody);
    var keyed = rows.map(function (tr) {
      return { tr: tr, k: sortKey(tr, mountSort.key), n: sortKey(tr, "name") };
    });
    keyed.sort(function (a, b) {
      var c = a.k < b.k ? -1 : a.k > b.k ? 1 : 0;
      return c * mountSort.dir || (a.n < b.n ? -1 : a.n > b.n ? 1 : 0);
    });
    var same = keyed.every(function (x, i) { return x.tr === rows[i]; });
    if (!same) keyed.forEach(function (x) { tbody.appendChild(x.tr); });
    $all("th[data-sort]", table).forEach(function (th) {
      if (th.getAttribute("data-sort") === mountSort.key) {
        th.setAttribute("aria-sort", mountSort.dir > 0 ? "ascending" : "descending");
      } else {
        th.removeAttribute("aria-sort");
      }
    });
  }

  function showMountView(view) {
    document.documentElement.setAttribute("data-mount-view", view);
    $all(".view-switch [data-view]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-view") === view));
    });
    try { localStorage.setItem("rimecast-admin-mount-view", view); } catch (e) { /* private mode */ }
  }

  function setupMountTable() {
    var table = document.querySelector("[data-mount-table]");
    var sw = document.querySelector(".view-switch");
    if (!table || !sw) return;
    $all("th[data-sort]", table).forEach(function (th) {
      var b = document.createElement("button");
      b.type = "button";
      b.className = "sort";
      b.textContent = th.textContent;
      th.textContent = "";
      th.appendChild(b);
      b.addEventListener("click", function () {
        var key = th.getAttribute("data-sort");
        // A new column starts with the most useful end: names A-Z, numbers largest first.
        if (mountSort.key === key) mountSort.dir = -mountSort.dir;
        else mountSort = { key: key, dir: key === "name" ? 1 : -1 };
        sortMountTable();
      });
    });
    var saved = null;
    try { saved = localStorage.getItem("rimecast-admin-mount-view"); } catch (e) { saved = null; }
    var many = table.tBodies[0].rows.length > 12;
    showMountView(saved === "cards" || saved === "table" ? saved : many ? "table" : "cards");
    sw.hidden = false;
    sw.addEventListener("click", function (ev) {
      var b = ev.target.closest("[data-view]");
      if (b) showMountView(b.getAttribute("data-view"));
    });
  }

  function listenerRow(mount, l) {
    var tr = document.createElement("tr");
    var id = childText(l, "ID") || "";
    tr.setAttribute("data-id", id);
    function cell(text, cls, label) {
      var td = document.createElement("td");
      if (cls) td.className = cls;
      if (label) td.setAttribute("data-label", label);   // the column, on narrow screens
      td.textContent = text;
      tr.appendChild(td);
      return td;
    }
    cell(id, "num mono", "ID");
    cell(childText(l, "IP") || "", "mono", "Address");
    cell(childText(l, "UserAgent") || "", "ua", "User agent");
    var secs = childText(l, "Connected");
    var c = cell(secs != null && isFinite(Number(secs)) ? duration(Number(secs)) : (secs || ""), "num",
                 "Connected");
    c.setAttribute("data-seconds", secs || "");
    if (document.querySelector("[data-clients-mount] thead th:nth-child(6)")) {
      cell(childText(l, "username") || "", "", "User");
    }
    var td = document.createElement("td");
    td.className = "actions";
    var form = document.createElement("form");
    form.action = "/admin/killclient.xsl";
    form.method = "get";
    form.className = "kick";
    [["mount", mount], ["id", id]].forEach(function (p) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = p[0];
      input.value = p[1];
      form.appendChild(input);
    });
    var button = document.createElement("button");
    button.type = "submit";
    button.className = "danger small";
    button.textContent = "Kick";
    var sr = document.createElement("span");
    sr.className = "sr-only";
    sr.textContent = " listener " + id;
    button.appendChild(sr);
    form.appendChild(button);
    td.appendChild(form);
    tr.appendChild(td);
    return tr;
  }

  function applyClients(table, doc) {
    var mount = table.getAttribute("data-clients-mount");
    var src = $all("source", doc.documentElement).filter(function (s) {
      return s.getAttribute("mount") === mount;
    })[0];
    var tbody = table.tBodies[0];
    var listeners = src ? $all("listener", src) : [];
    var rows = document.createDocumentFragment();
    listeners.forEach(function (l) { rows.appendChild(listenerRow(mount, l)); });
    if (!listeners.length) {
      var tr = document.createElement("tr");
      var td = document.createElement("td");
      td.colSpan = 6;
      td.className = "empty-row";
      td.textContent = src ? "Nobody is listening." : "This mount is not live any more.";
      tr.appendChild(td);
      rows.appendChild(tr);
    }
    tbody.textContent = "";
    tbody.appendChild(rows);
    setField(document, "client-count", String(listeners.length));
  }

  // ------------------------------------------------------------ log lines

  var LOG_LEVELS = { EROR: "error", WARN: "warn", INFO: "info" };
  var shownLog = null;

  // Rebuilds the log table (newest first) when the lines changed; text only.
  function applyLog(tbody, doc) {
    var lines = $all("line", doc.documentElement).map(function (l) {
      return [childText(l, "time") || "", childText(l, "level") || "", childText(l, "text") || ""];
    });
    var key = JSON.stringify(lines);
    if (key === shownLog) return;
    shownLog = key;
    var rows = document.createDocumentFragment();
    for (var i = lines.length - 1; i >= 0; i--) {
      var level = LOG_LEVELS[lines[i][1]] || "debug";
      var tr = document.createElement("tr");
      tr.className = "log-line level-" + level;
      tr.setAttribute("data-level", level);
      var time = document.createElement("td");
      time.className = "time mono";
      time.textContent = lines[i][0];
      var lv = document.createElement("td");
      lv.className = "level";
      var badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = level;
      lv.appendChild(badge);
      var text = document.createElement("td");
      text.className = "text mono";
      text.textContent = lines[i][2];
      tr.appendChild(time);
      tr.appendChild(lv);
      tr.appendChild(text);
      rows.appendChild(tr);
    }
    if (!lines.length) {
      var empty = document.createElement("tr");
      var td = document.createElement("td");
      td.colSpan = 3;
      td.className = "empty-row";
      td.textContent = "Nothing logged yet.";
      empty.appendChild(td);
      rows.appendChild(empty);
    }
    tbody.textContent = "";
    tbody.appendChild(rows);
    setField(document, "log-count", String(lines.length));
  }

  function refresh() {
    refreshTimer = null;
    var jobs = [];
    var logBody = document.querySelector("[data-log-lines]");
    if (logBody) {
      jobs.push(fetchXml("/admin/log").then(function (doc) { applyLog(logBody, doc); }));
    }
    if (document.querySelector("[data-mount], [data-live]")) {
      jobs.push(fetchXml("/admin/stats").then(applyStats));
    }
    $all("[data-clients-mount]").forEach(function (table) {
      var m = table.getAttribute("data-clients-mount");
      jobs.push(fetchXml("/admin/listclients?mount=" + encodeURIComponent(m)).then(function (doc) {
        applyClients(table, doc);
      }));
    });
    return Promise.all(jobs).then(function () {
      failures = 0;
      if (retryTimer) { clearTimeout(retryTimer); retryTimer = null; }
      setConn(connState());
      document.documentElement.setAttribute("data-updated", String(Date.now()));
    }, function (err) {
      // Keep what is shown, say why it is stale, and try again later (1 s, 2 s, 4 s ... 60 s).
      failures++;
      setConn("error", (err && err.message) || String(err));
      var delay = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * Math.pow(2, Math.min(failures - 1, 16)));
      if (retryTimer) clearTimeout(retryTimer);
      retryTimer = setTimeout(function () { retryTimer = null; scheduleRefresh(0); }, delay);
    });
  }

  function scheduleRefresh(delay) {
    if (refreshTimer) return;
    refreshTimer = setTimeout(refresh, delay == null ? 150 : delay);
  }

  // ------------------------------------------------------------ events

  function onEvent(ev) {
    var data = null;
    try { data = JSON.parse(ev.data); } catch (e) { data = null; }
    if (data && data.type === "metadata" && typeof data.title === "string" && data.mount != null) {
      byAttr("data-mount", String(data.mount)).forEach(function (card) {
        setField(card, "title", data.title || "\u2014");
      });
    }
    scheduleRefresh();
  }

  function startPolling() {
    if (!failures) setConn("poll");
    if (!pollTimer) pollTimer = setInterval(function () { scheduleRefresh(0); }, pollMs);
  }

  function stopPolling() {
    if (pollTimer) clearInterval(pollTimer);
    pollTimer = null;
  }

  function connect() {
    if (!window.EventSource) { startPolling(); return; }
    source = new EventSource(api("/admin/events"));
    EVENT_TYPES.forEach(function (t) { source.addEventListener(t, onEvent); });
    source.onopen = function () {
      streamOpen = true;
      stopPolling();
      if (!failures) setConn("live");
      scheduleRefresh();
    };
    source.onerror = function () {
      streamOpen = false;
      if (source.readyState === EventSource.CLOSED) {
        startPolling();
        setTimeout(connect, 15000);      // try the stream again later
      } else if (!failures) {
        setConn("poll");
      }
    };
  }

  // ------------------------------------------------------------ kick in place

  function onSubmit(ev) {
    var form = ev.target;
    if (!form.classList || !form.classList.contains("kick") || !window.fetch) return;
    ev.preventDefault();
    var params = new URLSearchParams(new FormData(form));
    var row = form.closest("tr");
    var button = form.querySelector("button");
    if (button) button.disabled = true;
    fetchXml("/admin/killclient?" + params.toString()).then(function (doc) {
      var msg = childText(doc.documentElement, "message") || "";
      var ok = (childText(doc.documentElement, "return") || "").trim() === "1";
      note(msg);
      if (ok && row) row.remove();
      scheduleRefresh(0);
    }).catch(function () {
      form.submit();                     // let the plain page do it
    });
  }

  // ------------------------------------------------------------ history charts

  var HISTORY_MS = 10000;              // the server samples every 10 s
  var HISTORY_STEP_S = 10;
  var HISTORY_SPAN_S = 3600;           // the charts show the last hour, ending now
  var SVG_NS = "http://www.w3.org/2000/svg";
  var CHART_W = 300, CHART_H = 80, CHART_PAD = 3;
  var historyFormats = {
    listeners: function (v) { return String(v); },
    bytes_per_s: function (v) {
      var kbit = v * 8 / 1000;
      return kbit >= 1000 ? (kbit / 1000).toFixed(1) + " Mbit/s" : Math.round(kbit) + " kbit/s";
    }
  };

  function svgEl(name, attrs) {
    var el = document.createElementNS(SVG_NS, name);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, attrs[k]); });
    return el;
  }

  // The hour range of a /admin/history.json answer: its samples (oldest first) and step (s).
  function hourRange(doc) {
    var ranges = (doc && doc.history && doc.history.range) || [];
    if (!Array.isArray(ranges)) ranges = [ranges];
    for (var i = 0; i < ranges.length; i++) {
      if (ranges[i] && ranges[i].name === "hour") {
        var s = ranges[i].sample || [];
        return { samples: Array.isArray(s) ? s : [s], step: Number(ranges[i].step) || HISTORY_STEP_S };
      }
    }
    return { samples: [], step: HISTORY_STEP_S };
  }

  // The chart's points: the samples of the period [end - HISTORY_SPAN_S, end], in runs of
  // consecutive samples. Two samples further apart than 1.5 steps have a gap between them
  // (the server was down or the mount off the air): a new run starts. A value that is not
  // known (the bandwidth of a run's first sample, which the server measured across the gap
  // or had no earlier sample for) is null and breaks the line too.
  function chartRuns(samples, key, step, end) {
    var start = end - HISTORY_SPAN_S;
    var runs = [], run = null, prev = null, gaps = 0, n = 0;
    samples.forEach(function (s) {
      var t = Number(s.time);
      if (!isFinite(t) || t < start || t > end) return;
      var first = prev === null || t - prev > 1.5 * step;
      if (first && prev !== null) gaps++;
      prev = t;
      var v = key === "bytes_per_s" && first ? null : Number(s[key]);
      n++;
      if (v === null || !isFinite(v)) { run = null; return; }
      if (first || !run) { run = []; runs.push(run); }
      run.push({ t: t, v: Math.max(0, v) });
    });
    return { runs: runs, gaps: gaps, samples: n, last: prev };
  }

  // A round dot that stays round in the stretched chart: a zero-length line with round caps
  // (its stroke does not scale, a circle would).
  function dot(cls, x, y) {
    return svgEl("path", { "class": cls, d: "M" + x + "," + y + "h0" });
  }

  function chartX(t, end) {
    var innerW = CHART_W - 2 * CHART_PAD;
    return (CHART_PAD + innerW * (t - (end - HISTORY_SPAN_S)) / HISTORY_SPAN_S).toFixed(1);
  }

  function drawChart(fig, range, end) {
    var key = fig.getAttribute("data-chart");
    var format = historyFormats[key] || String;
    var svg = fig.querySelector("svg");
    if (!svg) return;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var got = chartRuns(range.samples, key, range.step, end);
    var max = 0;
    got.runs.forEach(function (run) { run.forEach(function (p) { max = Math.max(max, p.v); }); });
    var innerH = CHART_H - 2 * CHART_PAD, base = String(CHART_H - CHART_PAD);
    function y(v) { return (CHART_H - CHART_PAD - innerH * v / (max || 1)).toFixed(1); }
    var line = "", area = "";
    got.runs.forEach(function (run) {
      var pts = run.map(function (p) { return chartX(p.t, end) + "," + y(p.v); });
      if (run.length === 1) {          // a lone sample: a dot, no line to draw
        svg.appendChild(dot("dot lone", chartX(run[0].t, end), y(run[0].v)));
        return;
      }
      line += "M" + pts.join("L");
      area += "M" + chartX(run[0].t, end) + "," + base + "L" + pts.join("L") + "L" +
              chartX(run[run.length - 1].t, end) + "," + base + "Z";
    });
    if (area) svg.appendChild(svgEl("path", { "class": "area", d: area }));
    if (line) svg.appendChild(svgEl("path", { "class": "line", d: line }));
    // The value now: the last sample, when it is recent (no gap up to now).
    var lastRun = got.runs[got.runs.length - 1];
    var last = lastRun ? lastRun[lastRun.length - 1] : null;
    var current = last && got.last !== null && last.t === got.last && end - last.t <= 1.5 * range.step;
    if (current) svg.appendChild(dot("dot", chartX(last.t, end), y(last.v)));
    var n = got.samples;
    svg.setAttribute("data-points", String(n));
    svg.setAttribute("data-runs", String(got.runs.length));
    svg.setAttribute("data-gaps", String(got.gaps));
    svg.setAttribute("data-start", String(end - HISTORY_SPAN_S));
    svg.setAttribute("data-end", String(end));
    var label = fig.getAttribute("data-label") || key;
    var gapText = got.gaps ? ", " + got.gaps + (got.gaps === 1 ? " gap" : " gaps") + " without samples" : "";
    svg.setAttribute("aria-label", n ? label + ": " + (current ? format(last.v) + " now, " : "") + "at most " +
                     format(max) + " in the last hour (" + n + " samples" + gapText + ")" :
                     label + ": no samples in the last hour");
    var now = fig.querySelector("[data-chart-now]");
    if (now) now.textContent = current ? format(last.v) : "\u2014";
    var top = fig.querySelector("[data-chart-max]");
    if (top) top.textContent = n ? "max " + format(max) : "no samples yet";
  }

  // The history document and the server's clock (its Date header, in seconds; the browser's
  // clock when there is none), so the chart's hour ends at the server's now.
  function fetchHistory(url) {
    return fetch(api(url), { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      var date = Date.parse(r.headers.get("Date") || "");
      return r.json().then(function (doc) {
        return { doc: doc, now: Math.floor((isNaN(date) ? Date.now() : date) / 1000) };
      });
    });
  }

  function refreshHistory() {
    $all("[data-history]").forEach(function (box) {
      var mount = box.getAttribute("data-history");
      var url = "/admin/history.json" + (mount ? "?mount=" + encodeURIComponent(mount) : "");
      var note = box.querySelector("[data-history-note]");
      fetchHistory(url).then(function (got) {
        var range = hourRange(got.doc);
        $all("[data-chart]", box).forEach(function (fig) { drawChart(fig, range, got.now); });
        if (note) note.textContent = "";
        box.setAttribute("data-history-updated", String(Date.now()));
      }).catch(function (err) {
        if (note) note.textContent = "History unavailable: " + ((err && err.message) || String(err));
      });
    });
  }

  // ------------------------------------------------------------ start

  function backLinks() {
    var ref = document.referrer;
    if (!ref) return;
    try {
      var u = new URL(ref);
      if (u.origin !== location.origin || u.pathname.indexOf("/admin/") !== 0 || u.href === location.href) return;
      if (/\/(killclient|killsource|metadata|fallbacks)\b/.test(u.pathname)) return;
      if (/\/moveclients\b/.test(u.pathname) && u.search.indexOf("destination=") >= 0) return;
      $all("a[data-back]").forEach(function (a) { a.href = u.pathname + u.search; });
    } catch (e) { /* no URL support: keep the default link */ }
  }

  function start() {
    backLinks();
    setupMountTable();
    tickUptimes();
    setInterval(function () { tickUptimes(); tickConnected(); }, 1000);
    document.addEventListener("submit", onSubmit);
    if (window.fetch && document.querySelector("[data-mount], [data-live], [data-clients-mount]")) {
      connect();
    } else if (window.fetch && document.querySelector("[data-log-lines]")) {
      pollMs = LOG_POLL_MS;
      startPolling();
      scheduleRefresh(0);
    }
    if (window.fetch && document.querySelector("[data-history]")) {
      refreshHistory();
      setInterval(refreshHistory, HISTORY_MS);
    }
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  window.rimecastAdmin = { refresh: refresh, refreshHistory: refreshHistory };
})();
