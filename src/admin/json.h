/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * json: the JSON view of an XML document (the .json admin outputs and /status-json.xsl),
 * made without a stylesheet. Strings go through the one JSON escaper (core/escape.h).
 * Stateless and safe from any thread. Which document a URL gets is decided elsewhere
 * (admin/, router/router.c); stylesheets are admin/xslt.h.
 */
#ifndef RIMECAST_JSON_H
#define RIMECAST_JSON_H

#include <stddef.h>
#include <libxml/tree.h>

/* JSON of doc: {"<root>": {...}}. Attributes and child elements become keys; an element with
 * neither is a string, or a number when its text is a plain decimal number; an empty element
 * is "". Repeated elements, and <source>, <listener> and <User> always, are arrays; <icestats>
 * always has "source" (maybe []), a <source> with <Listeners> always has "listener".
 * Returns malloc'd text ending in a newline (*len set) or NULL on ENOMEM. */
char *json_render(xmlDocPtr doc, size_t *len);

/* /status-json.xsl without a stylesheet: the public document with Icecast's status-json keys
 * (counters, source_ip, user_agent and the like removed, attributes omitted), "source" always
 * an array. malloc'd (*len set) or NULL on ENOMEM. */
char *json_render_status(xmlDocPtr doc, size_t *len);

#endif
