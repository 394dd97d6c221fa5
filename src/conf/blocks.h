/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * blocks: internal to src/conf. The repeatable blocks of icecast.xml (blocks.c): the
 * handlers the root table of directives.c names for <listen-socket>, <relay>, <mount> and
 * <directory>, the <hls> section (the same rows at the root and in a <mount>), a normal
 * mount's merging with its default block, and freeing what they allocated.
 * Nothing outside src/conf includes this, except the unit tests.
 */
#ifndef RIMECAST_CONF_BLOCKS_H
#define RIMECAST_CONF_BLOCKS_H

#include <libxml/tree.h>

#include "conf/snapshot.h"
#include "conf/walk.h"

/* Handlers of the root table: each allocates its block, links it into the config (obj) and
 * walks the block's table. */
int blocks_listen(parse_t *p, xmlNodePtr n, void *obj);
int blocks_relay(parse_t *p, xmlNodePtr n, void *obj);
int blocks_mount(parse_t *p, xmlNodePtr n, void *obj);
int blocks_directory(parse_t *p, xmlNodePtr n, void *obj);

/* <hls> at the root: the defaults of every mount's HLS */
extern const section_t blocks_hls_sec;

/* Icecast 2.4: normal mount m (element n) takes every setting it leaves unset from its
 * default block def. 0, or -1 with the error reported. */
int blocks_merge_mount(parse_t *p, xmlNodePtr n, mount_conf_t *m, const mount_conf_t *def);

/* Frees the listen sockets, relays, mounts and directories of c. */
void blocks_free(config_t *c);

#endif
