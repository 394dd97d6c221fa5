<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  audience_charts.xsl: the audience charts (/admin/audience_charts.xsl?period=&from=&to=&mount=):
  the frame that web/audience.js fills with uPlot charts (web/vendor) and lists from
  /admin/history.json, /admin/audience.json and /admin/audience/top.json: listeners of the
  last hour, day or week, sessions and TLH per hour or day, the figures of the period,
  sessions per country, top players and referrers, a period, a mount and a server picker
  (servers sharing one store; shown when it holds more than one) and the CSV of the same
  query, and with all servers picked each server's figures of the period. Everything a client
  or server sent is set as text by the script. Without JavaScript the page points to the
  table of the figures (audience.xsl).
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="audience_charts">
  <xsl:call-template name="page">
    <xsl:with-param name="title" select="'Audience charts'"/>
    <xsl:with-param name="active" select="'charts'"/>
    <xsl:with-param name="head">
      <link rel="stylesheet" href="/vendor/uPlot.min.css"/>
      <script src="/vendor/uPlot.iife.min.js" defer="defer"></script>
      <script src="/audience.js" defer="defer"></script>
    </xsl:with-param>
    <xsl:with-param name="body">
      <p class="lede">
        <xsl:text>Listeners now, and the audience figures of the period (a qualified session lasted at least </xsl:text>
        <xsl:value-of select="min_session"/>
        <xsl:text> s; sessions still going on count as far as they went once qualified; the top players and referrers count ended sessions). Times are UTC.</xsl:text>
      </p>
      <noscript>
        <p class="notice">The charts need JavaScript: the same figures are in
          <a href="/admin/audience.xsl">the audience table</a>.</p>
      </noscript>
      <div class="audience-charts" data-audience-charts="" data-ac-mount="{$mount}" data-ac-server-name="{server_name}">
        <form class="ac-controls card" method="get" action="/admin/audience_charts.xsl">
          <div class="field">
            <label for="ac-period">Period</label>
            <select id="ac-period" name="period" data-ac="period">
              <option value="24h">Last 24 hours</option>
              <option value="7d">Last 7 days</option>
              <option value="30d">Last 30 days</option>
              <option value="custom">Custom…</option>
            </select>
          </div>
          <div class="field ac-custom" data-ac="custom" hidden="hidden">
            <label for="ac-from">From (UTC)</label>
            <input id="ac-from" type="date" name="from" data-ac="from"/>
          </div>
          <div class="field ac-custom" data-ac="custom" hidden="hidden">
            <label for="ac-to">To, inclusive (UTC)</label>
            <input id="ac-to" type="date" name="to" data-ac="to"/>
          </div>
          <div class="field">
            <label for="ac-mount">Mount</label>
            <select id="ac-mount" name="mount" data-ac="mount">
              <option value="">All mounts</option>
              <xsl:if test="$mount != ''">
                <option value="{$mount}" selected="selected"><xsl:value-of select="$mount"/></option>
              </xsl:if>
            </select>
          </div>
          <div class="field" data-ac="server-field" hidden="hidden">
            <label for="ac-server">Server</label>
            <select id="ac-server" name="server" data-ac="server">
              <option value="">All servers</option>
            </select>
          </div>
          <div class="field">
            <label for="ac-traffic">Traffic</label>
            <select id="ac-traffic" name="traffic" data-ac="traffic">
              <option value="net">Net (valid sessions)</option>
              <option value="gross">Gross (every session)</option>
            </select>
          </div>
          <div class="ac-links">
            <a class="button small" data-ac="csv" href="/admin/audience.csv" download="audience.csv">CSV</a>
            <a class="button small" data-ac="table" href="/admin/audience.xsl">Table</a>
          </div>
        </form>
        <p class="ac-traffic" data-ac="traffic-note">Net traffic: valid sessions only (robots and listeners over the concurrency limit left out).</p>
        <p class="ac-status muted" data-ac="status" role="status" aria-live="polite"></p>

        <section class="totals ac-summary" aria-label="Figures of the period" data-ac="summary">
          <div class="card stat"><span class="num" data-figure="sessions">—</span><span class="what">Sessions</span></div>
          <div class="card stat"><span class="num" data-figure="qualified_sessions">—</span><span class="what">Qualified sessions</span></div>
          <div class="card stat"><span class="num" data-figure="tlh">—</span><span class="what">TLH (hours)</span></div>
          <div class="card stat"><span class="num" data-figure="atsl_seconds">—</span><span class="what">ATSL</span></div>
          <div class="card stat"><span class="num" data-figure="cume">—</span><span class="what">CUME</span></div>
          <div class="card stat"><span class="num" data-figure="peak">—</span><span class="what">Peak listeners</span></div>
        </section>

        <section class="ac-servers" data-ac="servers" aria-labelledby="ac-servers-h" hidden="hidden">
          <h2 id="ac-servers-h">By server</h2>
          <p class="hint">Each server's figures of the period. A listener who listened on several servers counts once in the network's CUME, and once in each server's.</p>
          <div class="table-wrap">
            <table class="data ac-server-table">
              <thead>
                <tr>
                  <th scope="col">Server</th>
                  <th scope="col" class="num">Sessions</th>
                  <th scope="col" class="num">Qualified</th>
                  <th scope="col" class="num">TLH (hours)</th>
                  <th scope="col" class="num">ATSL</th>
                  <th scope="col" class="num">CUME</th>
                  <th scope="col" class="num">Peak</th>
                  <th scope="col">Share of sessions</th>
                </tr>
              </thead>
              <tbody data-ac="server-rows"></tbody>
            </table>
          </div>
        </section>

        <section class="card ac-chart" data-chart-box="listeners" aria-labelledby="ac-listeners-h">
          <div class="section-head">
            <h2 id="ac-listeners-h">Listeners</h2>
            <div class="ac-range" role="group" aria-label="Listeners over">
              <button type="button" class="small" data-range="hour" aria-pressed="true">Hour</button>
              <button type="button" class="small" data-range="day" aria-pressed="false">Day</button>
              <button type="button" class="small" data-range="week" aria-pressed="false">Week</button>
            </div>
          </div>
          <p class="hint" data-ac="listeners-note"></p>
          <div class="ac-plot" data-plot="listeners" role="img" aria-label="No data yet"></div>
        </section>

        <div class="ac-grid">
          <section class="card ac-chart" data-chart-box="sessions" aria-labelledby="ac-sessions-h">
            <h2 id="ac-sessions-h">Sessions <span class="muted" data-ac="bucket">per day</span></h2>
            <div class="ac-plot" data-plot="sessions" role="img" aria-label="No data yet"></div>
          </section>
          <section class="card ac-chart" data-chart-box="tlh" aria-labelledby="ac-tlh-h">
            <h2 id="ac-tlh-h">Listening hours (TLH) <span class="muted" data-ac="bucket">per day</span></h2>
            <div class="ac-plot" data-plot="tlh" role="img" aria-label="No data yet"></div>
          </section>
        </div>
        <p class="hint ac-partial" data-ac="partial" hidden="hidden"></p>

        <div class="ac-grid ac-lists">
          <section class="card" aria-labelledby="ac-countries-h">
            <h2 id="ac-countries-h">Countries</h2>
            <ol class="ac-list" data-list="countries"></ol>
          </section>
          <section class="card" aria-labelledby="ac-agents-h">
            <h2 id="ac-agents-h">Top players</h2>
            <ol class="ac-list" data-list="agents"></ol>
          </section>
          <section class="card" aria-labelledby="ac-referers-h">
            <h2 id="ac-referers-h">Top referrers</h2>
            <ol class="ac-list" data-list="referers"></ol>
          </section>
        </div>
      </div>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

</xsl:stylesheet>
