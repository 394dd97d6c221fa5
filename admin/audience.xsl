<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  audience.xsl: the audience figures of a period (/admin/audience.xsl?from=&to=&period=&mount=):
  sessions, qualified sessions, TLH, ATSL, CUME, peak listeners, prerolls, Webcast Metrics'
  AS, SS, TSL, AAS and AQH, and sessions per country for the server and each mount, net (valid
  sessions only) or gross (every session, invalid traffic too) as the page says, hour by hour, day by day or for the whole period, with a form to choose the period and links to the same figures
  as XML, JSON and CSV; the form and the links keep the mount and the server (server=) asked. The definitions are in docs/AUDIENCE.md. Mount names are written
  as text only. The figures are shown rounded for reading (TLH in hours to a tenth, ATSL as
  12m 30s, times to the minute, countries as "DE 12, FR 3"); the XML, JSON and CSV keep the
  server's values. The period form asks for UTC times with the browser's date and time picker
  and sends them as 2026-11-25T21:00, which the server reads as UTC. Below, the Ads tables:
  the ads figures of the same period, mount and server (/admin/audience/ads), per mount and
  per creative; ad titles come from ad servers and are written as text only.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="audience">
  <xsl:variable name="query">
    <xsl:text>from=</xsl:text><xsl:value-of select="from"/>
    <xsl:text>&amp;to=</xsl:text><xsl:value-of select="to"/>
    <xsl:text>&amp;period=</xsl:text><xsl:value-of select="period"/>
    <xsl:text>&amp;traffic=</xsl:text><xsl:value-of select="traffic"/>
    <xsl:if test="$mount != ''">
      <xsl:text>&amp;mount=</xsl:text>
      <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$mount"/></xsl:call-template>
    </xsl:if>
    <xsl:if test="server != ''">
      <xsl:text>&amp;server=</xsl:text>
      <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="server"/></xsl:call-template>
    </xsl:if>
  </xsl:variable>
  <xsl:call-template name="page">
    <xsl:with-param name="title" select="'Audience'"/>
    <xsl:with-param name="active" select="'audience'"/>
    <xsl:with-param name="body">
      <p class="lede">
        <xsl:text>From </xsl:text>
        <xsl:call-template name="utc-time"><xsl:with-param name="t" select="from"/></xsl:call-template>
        <xsl:text> to </xsl:text>
        <xsl:call-template name="utc-time"><xsl:with-param name="t" select="to"/></xsl:call-template>
        <xsl:text> (UTC), by </xsl:text><xsl:value-of select="period"/>
        <xsl:text>. A qualified session lasted at least </xsl:text>
        <xsl:value-of select="min_session"/>
        <xsl:text> s; sessions still going on count as far as they went once qualified. </xsl:text>
        <strong class="traffic">
          <xsl:choose>
            <xsl:when test="traffic = 'gross'">Gross traffic: every session, robots, probes and listeners over the concurrency limit included.</xsl:when>
            <xsl:otherwise>Net traffic: valid sessions only (robots, probes and listeners over the concurrency limit left out).</xsl:otherwise>
          </xsl:choose>
        </strong>
        <xsl:if test="server != ''">
          <xsl:text> Server </xsl:text><xsl:value-of select="server"/><xsl:text>.</xsl:text>
        </xsl:if>
      </p>
      <!-- datetime-local sends 2026-11-25T21:00: the server reads a time without an offset as UTC -->
      <form class="inline audience-period card" method="get" action="/admin/audience.xsl">
        <div class="field">
          <label for="au-from">From (UTC)</label>
          <input id="au-from" type="datetime-local" name="from" value="{substring(from, 1, 16)}"/>
        </div>
        <div class="field">
          <label for="au-to">To (UTC)</label>
          <input id="au-to" type="datetime-local" name="to" value="{substring(to, 1, 16)}"/>
        </div>
        <div class="field">
          <label for="au-by">By</label>
          <select id="au-by" name="period">
            <option value="all"><xsl:if test="period = 'all'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>whole period</option>
            <option value="day"><xsl:if test="period = 'day'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>day</option>
            <option value="hour"><xsl:if test="period = 'hour'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>hour</option>
          </select>
        </div>
        <div class="field">
          <label for="au-traffic">Traffic</label>
          <select id="au-traffic" name="traffic">
            <option value="net"><xsl:if test="traffic != 'gross'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>net</option>
            <option value="gross"><xsl:if test="traffic = 'gross'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>gross</option>
          </select>
        </div>
        <xsl:if test="$mount != ''">
          <input type="hidden" name="mount" value="{$mount}"/>
        </xsl:if>
        <xsl:if test="server != ''">
          <input type="hidden" name="server" value="{server}"/>
        </xsl:if>
        <button class="primary" type="submit">Show</button>
      </form>
      <p class="actions">
        <a class="button small" href="/admin/audience?{$query}">XML</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/audience.json?{$query}">JSON</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/audience.csv?{$query}">CSV</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/audience_charts.xsl" data-charts="">
          <xsl:if test="$mount != '' or server != ''">
            <xsl:attribute name="href">
              <xsl:text>/admin/audience_charts.xsl?</xsl:text>
              <xsl:if test="$mount != ''">
                <xsl:text>mount=</xsl:text>
                <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$mount"/></xsl:call-template>
              </xsl:if>
              <xsl:if test="server != ''">
                <xsl:if test="$mount != ''"><xsl:text>&amp;</xsl:text></xsl:if>
                <xsl:text>server=</xsl:text>
                <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="server"/></xsl:call-template>
              </xsl:if>
            </xsl:attribute>
          </xsl:if>
          <xsl:text>Charts</xsl:text>
        </a>
      </p>
      <div class="table-wrap">
        <table class="data audience-figures">
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">Mount</th>
              <th scope="col" title="sessions">Sessions</th>
              <th scope="col" title="qualified sessions">Qualified</th>
              <th scope="col" title="total listening hours">TLH</th>
              <th scope="col" title="average time spent listening">ATSL</th>
              <th scope="col" title="distinct listeners">CUME</th>
              <th scope="col" title="most listeners at once">Peak</th>
              <th scope="col" title="prerolls played to their end">Prerolls</th>
              <th scope="col" title="Webcast Metrics: active sessions (one minute or more)">AS</th>
              <th scope="col" title="Webcast Metrics: sessions started in the period">SS</th>
              <th scope="col" title="Webcast Metrics: time spent listening, TLH / CUME">TSL</th>
              <th scope="col" title="Webcast Metrics: average active sessions, TLH / hours">AAS</th>
              <th scope="col" title="Webcast Metrics: average quarter-hour listeners">AQH</th>
              <th scope="col" title="sessions per country">Countries</th>
            </tr>
          </thead>
          <tbody>
            <xsl:for-each select="figures">
              <tr>
                <xsl:if test="mount = ''"><xsl:attribute name="class">server-row</xsl:attribute></xsl:if>
                <td class="time" data-label="From">
                  <time datetime="{start}">
                    <xsl:call-template name="utc-time"><xsl:with-param name="t" select="start"/></xsl:call-template>
                  </time>
                </td>
                <td class="mount" data-label="Mount">
                  <xsl:choose>
                    <xsl:when test="mount = ''">server</xsl:when>
                    <xsl:otherwise><xsl:value-of select="mount"/></xsl:otherwise>
                  </xsl:choose>
                </td>
                <td class="num" data-label="Sessions"><xsl:value-of select="sessions"/></td>
                <td class="num" data-label="Qualified"><xsl:value-of select="qualified_sessions"/></td>
                <td class="num" data-label="TLH">
                  <xsl:call-template name="hours"><xsl:with-param name="h" select="tlh_hours"/></xsl:call-template>
                </td>
                <td class="num" data-label="ATSL">
                  <xsl:call-template name="duration-short">
                    <xsl:with-param name="s" select="atsl_seconds"/>
                  </xsl:call-template>
                </td>
                <td class="num" data-label="CUME"><xsl:value-of select="cume"/></td>
                <td class="num" data-label="Peak"><xsl:value-of select="peak_listeners"/></td>
                <td class="num" data-label="Prerolls"><xsl:value-of select="prerolls"/></td>
                <td class="num" data-label="AS"><xsl:value-of select="active_sessions"/></td>
                <td class="num" data-label="SS"><xsl:value-of select="sessions_started"/></td>
                <td class="num" data-label="TSL">
                  <xsl:call-template name="duration-short">
                    <xsl:with-param name="s" select="round(number(tsl_hours) * 3600)"/>
                  </xsl:call-template>
                </td>
                <td class="num" data-label="AAS"><xsl:value-of select="format-number(number(aas), '#,##0.0##')"/></td>
                <td class="num" data-label="AQH"><xsl:value-of select="format-number(number(aqh), '#,##0.0##')"/></td>
                <td class="country" data-label="Countries">
                  <xsl:for-each select="countries/country">
                    <xsl:if test="position() > 1"><xsl:text>, </xsl:text></xsl:if>
                    <span class="cc"><xsl:value-of select="@code"/><xsl:text> </xsl:text><xsl:value-of select="."/></span>
                  </xsl:for-each>
                </td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </div>
      <xsl:apply-templates select="ads"><xsl:with-param name="query" select="$query"/></xsl:apply-templates>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

<!-- The ads figures of the same period (/admin/audience/ads): per mount, then per creative.
     Rates as percentages; ad time as 12m 30s; names and titles as text. -->
<xsl:template match="ads">
  <xsl:param name="query"/>
  <div class="section-head">
    <h2 id="ads">Ads</h2>
    <p class="actions">
      <a class="button small" href="/admin/audience/ads?{$query}">XML</a>
      <xsl:text> </xsl:text>
      <a class="button small" href="/admin/audience/ads.json?{$query}">JSON</a>
      <xsl:text> </xsl:text>
      <a class="button small" href="/admin/audience/ads.csv?{$query}">CSV</a>
    </p>
  </div>
  <xsl:choose>
    <xsl:when test="not(ads_mount)">
      <p class="empty">No ad decisions in this period.</p>
    </xsl:when>
    <xsl:otherwise>
      <div class="table-wrap">
        <table class="data audience-ads">
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col">Mount</th>
              <th scope="col" title="ad decisions asked for listeners and HLS sessions">Requests</th>
              <th scope="col" title="ads placed">Fills</th>
              <th scope="col" title="fills / requests">Fill rate</th>
              <th scope="col" title="impressions fired">Impressions</th>
              <th scope="col" title="starts fired">Starts</th>
              <th scope="col" title="completes fired">Completes</th>
              <th scope="col" title="completes / impressions">Completion</th>
              <th scope="col" title="time of ads delivered">Ad time</th>
            </tr>
          </thead>
          <tbody>
            <xsl:for-each select="ads_mount">
              <tr>
                <xsl:if test="mount = ''"><xsl:attribute name="class">server-row</xsl:attribute></xsl:if>
                <td class="time" data-label="From">
                  <time datetime="{start}">
                    <xsl:call-template name="utc-time"><xsl:with-param name="t" select="start"/></xsl:call-template>
                  </time>
                </td>
                <td class="mount" data-label="Mount">
                  <xsl:choose>
                    <xsl:when test="mount = ''">server</xsl:when>
                    <xsl:otherwise><xsl:value-of select="mount"/></xsl:otherwise>
                  </xsl:choose>
                </td>
                <td class="num" data-label="Requests"><xsl:value-of select="requests"/></td>
                <td class="num" data-label="Fills"><xsl:value-of select="fills"/></td>
                <td class="num" data-label="Fill rate"><xsl:value-of select="format-number(number(fill_rate), '0.0%')"/></td>
                <td class="num" data-label="Impressions"><xsl:value-of select="impressions"/></td>
                <td class="num" data-label="Starts"><xsl:value-of select="starts"/></td>
                <td class="num" data-label="Completes"><xsl:value-of select="completes"/></td>
                <td class="num" data-label="Completion"><xsl:value-of select="format-number(number(completion_rate), '0.0%')"/></td>
                <td class="num" data-label="Ad time">
                  <xsl:call-template name="duration-short">
                    <xsl:with-param name="s" select="round(number(ad_seconds))"/>
                  </xsl:call-template>
                </td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </div>
      <div class="section-head">
        <h2 id="ads-creatives">Ads by creative</h2>
      </div>
      <div class="table-wrap">
        <table class="data audience-creatives">
          <thead>
            <tr>
              <th scope="col">From</th>
              <th scope="col" title="the VAST creative's id (url: and a hash of its file's URL when it has none)">Creative</th>
              <th scope="col" title="the VAST ad's id and title">Ad</th>
              <th scope="col">Impressions</th>
              <th scope="col">Starts</th>
              <th scope="col" title="first quartile">Q1</th>
              <th scope="col" title="midpoint">Mid</th>
              <th scope="col" title="third quartile">Q3</th>
              <th scope="col">Completes</th>
              <th scope="col" title="completes / impressions">Completion</th>
            </tr>
          </thead>
          <tbody>
            <xsl:for-each select="ads_creative">
              <tr>
                <td class="time" data-label="From">
                  <time datetime="{start}">
                    <xsl:call-template name="utc-time"><xsl:with-param name="t" select="start"/></xsl:call-template>
                  </time>
                </td>
                <td class="creative" data-label="Creative"><code><xsl:value-of select="creative_id"/></code></td>
                <td class="ad" data-label="Ad">
                  <xsl:value-of select="title"/>
                  <xsl:if test="ad_id != ''">
                    <xsl:text> </xsl:text><small>(<xsl:value-of select="ad_id"/>)</small>
                  </xsl:if>
                </td>
                <td class="num" data-label="Impressions"><xsl:value-of select="impressions"/></td>
                <td class="num" data-label="Starts"><xsl:value-of select="starts"/></td>
                <td class="num" data-label="Q1"><xsl:value-of select="first_quartiles"/></td>
                <td class="num" data-label="Mid"><xsl:value-of select="midpoints"/></td>
                <td class="num" data-label="Q3"><xsl:value-of select="third_quartiles"/></td>
                <td class="num" data-label="Completes"><xsl:value-of select="completes"/></td>
                <td class="num" data-label="Completion"><xsl:value-of select="format-number(number(completion_rate), '0.0%')"/></td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </div>
    </xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!-- 2026-11-25T21:00:00Z as 2026-11-25 21:00 (anything else as it is). -->
<xsl:template name="utc-time">
  <xsl:param name="t"/>
  <xsl:choose>
    <xsl:when test="string-length($t) &gt;= 16 and substring($t, 11, 1) = 'T'">
      <xsl:value-of select="concat(substring($t, 1, 10), ' ', substring($t, 12, 5))"/>
    </xsl:when>
    <xsl:otherwise><xsl:value-of select="$t"/></xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!-- Hours to a tenth (1,234.5); a time under three minutes that is not none as "&lt; 0.1", not as
     a 0.0 that reads like nobody listened; the exact time in the title. -->
<xsl:template name="hours">
  <xsl:param name="h"/>
  <xsl:variable name="v" select="number($h)"/>
  <xsl:choose>
    <xsl:when test="not($v = $v)"><xsl:value-of select="$h"/></xsl:when>
    <xsl:otherwise>
      <span>
        <xsl:attribute name="title">
          <xsl:call-template name="duration-short"><xsl:with-param name="s" select="round($v * 3600)"/></xsl:call-template>
        </xsl:attribute>
        <xsl:choose>
          <xsl:when test="$v &gt; 0 and $v &lt; 0.05">&lt; 0.1</xsl:when>
          <xsl:otherwise><xsl:value-of select="format-number($v, '#,##0.0')"/></xsl:otherwise>
        </xsl:choose>
      </span>
    </xsl:otherwise>
  </xsl:choose>
</xsl:template>

</xsl:stylesheet>
