/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * request: the pure parsing steps of an admin request, apart from connections and mounts so
 * they can be unit-tested and fuzzed: the command path ("/admin/NAME.VIEW") and the numeric
 * client id, and whether a browser marks the request as cross-origin. Query parameters
 * themselves are core/url.h url_query_param (admin_param).
 * Stateless, safe from any thread.
 */
#ifndef RIMECAST_ADMIN_REQUEST_H
#define RIMECAST_ADMIN_REQUEST_H

#include <stddef.h>

/* The views of an admin answer, by the command path's suffix; a command's table row (admin.h)
 * accepts a set of them, or-ed. */
enum {
    ADMIN_VIEW_XML = 1,
    ADMIN_VIEW_XSL = 2,
    ADMIN_VIEW_JSON = 4,
    ADMIN_VIEW_TXT = 8,
    ADMIN_VIEW_CSV = 16,
};

/* "/admin/listclients.xsl" -> name "listclients" (NUL-terminated in name[0..cap)), *view the
 * ADMIN_VIEW_* of its suffix (XML without one); "/admin" and "/admin/" are "stats" as XSL,
 * "/admin.cgi" is "admin.cgi"; "/admin/audience/top.json" a sub-command "audience/top". path
 * must be one of those or start with "/admin/". Returns 0, or -1 if it is not a command path
 * (empty, too long for name, more than one level of '/', or a level that is empty or starts
 * with '.'). */
int admin_parse_command(const char *path, char *name, size_t cap, int *view);

/* A client id as given to killclient: decimal digits only, no sign, no spaces, fits in
 * unsigned long long. Returns 0 and *id, or -1. */
int admin_parse_id(const char *s, unsigned long long *id);

/* 1 if a browser marks the request as sent by a page of another origin: a Sec-Fetch-Site
 * (fetch_site) other than "same-origin" or "none" (typed in, bookmark), or an Origin that does
 * not name the request's own scheme (https on a TLS listener, else http), host and port (the
 * Host header, host; a missing port is the scheme's default). "Origin: null" (sandboxed
 * pages, redirects across origins) is another origin, and so is any Origin without a Host.
 * 0 when neither header is given (scripts, curl, Icecast tools). Any argument may be NULL. */
int admin_cross_origin(const char *fetch_site, const char *origin, const char *host, int tls);

#endif
