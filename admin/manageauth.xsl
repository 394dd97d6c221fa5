<?xml version="1.0" encoding="UTF-8"?>
<!-- SPDX-License-Identifier: GPL-2.0-or-later -->
<!--
  manageauth.xsl: the users of a mount's htpasswd file (/admin/manageauth.xsl?mount=), a
  Delete button per user (action=delete) and a form to add one (action=add). A deleted user
  is refused from the next login on; listeners already connected under that name stay.
-->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:import href="layout.xsl"/>

<xsl:template match="icestats">
  <xsl:variable name="src" select="source[1]"/>
  <xsl:call-template name="page">
    <xsl:with-param name="title">Users of <xsl:value-of select="$src/@mount"/></xsl:with-param>
    <xsl:with-param name="active" select="'mounts'"/>
    <xsl:with-param name="body">
      <xsl:call-template name="mount-tabs">
        <xsl:with-param name="mount" select="$src/@mount"/>
        <xsl:with-param name="active" select="'users'"/>
      </xsl:call-template>
      <xsl:if test="iceresponse">
        <p class="notice" role="status"><xsl:value-of select="iceresponse/message"/></p>
      </xsl:if>
      <p class="lede"><xsl:value-of select="count($src/User)"/> user(s) may listen.
        A deleted user is refused from the next login on; listeners already connected under
        that name stay connected.</p>
      <div class="table-wrap">
        <table class="data">
          <caption class="sr-only">Users of <xsl:value-of select="$src/@mount"/></caption>
          <thead><tr><th scope="col">User</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>
            <xsl:for-each select="$src/User">
              <tr>
                <td class="mono"><xsl:value-of select="username"/></td>
                <td class="actions">
                  <form action="/admin/manageauth.xsl" method="get" class="delete-user">
                    <input type="hidden" name="mount" value="{$src/@mount}"/>
                    <input type="hidden" name="action" value="delete"/>
                    <input type="hidden" name="username" value="{username}"/>
                    <button type="submit" class="danger small">Delete</button>
                  </form>
                </td>
              </tr>
            </xsl:for-each>
            <xsl:if test="not($src/User)">
              <tr><td colspan="2" class="empty-row">No users yet.</td></tr>
            </xsl:if>
          </tbody>
        </table>
      </div>
      <section class="card panel spaced" aria-labelledby="add-h">
        <h2 id="add-h">Add a user</h2>
        <form class="inline" action="/admin/manageauth.xsl" method="get">
          <input type="hidden" name="mount" value="{$src/@mount}"/>
          <input type="hidden" name="action" value="add"/>
          <div class="field">
            <label for="username">User name</label>
            <input type="text" id="username" name="username" required="required" autocomplete="off"/>
          </div>
          <div class="field">
            <label for="password">Password</label>
            <input type="password" id="password" name="password" required="required" autocomplete="new-password"/>
          </div>
          <button type="submit" class="primary">Add user</button>
        </form>
      </section>
    </xsl:with-param>
  </xsl:call-template>
</xsl:template>
</xsl:stylesheet>
