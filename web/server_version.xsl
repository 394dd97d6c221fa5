<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  server_version.xsl: a small public page about the server: its name and version
  (server_id), location, contact, host and start time, from the public stats.
  Header and footer come from status.xsl; values are written as text only.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="status.xsl"/>
<xsl:output method="html" encoding="UTF-8" indent="no" media-type="text/html"
            doctype-system="about:legacy-compat"/>

<xsl:template match="icestats">
  <html lang="en">
  <head>
    <meta name="viewport" content="width=device-width, initial-scale=1"/>
    <meta name="color-scheme" content="light dark"/>
    <title>Server · <xsl:value-of select="server_id"/></title>
    <link rel="stylesheet" href="/style.css"/>
    <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
  </head>
  <body class="public">
    <xsl:call-template name="site-header">
      <xsl:with-param name="active" select="'version'"/>
    </xsl:call-template>
    <main id="main" class="wrap">
      <h1>Server</h1>
      <p class="lede" id="server-id"><xsl:value-of select="server_id"/></p>
      <section class="card" aria-labelledby="info-h">
        <h2 id="info-h" class="sr-only">Server information</h2>
        <table class="kv">
          <tbody>
            <tr><th scope="row">Server</th><td data-field="server_id"><xsl:value-of select="server_id"/></td></tr>
            <tr><th scope="row">Location</th><td><xsl:value-of select="location"/></td></tr>
            <tr><th scope="row">Contact</th><td><xsl:value-of select="admin"/></td></tr>
            <tr><th scope="row">Host</th><td><xsl:value-of select="host"/></td></tr>
            <tr><th scope="row">Running since</th><td><xsl:value-of select="server_start"/></td></tr>
            <tr><th scope="row">Streams on air</th><td><xsl:value-of select="count(source)"/></td></tr>
          </tbody>
        </table>
      </section>
    </main>
    <xsl:call-template name="site-footer"/>
  </body>
  </html>
</xsl:template>

</xsl:stylesheet>
