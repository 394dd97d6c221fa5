/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault: the failure points of a test build (see fault.h). One armed count per point, set
 * before the workers start and only read afterwards; a pass counter per point, atomic since
 * points are reached from any worker. Compiled only with --enable-fault-injection.
 */
#include "core/fault.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const names[FAULT_POINTS] = {
    [FAULT_LISTENER_HEAD] = "listener_head",
    [FAULT_MOUNT_PUBLISHED] = "mount_published",
    [FAULT_UPGRADE_TAKEOVER] = "upgrade_takeover",
    [FAULT_UPGRADE_VERSION] = "upgrade_version",
    [FAULT_SERVER_STARTING] = "server_starting",
    [FAULT_READ_AHEAD_RING] = "read_ahead_ring",
};

static unsigned long armed[FAULT_POINTS]; /* the pass that fails (1 = the first), 0 = none */
static atomic_ulong passes[FAULT_POINTS];

static int point_of(const char *name, size_t len)
{
    for (int i = 0; i < FAULT_POINTS; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0)
            return i;
    return -1;
}

int fault_init(const char *spec, char *err, size_t len)
{
    for (const char *s = spec; s && *s;) {
        size_t item = strcspn(s, ",");
        const char *colon = memchr(s, ':', item);
        int p = colon ? point_of(s, (size_t)(colon - s)) : -1;
        char *end = NULL;
        unsigned long n = colon ? strtoul(colon + 1, &end, 10) : 0;
        if (p < 0 || n == 0 || end != s + item || colon[1] < '0' || colon[1] > '9') {
            snprintf(err, len, "RIMECAST_FAULT: \"%.*s\" is not point:N with N >= 1 (points: %s)",
                     (int)item, s, fault_point_names());
            return -EINVAL;
        }
        armed[p] = n;
        s += item + (s[item] == ',');
    }
    return 0;
}

int fault_hit(fault_point_t p)
{
    if (!armed[p])
        return 0;
    return atomic_fetch_add_explicit(&passes[p], 1, memory_order_relaxed) + 1 == armed[p];
}

void fault_hold(fault_point_t p)
{
    if (fault_hit(p)) {
        struct timespec ts = {FAULT_HOLD_MS / 1000, (FAULT_HOLD_MS % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
            ;
    }
}

const char *fault_point_names(void)
{
    static char buf[256];
    size_t k = 0;
    for (int i = 0; i < FAULT_POINTS && k < sizeof(buf); i++)
        k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%s", i ? " " : "", names[i]);
    return buf;
}
