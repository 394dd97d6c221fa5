// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * app.js: live updates for the public status page (status.xsl). Polls
 * /status-json.xsl every few seconds and refreshes each mount card's listeners,
 * peak and now-playing text; when mounts come or go it offers a reload (or
 * reloads by itself when nothing is playing). Values are set with textContent
 * only. The page works fully without this script.
 */
(function () {
  "use strict";

  var INTERVAL_MS = 4000;
  var timer = null;
  var busy = false;

  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-mount]"));
  }

  // The mount of a JSON source entry: its listenurl without scheme and host.
  function mountOf(src) {
    if (typeof src.mount === "string") return src.mount;
    var url = typeof src.listenurl === "string" ? src.listenurl : "";
    return url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^\/]*/i, "");
  }

  function nowPlaying(src) {
    var artist = src.artist == null ? "" : String(src.artist).trim();
    var title = src.title == null ? "" : String(src.title).trim();
    if (artist && title) return artist + " - " + title;
    return title || artist || "\u2014";
  }

  function setText(root, field, value) {
    var el = root.querySelector('[data-field="' + field + '"]');
    if (!el || value == null) return;
    value = String(value);
    if (el.textContent === value) return;
    el.textContent = value;
    if (field === "title") {
      el.classList.remove("flash");
      void el.offsetWidth;            // restart the animation
      el.classList.add("flash");
    }
  }

  function anyPlaying() {
    return Array.prototype.some.call(document.querySelectorAll("audio"), function (a) {
      return !a.paused;
    });
  }

  // At most one automatic reload per half minute, so a mismatch never loops.
  function mayReload() {
    try {
      var last = Number(sessionStorage.getItem("rimecast-reload") || 0);
      if (Date.now() - last < 30000) return false;
      sessionStorage.setItem("rimecast-reload", String(Date.now()));
      return true;
    } catch (e) {
      return false;
    }
  }

  function note(text) {
    var el = document.querySelector(".live-note");
    if (!el) return;
    el.textContent = "";
    if (!text) { el.hidden = true; return; }
    el.appendChild(document.createTextNode(text + " "));
    var a = document.createElement("a");
    a.href = location.pathname;
    a.textContent = "Reload";
    el.appendChild(a);
    el.hidden = false;
  }

  function apply(data) {
    var stats = data && data.icestats ? data.icestats : {};
    var sources = stats.source;
    if (!Array.isArray(sources)) sources = sources ? [sources] : [];
    var seen = {};
    sources.forEach(function (src) { seen[mountOf(src)] = src; });
    var shown = cards();
    var changed = shown.length !== sources.length;
    shown.forEach(function (card) {
      var src = seen[card.getAttribute("data-mount")];
      if (!src) { changed = true; return; }
      setText(card, "listeners", src.listeners);
      setText(card, "listener_peak", src.listener_peak);
      setText(card, "title", nowPlaying(src));
    });
    var count = document.querySelector('[data-field="mount-count"]');
    if (count && !changed) count.textContent = String(sources.length);
    if (changed) {
      if (!anyPlaying() && mayReload()) { location.reload(); return; }
      note("The list of streams has changed.");
    }
    document.documentElement.setAttribute("data-updated", String(Date.now()));
  }

  function poll() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(location.origin + "/status-json.xsl", { cache: "no-store", credentials: "omit" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(apply)
      .catch(function () { /* keep the last values; try again next round */ })
      .then(function () { busy = false; });
  }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  // "for 1 h 02 min" from data-since="2026-11-22T12:04:52+0000" (Icecast's ISO form).
  function tickUptimes() {
    Array.prototype.forEach.call(document.querySelectorAll("[data-since]"), function (el) {
      var t = Date.parse(String(el.getAttribute("data-since")).replace(/([+-]\d\d)(\d\d)$/, "$1:$2"));
      if (isNaN(t)) return;
      var s = Math.max(0, Math.floor((Date.now() - t) / 1000)), text;
      if (s >= 86400) text = Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
      else if (s >= 3600) text = Math.floor(s / 3600) + " h " + pad(Math.floor((s % 3600) / 60)) + " min";
      else if (s >= 60) text = Math.floor(s / 60) + " min " + pad(s % 60) + " s";
      else text = s + " s";
      el.textContent = (el.getAttribute("data-prefix") || "") + text;
    });
  }

  function start() {
    tickUptimes();
    setInterval(tickUptimes, 1000);
    if (!window.fetch || !document.querySelector(".mounts, .empty")) return;
    poll();
    timer = setInterval(poll, INTERVAL_MS);
    document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
  window.rimecastStatus = { poll: poll, stop: function () { clearInterval(timer); } };
})();
