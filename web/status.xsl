<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  status.xsl: the public status page (HTML5), rendered from the public stats.
  One card per live mount: name, description, genre, bitrate, listeners (current
  and peak), now playing, an HTML5 audio player and Listen links (M3U, XSPF, the
  direct stream). Works without JavaScript; app.js refreshes listeners and titles, and
  brings in or takes out the cards of mounts that come or go. A mount with HLS gets an
  "HLS" toggle next to its player, shown and run by app.js only.
  Every value is written as text (never disable-output-escaping); links to
  untrusted URLs are only made for http(s). Does not decide which mounts are shown.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="html" encoding="UTF-8" indent="no" media-type="text/html"
            doctype-system="about:legacy-compat"/>
<xsl:strip-space elements="*"/>

<xsl:template match="/">
  <xsl:apply-templates select="icestats"/>
</xsl:template>

<xsl:template match="icestats">
  <html lang="en">
  <head>
    <meta name="viewport" content="width=device-width, initial-scale=1"/>
    <meta name="color-scheme" content="light dark"/>
    <title>
      <xsl:text>Live streams</xsl:text>
      <xsl:if test="normalize-space(location)"> · <xsl:value-of select="location"/></xsl:if>
    </title>
    <link rel="stylesheet" href="/style.css"/>
    <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
    <script src="/app.js" defer="defer"></script>
  </head>
  <body class="public">
    <a class="skip" href="#main">Skip to the streams</a>
    <xsl:call-template name="site-header">
      <xsl:with-param name="active" select="'status'"/>
    </xsl:call-template>
    <main id="main" class="wrap">
      <section class="intro">
        <h1>Live streams</h1>
        <p class="lede">
          <span data-field="mount-count"><xsl:value-of select="count(source)"/></span>
          <xsl:choose>
            <xsl:when test="count(source) = 1"> stream on air</xsl:when>
            <xsl:otherwise> streams on air</xsl:otherwise>
          </xsl:choose>
          <xsl:if test="normalize-space(location)">
            <xsl:text> · </xsl:text><xsl:value-of select="location"/>
          </xsl:if>
        </p>
      </section>
      <xsl:choose>
        <xsl:when test="source">
          <ul class="mounts">
            <xsl:apply-templates select="source"/>
          </ul>
        </xsl:when>
        <xsl:otherwise>
          <p class="empty">Nothing is on air right now. Come back later.</p>
        </xsl:otherwise>
      </xsl:choose>
    </main>
    <xsl:call-template name="site-footer"/>
  </body>
  </html>
</xsl:template>

<!-- One mount card. -->
<xsl:template match="source">
  <xsl:variable name="id" select="concat('mount-', position())"/>
  <xsl:variable name="href">
    <xsl:call-template name="mount-href">
      <xsl:with-param name="mount" select="@mount"/>
    </xsl:call-template>
  </xsl:variable>
  <xsl:variable name="name">
    <xsl:choose>
      <xsl:when test="normalize-space(server_name)"><xsl:value-of select="server_name"/></xsl:when>
      <xsl:otherwise><xsl:value-of select="@mount"/></xsl:otherwise>
    </xsl:choose>
  </xsl:variable>
  <li class="mount card" data-mount="{@mount}">
    <article aria-labelledby="{$id}">
      <header class="mount-head">
        <div class="mount-title">
          <h2 id="{$id}"><xsl:value-of select="$name"/></h2>
          <p class="mount-path"><span class="onair" aria-hidden="true"></span>
            <span class="sr-only">On air at </span><code><xsl:value-of select="@mount"/></code></p>
        </div>
        <p class="listeners" title="Listeners now (peak)">
          <span class="big" data-field="listeners"><xsl:value-of select="listeners"/></span>
          <span class="unit"> listening</span><span class="sep">&#160;·</span>
          <span class="peak"> peak&#160;<span data-field="listener_peak"><xsl:value-of select="listener_peak"/></span></span>
        </p>
      </header>
      <xsl:if test="normalize-space(server_description) and server_description != 'Unspecified description'">
        <p class="desc"><xsl:value-of select="server_description"/></p>
      </xsl:if>
      <div class="nowplaying">
        <span class="label">Now playing</span>
        <xsl:text> </xsl:text>
        <span class="np" data-field="title"><xsl:call-template name="now-playing"/></span>
      </div>
      <div class="player">
        <audio controls="controls" preload="none" src="{$href}" aria-label="Play {$name}">
          <a href="{$href}">Open the stream</a>
        </audio>
        <xsl:if test="normalize-space(hls_url)">
          <button type="button" class="small hls-toggle" aria-pressed="false" data-hls="{$href}/hls.m3u8"
                  data-type="{server_type}" title="Play over HLS (low latency)">HLS</button>
        </xsl:if>
      </div>
      <dl class="facts">
        <xsl:if test="normalize-space(genre)">
          <div><dt>Genre</dt><dd><xsl:value-of select="genre"/></dd></div>
        </xsl:if>
        <xsl:call-template name="bitrate-fact"/>
        <xsl:if test="normalize-space(server_type)">
          <div><dt>Format</dt><dd><xsl:value-of select="server_type"/>
            <xsl:if test="normalize-space(subtype)"> (<xsl:value-of select="subtype"/>)</xsl:if></dd></div>
        </xsl:if>
        <xsl:if test="normalize-space(stream_start)">
          <div><dt>On air</dt><dd><span data-since="{stream_start_iso8601}" data-prefix="for " title="{stream_start}">
            <xsl:text>since </xsl:text><xsl:value-of select="stream_start"/></span></dd></div>
        </xsl:if>
      </dl>
      <p class="actions">
        <a class="button primary" href="{$href}.m3u" type="audio/x-mpegurl">Listen (M3U)</a>
        <a class="button" href="{$href}.xspf">XSPF</a>
        <a class="button" href="{$href}" rel="nofollow">Direct stream</a>
        <xsl:variable name="url" select="normalize-space(server_url)"/>
        <xsl:if test="starts-with($url, 'http://') or starts-with($url, 'https://')">
          <a class="button link" href="{$url}" rel="nofollow noopener noreferrer">Website</a>
        </xsl:if>
      </p>
    </article>
  </li>
</xsl:template>

<!-- "artist - title", the title alone, or a dash when nothing is known. -->
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

<!-- bitrate, else ice-bitrate, else audio_bitrate (bit/s); numbers get a unit. -->
<xsl:template name="bitrate-fact">
  <xsl:variable name="b">
    <xsl:choose>
      <xsl:when test="normalize-space(bitrate)"><xsl:value-of select="normalize-space(bitrate)"/></xsl:when>
      <xsl:when test="normalize-space(ice-bitrate)"><xsl:value-of select="normalize-space(ice-bitrate)"/></xsl:when>
      <xsl:when test="number(audio_bitrate) &gt; 0"><xsl:value-of select="round(audio_bitrate div 1000)"/></xsl:when>
    </xsl:choose>
  </xsl:variable>
  <xsl:if test="string($b)">
    <div><dt>Bitrate</dt><dd>
      <xsl:value-of select="$b"/>
      <xsl:if test="number($b) = number($b)"> kbit/s</xsl:if>
    </dd></div>
  </xsl:if>
</xsl:template>

<xsl:template name="site-header">
  <xsl:param name="active"/>
  <header class="site">
    <div class="wrap bar">
      <a class="brand" href="/status.xsl">
        <img src="/favicon.svg" alt="" width="28" height="28"/>
        <span>
          <xsl:choose>
            <xsl:when test="normalize-space(/icestats/location)"><xsl:value-of select="/icestats/location"/></xsl:when>
            <xsl:otherwise>Radio</xsl:otherwise>
          </xsl:choose>
        </span>
      </a>
      <nav aria-label="Site">
        <a href="/status.xsl">
          <xsl:if test="$active = 'status'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
          <xsl:text>Streams</xsl:text>
        </a>
        <a href="/server_version.xsl">
          <xsl:if test="$active = 'version'"><xsl:attribute name="aria-current">page</xsl:attribute></xsl:if>
          <xsl:text>Server</xsl:text>
        </a>
        <a href="/admin/stats.xsl">Admin</a>
      </nav>
    </div>
  </header>
</xsl:template>

<xsl:template name="site-footer">
  <footer class="site">
    <div class="wrap">
      <span><xsl:value-of select="/icestats/server_id"/></span>
      <xsl:if test="normalize-space(/icestats/admin)">
        <span> · Contact: <xsl:value-of select="/icestats/admin"/></span>
      </xsl:if>
      <span> · <a href="/status-json.xsl">JSON</a></span>
    </div>
  </footer>
</xsl:template>

<!--
  A mount name as a URL path: characters outside [A-Za-z0-9-._~/] and ASCII are
  percent-encoded (non-ASCII is left to the serializer, which encodes it as UTF-8);
  a leading "//" is broken up so the link can never point at another host.
-->
<xsl:template name="mount-href">
  <xsl:param name="mount"/>
  <xsl:choose>
    <xsl:when test="starts-with($mount, '//')">
      <xsl:text>/%2F</xsl:text>
      <xsl:call-template name="uri-encode">
        <xsl:with-param name="s" select="substring($mount, 3)"/>
      </xsl:call-template>
    </xsl:when>
    <xsl:when test="starts-with($mount, '/')">
      <xsl:call-template name="uri-encode">
        <xsl:with-param name="s" select="$mount"/>
      </xsl:call-template>
    </xsl:when>
    <xsl:otherwise>
      <xsl:text>/</xsl:text>
      <xsl:call-template name="uri-encode">
        <xsl:with-param name="s" select="$mount"/>
      </xsl:call-template>
    </xsl:otherwise>
  </xsl:choose>
</xsl:template>

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
