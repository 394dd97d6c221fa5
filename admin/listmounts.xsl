<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  listmounts.xsl: every live mount in a table (/admin/listmounts.xsl): listeners,
  time connected, content type, fallback, and links to each mount's pages.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="icestats">
  <xsl:call-template name="page">
    <xsl:with-param name="title" select="'Mounts'"/>
    <xsl:with-param name="active" select="'mounts'"/>
    <xsl:with-param name="body">
      <div class="table-wrap">
        <table class="data">
          <thead>
            <tr>
              <th scope="col">Mount</th>
              <th scope="col" class="num">Listeners</th>
              <th scope="col" class="num">Connected</th>
              <th scope="col">Content type</th>
              <th scope="col">Fallback</th>
              <th scope="col"><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            <xsl:apply-templates select="source"/>
            <xsl:if test="not(source)">
              <tr><td colspan="6" class="empty-row">No source is connected.</td></tr>
            </xsl:if>
          </tbody>
        </table>
      </div>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

<xsl:template match="source">
  <xsl:variable name="q">
    <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="@mount"/></xsl:call-template>
  </xsl:variable>
  <tr data-mount="{@mount}">
    <td class="name"><a href="/admin/stats.xsl?mount={$q}"><code><xsl:value-of select="@mount"/></code></a></td>
    <td class="num" data-label="Listeners" data-field="listeners"><xsl:value-of select="listeners"/></td>
    <td class="num" data-label="Connected">
      <xsl:call-template name="duration"><xsl:with-param name="s" select="Connected"/></xsl:call-template>
    </td>
    <td data-label="Content type"><xsl:value-of select="content-type"/></td>
    <td>
      <xsl:if test="normalize-space(fallback)"><xsl:attribute name="data-label">Fallback</xsl:attribute></xsl:if>
      <xsl:value-of select="fallback"/>
    </td>
    <td class="actions">
      <a class="button small" href="/admin/listclients.xsl?mount={$q}">Listeners</a>
      <xsl:text> </xsl:text>
      <a class="button small" href="/admin/moveclients.xsl?mount={$q}">Move</a>
      <xsl:text> </xsl:text>
      <a class="button small" href="/admin/updatemetadata.xsl?mount={$q}">Metadata</a>
    </td>
  </tr>
</xsl:template>

</xsl:stylesheet>
