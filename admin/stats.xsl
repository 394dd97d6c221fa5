<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  stats.xsl: the admin overview (/admin/stats.xsl, also /admin/). Server totals,
  then one card per mount (hidden ones included): listeners, peak, now playing,
  source address, uptime, content type, bitrate, traffic, and the actions (list
  clients, move listeners, update metadata, kill source). With ?mount= only that
  mount is in the document and the page is that mount's details page: the server adds the
  stylesheet parameter $mount (the request's mount=, "" on the overview), since the document
  holds the server's fields either way; the page is titled with the mount, shows its own
  figures instead of the server totals, and no mount table. Next to the cards, a compact table of every mount (name,
  listeners, bitrate, uptime, now playing) that admin.js sorts and switches to. Settings of the config file that the server does not
  implement (config-warnings) are listed first, as a notice. Mounts configured with htpasswd
  users that have no source (htpasswd-mounts) are listed with a link to their users; a card's
  Users tab shows for htpasswd mounts only. admin.js keeps the numbers live (server-sent events).
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<!-- Set by the server: the mount= of the request, "" for the overview. -->
<xsl:param name="mount" select="''"/>

<xsl:template match="icestats">
  <xsl:variable name="one" select="source[$mount != '' and @mount = $mount]"/>
  <xsl:call-template name="page">
    <xsl:with-param name="title">
      <xsl:choose>
        <xsl:when test="$one"><xsl:value-of select="$one/@mount"/></xsl:when>
        <xsl:when test="count(source) = 1 and not(server_id)">Mount <xsl:value-of select="source/@mount"/></xsl:when>
        <xsl:otherwise>Overview</xsl:otherwise>
      </xsl:choose>
    </xsl:with-param>
    <xsl:with-param name="subtitle">
      <xsl:if test="$one and normalize-space($one/server_name)">
        <xsl:value-of select="$one/server_name"/>
      </xsl:if>
    </xsl:with-param>
    <xsl:with-param name="active">
      <xsl:choose>
        <xsl:when test="$one">mounts</xsl:when>
        <xsl:otherwise>stats</xsl:otherwise>
      </xsl:choose>
    </xsl:with-param>
    <xsl:with-param name="body">
      <xsl:choose>
        <xsl:when test="$one"><xsl:apply-templates select="$one" mode="details"/></xsl:when>
        <xsl:otherwise><xsl:apply-templates select="." mode="overview"/></xsl:otherwise>
      </xsl:choose>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

<!-- One mount's page: its own figures (kept live by admin.js through data-mount), its card. -->
<xsl:template match="source" mode="details">
  <section aria-label="Mount figures" class="totals mount-totals" data-mount="{@mount}">
    <xsl:call-template name="total">
      <xsl:with-param name="field" select="'listeners'"/>
      <xsl:with-param name="label" select="'Listeners'"/>
    </xsl:call-template>
    <xsl:call-template name="total">
      <xsl:with-param name="field" select="'listener_peak'"/>
      <xsl:with-param name="label" select="'Peak'"/>
    </xsl:call-template>
    <xsl:call-template name="total">
      <xsl:with-param name="field" select="'slow_listeners'"/>
      <xsl:with-param name="label" select="'Slow listeners'"/>
    </xsl:call-template>
    <div class="card stat">
      <span class="num" data-field="total_bytes_sent" data-format="bytes">
        <xsl:call-template name="bytes"><xsl:with-param name="n" select="total_bytes_sent"/></xsl:call-template></span>
      <span class="what">Sent</span>
    </div>
  </section>
  <xsl:call-template name="history-charts">
    <xsl:with-param name="mount" select="@mount"/>
  </xsl:call-template>
  <ul class="admin-mounts" data-live="mounts">
    <xsl:apply-templates select="."/>
  </ul>
</xsl:template>

<!-- Listeners and bandwidth of the last hour ("" for the server), drawn by admin.js from
     /admin/history.json into the empty SVGs, and redrawn every 10 s. The time axis is the
     whole hour, ending now; a time without samples is left blank. -->
<xsl:template name="history-charts">
  <xsl:param name="mount"/>
  <section class="card panel history" data-history="{$mount}" aria-labelledby="history-h">
    <div class="section-head">
      <h2 id="history-h">Last hour</h2>
      <span class="muted" data-history-note="" aria-live="polite"></span>
    </div>
    <div class="charts">
      <xsl:call-template name="chart">
        <xsl:with-param name="key" select="'listeners'"/>
        <xsl:with-param name="label" select="'Listeners'"/>
      </xsl:call-template>
      <xsl:call-template name="chart">
        <xsl:with-param name="key" select="'bytes_per_s'"/>
        <xsl:with-param name="label" select="'Bandwidth'"/>
      </xsl:call-template>
    </div>
    <noscript><p class="muted">The charts need JavaScript; the samples are in
      <a href="/admin/history">the history document</a>.</p></noscript>
  </section>
</xsl:template>

<xsl:template name="chart">
  <xsl:param name="key"/>
  <xsl:param name="label"/>
  <figure class="chart" data-chart="{$key}" data-label="{$label}">
    <figcaption>
      <span class="what"><xsl:value-of select="$label"/></span>
      <strong data-chart-now="">—</strong>
      <span class="muted" data-chart-max=""></span>
    </figcaption>
    <svg class="spark" viewBox="0 0 300 80" preserveAspectRatio="none" role="img" aria-label="{$label}"></svg>
    <div class="axis" aria-hidden="true"><span>60 min ago</span><span>30 min</span><span>now</span></div>
  </figure>
</xsl:template>

<xsl:template match="icestats" mode="overview">
      <xsl:apply-templates select="config-warnings"/>
      <xsl:if test="server_id">
        <section aria-label="Server totals" class="totals" data-live="stats">
          <xsl:call-template name="total">
            <xsl:with-param name="field" select="'listeners'"/>
            <xsl:with-param name="label" select="'Listeners'"/>
          </xsl:call-template>
          <xsl:call-template name="total">
            <xsl:with-param name="field" select="'sources'"/>
            <xsl:with-param name="label" select="'Sources'"/>
          </xsl:call-template>
          <xsl:call-template name="total">
            <xsl:with-param name="field" select="'clients'"/>
            <xsl:with-param name="label" select="'Clients'"/>
          </xsl:call-template>
          <xsl:call-template name="total">
            <xsl:with-param name="field" select="'connections'"/>
            <xsl:with-param name="label" select="'Connections so far'"/>
          </xsl:call-template>
          <xsl:call-template name="total">
            <xsl:with-param name="field" select="'listener_connections'"/>
            <xsl:with-param name="label" select="'Listener connections'"/>
          </xsl:call-template>
        </section>
      </xsl:if>
      <div class="section-head">
        <h2>Mounts</h2>
        <xsl:if test="server_id">
          <span class="muted">
            <xsl:value-of select="server_id"/>
            <xsl:text> · </xsl:text>
            <span data-since="{server_start_iso8601}" data-prefix="up " title="{server_start}">
              <xsl:text>running since </xsl:text><xsl:value-of select="server_start"/></span>
          </span>
        </xsl:if>
      </div>
      <xsl:choose>
        <xsl:when test="source">
          <div class="view-switch" role="group" aria-label="Show the mounts as" hidden="hidden">
            <button type="button" class="small" data-view="cards" aria-pressed="true">Cards</button>
            <button type="button" class="small" data-view="table" aria-pressed="false">Table</button>
          </div>
          <div class="table-wrap mount-table-wrap">
            <table class="data mount-table" data-mount-table="all">
              <caption class="sr-only">Every mount</caption>
              <thead>
                <tr>
                  <th scope="col" data-sort="name" aria-sort="ascending">Name</th>
                  <th scope="col" class="num" data-sort="listeners">Listeners</th>
                  <th scope="col" class="num" data-sort="bitrate">Bitrate</th>
                  <th scope="col" class="num" data-sort="uptime">Uptime</th>
                  <th scope="col">Now playing</th>
                </tr>
              </thead>
              <tbody>
                <xsl:apply-templates select="source" mode="row">
                  <xsl:sort select="translate(concat(normalize-space(server_name), substring(@mount, 1, string-length(@mount) * not(normalize-space(server_name)))), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"/>
                </xsl:apply-templates>
              </tbody>
            </table>
          </div>
          <ul class="admin-mounts" data-live="mounts">
            <xsl:apply-templates select="source"/>
          </ul>
        </xsl:when>
        <xsl:otherwise>
          <p class="empty" data-live="mounts">No source is connected.</p>
        </xsl:otherwise>
      </xsl:choose>
      <xsl:variable name="live" select="source/@mount"/>
      <xsl:variable name="sourceless" select="htpasswd-mounts/mount[not(. = $live)]"/>
      <xsl:if test="$sourceless">
        <section class="card panel spaced" aria-labelledby="users-h">
          <h2 id="users-h">Protected mounts without a source</h2>
          <p class="muted">Listeners of these mounts log in with a user of the mount's
            htpasswd file; the users can be managed before a source connects.</p>
          <ul class="sourceless-users">
            <xsl:for-each select="$sourceless">
              <xsl:variable name="q">
                <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="."/></xsl:call-template>
              </xsl:variable>
              <li data-users-mount="{.}"><code><xsl:value-of select="."/></code>
                <xsl:text> · </xsl:text>
                <a href="/admin/manageauth.xsl?mount={$q}">Users</a></li>
            </xsl:for-each>
          </ul>
        </section>
      </xsl:if>
      <xsl:if test="server_id">
        <xsl:call-template name="history-charts">
          <xsl:with-param name="mount" select="''"/>
        </xsl:call-template>
        <section class="card panel spaced" aria-labelledby="server-h">
          <h2 id="server-h">Server</h2>
          <table class="kv">
            <tbody>
              <tr><th scope="row">Server</th><td><xsl:value-of select="server_id"/></td></tr>
              <tr><th scope="row">Host</th><td><xsl:value-of select="host"/></td></tr>
              <tr><th scope="row">Location</th><td><xsl:value-of select="location"/></td></tr>
              <tr><th scope="row">Contact</th><td><xsl:value-of select="admin"/></td></tr>
              <tr><th scope="row">Started</th><td><xsl:value-of select="server_start"/></td></tr>
              <tr><th scope="row">Source connections</th>
                <td><span data-field="source_total_connections"><xsl:value-of select="source_total_connections"/></span></td></tr>
              <tr><th scope="row">File connections</th>
                <td><span data-field="file_connections"><xsl:value-of select="file_connections"/></span></td></tr>
            </tbody>
          </table>
        </section>
      </xsl:if>
</xsl:template>

<xsl:template match="config-warnings">
  <section class="notice bad config-warnings" role="status" aria-labelledby="config-warnings-h">
    <h2 id="config-warnings-h" class="msg">Configuration file: <xsl:value-of select="count(warning)"/>
      <xsl:choose>
        <xsl:when test="count(warning) = 1"> warning</xsl:when>
        <xsl:otherwise> warnings</xsl:otherwise>
      </xsl:choose></h2>
    <p>These settings have no effect (see conf/README.md); the server runs without them.</p>
    <ul>
      <xsl:for-each select="warning">
        <li data-setting="{setting}">
          <code><xsl:value-of select="file"/>:<xsl:value-of select="line"/></code>
          <xsl:text> </xsl:text>
          <strong><xsl:value-of select="setting"/></strong>
          <xsl:text>: </xsl:text>
          <xsl:value-of select="message"/>
        </li>
      </xsl:for-each>
    </ul>
  </section>
</xsl:template>

<xsl:template name="total">
  <xsl:param name="field"/>
  <xsl:param name="label"/>
  <div class="card stat">
    <span class="num" data-field="{$field}"><xsl:value-of select="*[name() = $field]"/></span>
    <span class="what"><xsl:value-of select="$label"/></span>
  </div>
</xsl:template>

<xsl:template match="source">
  <xsl:variable name="id" select="concat('mount-', position())"/>
  <li class="card" data-mount="{@mount}">
    <article aria-labelledby="{$id}">
      <header class="mount-head">
        <div class="mount-title">
          <h3 id="{$id}">
            <xsl:choose>
              <xsl:when test="normalize-space(server_name)"><xsl:value-of select="server_name"/></xsl:when>
              <xsl:otherwise><xsl:value-of select="@mount"/></xsl:otherwise>
            </xsl:choose>
          </h3>
          <p class="mount-path"><span class="onair" aria-hidden="true"></span><code><xsl:value-of select="@mount"/></code>
            <xsl:if test="public = '0'"><span class="muted"> · not listed</span></xsl:if></p>
        </div>
        <p class="listeners">
          <span class="big" data-field="listeners"><xsl:value-of select="listeners"/></span>
          <span class="unit"> listening</span><span class="sep">&#160;·</span>
          <span class="peak"> peak&#160;<span data-field="listener_peak"><xsl:value-of select="listener_peak"/></span>
            <xsl:if test="normalize-space(max_listeners) and max_listeners != 'unlimited'">
              <xsl:text>&#160;· max&#160;</xsl:text><xsl:value-of select="max_listeners"/>
            </xsl:if>
          </span>
        </p>
      </header>
      <div class="nowplaying">
        <span class="label">Now playing</span>
        <xsl:text> </xsl:text>
        <span class="np" data-field="title"><xsl:call-template name="now-playing"/></span>
      </div>
      <dl class="facts">
        <div><dt>Source</dt><dd data-field="source_ip"><xsl:value-of select="source_ip"/></dd></div>
        <div><dt>Uptime</dt><dd><span data-since="{stream_start_iso8601}" title="{stream_start}">
          <xsl:text>since </xsl:text><xsl:value-of select="stream_start"/></span></dd></div>
        <div><dt>Content type</dt><dd><xsl:value-of select="server_type"/>
          <xsl:if test="normalize-space(subtype)"> (<xsl:value-of select="subtype"/>)</xsl:if></dd></div>
        <div><dt>Bitrate</dt><dd><xsl:call-template name="bitrate"/></dd></div>
        <div><dt>Sent</dt><dd data-field="total_bytes_sent" data-format="bytes">
          <xsl:call-template name="bytes"><xsl:with-param name="n" select="total_bytes_sent"/></xsl:call-template></dd></div>
        <div><dt>Received</dt><dd data-field="total_bytes_read" data-format="bytes">
          <xsl:call-template name="bytes"><xsl:with-param name="n" select="total_bytes_read"/></xsl:call-template></dd></div>
        <div><dt>Slow listeners</dt><dd data-field="slow_listeners"><xsl:value-of select="slow_listeners"/></dd></div>
        <xsl:if test="normalize-space(genre)">
          <div><dt>Genre</dt><dd><xsl:value-of select="genre"/></dd></div>
        </xsl:if>
        <div class="wide"><dt>Source client</dt><dd><xsl:value-of select="user_agent"/></dd></div>
      </dl>
      <xsl:if test="ad_breaks = '1'">
        <form action="/admin/adbreak.xsl" method="get" class="adbreak">
          <input type="hidden" name="mount" value="{@mount}"/>
          <label>Ad break of <input type="number" name="duration" min="1" max="600" value="30"
            required="required" inputmode="numeric"/> s</label>
          <xsl:text> </xsl:text>
          <button type="submit" class="small">Start an ad break</button>
        </form>
      </xsl:if>
      <xsl:call-template name="mount-tabs">
        <xsl:with-param name="mount" select="@mount"/>
        <xsl:with-param name="active" select="'none'"/>
        <xsl:with-param name="auth" select="string(authenticator)"/>
      </xsl:call-template>
    </article>
  </li>
</xsl:template>

<!-- One row of the mount table; data-* hold the sort keys (admin.js). -->
<xsl:template match="source" mode="row">
  <xsl:variable name="q">
    <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="@mount"/></xsl:call-template>
  </xsl:variable>
  <xsl:variable name="name">
    <xsl:choose>
      <xsl:when test="normalize-space(server_name)"><xsl:value-of select="server_name"/></xsl:when>
      <xsl:otherwise><xsl:value-of select="@mount"/></xsl:otherwise>
    </xsl:choose>
  </xsl:variable>
  <xsl:variable name="kbps">
    <xsl:choose>
      <xsl:when test="number(bitrate) = number(bitrate)"><xsl:value-of select="number(bitrate)"/></xsl:when>
      <xsl:when test="number(ice-bitrate) = number(ice-bitrate)"><xsl:value-of select="number(ice-bitrate)"/></xsl:when>
      <xsl:when test="number(audio_bitrate) &gt; 0"><xsl:value-of select="round(audio_bitrate div 1000)"/></xsl:when>
      <xsl:otherwise>0</xsl:otherwise>
    </xsl:choose>
  </xsl:variable>
  <tr data-mount="{@mount}" data-name="{$name}" data-bitrate="{$kbps}" data-start="{stream_start_iso8601}">
    <td class="name"><a href="/admin/stats.xsl?mount={$q}"><xsl:value-of select="$name"/></a>
      <xsl:text> </xsl:text><code class="muted"><xsl:value-of select="@mount"/></code></td>
    <td class="num" data-label="Listeners" data-field="listeners"><xsl:value-of select="listeners"/></td>
    <td class="num" data-label="Bitrate"><xsl:call-template name="bitrate"/></td>
    <td class="num" data-label="Uptime"><span data-since="{stream_start_iso8601}" title="{stream_start}">
      <xsl:value-of select="stream_start"/></span></td>
    <td class="np" data-label="Now playing" data-field="title"><xsl:call-template name="now-playing"/></td>
  </tr>
</xsl:template>

<xsl:template name="bitrate">
  <xsl:choose>
    <xsl:when test="normalize-space(bitrate)"><xsl:value-of select="bitrate"/>
      <xsl:if test="number(bitrate) = number(bitrate)"> kbit/s</xsl:if></xsl:when>
    <xsl:when test="normalize-space(ice-bitrate)"><xsl:value-of select="ice-bitrate"/>
      <xsl:if test="number(ice-bitrate) = number(ice-bitrate)"> kbit/s</xsl:if></xsl:when>
    <xsl:when test="number(audio_bitrate) &gt; 0"><xsl:value-of select="round(audio_bitrate div 1000)"/> kbit/s</xsl:when>
    <xsl:otherwise>—</xsl:otherwise>
  </xsl:choose>
</xsl:template>

</xsl:stylesheet>
