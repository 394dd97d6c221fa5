<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  updatemetadata.xsl: the form that sets the title of a mount
  (/admin/updatemetadata.xsl?mount=); it sends
  GET /admin/metadata.xsl?mode=updinfo&mount=&song= (or artist and title).
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="icestats">
  <xsl:variable name="src" select="source[1]"/>
  <xsl:call-template name="page">
    <xsl:with-param name="title">Update metadata of <xsl:value-of select="$src/@mount"/></xsl:with-param>
    <xsl:with-param name="active" select="'mounts'"/>
    <xsl:with-param name="body">
      <xsl:call-template name="mount-tabs">
        <xsl:with-param name="mount" select="$src/@mount"/>
        <xsl:with-param name="active" select="'metadata'"/>
      </xsl:call-template>
      <xsl:if test="$src/title or $src/artist">
        <p class="nowplaying"><span class="label">Now playing</span>
          <xsl:text> </xsl:text>
          <span class="np"><xsl:for-each select="$src"><xsl:call-template name="now-playing"/></xsl:for-each></span></p>
      </xsl:if>
      <section class="card panel" aria-labelledby="song-h">
        <h2 id="song-h">Now playing</h2>
        <form class="inline" action="/admin/metadata.xsl" method="get" id="metadata-form">
          <input type="hidden" name="mode" value="updinfo"/>
          <input type="hidden" name="mount" value="{$src/@mount}"/>
          <div class="field">
            <label for="song">Title (for example “Artist - Title”)</label>
            <input type="text" id="song" name="song" required="required" maxlength="1000" autocomplete="off"/>
          </div>
          <button type="submit" class="primary">Update</button>
        </form>
      </section>
      <section class="card panel" aria-labelledby="at-h">
        <h2 id="at-h">Artist and title</h2>
        <form class="inline" action="/admin/metadata.xsl" method="get">
          <input type="hidden" name="mode" value="updinfo"/>
          <input type="hidden" name="mount" value="{$src/@mount}"/>
          <div class="field">
            <label for="artist">Artist</label>
            <input type="text" id="artist" name="artist" maxlength="500" autocomplete="off"/>
          </div>
          <div class="field">
            <label for="title">Title</label>
            <input type="text" id="title" name="title" required="required" maxlength="500" autocomplete="off"/>
          </div>
          <button type="submit">Update</button>
        </form>
      </section>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

</xsl:stylesheet>
