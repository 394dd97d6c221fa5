/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fallback: where a listener goes when its mount cannot serve it: the source left
 * (<fallback-mount>, or a runtime one from /admin/fallbacks), the mount has no source, or it
 * is full (<fallback-when-full>); and bringing listeners back when the source returns
 * (<fallback-override>, stream/override.h).
 *
 * Fallbacks are names, resolved at the moment of the move, never mount objects: a fallback
 * whose source reconnected is found as the new mount, and mounts naming each other pin
 * nothing. Resolution follows the <fallback-mount> of mounts that have no source, at most
 * FALLBACK_MAX_DEPTH steps, and stops at a name it has already visited (a cycle).
 * A listener remembers the mount it asked for (listener->home) while it is elsewhere.
 */
#ifndef RIMECAST_FALLBACK_H
#define RIMECAST_FALLBACK_H

typedef struct mount mount_t;

#define FALLBACK_MAX_DEPTH 10

/* The name listeners of m fall back to: the runtime one (/admin/fallbacks) if set, else
 * <fallback-mount> of m's config. malloc'd, or NULL when there is none. */
char *fallback_name(mount_t *m);

/* The mount that serves a listener sent to `name`: name itself if it has a source, else a
 * webroot file of that name (a paced file mount, stream/filemount.h), else, for a mount with
 * no source, what its <fallback-mount> resolves to, and so on. `skip` (may be NULL) is never
 * returned (the mount being left; its bitrate paces a file). A new reference, or NULL. */
mount_t *fallback_resolve(const char *name, const mount_t *skip);

/* What serves a listener asking for `name`, a mount with no source: the fallback its normal
 * <mount> block names, resolved as above (a file in the webroot too). New reference or NULL. */
mount_t *fallback_for_sourceless(const char *name);

/* Where the listeners of m go now that m ends: fallback_resolve(fallback_name(m)).
 * A new reference, or NULL. */
mount_t *fallback_target(mount_t *m);

/* For a listener refused by a full mount m: the mount that serves it instead when m has
 * <fallback-when-full> (following that setting along the chain while mounts are full).
 * A new reference, or NULL (then 403). */
mount_t *fallback_when_full(mount_t *m);

/* Like fallback_resolve, among live mounts only (no file mounts): where a listener whose own
 * mount is `name` belongs now (fallback-override). A new reference, or NULL. */
mount_t *fallback_resolve_live(const char *name);

#endif
