/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * directives: internal to src/conf. The vocabulary in directives.c (one table of directives per
 * icecast.xml section, block handlers, completion), applied by the engine of walk.h; the loader
 * (config.c) calls it to set the defaults of a new config, to apply a parsed file and to free.
 * Nothing outside src/conf includes this, except the unit tests.
 */
#ifndef RIMECAST_CONF_DIRECTIVES_H
#define RIMECAST_CONF_DIRECTIVES_H

#include <libxml/tree.h>

#include "conf/snapshot.h"
#include "conf/walk.h"

/* The vocabulary (directives.c): the defaults of a new config, and freeing what its tables
 * and block handlers allocated (every list item included). */
int directives_defaults(config_t *c);
void directives_free(config_t *c);

/* Vocabulary (directives.c): applies the children of <icecast> to p->c (holding defaults),
 * then completes it: legacy root <port>, relay defaults, default-mount merging, burst/queue. */
int directives_apply(parse_t *p, xmlNodePtr root);

#endif
