<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  moveclients.xsl: without a destination, /admin/moveclients.xsl?mount= answers
  <icestats><current_source/><source mount>...</icestats>: this page offers each other
  live mount as a destination (GET moveclients.xsl?mount=&destination=). After a move
  the answer is an <iceresponse>, shown by layout.xsl.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="icestats">
  <xsl:variable name="from" select="string(current_source)"/>
  <xsl:call-template name="page">
    <xsl:with-param name="title">Move listeners of <xsl:value-of select="$from"/></xsl:with-param>
    <xsl:with-param name="active" select="'mounts'"/>
    <xsl:with-param name="body">
      <xsl:call-template name="mount-tabs">
        <xsl:with-param name="mount" select="$from"/>
        <xsl:with-param name="active" select="'move'"/>
      </xsl:call-template>
      <xsl:choose>
        <xsl:when test="source[@mount != $from]">
          <div class="table-wrap">
            <table class="data">
              <caption class="sr-only">Destinations</caption>
              <thead>
                <tr>
                  <th scope="col">Destination</th>
                  <th scope="col" class="num">Listeners</th>
                  <th scope="col">Content type</th>
                  <th scope="col"><span class="sr-only">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                <xsl:for-each select="source[@mount != $from]">
                  <tr data-mount="{@mount}">
                    <td class="name"><code><xsl:value-of select="@mount"/></code></td>
                    <td class="num" data-label="Listeners"><xsl:value-of select="listeners"/></td>
                    <td data-label="Content type"><xsl:value-of select="content-type"/></td>
                    <td class="actions">
                      <form action="/admin/moveclients.xsl" method="get" class="move">
                        <input type="hidden" name="mount" value="{$from}"/>
                        <input type="hidden" name="destination" value="{@mount}"/>
                        <button type="submit" class="primary small">Move here</button>
                      </form>
                    </td>
                  </tr>
                </xsl:for-each>
              </tbody>
            </table>
          </div>
        </xsl:when>
        <xsl:otherwise>
          <p class="empty">No other mount is live to move the listeners to.</p>
        </xsl:otherwise>
      </xsl:choose>
      <section class="card panel spaced" aria-labelledby="other-h">
        <h2 id="other-h">Another destination</h2>
        <form class="inline" action="/admin/moveclients.xsl" method="get">
          <input type="hidden" name="mount" value="{$from}"/>
          <div class="field">
            <label for="destination">Destination mount</label>
            <input type="text" id="destination" name="destination" required="required"
                   placeholder="/other.mp3" autocomplete="off"/>
          </div>
          <button type="submit">Move listeners</button>
        </form>
      </section>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

</xsl:stylesheet>
