// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * app.js: live updates for the public status page (status.xsl). Polls
 * /status-json.xsl every few seconds and refreshes each mount card's listeners,
 * peak and now-playing text; when mounts come or go, the cards and the count of
 * streams follow in place from a fresh copy of the page (a new card appears, a gone
 * one goes), without a reload and without touching the card being played, which
 * says so when its own stream ends. Values are set with textContent only (new cards
 * are the server's own rendering). A mount with HLS gets an "HLS" toggle by its player
 * that plays the mount's low-latency HLS (hls.js, or the browser's own HLS). The page
 * works fully without this script.
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

  // ------------------------------------------------------------ HLS in the player

  // A mount with HLS has a toggle next to its player (status.xsl). Pressed, the player plays
  // the mount's HLS (low latency): through hls.js (web/vendor, loaded the first time it is
  // needed) where the browser has Media Source Extensions, else natively where the browser
  // plays HLS itself. HLS is picked from the start when the browser cannot play the mount's
  // own format. Released, the player goes back to the direct stream.
  var HLS_SCRIPT = "/vendor/hls.light.min.js";
  var HLS_TYPE = "application/vnd.apple.mpegurl";
  var hlsLoading = null;

  function loadHls() {
    if (window.Hls) return Promise.resolve(window.Hls);
    if (!hlsLoading) {
      hlsLoading = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = HLS_SCRIPT;
        s.onload = function () { if (window.Hls) resolve(window.Hls); else reject(new Error("no hls.js")); };
        s.onerror = function () { hlsLoading = null; reject(new Error("hls.js did not load")); };
        document.head.appendChild(s);
      });
    }
    return hlsLoading;
  }

  function nativeHls(audio) {
    return audio.canPlayType(HLS_TYPE) !== "" || document.createElement("video").canPlayType(HLS_TYPE) !== "";
  }

  function hasMse() {
    return !!(window.MediaSource || window.ManagedMediaSource);
  }

  function playerOf(button) {
    var box = button.closest && button.closest(".player");
    return box ? box.querySelector("audio") : null;
  }

  function say(audio, engine) {
    if (engine) audio.setAttribute("data-hls-engine", engine);
    else audio.removeAttribute("data-hls-engine");
  }

  function stopHls(audio) {
    if (audio.__hls) { audio.__hls.destroy(); audio.__hls = null; }
    say(audio, null);
  }

  function playNow(audio) {
    var p = audio.play();
    if (p && p.catch) p.catch(function () { /* the listener presses play */ });
  }

  // MP3 goes as it is into an audio/mpeg SourceBuffer (Chromium), whose frames carry no time:
  // each append is placed at the buffer's timestampOffset, and in its "sequence" mode right
  // after the one before when the offset is left alone. hls.js sets the offset to the start
  // of a segment's first part, which is right, but for the segment's next parts to the fixed
  // offset it uses for fragmented MP4, which puts them elsewhere (a stall at every segment).
  // Without that offset hls.js leaves the buffer to follow on, and each part lands after the
  // one before (docs/HLS.md, "Source to ear").
  function keepMpegPartsInPlace(hls, Hls) {
    var mpeg = false, trigger = hls.trigger;
    hls.trigger = function (event, data) {
      if (event === Hls.Events.BUFFER_CODECS && data) {
        mpeg = !!(data.audio && data.audio.container === "audio/mpeg");
      } else if (event === Hls.Events.BUFFER_APPENDING && mpeg && data && data.type === "audio") {
        data.offset = undefined;
      }
      return trigger.apply(this, arguments);
    };
  }

  // Starts the HLS of button's mount in its player (play: and plays it).
  function startHls(button, audio, play) {
    var url = button.getAttribute("data-hls");
    audio.setAttribute("data-direct", audio.getAttribute("src") || "");
    var engine = hasMse() ? loadHls().then(function (Hls) {
      return Hls.isSupported() ? Hls : null;
    }, function () { return null; }) : Promise.resolve(null);
    return engine.then(function (Hls) {
      if (button.getAttribute("aria-pressed") !== "true") return;   // released meanwhile
      if (Hls) {
        audio.removeAttribute("src");
        var hls = new Hls({ lowLatencyMode: true, enableWorker: false });
        audio.__hls = hls;
        keepMpegPartsInPlace(hls, Hls);
        var recovered = false;
        hls.on(Hls.Events.ERROR, function (ev, data) {     // hls.js retried already
          if (!data.fatal || audio.__hls !== hls) return;
          if (data.type === Hls.ErrorTypes.MEDIA_ERROR && !recovered) {
            recovered = true;
            hls.recoverMediaError();
            return;
          }
          button.setAttribute("aria-pressed", "false");
          stopToDirect(button, audio, false);
        });
        hls.attachMedia(audio);
        hls.loadSource(url);
        say(audio, "hls.js");
      } else if (nativeHls(audio)) {
        audio.src = url;
        say(audio, "native");
      } else {
        button.setAttribute("aria-pressed", "false");
        button.disabled = true;
        button.title = "This browser cannot play HLS";
        return;
      }
      if (play) playNow(audio);
    });
  }

  function stopToDirect(button, audio, play) {
    stopHls(audio);
    var direct = audio.getAttribute("data-direct");
    if (direct) audio.src = direct;
    else audio.removeAttribute("src");
    audio.load();
    if (play) playNow(audio);
  }

  function onHlsToggle(ev) {
    var button = ev.target.closest && ev.target.closest(".hls-toggle");
    var audio = button && playerOf(button);
    if (!audio) return;
    var on = button.getAttribute("aria-pressed") !== "true";
    var playing = !audio.paused;
    button.setAttribute("aria-pressed", on ? "true" : "false");
    if (playing) audio.pause();
    if (on) startHls(button, audio, true);
    else stopToDirect(button, audio, playing);
  }

  // Presses the toggles of mounts whose own format this browser cannot play: their player
  // starts the HLS when the listener presses play (nothing is fetched before).
  function pickHlsWhereNeeded() {
    Array.prototype.forEach.call(document.querySelectorAll(".hls-toggle:not([data-checked])"), function (button) {
      button.setAttribute("data-checked", "");
      var audio = playerOf(button), type = button.getAttribute("data-type");
      if (!audio || !type || audio.canPlayType(type) !== "") return;
      if (!hasMse() && !nativeHls(audio)) return;
      button.setAttribute("aria-pressed", "true");
      audio.setAttribute("data-direct", audio.getAttribute("src") || "");
      audio.removeAttribute("src");
      audio.setAttribute("data-hls-pending", "");
    });
  }

  // The play of a player whose HLS was picked but not started yet (see pickHlsWhereNeeded).
  function startPendingHls(audio) {
    if (!audio.hasAttribute("data-hls-pending")) return;
    audio.removeAttribute("data-hls-pending");
    var button = audio.closest(".player") && audio.closest(".player").querySelector(".hls-toggle");
    if (button) startHls(button, audio, true);
  }

  // ------------------------------------------------------------ the list of mounts

  // A card whose player the listener started and did not pause: it is "the one playing",
  // kept (and marked as ended) when its mount goes off the air. A player that stops by itself
  // (the stream ended, or broke) still counts; a pause by the listener does not.
  function onPlay(ev) {
    if (ev.target.tagName === "AUDIO") startPendingHls(ev.target);
    var card = ev.target.closest && ev.target.closest("[data-mount]");
    if (card) card.setAttribute("data-listening", "");
  }

  function onPause(ev) {
    var a = ev.target, card = a.closest && a.closest("[data-mount]");
    if (card && !a.ended && !a.error) card.removeAttribute("data-listening");
  }

  function listening(card) {
    return card.hasAttribute("data-listening");
  }

  // A card that goes: its player stops fetching (an HLS player would poll on).
  function stopPlayer(card) {
    Array.prototype.forEach.call(card.querySelectorAll("audio"), stopHls);
  }

  function forget(card) {
    stopPlayer(card);
    card.remove();
  }

  // Says on the card of the one playing that its stream has ended (it stays until paused).
  function markEnded(card) {
    if (card.hasAttribute("data-ended")) return;
    card.setAttribute("data-ended", "");
    card.classList.add("ended");
    Array.prototype.forEach.call(card.querySelectorAll("[data-since]"), function (el) {
      el.removeAttribute("data-since");          // its time on the air stops counting
    });
    var p = document.createElement("p");
    p.className = "ended-note";
    p.setAttribute("role", "status");
    p.textContent = "This stream has ended.";
    var head = card.querySelector(".mount-head");
    if (head && head.parentNode) head.parentNode.insertBefore(p, head.nextSibling);
    else card.insertBefore(p, card.firstChild);
  }

  function unmarkEnded(card) {
    card.removeAttribute("data-ended");
    card.classList.remove("ended");
    Array.prototype.forEach.call(card.querySelectorAll(".ended-note"), function (p) { p.remove(); });
  }

  // Brings the cards and the count in line with a fresh status page (its HTML, as the server
  // renders it): a new mount's card is inserted where the page has it, a gone one removed,
  // the others stay as they are (never moved, so a player keeps playing); the one playing is
  // kept and marked as ended instead of removed.
  function merge(doc) {
    var main = document.querySelector("main");
    var list = document.querySelector("ul.mounts");
    var fresh = doc.querySelector("ul.mounts");
    var freshCards = fresh ? Array.prototype.slice.call(fresh.querySelectorAll("li[data-mount]")) : [];
    var wanted = {};
    freshCards.forEach(function (c) { wanted[c.getAttribute("data-mount")] = true; });
    var current = {};
    cards().forEach(function (card) {
      var m = card.getAttribute("data-mount");
      if (wanted[m]) current[m] = card;
      else if (listening(card)) markEnded(card);
      else forget(card);
    });
    if (!list && freshCards.length) {
      list = document.importNode(fresh, false);
      var empty = document.querySelector("main .empty");
      if (empty) empty.parentNode.replaceChild(list, empty);
      else main.appendChild(list);
    }
    var prev = null;
    freshCards.forEach(function (c) {
      var m = c.getAttribute("data-mount");
      var card = current[m];
      if (card && (!card.hasAttribute("data-ended") || listening(card))) {
        unmarkEnded(card);             // back on the air while still playing: keep it
        prev = card;
        return;
      }
      var node = document.importNode(c, true);
      if (card) { stopPlayer(card); list.replaceChild(node, card); }
      else list.insertBefore(node, prev ? prev.nextSibling : list.firstChild);
      prev = node;
    });
    if (list && !list.children.length) {
      var none = doc.querySelector("main .empty");
      list.parentNode.replaceChild(none ? document.importNode(none, true) : document.createElement("p"), list);
    }
    // the headings' ids follow the order (a new card's may repeat a kept one's)
    cards().forEach(function (card, i) {
      var h = card.querySelector("h2[id]"), art = card.querySelector("article[aria-labelledby]");
      if (h) h.id = "mount-" + (i + 1);
      if (art) art.setAttribute("aria-labelledby", "mount-" + (i + 1));
    });
    var lede = document.querySelector(".intro .lede"), freshLede = doc.querySelector(".intro .lede");
    if (lede && freshLede) {
      lede.textContent = "";
      Array.prototype.forEach.call(freshLede.childNodes, function (n) {
        lede.appendChild(document.importNode(n, true));
      });
    }
    tickUptimes();
    pickHlsWhereNeeded();
  }

  function fetchPage() {
    return fetch(location.origin + "/status.xsl", { cache: "no-store", credentials: "omit" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) { merge(new DOMParser().parseFromString(html, "text/html")); });
  }

  // Applies a status-json answer: fields of the cards in place; when mounts came or went (or
  // an ended card's player was paused), the cards and the count follow (fetchPage).
  function apply(data) {
    var stats = data && data.icestats ? data.icestats : {};
    var sources = stats.source;
    if (!Array.isArray(sources)) sources = sources ? [sources] : [];
    var seen = {};
    sources.forEach(function (src) { seen[mountOf(src)] = src; });
    var changed = false, shown = 0;
    cards().forEach(function (card) {
      var src = seen[card.getAttribute("data-mount")];
      if (card.hasAttribute("data-ended")) {
        if (src || !listening(card)) changed = true;
        return;
      }
      if (!src) { changed = true; return; }
      shown++;
      setText(card, "listeners", src.listeners);
      setText(card, "listener_peak", src.listener_peak);
      setText(card, "title", nowPlaying(src));
    });
    if (shown !== sources.length) changed = true;
    var done = changed ? fetchPage() : Promise.resolve();
    return done.then(function () {
      document.documentElement.setAttribute("data-updated", String(Date.now()));
    });
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
    document.addEventListener("play", onPlay, true);     // media events do not bubble
    document.addEventListener("pause", onPause, true);
    document.documentElement.classList.add("js");          // shows the HLS toggles
    document.addEventListener("click", onHlsToggle);
    pickHlsWhereNeeded();
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
