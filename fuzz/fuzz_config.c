// fuzz-sources: src/conf/config.c src/conf/snapshot.c src/conf/walk.c src/core/cidr.c src/conf/directives.c src/conf/blocks.c src/conf/lists.c src/conf/policy.c
// fuzz-pkgs: libxml-2.0
/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_config: libFuzzer driver for the icecast.xml loader. Feeds arbitrary bytes to
 * config_load_buffer, then exercises the lookups and frees the result; any crash, leak or
 * sanitizer report is a bug. Warnings go to a callback that only checks they are strings, and
 * the copies kept in the config are read back.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "conf/config.h"

static size_t warning_bytes;

static void on_warn(const char *msg)
{
    warning_bytes += strlen(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    config_t *c = NULL;

    if (config_load_buffer((const char *)data, size, "fuzz.xml", &c, err, sizeof(err),
                           on_warn) == 0) {
        config_find_mount(c, "/stream");
        config_find_mount(c, "/live.ogg");
        for (const mount_conf_t *m = c->mounts; m; m = m->next)
            if (m->mount_name)
                config_find_mount(c, m->mount_name);
        for (const config_warning_t *w = c->warnings; w; w = w->next)
            warning_bytes += strlen(w->setting) + strlen(w->text) + (size_t)(w->line > 0);
        config_free(c);
    } else if (strlen(err) == 0) {
        __builtin_trap(); /* a failure always says why */
    }
    return 0;
}
