/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * override: <fallback-override> (see override.h). It runs on every worker through
 * worker_broadcast: each worker walks its own subscriptions and moves only its own listeners,
 * with listener_move, like /admin/moveclients.
 */
#include "stream/override.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/log.h"
#include "net/conn.h"
#include "net/server.h"
#include "net/worker.h"
#include "stream/fallback.h"
#include "stream/listener.h"
#include "stream/mount.h"
#include "stream/sub.h"

typedef struct override_job {
    mount_t *mount; /* referenced */
    atomic_int moved;
    atomic_int denied; /* stayed on their fallback: the mount's authentication refuses them */
} override_job_t;

/* Moves back those listeners of subscription s whose own mount now resolves to job->mount. */
static void override_sub(sub_t *s, override_job_t *j)
{
    int n = s->count, k = 0;
    listener_t **v = malloc((size_t)(n > 0 ? n : 1) * sizeof(*v));
    if (!v)
        return;
    listener_t *it;
    list_foreach(it, &s->listeners, listener_t, link)
        if (k < n && it->home && !it->conn->closing)
            v[k++] = it;
    const char *last_home = NULL;
    mount_t *last = NULL; /* listeners from one mount share a resolution */
    for (int i = 0; i < k; i++) {
        listener_t *l = v[i];
        if (!last_home || strcmp(last_home, l->home) != 0) {
            if (last)
                mount_unref(last);
            last = fallback_resolve_live(l->home);
            last_home = l->home;
        }
        if (last != j->mount)
            continue;
        char *home = l->home;
        l->home = NULL; /* it is home: the same string must outlive the comparison above */
        int err = listener_move(l, j->mount);
        if (err == 0) {
            atomic_fetch_add(&j->moved, 1);
            if (last_home == home)
                last_home = NULL;
            free(home);
        } else {
            if (err == -EACCES)
                atomic_fetch_add(&j->denied, 1);
            l->home = home;
        }
    }
    if (last)
        mount_unref(last);
    free(v);
}

static void override_fn(worker_t *w, void *arg)
{
    override_job_t *j = arg;
    for (sub_t *s = sub_first(w); s; s = s->next)
        if (s->mount != j->mount && s->count > 0)
            override_sub(s, j);
}

static void override_done(worker_t *w, void *arg)
{
    (void)w;
    override_job_t *j = arg;
    int moved = atomic_load(&j->moved);
    if (moved)
        log_info("fallback-override: %d listeners back on %s", moved, j->mount->name);
    int denied = atomic_load(&j->denied);
    if (denied)
        log_warn("fallback-override: %d listeners stay where they are: %s has authentication "
                 "they did not pass", denied, j->mount->name);
    mount_unref(j->mount);
    free(j);
}

void override_source_started(worker_t *w, mount_t *m)
{
    const mount_conf_t *mc = config_find_mount(server_config(), m->name);
    if (!mc || !mc->fallback_override)
        return;
    override_job_t *j = calloc(1, sizeof(*j));
    if (!j)
        return;
    j->mount = mount_ref(m);
    if (worker_broadcast(w, override_fn, override_done, j) < 0) {
        mount_unref(j->mount);
        free(j);
    }
}
