/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * xslt: the stylesheet view of an XML document (libxslt; compiled stylesheets are cached by
 * path and reloaded when the file's mtime or size changes). The JSON view is admin/json.h.
 * The cache is shared by all workers under a mutex; a stylesheet in use is never freed under
 * its user (reference counted). Transforms may not write files or use the network.
 * This file does not choose which document or stylesheet a URL gets (see admin/, router).
 */
#ifndef RIMECAST_XSLT_H
#define RIMECAST_XSLT_H

#include <stddef.h>
#include <libxml/tree.h>

/* Applies the stylesheet file at path to doc. params (may be NULL) is a NULL-terminated list of
 * name, value pairs: each value is passed as a string, literally (never evaluated as XPath, so
 * quotes in it are harmless; it must be valid UTF-8), to the stylesheet's <xsl:param> of that
 * name. Returns 0 with *out (malloc'd, *len bytes) and
 * the Content-Type in ctype (from xsl:output media-type, else the output method: html ->
 * text/html, text -> text/plain, xml -> text/xml, or text/html when the result is an <html>
 * document; plus "; charset=<encoding>"). -ENOENT if there is no such regular file, -EINVAL
 * if it does not compile or the transform fails, -ENOMEM. */
int xslt_apply(const char *path, xmlDocPtr doc, const char **params, char **out, size_t *len,
               char *ctype, size_t ctype_cap);

/* Drops every cached stylesheet (at exit). */
void xslt_cleanup(void);

#endif
