<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  audience.xsl: the audience figures of a period (/admin/audience.xsl?from=&to=&period=&mount=):
  sessions, qualified sessions, TLH, ATSL, CUME, peak listeners, prerolls and sessions per
  country for the server and each mount, hour by hour, day by day or for the whole period, with a form to choose the period and links to the same figures
  as XML, JSON and CSV. The definitions are in docs/AUDIENCE.md. Mount names are written
  as text only.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="audience">
  <xsl:variable name="query">
    <xsl:text>from=</xsl:text><xsl:value-of select="from"/>
    <xsl:text>&amp;to=</xsl:text><xsl:value-of select="to"/>
    <xsl:text>&amp;period=</xsl:text><xsl:value-of select="period"/>
    <xsl:if test="$mount != ''">
      <xsl:text>&amp;mount=</xsl:text>
      <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$mount"/></xsl:call-template>
    </xsl:if>
  </xsl:variable>
  <xsl:call-template name="page">
    <xsl:with-param name="title" select="'Audience'"/>
    <xsl:with-param name="active" select="'audience'"/>
    <xsl:with-param name="body">
      <p class="lede">
        <xsl:text>From </xsl:text><span class="mono"><xsl:value-of select="from"/></span>
        <xsl:text> to </xsl:text><span class="mono"><xsl:value-of select="to"/></span>
        <xsl:text> (UTC), by </xsl:text><xsl:value-of select="period"/>
        <xsl:text>. A qualified session lasted at least </xsl:text>
        <xsl:value-of select="min_session"/>
        <xsl:text> s; sessions still going on count as far as they went once qualified.</xsl:text>
      </p>
      <form class="audience-period" method="get" action="/admin/audience.xsl">
        <label>From <input type="text" name="from" value="{from}" size="20"/></label>
        <xsl:text> </xsl:text>
        <label>To <input type="text" name="to" value="{to}" size="20"/></label>
        <xsl:text> </xsl:text>
        <label>By
          <select name="period">
            <option value="all"><xsl:if test="period = 'all'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>period</option>
            <option value="day"><xsl:if test="period = 'day'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>day</option>
            <option value="hour"><xsl:if test="period = 'hour'"><xsl:attribute name="selected">selected</xsl:attribute></xsl:if>hour</option>
          </select>
        </label>
        <xsl:if test="$mount != ''">
          <input type="hidden" name="mount" value="{$mount}"/>
        </xsl:if>
        <xsl:text> </xsl:text>
        <button class="button small" type="submit">Show</button>
      </form>
      <p class="actions">
        <a class="button small" href="/admin/audience?{$query}">XML</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/audience.json?{$query}">JSON</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/audience.csv?{$query}">CSV</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/audience_charts.xsl" data-charts="">
          <xsl:if test="$mount != ''">
            <xsl:attribute name="href">
              <xsl:text>/admin/audience_charts.xsl?mount=</xsl:text>
              <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$mount"/></xsl:call-template>
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
              <th scope="col" title="sessions per country">Countries</th>
            </tr>
          </thead>
          <tbody>
            <xsl:for-each select="figures">
              <tr>
                <xsl:if test="mount = ''"><xsl:attribute name="class">server-row</xsl:attribute></xsl:if>
                <td class="time mono" data-label="From"><xsl:value-of select="start"/></td>
                <td class="mount" data-label="Mount">
                  <xsl:choose>
                    <xsl:when test="mount = ''">server</xsl:when>
                    <xsl:otherwise><xsl:value-of select="mount"/></xsl:otherwise>
                  </xsl:choose>
                </td>
                <td class="num" data-label="Sessions"><xsl:value-of select="sessions"/></td>
                <td class="num" data-label="Qualified"><xsl:value-of select="qualified_sessions"/></td>
                <td class="num" data-label="TLH"><xsl:value-of select="tlh_hours"/></td>
                <td class="num" data-label="ATSL">
                  <xsl:call-template name="duration">
                    <xsl:with-param name="s" select="atsl_seconds"/>
                  </xsl:call-template>
                </td>
                <td class="num" data-label="CUME"><xsl:value-of select="cume"/></td>
                <td class="num" data-label="Peak"><xsl:value-of select="peak_listeners"/></td>
                <td class="num" data-label="Prerolls"><xsl:value-of select="prerolls"/></td>
                <td class="country" data-label="Countries">
                  <xsl:for-each select="countries/country">
                    <xsl:if test="position() > 1"><xsl:text> </xsl:text></xsl:if>
                    <xsl:value-of select="@code"/><xsl:text> </xsl:text><xsl:value-of select="."/>
                  </xsl:for-each>
                </td>
              </tr>
            </xsl:for-each>
          </tbody>
        </table>
      </div>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

</xsl:stylesheet>
