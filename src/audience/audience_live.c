/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_live: the sessions going on, as the audience figures count them (see
 * audience_live.h).
 */
#include "audience/audience_live.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct live_copy {
    audience_live_t *l;
    int64_t qualify_ms;
    int truncate;
    int err;
} live_copy_t;

static void copy_live(const session_record_t *r, void *arg)
{
    live_copy_t *lc = arg;
    audience_live_t *l = lc->l;
    if (lc->err || r->end_ms - r->start_ms < lc->qualify_ms)
        return;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 64;
        audience_live_row_t *v = realloc(l->v, ncap * sizeof(*v));
        if (!v) {
            lc->err = -ENOMEM;
            return;
        }
        l->v = v;
        l->cap = ncap;
    }
    audience_live_row_t *e = &l->v[l->n];
    *e = (audience_live_row_t){.r = *r, .mount = strdup(r->mount ? r->mount : ""),
                               .agent = r->agent ? strdup(r->agent) : NULL};
    session_address(r->address, lc->truncate, e->ip, sizeof(e->ip));
    snprintf(e->cc, sizeof(e->cc), "%s", r->country ? r->country : "");
    snprintf(e->key, sizeof(e->key), "%s", r->key ? r->key : "");
    e->invalid = r->invalid ? r->invalid : "";
    /* what r pointed to lives only under the list's lock: its own copies instead (the
     * address and country are in the row itself, which moves as the array grows) */
    e->r.mount = e->mount;
    e->r.agent = e->agent;
    e->r.address = e->r.country = e->r.key = e->r.served = e->r.referer = e->r.user = NULL;
    l->n++;
    if (!e->mount || (r->agent && !e->agent))
        lc->err = -ENOMEM;
}

int audience_live_copy(audience_live_t *l, int qualify_s, int anonymize)
{
    live_copy_t lc = {.l = l, .qualify_ms = (int64_t)qualify_s * 1000, .truncate = anonymize};
    session_live_each(copy_live, &lc);
    return lc.err;
}

void audience_live_free(audience_live_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].mount);
        free(l->v[i].agent);
    }
    free(l->v);
    *l = (audience_live_t){0};
}
