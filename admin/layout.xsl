<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  layout.xsl: shared parts of the admin pages, imported by every admin/<command>.xsl:
  the page frame (header, navigation, footer, stylesheet and admin.js), the per-mount
  tabs with the kill-source confirmation, the <iceresponse> result page, and helpers
  (URL encoding of parameters, durations long and short, byte counts). Not a command of its own.
  Values are always written as text (never disable-output-escaping); forms use GET
  so every action works without JavaScript.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html" encoding="UTF-8" indent="no" media-type="text/html"
            doctype-system="about:legacy-compat"/>
<xsl:strip-space elements="*"/>

<!-- Set by the server: the request's mount= ("" without one), the command whose XML and
     JSON views hold this page's data ("" on an action's answer: the footer then links the
     server's stats), and the <authentication type> of that mount ("" for none). -->
<xsl:param name="mount" select="''"/>
<xsl:param name="command" select="''"/>
<xsl:param name="authenticator" select="''"/>

<xsl:template match="/">
  <xsl:apply-templates select="*"/>
</xsl:template>

<!-- The answer of an action command: <iceresponse><message/><return/></iceresponse>. -->
<xsl:template match="iceresponse">
  <xsl:variable name="ok" select="normalize-space(return) = '1'"/>
  <xsl:call-template name="page">
    <xsl:with-param name="title">
      <xsl:choose>
        <xsl:when test="$ok">Done</xsl:when>
        <xsl:otherwise>Not done</xsl:otherwise>
      </xsl:choose>
    </xsl:with-param>
    <xsl:with-param name="body">
      <div role="status">
        <xsl:attribute name="class">
          <xsl:choose>
            <xsl:when test="$ok">notice ok</xsl:when>
            <xsl:otherwise>notice bad</xsl:otherwise>
          </xsl:choose>
        </xsl:attribute>
        <p class="msg" id="response-message"><xsl:value-of select="message"/></p>
        <p class="actions">
          <a class="button primary" href="/admin/stats.xsl" data-back="data-back">Back</a>
          <a class="button" href="/admin/stats.xsl">Overview</a>
          <a class="button" href="/admin/listmounts.xsl">Mounts</a>
        </p>
      </div>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>

<!-- The page frame. $body is a result tree fragment copied into <main>; $head, one copied
     at the end of <head> (a page's own stylesheets and scripts, files of the server). -->
<xsl:template name="page">
  <xsl:param name="title"/>
  <xsl:param name="active"/>
  <xsl:param name="body"/>
  <xsl:param name="subtitle"/>
  <xsl:param name="head"/>
  <html lang="en">
  <head>
    <meta name="viewport" content="width=device-width, initial-scale=1"/>
    <meta name="color-scheme" content="light dark"/>
    <meta name="robots" content="noindex"/>
    <title><xsl:value-of select="$title"/> · Admin</title>
    <link rel="stylesheet" href="/style.css"/>
    <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
    <script src="/admin.js" defer="defer"></script>
    <xsl:copy-of select="$head"/>
  </head>
  <body class="admin">
    <a class="skip" href="#main">Skip to the content</a>
    <header class="site">
      <div class="wrap bar">
        <a class="brand" href="/admin/stats.xsl">
          <img src="/favicon.svg" alt="" width="28" height="28"/>
          <span>Rimecast</span><span class="tag">Admin</span>
        </a>
        <nav aria-label="Admin">
          <a href="/admin/stats.xsl">
            <xsl:if test="$active = 'stats'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
            <xsl:text>Overview</xsl:text>
          </a>
          <a href="/admin/listmounts.xsl">
            <xsl:if test="$active = 'mounts'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
            <xsl:text>Mounts</xsl:text>
          </a>
          <a href="/admin/log.xsl">
            <xsl:if test="$active = 'log'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
            <xsl:text>Log</xsl:text>
          </a>
          <a href="/admin/audience.xsl">
            <xsl:if test="$active = 'audience'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
            <xsl:text>Audience</xsl:text>
          </a>
          <a href="/admin/audience_charts.xsl">
            <xsl:if test="$active = 'charts'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
            <xsl:text>Charts</xsl:text>
          </a>
          <a href="/status.xsl">Public page</a>
        </nav>
      </div>
    </header>
    <main id="main" class="wrap">
      <div class="section-head">
        <h1><xsl:value-of select="$title"/></h1>
        <span class="conn" data-state="off" hidden="hidden" aria-live="polite"></span>
      </div>
      <xsl:if test="string($subtitle)">
        <p class="lede"><xsl:value-of select="$subtitle"/></p>
      </xsl:if>
      <p class="live-note" hidden="hidden" role="status" aria-live="polite"></p>
      <xsl:copy-of select="$body"/>
    </main>
    <footer class="site">
      <div class="wrap">
        <xsl:variable name="self">
          <xsl:choose>
            <xsl:when test="$command != ''"><xsl:value-of select="concat('/admin/', $command)"/></xsl:when>
            <xsl:otherwise>/admin/stats</xsl:otherwise>
          </xsl:choose>
        </xsl:variable>
        <!-- only mount=: the other parameters of a command are actions (or passwords) -->
        <xsl:variable name="query">
          <xsl:if test="$command != '' and $mount != ''">
            <xsl:text>?mount=</xsl:text>
            <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$mount"/></xsl:call-template>
          </xsl:if>
        </xsl:variable>
        <span>Rimecast administration</span>
        <span> · <a class="view-xml" href="{$self}{$query}">XML</a></span>
        <span> · <a class="view-json" href="{$self}.json{$query}">JSON</a></span>
      </div>
    </footer>
  </body>
  </html>
</xsl:template>

<!-- Tabs of one mount's pages, and the kill-source button behind a confirmation. -->
<!-- auth: the mount's <authentication type> (its stats' authenticator); the Users tab is
     there only for htpasswd, the one kind whose users the server manages. -->
<xsl:template name="mount-tabs">
  <xsl:param name="mount"/>
  <xsl:param name="active"/>
  <xsl:param name="auth" select="$authenticator"/>
  <xsl:variable name="q">
    <xsl:call-template name="uri-encode"><xsl:with-param name="s" select="$mount"/></xsl:call-template>
  </xsl:variable>
  <nav aria-label="Mount {$mount}">
    <ul class="tabs">
      <li><a href="/admin/stats.xsl?mount={$q}">
        <xsl:if test="$active = 'stats'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
        <xsl:text>Details</xsl:text></a></li>
      <li><a href="/admin/listclients.xsl?mount={$q}">
        <xsl:if test="$active = 'clients'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
        <xsl:text>Listeners</xsl:text></a></li>
      <li><a href="/admin/moveclients.xsl?mount={$q}">
        <xsl:if test="$active = 'move'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
        <xsl:text>Move listeners</xsl:text></a></li>
      <li><a href="/admin/updatemetadata.xsl?mount={$q}">
        <xsl:if test="$active = 'metadata'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
        <xsl:text>Update metadata</xsl:text></a></li>
      <xsl:if test="$auth = 'htpasswd' or $active = 'users'">
        <li><a href="/admin/manageauth.xsl?mount={$q}">
          <xsl:if test="$active = 'users'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
          <xsl:text>Users</xsl:text></a></li>
      </xsl:if>
      <li>
        <xsl:call-template name="kill-source"><xsl:with-param name="mount" select="$mount"/></xsl:call-template>
      </li>
    </ul>
  </nav>
</xsl:template>

<xsl:template name="kill-source">
  <xsl:param name="mount"/>
  <details class="danger">
    <summary>Kill source…</summary>
    <form action="/admin/killsource.xsl" method="get" class="kill-source">
      <input type="hidden" name="mount" value="{$mount}"/>
      <button type="submit" class="danger small">Disconnect the source of <xsl:value-of select="$mount"/></button>
    </form>
  </details>
</xsl:template>

<!-- Seconds as "2 d 3 h", "1 h 02 min", "4 min 05 s" or "12 s". -->
<xsl:template name="duration">
  <xsl:param name="s"/>
  <xsl:variable name="n" select="floor(number($s))"/>
  <xsl:choose>
    <xsl:when test="not($n = $n) or $n &lt; 0"><xsl:value-of select="$s"/></xsl:when>
    <xsl:when test="$n &gt;= 86400">
      <xsl:value-of select="concat(floor($n div 86400), ' d ', floor(($n mod 86400) div 3600), ' h')"/>
    </xsl:when>
    <xsl:when test="$n &gt;= 3600">
      <xsl:value-of select="concat(floor($n div 3600), ' h ', format-number(floor(($n mod 3600) div 60), '00'), ' min')"/>
    </xsl:when>
    <xsl:when test="$n &gt;= 60">
      <xsl:value-of select="concat(floor($n div 60), ' min ', format-number($n mod 60, '00'), ' s')"/>
    </xsl:when>
    <xsl:otherwise><xsl:value-of select="concat($n, ' s')"/></xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!-- Seconds as "2d 03h", "1h 02m", "12m 30s" or "45s": short enough for a table's column. -->
<xsl:template name="duration-short">
  <xsl:param name="s"/>
  <xsl:variable name="n" select="floor(number($s))"/>
  <xsl:choose>
    <xsl:when test="not($n = $n) or $n &lt; 0"><xsl:value-of select="$s"/></xsl:when>
    <xsl:when test="$n &gt;= 86400">
      <xsl:value-of select="concat(floor($n div 86400), 'd ', format-number(floor(($n mod 86400) div 3600), '00'), 'h')"/>
    </xsl:when>
    <xsl:when test="$n &gt;= 3600">
      <xsl:value-of select="concat(floor($n div 3600), 'h ', format-number(floor(($n mod 3600) div 60), '00'), 'm')"/>
    </xsl:when>
    <xsl:when test="$n &gt;= 60">
      <xsl:value-of select="concat(floor($n div 60), 'm ', format-number($n mod 60, '00'), 's')"/>
    </xsl:when>
    <xsl:otherwise><xsl:value-of select="concat($n, 's')"/></xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!-- A byte count as B, KiB, MiB or GiB. -->
<xsl:template name="bytes">
  <xsl:param name="n"/>
  <xsl:variable name="v" select="number($n)"/>
  <xsl:choose>
    <xsl:when test="not($v = $v)"><xsl:value-of select="$n"/></xsl:when>
    <xsl:when test="$v &gt;= 1073741824"><xsl:value-of select="format-number($v div 1073741824, '0.0')"/> GiB</xsl:when>
    <xsl:when test="$v &gt;= 1048576"><xsl:value-of select="format-number($v div 1048576, '0.0')"/> MiB</xsl:when>
    <xsl:when test="$v &gt;= 1024"><xsl:value-of select="format-number($v div 1024, '0.0')"/> KiB</xsl:when>
    <xsl:otherwise><xsl:value-of select="$v"/> B</xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!-- "artist - title" of the current <source>, the title alone, or a dash. -->
<xsl:template name="now-playing">
  <xsl:choose>
    <xsl:when test="normalize-space(artist) and normalize-space(title)">
      <xsl:value-of select="artist"/> - <xsl:value-of select="title"/>
    </xsl:when>
    <xsl:when test="normalize-space(title)"><xsl:value-of select="title"/></xsl:when>
    <xsl:when test="normalize-space(artist)"><xsl:value-of select="artist"/></xsl:when>
    <xsl:otherwise>—</xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!--
  Percent-encodes $s for a URL query value or path: everything but
  [A-Za-z0-9-._~/] and non-ASCII (which the serializer encodes as UTF-8).
  Halves the string recursively, so the depth stays small.
-->
<xsl:variable name="uri-safe" select="'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/'"/>
<xsl:variable name="uri-ascii" select="concat(' !&quot;#$%&amp;', &quot;'&quot;, '()*+,:;&lt;=&gt;?@[\]^`{|}')"/>
<xsl:variable name="uri-hex" select="'202122232425262728292A2B2C3A3B3C3D3E3F405B5C5D5E607B7C7D'"/>

<xsl:template name="uri-encode">
  <xsl:param name="s"/>
  <xsl:choose>
    <xsl:when test="translate($s, $uri-safe, '') = ''"><xsl:value-of select="$s"/></xsl:when>
    <xsl:when test="string-length($s) = 1">
      <xsl:choose>
        <xsl:when test="contains($uri-ascii, $s)">
          <xsl:value-of select="concat('%', substring($uri-hex, 2 * string-length(substring-before($uri-ascii, $s)) + 1, 2))"/>
        </xsl:when>
        <xsl:otherwise><xsl:value-of select="$s"/></xsl:otherwise>
      </xsl:choose>
    </xsl:when>
    <xsl:otherwise>
      <xsl:variable name="half" select="floor(string-length($s) div 2)"/>
      <xsl:call-template name="uri-encode">
        <xsl:with-param name="s" select="substring($s, 1, $half)"/>
      </xsl:call-template>
      <xsl:call-template name="uri-encode">
        <xsl:with-param name="s" select="substring($s, $half + 1)"/>
      </xsl:call-template>
    </xsl:otherwise>
  </xsl:choose>
</xsl:template>

</xsl:stylesheet>
