/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * config: icecast.xml (Icecast 2.4 syntax) parsed into an immutable snapshot.
 *
 * config_load() parses a file with libxml2 through tables of directives (name, type, offset,
 * bounds) and returns a config_t that nobody modifies afterwards; SIGHUP loads a new one and
 * swaps the pointer. Errors are reported as "file:line: what is wrong". Unknown elements are
 * warned about once and ignored. Settings the server does not implement yet are never dropped
 * silently: the policy table (policy.c) refuses those whose absence would open access and
 * warns once about the others. Every warning is kept in the snapshot (config_t.warnings) for
 * the error log and the admin pages. Sections for later features (relays, authentication,
 * directories, TLS) are parsed and kept here for them.
 * The snapshot's types and the lookups on it are in conf/snapshot.h, included here.
 */
#ifndef RIMECAST_CONFIG_H
#define RIMECAST_CONFIG_H

#include <stddef.h>

#include "conf/snapshot.h"

/* Loads and validates a config file. Returns 0 and *out, or -1 with "file:line: message" in err.
 * warn may be NULL. */
int config_load(const char *path, config_t **out, char *err, size_t errlen, config_warn_fn warn);
/* Same from a memory buffer (tests, fuzzing); name is used in messages. */
int config_load_buffer(const char *buf, size_t len, const char *name, config_t **out, char *err,
                       size_t errlen, config_warn_fn warn);
void config_free(config_t *c);

/* Resolves a path relative to a base directory into a malloc'd string; absolute paths and "-"
 * are copied as is. NULL path -> NULL. */
char *config_path(const char *base, const char *path);

#endif
