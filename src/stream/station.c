/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * station: per-source side effects of a mount's settings (see station.h). The settings are
 * read from the configuration current when the source connects (dump-file, on-connect) and
 * when it leaves (on-disconnect), so a reload applies to the next connection.
 */
#include "stream/station.h"

#include <stdio.h>

#include "conf/config.h"
#include "core/spawn.h"
#include "net/server.h"
#include "stream/dump.h"
#include "stream/mount.h"

#define STATION_SHUTDOWN_GRACE_MS 2000

static void run_script(const char *path, const char *event, mount_t *m)
{
    char what[400];
    snprintf(what, sizeof(what), "%s %s", event, m->name);
    spawn_run(path, m->name, what, server_config()->script_timeout);
}

dump_t *station_source_started(mount_t *m)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (!mc)
        return NULL;
    dump_t *d = mc->dump_file ? dump_start(m, mc->dump_file) : NULL;
    if (mc->on_connect)
        run_script(mc->on_connect, "on-connect", m);
    return d;
}

void station_source_ended(mount_t *m, dump_t *dump)
{
    dump_stop(dump);
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (mc && mc->on_disconnect)
        run_script(mc->on_disconnect, "on-disconnect", m);
}

void station_shutdown(void)
{
    dump_shutdown();
    spawn_shutdown(STATION_SHUTDOWN_GRACE_MS);
}
