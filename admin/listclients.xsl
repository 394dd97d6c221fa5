<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  listclients.xsl: the listeners of one mount (/admin/listclients.xsl?mount=):
  ID, address, user agent, time connected, and a Kick button per listener
  (GET /admin/killclient.xsl?mount=&id=), plus a form that moves every listener to
  another mount (GET /admin/moveclients.xsl). admin.js refreshes the table live.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="icestats">
  <xsl:variable name="src" select="source[1]"/>
  <xsl:variable name="q">
    <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$src/@mount"/></xsl:call-template>
  </xsl:variable>
  <xsl:call-template name="page">
    <xsl:with-param name="title">Listeners of <xsl:value-of select="$src/@mount"/></xsl:with-param>
    <xsl:with-param name="active" select="'mounts'"/>
    <xsl:with-param name="body">
      <xsl:call-template name="mount-tabs">
        <xsl:with-param name="mount" select="$src/@mount"/>
        <xsl:with-param name="active" select="'clients'"/>
      </xsl:call-template>
      <p class="lede"><span data-field="client-count"><xsl:value-of select="count($src/listener)"/></span>
        <xsl:text> connected</xsl:text></p>
      <div class="table-wrap">
        <table class="data" data-clients-mount="{$src/@mount}">
          <caption class="sr-only">Listeners of <xsl:value-of select="$src/@mount"/></caption>
          <thead>
            <tr>
              <th scope="col" class="num">ID</th>
              <th scope="col">Address</th>
              <th scope="col">User agent</th>
              <th scope="col" class="num">Connected</th>
              <xsl:if test="$src/listener/username">
                <th scope="col">User</th>
              </xsl:if>
              <th scope="col"><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            <xsl:apply-templates select="$src/listener"/>
            <xsl:if test="not($src/listener)">
              <tr><td colspan="5" class="empty-row">Nobody is listening.</td></tr>
            </xsl:if>
          </tbody>
        </table>
      </div>
      <section class="card panel spaced" aria-labelledby="move-h">
        <h2 id="move-h">Move all listeners</h2>
        <form class="inline" action="/admin/moveclients.xsl" method="get">
          <input type="hidden" name="mount" value="{$src/@mount}"/>
          <div class="field">
            <label for="destination">Destination mount</label>
            <input type="text" id="destination" name="destination" required="required"
                   placeholder="/other.mp3" autocomplete="off"/>
          </div>
          <button type="submit" class="primary">Move listeners</button>
        </form>
        <p class="hint">Listeners keep playing on the destination. Or
          <a href="/admin/moveclients.xsl?mount={$q}">pick a live mount</a>.</p>
      </section>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

<xsl:template match="listener">
  <tr data-id="{ID}">
    <td class="num mono" data-label="ID"><xsl:value-of select="ID"/></td>
    <td class="mono" data-label="Address"><xsl:value-of select="IP"/></td>
    <td class="ua" data-label="User agent"><xsl:value-of select="UserAgent"/></td>
    <td class="num" data-label="Connected" data-seconds="{Connected}">
      <xsl:call-template name="duration"><xsl:with-param name="s" select="Connected"/></xsl:call-template>
    </td>
    <xsl:if test="../listener/username">
      <td data-label="User"><xsl:value-of select="username"/></td>
    </xsl:if>
    <td class="actions">
      <form action="/admin/killclient.xsl" method="get" class="kick">
        <input type="hidden" name="mount" value="{../@mount}"/>
        <input type="hidden" name="id" value="{ID}"/>
        <button type="submit" class="danger small">Kick<span class="sr-only"> listener <xsl:value-of select="ID"/></span></button>
      </form>
    </td>
  </tr>
</xsl:template>

</xsl:stylesheet>
