/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * snapshot: the lookups on a loaded config_t: the <mount> block in force for a mount name
 * (exact, pattern, default) and the per-mount values that fall back to the global ones.
 */
#include <fnmatch.h>
#include <string.h>

#include "conf/snapshot.h"

long config_mount_burst_size(const config_t *c, const mount_conf_t *mc)
{
    return mc && mc->burst_size >= 0 ? mc->burst_size : c->burst_size;
}

long config_mount_queue_size(const config_t *c, const mount_conf_t *mc)
{
    return mc && mc->queue_size >= 0 ? mc->queue_size : c->queue_size;
}

int config_mount_source_timeout(const config_t *c, const mount_conf_t *mc)
{
    return mc && mc->source_timeout >= 0 ? mc->source_timeout : c->source_timeout;
}

const mount_conf_t *config_find_mount_exact(const config_t *c, const char *mount)
{
    for (const mount_conf_t *m = c->mounts; m && mount; m = m->next)
        if (!m->is_default && strcmp(m->mount_name, mount) == 0)
            return m;
    return NULL;
}

const mount_conf_t *config_find_default_mount(const config_t *c, const char *mount)
{
    for (const mount_conf_t *m = c->mounts; m; m = m->next) {
        if (!m->is_default)
            continue;
        if (!m->mount_name || (mount && fnmatch(m->mount_name, mount, FNM_PATHNAME) == 0))
            return m;
    }
    return NULL;
}

const mount_conf_t *config_find_mount(const config_t *c, const char *mount)
{
    const mount_conf_t *m = config_find_mount_exact(c, mount);

    if (m || !mount)
        return m ? m : config_find_default_mount(c, mount);
    /* Icecast 2.4: a normal mount-name may be a pattern ("/live*") */
    for (m = c->mounts; m; m = m->next)
        if (!m->is_default && strpbrk(m->mount_name, "*?[") &&
            fnmatch(m->mount_name, mount, FNM_PATHNAME) == 0)
            return m;
    return config_find_default_mount(c, mount);
}
