/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * server: the process-wide state and config snapshot retirement (see server.h).
 */
#include "net/server.h"

#include <stdio.h>
#include <stdlib.h>

#include "build-config.h"
#include "core/cidr.h"

server_t server;

typedef struct retired {
    config_t *config;
    struct retired *next; /* singly linked: pushed at reloads, freed all at exit */
} retired_t;

static retired_t *retired_configs;

void server_set_config(config_t *c)
{
    cidr_set_anonymize(c->address_truncation); /* before anything shows an address by it */
    config_t *old = atomic_exchange_explicit(&server.config, c, memory_order_acq_rel);
    if (c->server_id)
        snprintf(server.server_id, sizeof(server.server_id), "%s", c->server_id);
    else
        snprintf(server.server_id, sizeof(server.server_id), "%s %s", SERVER_NAME,
                 PACKAGE_VERSION);
    if (old) {
        retired_t *r = malloc(sizeof(*r));
        if (r) {
            r->config = old;
            r->next = retired_configs;
            retired_configs = r;
        }
    }
}

void server_free_configs(void)
{
    while (retired_configs) {
        retired_t *r = retired_configs;
        retired_configs = r->next;
        config_free(r->config);
        free(r);
    }
    config_t *c = atomic_exchange(&server.config, NULL);
    if (c)
        config_free(c);
}

const char *server_ident(void)
{
    return server.server_id;
}

const char *server_state_name(int state)
{
    switch (state) {
    case SERVER_STARTING:
        return "starting";
    case SERVER_SERVING:
        return "serving";
    default:
        return "stopping";
    }
}
