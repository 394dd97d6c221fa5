<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  status-json.xsl: the public stats as JSON, with the keys of Icecast 2.4's
  status-json.xsl: {"icestats": {admin, host, location, server_id, server_start,
  server_start_iso8601, "source": [...]}}. Unlike Icecast, "source" is always an
  array (empty, one or many mounts). Every string is JSON-escaped here; numeric
  values are bare numbers except for free-text keys, which stay strings.
  Owns: the JSON shape. Does not choose which mounts are public (the server does).
  Plain XSLT 1.0, no extension functions.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="UTF-8" media-type="application/json"/>
<xsl:strip-space elements="*"/>

<!-- Keys left out, as Icecast's status-json.xsl leaves them out. -->
<xsl:variable name="hidden-global" select="' sources clients stats listeners '"/>
<xsl:variable name="hidden-source"
  select="' max_listeners public source_ip slow_listeners user_agent total_bytes_read total_bytes_sent '"/>
<!-- Free text: always a string, even when it looks like a number. -->
<xsl:variable name="text-keys"
  select="' admin host location server_id server_start server_start_iso8601 server_name server_description server_type server_url genre title artist listenurl hls_url subtype stream_start stream_start_iso8601 audio_info yp_currently_playing user_agent source_ip content-type '"/>

<xsl:template match="/">
  <xsl:apply-templates select="icestats"/>
  <xsl:if test="not(icestats)">{"icestats":{"source":[]}}</xsl:if>
</xsl:template>

<xsl:template match="icestats">
  <xsl:text>{"icestats":{</xsl:text>
  <xsl:for-each select="*[not(self::source)]
      [not(contains($hidden-global, concat(' ', name(), ' ')))]
      [not(contains(name(), 'connections'))]">
    <xsl:apply-templates select="." mode="member"/>
    <xsl:text>,</xsl:text>
  </xsl:for-each>
  <xsl:text>"source":[</xsl:text>
  <xsl:for-each select="source">
    <xsl:if test="position() &gt; 1">,</xsl:if>
    <xsl:text>{</xsl:text>
    <xsl:for-each select="*[not(contains($hidden-source, concat(' ', name(), ' ')))]">
      <xsl:if test="position() &gt; 1">,</xsl:if>
      <xsl:apply-templates select="." mode="member"/>
    </xsl:for-each>
    <xsl:text>}</xsl:text>
  </xsl:for-each>
  <xsl:text>]}}</xsl:text>
  <xsl:text>&#10;</xsl:text>
</xsl:template>

<!-- "name":value for one element; nested elements become objects. -->
<xsl:template match="*" mode="member">
  <xsl:text>"</xsl:text>
  <xsl:call-template name="json-escape">
    <xsl:with-param name="s" select="name()"/>
  </xsl:call-template>
  <xsl:text>":</xsl:text>
  <xsl:choose>
    <xsl:when test="*">
      <xsl:text>{</xsl:text>
      <xsl:for-each select="*">
        <xsl:if test="position() &gt; 1">,</xsl:if>
        <xsl:apply-templates select="." mode="member"/>
      </xsl:for-each>
      <xsl:text>}</xsl:text>
    </xsl:when>
    <xsl:when test="not(contains($text-keys, concat(' ', name(), ' ')))
                    and string(number(.)) = string(.) and number(.) = number(.)">
      <xsl:value-of select="."/>
    </xsl:when>
    <xsl:otherwise>
      <xsl:text>"</xsl:text>
      <xsl:call-template name="json-escape">
        <xsl:with-param name="s" select="string(.)"/>
      </xsl:call-template>
      <xsl:text>"</xsl:text>
    </xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!--
  JSON string body for $s: \ " and the control characters an XML tree can hold
  (tab, line feed, carriage return) are escaped. Strings without any of them are
  copied at once; others are split in halves, so the recursion depth stays
  logarithmic in the length of the string.
-->
<xsl:template name="json-escape">
  <xsl:param name="s"/>
  <xsl:choose>
    <xsl:when test="not(contains($s, '\') or contains($s, '&quot;') or contains($s, '&#9;')
                    or contains($s, '&#10;') or contains($s, '&#13;'))">
      <xsl:value-of select="$s"/>
    </xsl:when>
    <xsl:when test="string-length($s) = 1">
      <xsl:choose>
        <xsl:when test="$s = '\'">\\</xsl:when>
        <xsl:when test="$s = '&quot;'">\"</xsl:when>
        <xsl:when test="$s = '&#9;'">\t</xsl:when>
        <xsl:when test="$s = '&#10;'">\n</xsl:when>
        <xsl:otherwise>\r</xsl:otherwise>
      </xsl:choose>
    </xsl:when>
    <xsl:otherwise>
      <xsl:variable name="half" select="floor(string-length($s) div 2)"/>
      <xsl:call-template name="json-escape">
        <xsl:with-param name="s" select="substring($s, 1, $half)"/>
      </xsl:call-template>
      <xsl:call-template name="json-escape">
        <xsl:with-param name="s" select="substring($s, $half + 1)"/>
      </xsl:call-template>
    </xsl:otherwise>
  </xsl:choose>
</xsl:template>

</xsl:stylesheet>
