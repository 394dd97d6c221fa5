<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  adbreak.xsl: the answer of /admin/adbreak.xsl (an ad break started on a mount).
  The <iceresponse> page (message, success or failure, links back) is in layout.xsl.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>
</xsl:stylesheet>
