// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * audience.js: the audience charts page (admin/audience_charts.xsl). Draws with uPlot
 * (web/vendor/uPlot.iife.min.js, loaded by the page):
 *   - listeners of one mount or of the server over the last hour or day (the server's
 *     listener history, /admin/history.json, redrawn every 10 s; a time without samples is
 *     left blank) or week (the peak of each hour from /admin/audience.json);
 *   - sessions and qualified sessions, and TLH, per hour (periods up to two days) or per day:
 *     a rolling period starts at a whole UTC hour (24 hours) or day (7 and 30 days), so each
 *     bucket is a whole hour or day but the one going on, which is drawn lighter and said to
 *     be "so far"; a bar is as wide as most of its bucket;
 * and fills the figures of the whole period, sessions per country and the top
 * players and referrers (/admin/audience/top.json). The period picker (last 24 h, 7 days,
 * 30 days, or whole UTC days from / to), the mount picker and the server picker (the servers
 * sharing the store that had sessions in the period, as the figures name them; shown when
 * there are more than one) set one query for all of them and for the CSV and table links; the
 * query is kept in the page's URL. The traffic picker asks for the net figures (valid sessions
 * only, the default) or the gross ones, and the page says which. With all servers picked and more than one, a table gives
 * each server's figures of the period (one more query per server) beside the network's. The
 * listener history of the last hour and day is the server's that sends the page, whichever
 * server is picked. The figures are fetched again when
 * a listener leaves (the events feed, /admin/events: its session is then in the store) and
 * every minute for a rolling period, ending at the new now; at most every 10 s and one
 * computation at a time, since the store's thread makes them. A failing fetch keeps what is
 * shown and says why.
 * The figures are read in either shape a server answers with (figureRows).
 * Client and server text (mounts, user agents, referrers, countries, server names) is set
 * with textContent only.
 * For tests and tools: window.rimecastCharts.query (the query of the last refresh),
 * .plotted() (the series each chart was given), .bars() (the bars drawn), and data-updated
 * on the page's root.
 */
(function () {
  "use strict";

  var FIGURES_MS = 60000;               // a rolling period moves on
  var FIGURES_GAP_MS = 10000;          // figures fetched again at most this often (events)
  var HISTORY_MS = 10000;
  var DAY = 86400, HOUR = 3600;
  var PERIODS = { "24h": DAY, "7d": 7 * DAY, "30d": 30 * DAY };
  var HOURLY_UP_TO = 2 * DAY;          // longer periods are cut into days
  var TOP = 10;
  var PLOT_H = 220;
  var BAR = 0.7;                       // a bar's share of its bucket
  var COUNT_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000,
                     100000, 200000, 500000, 1000000];

  var root = document.querySelector("[data-audience-charts]");
  if (!root || !window.fetch) return;

  var state = { period: "24h", from: "", to: "", mount: root.getAttribute("data-ac-mount") || "",
                server: "", traffic: "net", range: "hour" };
  var thisServer = root.getAttribute("data-ac-server-name") || "";
  var plots = {};                      // name -> uPlot
  var spans = {};                      // name -> [first, last] of its time axis
  var cuts = {};                       // name -> {step, partial} of its buckets (bar charts)
  var drawn = {};                      // name -> the bars last drawn (for tests and tools)
  var mountsSeen = {};
  var generation = 0;                  // answers of an older query are dropped
  var current = null;                  // the query of the last refresh
  var weekFetched = 0;

  function $(sel) { return root.querySelector(sel); }
  function $all(sel) { return Array.prototype.slice.call(root.querySelectorAll(sel)); }
  function ac(name) { return $('[data-ac="' + name + '"]'); }

  // Absolute URL without the page's user:password@ (fetch refuses URLs that carry them).
  function api(path) { return location.origin + path; }

  // The server's clock less the browser's (ms), from the Date of its answers: periods end at
  // the server's now, where its history samples are.
  var skew = 0;

  function nowS() { return Math.floor((Date.now() + skew) / 1000); }

  function getJson(path) {
    return fetch(api(path), { credentials: "same-origin", cache: "no-store" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status + " from " + path.split("?")[0]);
      var date = Date.parse(r.headers.get("Date") || "");
      // (the Date has whole seconds: a difference of less than 2 s is no skew)
      if (!isNaN(date)) skew = Math.abs(date - Date.now()) > 2000 ? date - Date.now() : 0;
      return r.json();
    });
  }

  function list(v) { return v == null ? [] : Array.isArray(v) ? v : [v]; }

  function qs(params) {
    return Object.keys(params).filter(function (k) {
      return params[k] !== "" && params[k] != null;
    }).map(function (k) {
      return k + "=" + encodeURIComponent(params[k]);
    }).join("&");
  }

  // ------------------------------------------------------------ the query

  function dayStart(text) {
    var t = Date.parse(text + "T00:00:00Z");
    return isNaN(t) ? null : t / 1000;
  }

  // {from, to, by, step, partial} in unix seconds for the picked period, or null (custom days
  // not set yet). A rolling period ends now and starts at a whole hour or UTC day: as many
  // whole buckets as it has, the last of them the one going on (a first bucket cut at the
  // minute the page was opened would read like an hour or day with few listeners).
  // partial: the start of the bucket going on (counted so far), or null.
  function periodQuery() {
    var from, to, by, now = nowS();
    if (state.period === "custom") {
      from = dayStart(state.from);
      to = dayStart(state.to);
      if (from == null || to == null) return null;
      to += DAY;                       // "to" is inclusive: up to the end of that day
      if (from >= to) return null;
      by = to - from <= HOURLY_UP_TO ? "hour" : "day";
    } else {
      var span = PERIODS[state.period] || DAY;
      by = span <= HOURLY_UP_TO ? "hour" : "day";
      to = now;
      from = Math.ceil(to / bucketSize(by)) * bucketSize(by) - span;
    }
    var step = bucketSize(by), last = Math.min(now, to), going = Math.floor(last / step) * step;
    return { from: from, to: to, by: by, step: step,
             partial: going >= from && going < last ? going : null };
  }

  function bucketSize(by) { return by === "hour" ? HOUR : DAY; }

  // The buckets the server cuts [from, to) into: ends at whole UTC hours or days.
  function buckets(q) {
    var step = bucketSize(q.by), out = [];
    for (var t = q.from; t < q.to && out.length < 2000; t = Math.min(q.to, (Math.floor(t / step) + 1) * step)) {
      out.push(t);
    }
    return out;
  }

  function readUrl() {
    var p = new URLSearchParams(location.search);
    if (p.get("period") && (PERIODS[p.get("period")] || p.get("period") === "custom")) state.period = p.get("period");
    state.from = p.get("from") || "";
    state.to = p.get("to") || "";
    if (p.get("mount") != null) state.mount = p.get("mount");
    if (p.get("server") != null) state.server = p.get("server");
    state.traffic = p.get("traffic") === "gross" ? "gross" : "net";
    if (p.get("range") && /^(hour|day|week)$/.test(p.get("range"))) state.range = p.get("range");
  }

  function writeUrl() {
    var custom = state.period === "custom";
    var s = qs({ period: state.period, from: custom ? state.from : "", to: custom ? state.to : "",
                 mount: state.mount, server: state.server,
                 traffic: state.traffic === "gross" ? "gross" : "",
                 range: state.range === "hour" ? "" : state.range });
    try { history.replaceState(null, "", location.pathname + (s ? "?" + s : "")); } catch (e) { /* file: */ }
  }

  // ------------------------------------------------------------ formatting

  function int(n) { return Math.round(Number(n) || 0).toLocaleString("en"); }

  // Seconds as 1d 03h, 2h 05m, 12m 30s or 45s, as the audience table writes them.
  function duration(s) {
    s = Math.max(0, Math.floor(Number(s) || 0));
    var two = function (n) { return String(n).padStart(2, "0"); };
    if (s >= DAY) return Math.floor(s / DAY) + "d " + two(Math.floor(s % DAY / 3600)) + "h";
    if (s >= 3600) return Math.floor(s / 3600) + "h " + two(Math.floor(s % 3600 / 60)) + "m";
    if (s >= 60) return Math.floor(s / 60) + "m " + two(s % 60) + "s";
    return s + "s";
  }

  // Hours to a tenth, as the audience table writes them: "< 0.1" for a little that is not none.
  function hours(h) {
    h = Number(h) || 0;
    return h > 0 && h < 0.05 ? "< 0.1" : h.toLocaleString("en", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  }

  var regionNames = null;
  try { regionNames = new Intl.DisplayNames(["en"], { type: "region" }); } catch (e) { regionNames = null; }

  function countryName(code) {
    if (!code || code === "unknown") return "Unknown";
    var name = null;
    try { name = regionNames && /^[A-Z]{2}$/.test(code) ? regionNames.of(code) : null; } catch (e) { name = null; }
    return name && name !== code ? name + " (" + code + ")" : code;
  }

  function cssVar(name, fallback) {
    var v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return v || fallback;
  }

  // ------------------------------------------------------------ charts

  function utcDate(ts) { return uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"); }

  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  // Time axis labels in UTC, 24-hour: "14:00", the day under the first and under midnights
  // ("25 Nov"), days alone when the ticks are days apart.
  function timeLabels(u, splits, axis, space, incr) {
    return splits.map(function (t, i) {
      var d = new Date(t * 1000);
      var day = d.getUTCDate() + " " + MONTHS[d.getUTCMonth()];
      if (incr >= DAY) return day;
      var hm = d.toISOString().slice(11, 16);
      return i === 0 || t % DAY === 0 ? hm + "\n" + day : hm;
    });
  }

  // The bars of chart name: each BAR of its bucket wide and centred on the bucket's start (its
  // tick), whatever the distance to its neighbours; the bucket going on (cuts[name].partial)
  // in the soft colour with an outline. Each bar drawn is noted in drawn[name] (CSS pixels
  // from the canvas's left and top, and the width of a whole bucket).
  function barPaths(name, color, soft) {
    function cut() { return cuts[name] || { step: HOUR, partial: null }; }
    function per(u, whole, part) {
      var c = cut();
      return u.data[0].map(function (t) { return t === c.partial ? part : whole; });
    }
    return uPlot.paths.bars({
      size: [BAR, Infinity, 2],        // at least 2 px, however many buckets
      disp: {
        x0: { unit: 1, values: function (u) {
          var c = cut();
          return u.data[0].map(function (t) { return t - c.step * BAR / 2; });
        } },
        size: { unit: 1, values: function () { return [cut().step * BAR]; } },
        fill: { unit: 3, values: function (u) { return per(u, color, soft); } },
        stroke: { unit: 3, values: function (u) { return per(u, color, color); } }
      },
      each: function (u, sidx, i, left, top, width, height) {
        var px = window.devicePixelRatio || 1, t = u.data[0][i], c = cut();
        (drawn[name] = drawn[name] || []).push({ start: t, partial: t === c.partial, left: left / px, top: top / px,
                           width: width / px, height: height / px,
                           bucket: u.valToPos(t + c.step, "x") - u.valToPos(t, "x") });
      }
    });
  }

  // A uPlot in box with the given series ({label, bars, format}); data set later.
  function makePlot(name, defs) {
    var box = $('[data-plot="' + name + '"]');
    if (!box || !window.uPlot) return null;
    var text = cssVar("--muted", "#566178"), grid = cssVar("--border", "#d9dfeb");
    var colors = [cssVar("--accent", "#5b3fd9"), cssVar("--ok", "#137a4b")];
    var soft = cssVar("--accent-soft", "#ebe6ff");
    var axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    var yAxis = Object.assign({ size: 48 }, axis);
    if (!defs[0].format) yAxis.incrs = COUNT_STEPS;   // counts: whole numbers on the axis
    var series = [{ label: "Time (UTC)", value: function (u, t) {
      if (t == null) return "—";
      var d = new Date(t * 1000);
      return d.getUTCDate() + " " + MONTHS[d.getUTCMonth()] + " " + d.toISOString().slice(11, 16);
    } }].concat(defs.map(function (d, i) {
      var s = { label: d.label, stroke: colors[i % colors.length], width: 2,
                value: function (u, v, sidx, idx) {
                  if (v == null) return "—";
                  var c = cuts[name], going = c && idx != null && u.data[0][idx] === c.partial;
                  return (d.format ? d.format(v) : int(v)) + (going ? " so far" : "");
                } };
      if (d.bars) {
        s.paths = barPaths(name, colors[i % colors.length], soft);
        s.fill = colors[i % colors.length];
        s.points = { show: false };
      }
      return s;
    }));
    var opts = {
      width: Math.max(200, box.clientWidth), height: PLOT_H,
      tzDate: utcDate,
      series: series,
      scales: {
        // the time axis is the period asked for (setData's span), not only where there are points
        x: { time: true, range: function (u, min, max) { return spans[name] || [min, max]; } },
        y: { range: function (u, min, max) { return [0, Math.max(1, max * 1.1)]; } }
      },
      axes: [Object.assign({ values: timeLabels }, axis), yAxis],
      cursor: { y: false },
      legend: { live: true },
      hooks: { drawClear: [function () { drawn[name] = []; }] }
    };
    var plot = new uPlot(opts, [[]].concat(defs.map(function () { return []; })), box);
    if (window.ResizeObserver) {
      new ResizeObserver(function () {
        var w = Math.max(200, box.clientWidth);
        if (w !== plot.width) plot.setSize({ width: w, height: PLOT_H });
      }).observe(box);
    }
    plots[name] = plot;
    return plot;
  }

  // span: [first, last] time of the axis (unix s), else the data's; cut: {step, partial} of the
  // buckets a bar chart draws.
  function setData(name, data, span, cut) {
    spans[name] = span || null;
    cuts[name] = cut || null;
    if (!plots[name]) return;
    plots[name].setData(data);
    describe(name, data);
  }

  // The chart in words for screen readers (the canvas has none): each series' highest and
  // last value.
  function describe(name, data) {
    var box = $('[data-plot="' + name + '"]'), p = plots[name];
    var head = box.closest("section").querySelector("h2");
    var parts = [];
    for (var i = 1; i < p.series.length; i++) {
      var s = p.series[i], vals = (data[i] || []).filter(function (v) { return v != null; });
      parts.push(s.label + ": " + (vals.length ? "at most " + s.value(p, Math.max.apply(null, vals)) +
                 ", last " + s.value(p, vals[vals.length - 1]) : "no data"));
    }
    box.setAttribute("aria-label", (head ? head.textContent + ". " : "") + parts.join("; "));
  }

  // ------------------------------------------------------------ figures of the period

  // The rows of an /admin/audience.json answer in one shape, whichever the server gives:
  // {periods: [{start, mount (null: the server), tlh_hours, peak_listeners, countries: {ISO:
  // sessions}, ...}]} or {audience: {figures: [{from, mount ("": the server), tlh, peak,
  // country (countries=1), ...}]}}. Each: {mount ("" the server), start (unix s), sessions,
  // qualified_sessions, tlh, atsl_seconds, cume, peak, countries ({ISO: sessions} or null),
  // country (or null)}.
  function figureRows(doc) {
    var published = doc && Array.isArray(doc.periods);
    var rows = published ? doc.periods : list(doc && doc.audience && doc.audience.figures);
    return rows.map(function (r) {
      var start = Date.parse(published ? r.start : r.from) / 1000;
      return {
        mount: r.mount == null ? "" : String(r.mount), start: start,
        sessions: Number(r.sessions) || 0, qualified_sessions: Number(r.qualified_sessions) || 0,
        tlh: Number(published ? r.tlh_hours : r.tlh) || 0, atsl_seconds: Number(r.atsl_seconds) || 0,
        cume: Number(r.cume) || 0, peak: Number(published ? r.peak_listeners : r.peak) || 0,
        countries: r.countries && typeof r.countries === "object" ? r.countries : null,
        country: r.country == null ? null : String(r.country)
      };
    });
  }

  // The query of figures cut by hour or day, under both names servers know it by.
  function cutBy(params, by) {
    params.by = by;
    params.period = by;
    return params;
  }

  // The row of the picked mount ("" the server) among rows, or null.
  function rowOf(rows, mount) {
    for (var i = 0; i < rows.length; i++) if (rows[i].mount === mount) return rows[i];
    return null;
  }

  function showSummary(row) {
    var f = {
      sessions: int(row ? row.sessions : 0),
      qualified_sessions: int(row ? row.qualified_sessions : 0),
      tlh: hours(row ? row.tlh : 0),
      atsl_seconds: duration(row ? row.atsl_seconds : 0),
      cume: int(row ? row.cume : 0),
      peak: int(row ? row.peak : 0)
    };
    Object.keys(f).forEach(function (k) {
      var el = $('[data-figure="' + k + '"]');
      if (el) el.textContent = f[k];
    });
  }

  // The mounts live now (/admin/listmounts), [] when that fails: the picker offers them even
  // before any of their sessions ended.
  function liveMounts() {
    return fetch(api("/admin/listmounts"), { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : ""; })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, "application/xml");
        return Array.prototype.map.call(doc.getElementsByTagName("source"), function (el) {
          return el.getAttribute("mount");
        }).filter(function (m) { return m; });
      }, function () { return []; });
  }

  // The mount picker: every mount the figures named so far or live, and the picked one.
  function fillMounts(rows, live) {
    rows.forEach(function (r) { if (r.mount !== "") mountsSeen[r.mount] = true; });
    live.forEach(function (m) { mountsSeen[m] = true; });
    if (state.mount) mountsSeen[state.mount] = true;
    var sel = ac("mount");
    var names = Object.keys(mountsSeen).sort();
    var have = Array.prototype.slice.call(sel.options, 1).map(function (o) { return o.value; });
    if (have.join("\n") === names.join("\n")) { sel.value = state.mount; return; }
    while (sel.options.length > 1) sel.remove(1);
    names.forEach(function (m) {
      var o = document.createElement("option");
      o.value = m;
      o.textContent = m;
      sel.appendChild(o);
    });
    sel.value = state.mount;
  }

  // A ranked list: name, sessions, a meter of its share.
  function fillList(name, items, total, empty) {
    var ol = $('[data-list="' + name + '"]');
    if (!ol) return;
    var frag = document.createDocumentFragment();
    items.forEach(function (it) {
      var li = document.createElement("li");
      var label = document.createElement("span");
      label.className = "ac-name" + (it.none ? " muted" : "");
      label.textContent = it.label;
      label.title = it.label;
      var n = document.createElement("span");
      n.className = "ac-count";
      n.textContent = int(it.sessions);
      var meter = document.createElement("meter");
      meter.min = 0;
      meter.max = Math.max(1, total);
      meter.value = it.sessions;
      meter.textContent = int(it.sessions);
      li.setAttribute("data-name", it.key);
      li.setAttribute("data-sessions", String(it.sessions));
      li.appendChild(label);
      li.appendChild(n);
      li.appendChild(meter);
      frag.appendChild(li);
    });
    if (!items.length) {
      var li = document.createElement("li");
      li.className = "ac-empty muted";
      li.textContent = empty;
      frag.appendChild(li);
    }
    ol.textContent = "";
    ol.appendChild(frag);
  }

  // Sessions per country of the mount: its row's countries, or its rows of one country each.
  function showCountries(rows, mount) {
    var counts = {};
    rows.forEach(function (r) {
      if (r.mount !== mount) return;
      if (r.countries) {
        Object.keys(r.countries).forEach(function (cc) { counts[cc] = Number(r.countries[cc]) || 0; });
      } else if (r.country != null) {
        counts[r.country] = r.sessions;
      }
    });
    var codes = Object.keys(counts).sort(function (a, b) { return counts[b] - counts[a] || a.localeCompare(b); });
    var total = codes.reduce(function (sum, cc) { return sum + counts[cc]; }, 0);
    fillList("countries", codes.map(function (cc) {
      return { key: cc, label: countryName(cc), sessions: counts[cc], none: cc === "unknown" };
    }), total, "No sessions in this period.");
  }

  function showTop(name, doc) {
    var top = (doc && doc.audience_top) || {};
    fillList(name, list(top.entry).map(function (e) {
      var text = e.name == null ? "" : String(e.name);
      return { key: text, label: text || "(none sent)", sessions: Number(e.sessions), none: !text };
    }), Number(top.sessions) || 0, "No sessions in this period.");
  }

  // Sessions and TLH per bucket of the picked mount (0 where it had none).
  function showBuckets(q, rows) {
    var byStart = {};
    rows.forEach(function (r) { if (r.mount === q.mount) byStart[r.start] = r; });
    var xs = buckets(q);
    var get = function (k) { return xs.map(function (t) { return byStart[t] ? Number(byStart[t][k]) : 0; }); };
    // each bucket's tick under its middle: half a bucket before the first and after the last
    var span = xs.length ? [xs[0] - q.step / 2, xs[xs.length - 1] + q.step / 2] : null;
    var cut = { step: q.step, partial: q.partial };
    setData("sessions", [xs, get("sessions"), get("qualified_sessions")], span, cut);
    setData("tlh", [xs, get("tlh")], span, cut);
    $all('[data-ac="bucket"]').forEach(function (el) { el.textContent = "per " + q.by; });
    var note = ac("partial");
    note.hidden = q.partial == null;
    if (q.partial != null) {
      var d = new Date(q.partial * 1000);
      note.textContent = (q.by === "hour" ? "The hour from " + d.toISOString().slice(11, 16) :
        "The day of " + d.getUTCDate() + " " + MONTHS[d.getUTCMonth()]) +
        " is going on: its figures are counted so far (the lighter bar).";
    }
  }

  // Figures fetched again by the clock or the events feed: never while the last ones are still
  // being computed (the store's thread computes them, a busy station's in seconds), and at most
  // once in FIGURES_GAP_MS; a query the user picked is fetched at once.
  var running = 0, again = false, lastStart = 0, laterTimer = null;

  function figuresLater() {
    if (running) { again = true; return; }
    var wait = lastStart + FIGURES_GAP_MS - Date.now();
    if (wait > 0) {
      if (!laterTimer) laterTimer = setTimeout(function () { laterTimer = null; figuresLater(); }, wait);
      return;
    }
    refreshFigures();
  }

  function refreshFigures() {
    var q = periodQuery();
    var status = ac("status");
    if (!q) {
      status.textContent = "Pick the first and the last day of the period.";
      return Promise.resolve();
    }
    q.mount = state.mount;
    q.server = state.server;
    q.traffic = state.traffic;
    var gross = q.traffic === "gross" ? "gross" : "";   // net is what the server gives unasked
    var gen = ++generation;
    running = gen;
    lastStart = Date.now();
    var pick = { mount: q.mount, server: q.server, traffic: gross };
    var base = { from: q.from, to: q.to, period: "all", server: q.server, traffic: gross };   // the whole period in one
    var one = qs({ from: q.from, to: q.to, period: "all", mount: q.mount, server: q.server,
                   traffic: gross });
    var csv = qs(cutBy({ from: q.from, to: q.to }, q.by)) +
              (q.mount || q.server || gross ? "&" + qs(pick) : "");
    ac("csv").href = "/admin/audience.csv?" + csv;
    ac("table").href = "/admin/audience.xsl?" + csv;
    var jobs = [
      getJson("/admin/audience.json?" + csv),
      getJson("/admin/audience.json?" + qs(base)),
      getJson("/admin/audience.json?countries=1&" + one),
      getJson("/admin/audience/top.json?by=agent&limit=" + TOP + "&" + one),
      getJson("/admin/audience/top.json?by=referer&limit=" + TOP + "&" + one),
      liveMounts()
    ];
    var done = function () {
      if (running !== gen) return;
      running = 0;
      if (again) { again = false; figuresLater(); }
    };
    // with all servers and more than one: each server's figures of the period, for the split
    var split = function (got) {
      var names = serversOf(got[1]);
      if (q.server || names.length < 2) return [got, names, null];
      return Promise.all(names.map(function (name) {
        return getJson("/admin/audience.json?" + qs({ from: q.from, to: q.to, period: "all",
                                                      mount: q.mount, server: name,
                                                      traffic: gross }));
      })).then(function (per) { return [got, names, per]; });
    };
    return Promise.all(jobs).then(split).then(function (all) {
      var got = all[0];
      done();
      if (gen !== generation) return;
      current = q;
      showBuckets(q, figureRows(got[0]));
      var whole = figureRows(got[1]);
      fillMounts(whole, got[5]);
      fillServers(all[1]);
      showSummary(rowOf(whole, q.mount));
      showSplit(all[1], all[2], rowOf(whole, q.mount), q.mount);
      showCountries(figureRows(got[2]), q.mount);
      showTop("agents", got[3]);
      showTop("referers", got[4]);
      status.textContent = "Updated " + new Date().toISOString().slice(11, 19) + " UTC" +
        (state.period === "custom" ? "." : "; the period moves on every minute.");
      root.setAttribute("data-updated", String(Date.now()));
      root.setAttribute("data-query", csv);
    }, function (err) {
      done();
      if (gen !== generation) return;
      status.textContent = "Figures unavailable: " + ((err && err.message) || String(err));
    });
  }

  // ------------------------------------------------------------ servers

  // The servers an /admin/audience.json answer names (those with sessions in the period), in
  // either shape: {servers: [...]} or {audience: {servers: {server: ...}}}; [] from a server
  // that names none.
  function serversOf(doc) {
    var names = doc && Array.isArray(doc.servers) ? doc.servers :
      list(doc && doc.audience && doc.audience.servers && doc.audience.servers.server);
    return names.filter(function (n) { return typeof n === "string" && n !== ""; });
  }

  // The server picker: All servers, each server of the period and the picked one; hidden while
  // there is one server at most and none is picked.
  function fillServers(names) {
    var sel = ac("server");
    var all = names.slice();
    if (state.server && all.indexOf(state.server) < 0) all.push(state.server);
    all.sort();
    ac("server-field").hidden = all.length < 2 && !state.server;
    var have = Array.prototype.slice.call(sel.options, 1).map(function (o) { return o.value; });
    if (have.join("\n") !== all.join("\n")) {
      while (sel.options.length > 1) sel.remove(1);
      all.forEach(function (name) {
        var o = document.createElement("option");
        o.value = name;
        o.textContent = name;
        sel.appendChild(o);
      });
    }
    sel.value = state.server;
  }

  function cell(tr, label, text, cls) {
    var td = document.createElement("td");
    if (cls) td.className = cls;
    td.setAttribute("data-label", label);
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }

  // The split: a row of each server's figures of the period (per: their answers, in the order
  // of names) and the network's (total), each server's share of the sessions as a meter; hidden
  // without per.
  function showSplit(names, per, total, mount) {
    var box = ac("servers"), body = ac("server-rows");
    box.hidden = !per;
    if (!per) { body.textContent = ""; return; }
    var frag = document.createDocumentFragment();
    var rows = names.map(function (name, i) { return { name: name, row: rowOf(figureRows(per[i]), mount) }; });
    rows.push({ name: "Network (all servers)", row: total, total: true });
    var most = Math.max(1, total ? total.sessions : 0);
    rows.forEach(function (it) {
      var r = it.row || { sessions: 0, qualified_sessions: 0, tlh: 0, atsl_seconds: 0, cume: 0, peak: 0 };
      var tr = document.createElement("tr");
      if (it.total) tr.className = "ac-total";
      else tr.setAttribute("data-server", it.name);
      cell(tr, "Server", it.name, "name");
      cell(tr, "Sessions", int(r.sessions), "num").setAttribute("data-figure", "sessions");
      cell(tr, "Qualified", int(r.qualified_sessions), "num").setAttribute("data-figure", "qualified_sessions");
      cell(tr, "TLH (hours)", hours(r.tlh), "num").setAttribute("data-figure", "tlh");
      cell(tr, "ATSL", duration(r.atsl_seconds), "num").setAttribute("data-figure", "atsl_seconds");
      cell(tr, "CUME", int(r.cume), "num").setAttribute("data-figure", "cume");
      cell(tr, "Peak", int(r.peak), "num").setAttribute("data-figure", "peak");
      var share = cell(tr, "Share of sessions", "", "share");
      if (!it.total) {
        var meter = document.createElement("meter");
        meter.min = 0;
        meter.max = most;
        meter.value = r.sessions;
        meter.textContent = Math.round(100 * r.sessions / most) + " %";
        meter.title = meter.textContent;
        share.appendChild(meter);
      }
      frag.appendChild(tr);
    });
    body.textContent = "";
    body.appendChild(frag);
  }

  // ------------------------------------------------------------ listeners

  // A history range's samples as uPlot data, a null between samples further apart than 1.5
  // steps (a gap is left blank).
  function historyData(doc, name, span, now) {
    var ranges = list(doc && doc.history && doc.history.range), r = null;
    for (var i = 0; i < ranges.length; i++) if (ranges[i] && ranges[i].name === name) r = ranges[i];
    var step = Number(r && r.step) || 10, xs = [], ys = [], prev = null;
    list(r && r.sample).forEach(function (s) {
      var t = Number(s.time);
      if (!isFinite(t) || t < now - span) return;
      if (prev !== null && t - prev > 1.5 * step) { xs.push(prev + step); ys.push(null); }
      xs.push(t);
      ys.push(Number(s.listeners));
      prev = t;
    });
    return [xs, ys];
  }

  function refreshListeners() {
    var note = ac("listeners-note");
    var mount = state.mount, range = state.range, server = state.server;
    var now = nowS();
    var job;
    if (range === "week") {
      weekFetched = Date.now();
      var from = (Math.floor(now / HOUR) - 7 * 24 + 1) * HOUR;
      var gross = state.traffic === "gross" ? "gross" : "";
      job = getJson("/admin/audience.json?" + qs(cutBy({ from: from, to: now, mount: mount, server: server,
                                                         traffic: gross }, "hour")))
        .then(function (doc) {
          var q = { from: from, to: now, by: "hour", mount: mount };
          var byStart = {};
          figureRows(doc).forEach(function (r) { if (r.mount === mount) byStart[r.start] = r.peak; });
          var xs = buckets(q);
          return { data: [xs, xs.map(function (t) { return byStart[t] || 0; })], span: [from, now],
                   text: "The most listeners at once in each hour, from the audience store (" +
                     (gross ? "gross: every session" : "net: valid sessions only") + ")." };
        });
    } else {
      job = getJson("/admin/history.json" + (mount ? "?mount=" + encodeURIComponent(mount) : ""))
        .then(function (doc) {
          var span = range === "hour" ? HOUR : DAY;
          // each server keeps its own history: another server picked still shows this one's
          var whose = server && server !== thisServer ?
            " These are the listeners of " + (thisServer || "the server of this page") +
            ", which sends this page; Week shows those of the server picked." : "";
          return { data: historyData(doc, range, span, now), span: [now - span, now],
                   text: (range === "hour" ? "Listeners every 10 s, as the server counts them now" :
                     "The most listeners in each 5 minutes, since the server started (at most a day)") +
                     ": every connection, robots and probes included, as Icecast counts listeners." + whose };
        });
    }
    return job.then(function (got) {
      if (mount !== state.mount || range !== state.range || server !== state.server) return;
      setData("listeners", got.data, got.span);
      var any = got.data[1].some(function (v) { return v != null; });
      note.textContent = got.text + (any ? "" : " No samples yet.");
      root.setAttribute("data-listeners-updated", String(Date.now()));
    }, function (err) {
      note.textContent = "Listeners unavailable: " + ((err && err.message) || String(err));
    });
  }

  // ------------------------------------------------------------ live

  // A session that ends is in the figures once the store wrote it: the events feed says when
  // a listener left, and the figures are fetched again (figuresLater: not too often).
  function listen() {
    if (!window.EventSource) return;
    var es = new EventSource(api("/admin/events"));
    es.addEventListener("listener_leave", figuresLater);
  }

  // ------------------------------------------------------------ controls

  function showControls() {
    ac("period").value = state.period;
    $all('[data-ac="custom"]').forEach(function (el) { el.hidden = state.period !== "custom"; });
    ac("from").value = state.from;
    ac("to").value = state.to;
    ac("mount").value = state.mount;
    ac("server").value = state.server;
    ac("traffic").value = state.traffic;
    ac("traffic-note").textContent = state.traffic === "gross"
      ? "Gross traffic: every session, robots, probes and listeners over the concurrency limit included."
      : "Net traffic: valid sessions only (robots, probes and listeners over the concurrency limit left out).";
    $all("[data-range]").forEach(function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-range") === state.range));
    });
  }

  function changed() {
    if (state.period === "custom" && !state.from && !state.to) {
      var today = new Date().toISOString().slice(0, 10);
      state.to = today;
      state.from = new Date(Date.now() - 6 * DAY * 1000).toISOString().slice(0, 10);
    }
    showControls();
    writeUrl();
    refreshFigures();
    refreshListeners();
  }

  function setup() {
    readUrl();
    if (state.mount) mountsSeen[state.mount] = true;
    showControls();
    var form = $("form.ac-controls");
    form.addEventListener("submit", function (ev) { ev.preventDefault(); changed(); });
    form.addEventListener("change", function (ev) {
      var k = ev.target.getAttribute("data-ac");
      if (k === "period" || k === "from" || k === "to" || k === "mount" || k === "server" ||
          k === "traffic") {
        state[k] = ev.target.value;
        changed();
      }
    });
    $all("[data-range]").forEach(function (b) {
      b.addEventListener("click", function () {
        state.range = b.getAttribute("data-range");
        showControls();
        writeUrl();
        refreshListeners();
      });
    });
    makePlot("listeners", [{ label: "Listeners" }]);
    makePlot("sessions", [{ label: "Sessions" }, { label: "Qualified" }]);
    makePlot("tlh", [{ label: "TLH", bars: true, format: function (v) { return Number(v).toFixed(2) + " h"; } }]);
    refreshFigures();
    refreshListeners();
    listen();
    setInterval(function () { if (!document.hidden && state.period !== "custom") figuresLater(); }, FIGURES_MS);
    setInterval(function () {
      // the week comes from the store: once a minute is enough
      if (document.hidden || (state.range === "week" && Date.now() - weekFetched < FIGURES_MS)) return;
      refreshListeners();
    }, HISTORY_MS);
  }

  // The bars each bar chart drew last: {chart: [{start, partial, left, top, width, height,
  // bucket}]}, CSS pixels from the canvas's corner; bucket: the width of a whole bucket.
  function bars() {
    var out = {};
    Object.keys(drawn).forEach(function (name) { out[name] = drawn[name].slice(); });
    return out;
  }

  // What each chart was given: {chart: {x: [...], <series label>: [...]}}.
  function plotted() {
    var out = {};
    Object.keys(plots).forEach(function (name) {
      var p = plots[name], o = { x: Array.prototype.slice.call(p.data[0] || []) };
      for (var i = 1; i < p.series.length; i++) o[p.series[i].label] = Array.prototype.slice.call(p.data[i] || []);
      out[name] = o;
    });
    return out;
  }

  window.rimecastCharts = {
    get query() { return current; },
    plotted: plotted,
    bars: bars,
    refresh: function () { return Promise.all([refreshFigures(), refreshListeners()]); }
  };

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
