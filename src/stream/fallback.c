/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fallback: resolving fallbacks by name (see fallback.h).
 *
 * Everything here is cold path: a resolution takes the registry lock once per step and reads
 * the config snapshot (never freed, so its strings stay valid).
 */
#include "stream/fallback.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/escape.h"
#include "core/log.h"
#include "net/server.h"
#include "stream/filemount.h"
#include "stream/mount.h"

char *fallback_name(mount_t *m)
{
    char *name = mount_get_fallback(m);
    if (name)
        return name;
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    return mc && mc->fallback_mount ? strdup(mc->fallback_mount) : NULL;
}

static void log_stop(const char *why, const char *name)
{
    char esc[512];
    log_warn("fallback chain at %s %s: no fallback", escape_log(esc, sizeof(esc), name,
             strlen(name)), why);
}

/* The bitrate (bits/s) a file fallback plays at when its frames do not say: that of the mount
 * its listeners come from. */
static long bitrate_of(const mount_t *m)
{
    const char *br = m ? mount_info(m)->bitrate : NULL;
    long kbps = br ? atol(br) : 0;
    return kbps > 0 && kbps < 100000 ? kbps * 1000 : 0;
}

/* files: a name that is no mount may be a webroot file, played as a file mount. */
static mount_t *resolve(const char *name, const mount_t *skip, int files)
{
    const config_t *cfg = server_config();
    const char *seen[FALLBACK_MAX_DEPTH];
    for (int depth = 0; name; depth++) {
        if (depth == FALLBACK_MAX_DEPTH) {
            log_stop("is too long (more than 10 mounts)", name);
            return NULL;
        }
        for (int i = 0; i < depth; i++) {
            if (strcmp(seen[i], name) == 0) {
                log_stop("loops back", name);
                return NULL;
            }
        }
        seen[depth] = name;
        mount_t *m = mount_find(name);
        if (m) {
            if (m != skip && !atomic_load(&m->ended))
                return m;
            mount_unref(m);
            return NULL; /* back at the mount being left: a cycle through live mounts */
        }
        if (files && (m = filemount_get(name, bitrate_of(skip))))
            return m;
        /* a mount with no source falls back only through its own <mount> block: a default
         * one would turn every unknown path into its fallback */
        const mount_conf_t *mc = config_find_mount(cfg, name);
        name = mc && !mc->is_default ? mc->fallback_mount : NULL;
    }
    return NULL;
}

mount_t *fallback_resolve(const char *name, const mount_t *skip)
{
    return resolve(name, skip, 1);
}

mount_t *fallback_resolve_live(const char *name)
{
    return resolve(name, NULL, 0);
}

mount_t *fallback_for_sourceless(const char *name)
{
    const mount_conf_t *mc = config_find_mount(server_config(), name);
    if (!mc || mc->is_default || !mc->fallback_mount)
        return NULL;
    return resolve(mc->fallback_mount, NULL, 1);
}

mount_t *fallback_target(mount_t *m)
{
    char *name = fallback_name(m);
    mount_t *t = name ? fallback_resolve(name, m) : NULL;
    free(name);
    return t;
}

static int has_room(mount_t *m)
{
    int max = atomic_load(&m->max_listeners);
    return max < 0 || atomic_load(&m->listeners) < max;
}

mount_t *fallback_when_full(mount_t *m)
{
    mount_t *cur = mount_ref(m);
    for (int depth = 0; depth < FALLBACK_MAX_DEPTH; depth++) {
        const mount_conf_t *mc = config_find_mount(server_config(), cur->name);
        mount_t *next = mc && mc->fallback_when_full ? fallback_target(cur) : NULL;
        mount_unref(cur);
        if (!next || next == m) {
            if (next)
                mount_unref(next);
            return NULL;
        }
        if (has_room(next))
            return next;
        cur = next;
    }
    mount_unref(cur);
    return NULL;
}
