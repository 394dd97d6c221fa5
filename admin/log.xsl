<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  log.xsl: the last error-log lines the server keeps in memory (/admin/log.xsl),
  newest first: time, level and text. The text may quote what clients sent: it
  is only ever written as text (here, and by admin.js, which polls /admin/log and
  shows new lines as they are logged: [data-log-lines], [data-field="log-count"]).
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="log">
  <xsl:call-template name="page">
    <xsl:with-param name="title" select="'Log'"/>
    <xsl:with-param name="active" select="'log'"/>
    <xsl:with-param name="body">
      <p class="lede">
        <xsl:text>The last </xsl:text>
        <span data-field="log-count"><xsl:value-of select="count(line)"/></span>
        <xsl:text> lines of the error log, newest first.</xsl:text>
      </p>
      <p class="actions">
        <a class="button small" href="/admin/log.xsl">Refresh</a>
        <xsl:text> </xsl:text>
        <a class="button small" href="/admin/log.json">JSON</a>
      </p>
      <div class="table-wrap">
        <table class="data log-lines">
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Level</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody data-log-lines="data-log-lines">
            <xsl:for-each select="line">
              <xsl:sort select="position()" data-type="number" order="descending"/>
              <xsl:variable name="level">
                <xsl:choose>
                  <xsl:when test="level = 'EROR'">error</xsl:when>
                  <xsl:when test="level = 'WARN'">warn</xsl:when>
                  <xsl:when test="level = 'INFO'">info</xsl:when>
                  <xsl:otherwise>debug</xsl:otherwise>
                </xsl:choose>
              </xsl:variable>
              <tr class="log-line level-{$level}" data-level="{$level}">
                <td class="time mono"><xsl:value-of select="time"/></td>
                <td class="level"><span class="badge"><xsl:value-of select="$level"/></span></td>
                <td class="text mono"><xsl:value-of select="text"/></td>
              </tr>
            </xsl:for-each>
            <xsl:if test="not(line)">
              <tr><td colspan="3" class="empty-row">Nothing logged yet.</td></tr>
            </xsl:if>
          </tbody>
        </table>
      </div>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

</xsl:stylesheet>
