/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * files: static files from the webroot: path resolution that never leaves the webroot
 * (no symlink as the last component, the real path must stay under the real webroot, only
 * regular files), Content-Type from the <mime-types> file with built-in fallbacks,
 * Last-Modified / If-Modified-Since (304), one byte range (206, 416), HEAD, keep-alive.
 * Bodies are read in 64 KB chunks and written as the socket takes them, so a large file
 * never holds the worker. Path normalisation itself happens before (url_normalize_path).
 */
#ifndef RIMECAST_FILES_H
#define RIMECAST_FILES_H

typedef struct conn conn_t;
typedef struct http_request http_request_t;

/* Resolves a normalised request path to a file under the webroot; a directory (or a path
 * ending in '/') resolves to its index.html. Returns 0 with *real (malloc'd absolute path),
 * -ENOENT when there is no such regular file, -EACCES when the path is a symlink or its real
 * path leaves the webroot. */
int files_resolve(const char *path, char **real);

/* Answers GET/HEAD for a resolved file (files_resolve's *real). */
void files_serve(conn_t *c, const http_request_t *req, const char *real);

/* Content-Type for a file name (never NULL; "application/octet-stream" when unknown). */
const char *files_mime_type(const char *name);

#endif
